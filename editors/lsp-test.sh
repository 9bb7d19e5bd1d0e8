#!/usr/bin/env bash
# The real-client test of `wrlc lsp`: builds wrlc, makes a virtualenv with pytest-lsp (pygls's
# LSP client, from PyPI; pinned in editors/lsp-test/requirements.txt) and runs the tests in
# editors/lsp-test/ against `wrlc lsp` as a subprocess. About 10 s once the venv exists. When
# `nvim` is installed, also drives `wrlc lsp` from headless Neovim (editors/nvim/test.lua).
# Usage: editors/lsp-test.sh [pytest args…]    (WRLC=path uses another wrlc; PYTHON=python3.11)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
venv="editors/lsp-test/.venv"
python="${PYTHON:-python3}"
if [[ ! -x "$venv/bin/python" ]]; then
  "$python" -m venv "$venv"
fi
# Quiet when everything is already installed.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r editors/lsp-test/requirements.txt
if [[ -z "${WRLC:-}" ]]; then
  # --workspace with the examples: features resolve as in `cargo test --workspace` (the
  # examples bring in the dev-dependencies' features), so nothing is built again after it.
  cargo build --quiet --workspace --bins --examples
  target="${CARGO_TARGET_DIR:-$root/target}"
  export WRLC="$target/debug/wrlc"
fi
(cd editors/lsp-test && .venv/bin/python -m pytest -q -p no:cacheprovider "$@")
if command -v nvim >/dev/null 2>&1; then
  nvim --headless -u NONE -i NONE --cmd 'set rtp+=editors/vim,editors/nvim' -c 'luafile editors/nvim/test.lua'
else
  echo "(nvim not installed: the Neovim client test is skipped)"
fi
