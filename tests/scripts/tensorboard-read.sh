#!/usr/bin/env bash
# The TensorBoard event file a run writes beside metrics.jsonl, read back with TensorBoard's own
# reader (EventAccumulator, which checks the record CRCs), from PyPI in a venv under target/.
# Usage: tests/scripts/tensorboard-read.sh [RUN_DIR…]   (no argument: a fixture written by the
# real RunDir, with a rolled-back iteration and a resume)
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=target/py-tb
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import tensorboard' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q tensorboard
fi
dirs=("$@")
if [ ${#dirs[@]} -eq 0 ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  # --workspace with the examples: features resolve as in `cargo test --workspace` (the
  # examples bring in the dev-dependencies' features), so nothing is built again after it.
  cargo build -q --workspace --bins --examples
  target/debug/examples/metrics_fixture "$tmp/run"
  dirs=("$tmp/run")
fi
"$venv/bin/python" tests/scripts/tensorboard_read.py "${dirs[@]}"
