#!/usr/bin/env bash
# Builds the checker benchmark (bench/check, release) and prints its table: the whole `wrlc check`
# on generated checker-clean corpora of ~10k, 100k and 1M lines, on a corpus with errors, and on
# recipes/ + stdlib/.
# Usage: bench/check.sh [--lines 10000,100000] [--layout files|one|both] [--runs 5] [--write DIR]
#        bench/check.sh --only DIR   (one timed `wrlc check DIR`, e.g. under perf)
# The build goes to $CARGO_TARGET_DIR, or bench/check/target when that is unset.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here/check"
cargo build --release --quiet
target="${CARGO_TARGET_DIR:-$here/check/target}"
echo "wrl checker benchmark — $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //'), load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
"$target/release/wrl-bench-check" "$@"
