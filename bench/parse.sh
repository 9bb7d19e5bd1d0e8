#!/usr/bin/env bash
# Builds the parser benchmark (bench/parse, release) and prints its table: parse-to-AST MB/s and
# whole `wrlc check` time on generated corpora of ~10k, 100k and 1M lines.
# Usage: bench/parse.sh [--lines 10000,100000] [--runs 5] [--write DIR]
# The build goes to $CARGO_TARGET_DIR, or bench/parse/target when that is unset.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here/parse"
cargo build --release --quiet
target="${CARGO_TARGET_DIR:-$here/parse/target}"
echo "wrl parser benchmark — $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //')"
echo
"$target/release/wrl-bench-parse" "$@"
