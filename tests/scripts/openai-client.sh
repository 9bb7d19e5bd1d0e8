#!/usr/bin/env bash
# `wrlc serve` under the official `openai` Python client (from PyPI, in a venv under target/):
# chat and text completions, whole and streamed (`stream=True`), logprobs, errors with `param`.
# Usage: tests/scripts/openai-client.sh [--no-cli]   (from the workspace root; builds wrlc first,
# or with --no-cli the wrl-serve example `serve_dir`, the same server without the whole CLI)
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=target/py-openai
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import openai' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q 'openai>=1.50'
fi
if [ "${1:-}" = --no-cli ]; then
  cargo build -q -p wrl-serve --examples
  serve=(target/debug/examples/serve_dir)
else
  cargo build -q -p wrl-cli --bin wrlc
  cargo build -q -p wrl-serve --example tiny_checkpoint
  serve=(target/debug/wrlc serve)
fi
tmp=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
target/debug/examples/tiny_checkpoint "$tmp/tiny"
if [ "${1:-}" = --no-cli ]; then
  "${serve[@]}" "$tmp/tiny" >"$tmp/out" 2>"$tmp/err" &
else
  "${serve[@]}" "$tmp/tiny" --addr 127.0.0.1:0 --model-name tiny >"$tmp/out" 2>"$tmp/err" &
fi
pid=$!
for _ in $(seq 100); do
  grep -q '^serving policy at ' "$tmp/out" && break
  kill -0 "$pid" 2>/dev/null || { cat "$tmp/err"; exit 1; }
  sleep 0.1
done
base=$(sed -n 's/^serving policy at //p' "$tmp/out")
[ -n "$base" ] || { echo "wrlc serve did not print its URL"; cat "$tmp/err"; exit 1; }
"$venv/bin/python" -c 'import openai; print("openai", openai.__version__)'
WRL_BASE_URL="$base" "$venv/bin/python" tests/scripts/openai_client.py
