#!/usr/bin/env bash
# `wrlc serve` under the official `openai` Python client (from PyPI, in a venv under target/):
# chat and text completions, whole and streamed (`stream=True`), logprobs, errors with `param`,
# tool calls (`tools=`) from a tiny Hugging Face policy taught to call one (`tool_checkpoint`),
# and `image_url` parts sent to the tiny random Qwen3-VL (`vl_model`).
# Usage: tests/scripts/openai-client.sh [--no-cli]   (from the workspace root; builds wrlc first,
# or with --no-cli the wrl-serve example `serve_dir`, the same server without the whole CLI)
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=target/py-openai
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import openai' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q 'openai>=1.50'
fi
# --workspace with the examples: features resolve as in `cargo test --workspace` (the examples
# bring in the dev-dependencies' features), so nothing is built again after the tests (with -p,
# or --bins alone, chromiumoxide, reqwest, rmcp and the wrl crates were: ~2-3 min).
cargo build -q --workspace --bins --examples
if [ "${1:-}" = --no-cli ]; then
  serve=(target/debug/examples/serve_dir)
else
  serve=(target/debug/wrlc serve)
fi
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"' EXIT
target/debug/examples/tiny_checkpoint "$tmp/tiny"
target/debug/examples/tool_checkpoint "$tmp/tools"
target/debug/examples/vl_model "$tmp/vl"
# start NAME: serves $tmp/NAME as model NAME and prints its base URL.
start() {
  if [ "$nocli" = 1 ]; then
    "${serve[@]}" "$tmp/$1" >"$tmp/$1.out" 2>"$tmp/$1.err" &
  else
    "${serve[@]}" "$tmp/$1" --addr 127.0.0.1:0 --model-name "$1" >"$tmp/$1.out" 2>"$tmp/$1.err" &
  fi
  local pid=$!
  pids+=("$pid")
  for _ in $(seq 100); do
    grep -q '^serving policy at ' "$tmp/$1.out" && break
    kill -0 "$pid" 2>/dev/null || { cat "$tmp/$1.err" >&2; return 1; }
    sleep 0.1
  done
}
nocli=0; [ "${1:-}" = --no-cli ] && nocli=1
start tiny
start tools
start vl
base=$(sed -n 's/^serving policy at //p' "$tmp/tiny.out")
tools_base=$(sed -n 's/^serving policy at //p' "$tmp/tools.out")
vl_base=$(sed -n 's/^serving policy at //p' "$tmp/vl.out")
[ -n "$base" ] && [ -n "$tools_base" ] && [ -n "$vl_base" ] || { echo "wrlc serve did not print its URL"; cat "$tmp"/*.err; exit 1; }
"$venv/bin/python" -c 'import openai; print("openai", openai.__version__)'
WRL_BASE_URL="$base" WRL_TOOLS_BASE_URL="$tools_base" WRL_VL_BASE_URL="$vl_base" "$venv/bin/python" tests/scripts/openai_client.py
