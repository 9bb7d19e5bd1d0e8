#!/usr/bin/env bash
# Editor checks, for CI and for anyone changing the language or the editor grammars:
#   1. the word lists of every editor grammar agree with compiler/syntax/src/tokens.rs (cargo);
#   2. the TextMate grammar tokenises every recipe, stdlib file and sample with the real
#      VS Code engine (vscode-textmate + vscode-oniguruma, from npm) with the expected scopes;
#   2a. the extension's code starts `wrlc lsp` as configured (extension.test.mjs, no VS Code);
#   2b. the Vim syntax assigns the expected groups (headless vim, when installed);
#   3. the tree-sitter grammar generates, its corpus tests pass, and every .wrl file in
#      recipes/, stdlib/ and the samples parses without an ERROR or MISSING node.
# Needs: cargo, node >= 18 with npm (registry access for `npm ci` the first time), a C compiler,
# and the tree-sitter CLI built from crates.io: `cargo install --locked tree-sitter-cli`.
# Set SKIP_TREE_SITTER=1 to run only 1 and 2.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"

echo "== 1. editor word lists vs tokens.rs"
(cd "$root" && cargo test -q -p wrl-fmt --test all editor_sync)

echo "== 2. TextMate tokenising test"
(cd "$here/vscode/test" && { [ -d node_modules ] || npm ci --no-audit --no-fund; } && node tokenize.test.mjs)
echo "== 2a. VS Code extension code (stand-ins for the vscode API)"
node "$here/vscode/test/extension.test.mjs"

echo "== 2b. Vim syntax (headless)"
if command -v vim >/dev/null; then
  (cd "$here" && vim -Nu NONE -i NONE -es -S vim/test.vim </dev/null) || { echo "vim syntax test failed: run it with -c 'redir! > /tmp/out'" >&2; exit 1; }
else
  echo "(vim not installed: skipped)"
fi

if [ "${SKIP_TREE_SITTER:-}" = 1 ]; then
  echo "(tree-sitter skipped)"
  exit 0
fi
echo "== 3. tree-sitter"
if ! command -v tree-sitter >/dev/null; then
  echo "tree-sitter CLI not found: cargo install --locked tree-sitter-cli" >&2
  exit 2
fi
cd "$here/tree-sitter-wrl"
tree-sitter generate
if ! git -C "$here" diff --quiet -- tree-sitter-wrl/src; then
  echo "warning: src/parser.c differs from the committed one (grammar.js changed without" \
    "regenerating, or another tree-sitter CLI version); commit the regenerated files" >&2
fi
tree-sitter test
sed -f helix.sed queries/highlights.scm | diff -u queries/helix/highlights.scm - \
  || { echo "queries/helix/highlights.scm is stale: sed -f helix.sed queries/highlights.scm > queries/helix/highlights.scm" >&2; exit 1; }
for q in queries/*.scm queries/helix/*.scm; do  # every query must compile against the grammar
  out="$(tree-sitter query "$q" "$here/vscode/test/fixture.wrl" 2>&1)" || { echo "$out" >&2; exit 1; }
done
mapfile -t files < <(find "$root/recipes" "$root/stdlib" "$root/compiler/fmt/tests/samples" \
  "$root/compiler/fmt/tests/ugly" "$here/vscode/test" "$root/tests/corpus" "$root/tests/ui/ok" \
  "$root/tests/ui/check" "$root/tests/ui/plan" \
  -name '*.wrl' 2>/dev/null | sort)
bad=0
for f in "${files[@]}"; do
  out="$(tree-sitter parse "$f" 2>&1 || true)"
  if grep -qE '\(ERROR|\(MISSING|MISSING ' <<<"$out"; then
    echo "parse error in ${f#"$root"/}:" >&2
    grep -nE 'ERROR|MISSING' <<<"$out" | head -5 >&2
    bad=1
  fi
done
echo "${#files[@]} .wrl files parsed with tree-sitter"
exit "$bad"
