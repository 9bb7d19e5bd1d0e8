#!/usr/bin/env bash
# The tree-sitter grammar (editors/tree-sitter-wrl) held to the real parser through
# py-tree-sitter (PyPI, pinned, in a venv under target/): every file in tests/ui/syntax, which
# pest rejects, gets an ERROR or MISSING node (EXPECTED_EXCEPTIONS in tree_sitter_check.py is
# empty); every other tracked .wrl file parses without one; incremental reparses after edits
# give what fresh parses give; every query in queries/ compiles and captures. With wrlc, pest's
# own verdict (`wrlc fmt --check`) must be exactly tests/ui/syntax among the files, and
# tree-sitter's on every corpus case and on 1,500 generated sources. Usage: tests/scripts/tree-sitter-check.sh [--no-wrlc]   (from anywhere;
# ~5 s once the venv exists and wrlc is built)
#   wrlc: $WRLC, else target/debug/wrlc built with cargo (CI has built it by then).
#   The tree-sitter CLI, when found ($TREE_SITTER, `tree-sitter` on PATH, or
#   target/tree-sitter-cli/bin/tree-sitter), regenerates src/ from grammar.js in a copy, and a
#   committed src/ that differs fails. Without it the committed src/ is checked as editors build
#   it; the CLI comes from crates.io only (npm's tree-sitter-cli downloads a binary at install):
#   cargo install --locked --no-default-features tree-sitter-cli@0.27.0 --root target/tree-sitter-cli
set -euo pipefail
cd "$(dirname "$0")/../.."
grammar=editors/tree-sitter-wrl
venv=target/py-tree-sitter
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import tree_sitter' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q 'tree-sitter==0.25.2'
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cli=${TREE_SITTER:-}
if [ -z "$cli" ]; then
  if command -v tree-sitter >/dev/null; then
    cli=tree-sitter
  elif [ -x target/tree-sitter-cli/bin/tree-sitter ]; then
    cli=$PWD/target/tree-sitter-cli/bin/tree-sitter
  fi
fi
if [ -n "$cli" ]; then
  "$cli" --version
  cp -r "$grammar" "$tmp/grammar"
  (cd "$tmp/grammar" && "$cli" generate)
  if ! diff -r -q "$grammar/src" "$tmp/grammar/src"; then
    echo "FAIL $grammar/src is not what grammar.js generates: run \`tree-sitter generate\` there" \
      "and commit src/" >&2
    exit 1
  fi
  echo "src/ is what $("$cli" --version) generates from grammar.js"
else
  echo "tree-sitter CLI not found: src/ not regenerated (see the top of $0); checking the committed src/"
fi

# The grammar as nvim-treesitter, Helix and Zed build it: src/parser.c and src/scanner.c.
cc -shared -fPIC -O1 -std=c11 -Wall -Wextra -Werror -Wno-unused-parameter \
  -I "$grammar/src" "$grammar/src/parser.c" "$grammar/src/scanner.c" -o "$tmp/wrl.so"

wrlc=()
if [ "${1:-}" != --no-wrlc ]; then
  if [ -n "${WRLC:-}" ]; then
    wrlc=("$WRLC")
  else
    # --workspace with the examples: features resolve as in `cargo test --workspace` (the
    # examples bring in the dev-dependencies' features), so nothing is built again after it.
    cargo build -q --workspace --bins --examples
    wrlc=(target/debug/wrlc)
  fi
fi
"$venv/bin/python" -c 'import importlib.metadata as m, tree_sitter as t; print("py-tree-sitter", m.version("tree-sitter"), "ABI", t.LANGUAGE_VERSION)'
"$venv/bin/python" tests/scripts/tree_sitter_check.py "$tmp/wrl.so" "${wrlc[@]}"
