#!/usr/bin/env bash
# Builds the parser benchmark (bench/parse, release) and prints its table: parse-to-AST MB/s and
# whole `wrlc check` time on generated corpora of ~10k, 100k and 1M lines.
# Usage: bench/parse.sh [--no-check] [--lines 10000,100000] [--runs 5] [--write DIR]
# `--no-check` builds without `wrl-cli` (parse only: much quicker to build, no `wrlc check` column).
# The build goes to $CARGO_TARGET_DIR, or bench/parse/target when that is unset.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here/parse"
features=()
if [[ "${1:-}" == "--no-check" ]]; then
  features=(--no-default-features)
  shift
fi
cargo build --release --quiet "${features[@]}"
target="${CARGO_TARGET_DIR:-$here/parse/target}"
echo "wrl parser benchmark — $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //')"
echo
"$target/release/wrl-bench-parse" "$@"
