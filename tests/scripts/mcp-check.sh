#!/usr/bin/env bash
# MCP tools against the official MCP Python SDK (docs/mcp.md): a venv with `mcp` from PyPI
# under target/, then the Rust tests that need its reference server (tests/scripts/mcp_server.py,
# over stdio and streamable HTTP on loopback): runtime/exec's search_env (the listing, calls,
# limits, errors as text, a server gone mid-run), the same in browser episodes on real Chromium
# (browser_mcp), and the offline profiles of tests/recipes/mcp_tools.wrl and mcp_browser.wrl
# run end to end. Without this script they are skipped.
# Usage: tests/scripts/mcp-check.sh [--venv-only]   (from anywhere; MCP_VENV overrides the venv's
# place). With --venv-only it makes the venv and stops: CI then sets MCP_PYTHON and
# WRL_REQUIRE_MCP=1 so that the main `cargo test --workspace` runs these tests instead of skipping.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=${MCP_VENV:-target/py-mcp}
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import mcp.server.mcpserver' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q 'mcp>=2'
fi
"$venv/bin/python" -c 'import importlib.metadata as m; print("mcp", m.version("mcp"))'
export MCP_PYTHON="$PWD/$venv/bin/python"
case "$venv" in /*) export MCP_PYTHON="$venv/bin/python" ;; esac
if [ "${1:-}" = "--venv-only" ]; then exit 0; fi
cargo test -q -p wrl-exec --test all -- search_env::mcp:: browser_mcp::
cargo test -q -p wrl-tests --test all run_e2e::mcp
