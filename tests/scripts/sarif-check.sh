#!/usr/bin/env bash
# `wrlc --error-format sarif` validated against the official SARIF 2.1.0 JSON schema (OASIS,
# vendored in tests/fixtures) with the `jsonschema` validator from PyPI (rfc3987 for its `uri`
# formats), in a venv under target/; the JSON stream's lines are checked against
# docs/diagnostics-json.md's shape at the same time.
# Usage: tests/scripts/sarif-check.sh   (from the workspace root; builds wrlc first)
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=target/py-sarif
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import jsonschema, rfc3987' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q 'jsonschema>=4.18' rfc3987
fi
"$venv/bin/python" -c 'import importlib.metadata as m; print("jsonschema", m.version("jsonschema"))'
# --workspace with the examples: features resolve as in `cargo test --workspace` (the examples
# bring in the dev-dependencies' features), so nothing is built again after the tests (with -p,
# or --bins alone, chromiumoxide, reqwest, rmcp and the wrl crates were: ~2-3 min).
cargo build -q --workspace --bins --examples
"$venv/bin/python" tests/scripts/sarif_check.py target/debug/wrlc
