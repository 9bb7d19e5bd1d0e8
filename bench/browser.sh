#!/usr/bin/env bash
# Browser benchmark: wrl-browser vs bare chromiumoxide calls vs Python Playwright on the sandbox
# shop, same scripted loop, same observation (wrl's snapshot script) and same PNG screenshots of
# an 800x600 viewport, at concurrency 1/4/8/16, with and without screenshots. Prints a table
# (steps/s, wrl/Playwright ratio, wrl's per-step overhead over the bare loop, ms per step, and
# whole-machine CPU ms per step), the largest overhead, and, last, `ratio: X.XX` (the lowest
# wrl/Playwright ratio). Not part of `cargo test`.
#
# Each row runs the three sides in BENCH_ROUNDS short rounds (BENCH_SECONDS each), taking turns
# in a rotating order, and pools their steps and times: a machine whose speed drifts during the
# run (other jobs, a shared host) then slows all three alike instead of whichever ran last.
# Each run starts once the previous run's Chromium processes have exited. In a run, steps that
# start in the first BENCH_WARMUP seconds are not counted (every loop takes its first steps at
# once), and steps/s is the sum of the loops' own rates (counted steps over the time from their
# first counted start to their last end), so the tail, where the last loops finish on an emptier
# machine, does not count as idle time.
# The bare loop makes the CDP calls wrl makes, the allow-list's request interception included
# (`Fetch.enable`, `Fetch.continueRequest`); BENCH_BARE_ARGS=--no-fetch leaves that out, to
# measure what the allow-list costs.
# BENCH_CHROMIUM_ARGS adds Chromium flags to both Rust sides, BENCH_PW_ARGS to Playwright's.
# Needs: Chromium (apt-get install chromium-headless-shell, or chromium), python3-venv. Never runs
# `playwright install`.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS="${BENCH_SECONDS:-4}"
WARMUP="${BENCH_WARMUP:-1.5}"
ROUNDS="${BENCH_ROUNDS:-5}"
LEVELS="${BENCH_LEVELS:-1 4 8 16}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target-browser}"
VENV="${BENCH_VENV:-$PWD/target-browser/bench-venv}"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q playwright
fi
# Dev profile: the workspace builds every dependency at opt-level 3 already.
cargo build -q -p wrl-browser --example bench
BIN="$CARGO_TARGET_DIR/debug/examples/bench"
JS="$(mktemp)"; "$BIN" --print-snapshot-js > "$JS"
# All three sides launch the same browser: the one our runtime picks (WRL_CHROMIUM, else the
# headless shell, else chromium).
CHROMIUM="$("$BIN" --print-chromium)"
export WRL_CHROMIUM="$CHROMIUM"
echo "browser: $CHROMIUM ($("$CHROMIUM" --version 2>/dev/null || true))"
OUT="$(mktemp)"
PORT="${BENCH_PORT:-8611}"
"$BIN" --serve "$PORT" > /dev/null &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; rm -f "$JS" "$OUT"' EXIT
sleep 1
BASE="http://127.0.0.1:$PORT"
settle_machine() { # until the previous run's Chromium processes have exited (at most 10 s)
  # Process names: `chromium`, or `chromium-headle` (the headless shell, cut to 15 chars).
  for _ in $(seq 1 100); do pgrep '^chromium' > /dev/null || return 0; sleep 0.1; done
}
side() { # side NAME N SHOTS: one timed run, one JSON line
  settle_machine
  local flag=""; [ "$3" = 1 ] && flag="--screenshots"
  case "$1" in
    wrl) "$BIN" --base "$BASE" --concurrency "$2" --seconds "$SECS" --warmup "$WARMUP" $flag ;;
    bare) "$BIN" --base "$BASE" --concurrency "$2" --seconds "$SECS" --warmup "$WARMUP" $flag --bare ${BENCH_BARE_ARGS:-} ;;
    pw) "$VENV/bin/python" bench/browser/pw_bench.py "$BASE" "$2" "$SECS" "$3" "$JS" "$WARMUP" "$CHROMIUM" ;;
  esac
}
row() { printf "%-11s %-5s %11s %11s %11s %6s %9s %11s %11s %11s %9s %9s %9s\n" "$@"; }
row concurrency shots "wrl st/s" "bare st/s" "pw st/s" ratio overhead "wrl ms" "bare ms" "pw ms" \
  "wrl cpu" "bare cpu" "pw cpu"
for shots in 0 1; do
  for n in $LEVELS; do
    : > "$OUT"
    for r in $(seq 1 "$ROUNDS"); do
      case $((r % 3)) in
        1) order="wrl bare pw" ;;
        2) order="bare pw wrl" ;;
        *) order="pw wrl bare" ;;
      esac
      for s in $order; do echo "$s $(side "$s" "$n" "$shots")" >> "$OUT"; done
    done
    python3 - "$OUT" "$n" "$shots" <<'EOF'
import json, sys
steps, secs, lat, cpu = {}, {}, {}, {}
for line in open(sys.argv[1]):
    side, js = line.split(" ", 1)
    d = json.loads(js)
    steps[side] = steps.get(side, 0) + d["steps"]
    # Each run's rate is the sum of its loops' own rates; pooled over rounds by step count.
    secs[side] = secs.get(side, 0.0) + d["steps"] / max(d["steps_per_s"], 1e-9)
    lat[side] = lat.get(side, 0.0) + d["mean_step_ms"] * d["steps"]
    cpu[side] = cpu.get(side, 0.0) + d["cpu_ms_per_step"] * d["steps"]
sps = {s: steps[s] / secs[s] for s in steps}
ms = {s: lat[s] / max(steps[s], 1) for s in steps}
# Whole-machine CPU per step (ms), measured by each side after its warm-up.
cm = {s: cpu[s] / max(steps[s], 1) for s in steps}
ratio = sps["wrl"] / sps["pw"]
# Overhead: how much longer a step takes with wrl than with the bare loop (from throughput).
over = (sps["bare"] / sps["wrl"] - 1) * 100
print(f"{sys.argv[2]:<11} {'yes' if sys.argv[3] == '1' else 'no':<5} {sps['wrl']:>11.2f} {sps['bare']:>11.2f} "
      f"{sps['pw']:>11.2f} {ratio:>6.2f} {over:>+8.1f}% {ms['wrl']:>11.1f} {ms['bare']:>11.1f} {ms['pw']:>11.1f} "
      f"{cm['wrl']:>9.1f} {cm['bare']:>9.1f} {cm['pw']:>9.1f}")
EOF
  done
done | tee "$OUT.table"
python3 - "$OUT.table" <<'EOF'
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip() and l.split()[0].isdigit()]
print(f"overhead: {max(float(r[6].rstrip('%')) for r in rows):+.1f}% (largest wrl per-step overhead over bare chromiumoxide; target 10%)")
print(f"ratio: {min(float(r[5]) for r in rows):.2f}")
EOF
rm -f "$OUT.table"
