#!/usr/bin/env bash
# Takes docs/editors/lsp-neovim.png: Neovim (Debian's package) in xterm under Xvfb, editing a
# copy of recipes/openwebrl.wrl with one typo, with `wrlc lsp` attached through
# editors/nvim/plugin/wrl-lsp.lua: the typo's diagnostic (E0301 with its did-you-mean) and the
# hover of the env's `per_turn` (type, default, stdlib doc, value here and in profile `smoke`).
# Needs: nvim, Xvfb, xterm, xwd (x11-apps), convert (imagemagick), fonts-dejavu-core.
# Usage: editors/nvim/screenshot.sh [OUT.png]     (WRLC=path to use another wrlc)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${1:-$root/docs/editors/lsp-neovim.png}"
wrlc="${WRLC:-${CARGO_TARGET_DIR:-$root/target}/debug/wrlc}"
work="$(mktemp -d)"
trap 'kill "${xvfb:-}" "${term:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/recipes"
# The third `split = test` is the deepshop dataset's, right above the env.
awk '/  split = test/ && ++n == 3 { sub(/split/, "splt") } { print }' "$root/recipes/openwebrl.wrl" > "$work/recipes/openwebrl.wrl"
cat > "$work/init.lua" <<LUA
vim.opt.runtimepath:append("$root/editors/vim")
vim.opt.runtimepath:append("$root/editors/nvim")
vim.g.wrlc_path = "$wrlc"
vim.o.number = true
vim.o.signcolumn = "yes"
vim.o.laststatus = 2
vim.o.background = "dark"
vim.cmd("filetype plugin on")
vim.cmd("syntax on")
local hover = vim.lsp.handlers.hover
vim.lsp.handlers["textDocument/hover"] = function(err, result, ctx, config)
  local _, win = hover(err, result, ctx, vim.tbl_extend("force", config or {}, { border = "rounded", max_width = 100 }))
  if win then
    vim.api.nvim_win_set_option(win, "conceallevel", 2)
  end
end
vim.cmd("highlight NormalFloat ctermbg=236 ctermfg=252 guibg=#303236")
vim.cmd("highlight FloatBorder ctermbg=236 ctermfg=244")
vim.diagnostic.config({ virtual_text = { prefix = "●" }, severity_sort = true })
local function shoot()
  local buf = vim.api.nvim_get_current_buf()
  if #vim.diagnostic.get(buf) == 0 then
    return vim.defer_fn(shoot, 100)
  end
  vim.fn.search("^dataset deepshop")
  vim.cmd("normal! zt")
  vim.fn.search("^  per_turn")
  vim.cmd("normal! w")
  vim.lsp.buf.hover()
  vim.defer_fn(function()
    vim.fn.writefile({ "ready" }, "$work/ready")
  end, 1500)
end
vim.api.nvim_create_autocmd("VimEnter", { callback = function() vim.defer_fn(shoot, 300) end })
LUA
Xvfb :97 -screen 0 1500x900x24 -nolisten tcp >/dev/null 2>&1 & xvfb=$!
sleep 1
(cd "$work" && DISPLAY=:97 xterm -geometry 150x44+0+0 -fa 'DejaVu Sans Mono' -fs 10.5 \
  -bg '#1d1f21' -fg '#c5c8c6' -xrm 'XTerm*borderWidth: 0' -T 'nvim — recipes/openwebrl.wrl' \
  -e nvim -u "$work/init.lua" -i NONE recipes/openwebrl.wrl) & term=$!
for _ in $(seq 1 100); do [[ -e "$work/ready" ]] && break; sleep 0.2; done
[[ -e "$work/ready" ]] || { echo "Neovim did not get diagnostics and a hover in 20 s" >&2; exit 1; }
xwd -root -display :97 -silent | convert xwd:- -trim +repage "$out"
echo "wrote $out"
