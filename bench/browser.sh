#!/usr/bin/env bash
# Browser benchmark: wrl-browser vs bare chromiumoxide calls vs Python Playwright on the sandbox
# shop, same scripted loop, same observation (wrl's snapshot script) and same PNG screenshots of
# an 800x600 viewport, at concurrency 1/4/8/16, with and without screenshots. Prints a table
# (steps/s, wrl/Playwright ratio, wrl's per-step overhead over the bare loop), the largest
# overhead, and, last, `ratio: X.XX` (the lowest wrl/Playwright ratio). Not part of `cargo test`.
# Needs: /usr/bin/chromium (apt-get install chromium), python3-venv. Never runs `playwright install`.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS="${BENCH_SECONDS:-10}"
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
PORT="${BENCH_PORT:-8611}"
"$BIN" --serve "$PORT" > /dev/null &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; rm -f "$JS"' EXIT
sleep 1
BASE="http://127.0.0.1:$PORT"
row() { printf "%-11s %-5s %11s %11s %11s %6s %9s %11s %11s %11s\n" "$@"; }
row concurrency shots "wrl st/s" "bare st/s" "pw st/s" ratio overhead "wrl ms" "bare ms" "pw ms"
stat() { python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["steps_per_s"], d["mean_step_ms"])' "$1"; }
MIN=""; MAXO=""
for shots in 0 1; do
  for n in $LEVELS; do
    flag=""; [ "$shots" = 1 ] && flag="--screenshots"
    W="$("$BIN" --base "$BASE" --concurrency "$n" --seconds "$SECS" $flag)"
    B="$("$BIN" --base "$BASE" --concurrency "$n" --seconds "$SECS" $flag --bare)"
    P="$("$VENV/bin/python" bench/browser/pw_bench.py "$BASE" "$n" "$SECS" "$shots" "$JS")"
    read -r ws wl < <(stat "$W")
    read -r bs bl < <(stat "$B")
    read -r ps pl < <(stat "$P")
    r="$(python3 -c "print(f'{$ws/$ps:.2f}')")"
    # Overhead: how much longer a step takes with wrl than with the bare loop (from throughput).
    o="$(python3 -c "print(f'{($bs/$ws-1)*100:+.1f}')")"
    row "$n" "$([ "$shots" = 1 ] && echo yes || echo no)" "$ws" "$bs" "$ps" "$r" "$o%" "$wl" "$bl" "$pl"
    if [ -z "$MIN" ] || python3 -c "import sys; sys.exit(0 if $r < $MIN else 1)"; then MIN="$r"; fi
    if [ -z "$MAXO" ] || python3 -c "import sys; sys.exit(0 if $o > $MAXO else 1)"; then MAXO="$o"; fi
  done
done
echo "overhead: $MAXO% (largest wrl per-step overhead over bare chromiumoxide; target 10%)"
echo "ratio: $MIN"
