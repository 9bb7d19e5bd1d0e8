#!/usr/bin/env bash
# Times `wrlc check` the way people run it, one fresh process per run: on `recipes/ stdlib/`
# and on each FILE given with --file (e.g. a 10k-line recipe written by
# `bench/check.sh --lines 10000 --layout one --write DIR`). With several wrlc binaries (say,
# before and after a change), they take turns in every round, so a machine whose load drifts
# slows them alike. Prints a Markdown table: best and median wall time per binary and input, the
# best CPU time (user + system of the process: a loaded machine disturbs it far less), and the
# 1-minute load average (/proc/loadavg) read before each run, lowest–highest.
# Usage: bench/wrlc.sh [--runs 20] [--file FILE]... [WRLC...]
# Without WRLC, times $CARGO_TARGET_DIR/release/wrlc (or target/release/wrlc); build it with
# `cargo build --release -p wrl-cli`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
runs=20
files=()
bins=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --file) files+=("$2"); shift 2 ;;
    *) bins+=("$1"); shift ;;
  esac
done
if [[ ${#bins[@]} -eq 0 ]]; then
  bins=("${CARGO_TARGET_DIR:-$root/target}/release/wrlc")
fi
echo "wrlc check — $(date -u '+%Y-%m-%d %H:%M') UTC, $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //'), $runs runs each"
echo
python3 - "$runs" "${#files[@]}" "${files[@]}" "${bins[@]}" <<'EOF'
import os, statistics, subprocess, sys, time

runs, nfiles = int(sys.argv[1]), int(sys.argv[2])
files, bins = sys.argv[3:3 + nfiles], sys.argv[3 + nfiles:]
inputs = [("`recipes/ stdlib/`", ["recipes/", "stdlib/"])] + [(f"`{f}`", [f]) for f in files]

def load():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])

times = {(b, i): [] for b in bins for i in range(len(inputs))}
cpus = {(b, i): [] for b in bins for i in range(len(inputs))}
loads = {(b, i): [] for b in bins for i in range(len(inputs))}
exits = {}
for r in range(runs):
    # Rotate the order every round: no binary always runs first (or right after another).
    order = bins[r % len(bins):] + bins[:r % len(bins)]
    for i, (_, args) in enumerate(inputs):
        for b in order:
            loads[(b, i)].append(load())
            t = time.perf_counter()
            p = subprocess.Popen([b, "check", *args], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
            err = p.stderr.read()
            _, status, usage = os.wait4(p.pid, 0)
            times[(b, i)].append(time.perf_counter() - t)
            cpus[(b, i)].append(usage.ru_utime + usage.ru_stime)
            lines = err.strip().splitlines()
            exits[(b, i)] = (os.waitstatus_to_exitcode(status), lines[-1] if lines else "")

print("| wrlc | input | exit, summary | best | median | best CPU | load (1 min) |")
print("|---|---|---|---:|---:|---:|---:|")
for i, (name, _) in enumerate(inputs):
    for b in bins:
        ts, cs, ls = times[(b, i)], cpus[(b, i)], loads[(b, i)]
        code, summary = exits[(b, i)]
        print(f"| `{b}` | {name} | {code}, {summary} | {min(ts) * 1e3:.1f} ms "
              f"| {statistics.median(ts) * 1e3:.1f} ms | {min(cs) * 1e3:.1f} ms "
              f"| {min(ls):.2f}–{max(ls):.2f} |")
EOF
