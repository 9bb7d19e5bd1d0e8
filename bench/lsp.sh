#!/usr/bin/env bash
# Builds the language-server benchmark (bench/lsp, release) and prints its table: the time from
# a keystroke (an incremental didChange) in recipes/openwebrl.wrl to its publishDiagnostics, and
# the time to answer hover, completion and inlay hints, with the load average beside the figures.
# Usage: bench/lsp.sh [--edits 300] [--file recipes/openwebrl.wrl] [--server PATH…]
#   --server PATH  time another server binary (e.g. `target/debug/wrlc`, which gets `lsp`)
# The build goes to $CARGO_TARGET_DIR, or bench/lsp/target when that is unset.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here/lsp"
cargo build --release --quiet
target="${CARGO_TARGET_DIR:-$here/lsp/target}"
cd "$here/.."
echo "wrl language-server benchmark — $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //')"
echo
"$target/release/wrl-bench-lsp" "$@"
