-- A headless Neovim session against `wrlc lsp`, through Neovim's own LSP client and
-- editors/nvim/plugin/wrl-lsp.lua: diagnostics, hover, definition into the stdlib's read-only
-- document, and formatting. Run by editors/lsp-test.sh when `nvim` is installed:
--   WRLC=target/debug/wrlc nvim --headless -u NONE -i NONE --cmd 'set rtp+=editors/vim,editors/nvim' -l editors/nvim/test.lua
-- (`-l` needs 0.9; on 0.7 use `-c 'luafile editors/nvim/test.lua'`). Exits 0 when all pass.
vim.g.wrlc_path = os.getenv("WRLC") or "wrlc"
local failures = {}
local function check(ok, what)
  if not ok then
    table.insert(failures, what)
  end
end
local function wait(ms, cond)
  return vim.wait(ms, cond, 20)
end

vim.cmd("filetype on")
vim.cmd("runtime! plugin/wrl-lsp.lua")
vim.cmd("edit tests/ui/check/E0301_unknown_field.wrl")
local buf = vim.api.nvim_get_current_buf()
check(vim.bo[buf].filetype == "wrl", "filetype wrl")
check(wait(10000, function()
  return #vim.lsp.buf_get_clients(buf) > 0
end), "a client attaches")
check(wait(10000, function()
  return #vim.diagnostic.get(buf) > 0
end), "diagnostics arrive")
local diags = vim.diagnostic.get(buf)
check(diags[1] and diags[1].code == "E0301", "E0301 reported: " .. vim.inspect(diags[1]))

-- Hover on a field of the shipped recipe.
vim.cmd("edit recipes/quickstart.wrl")
buf = vim.api.nvim_get_current_buf()
wait(10000, function()
  return #vim.lsp.buf_get_clients(buf) > 0
end)
local line = vim.fn.search("max_turns")
local params = { textDocument = { uri = vim.uri_from_bufnr(buf) }, position = { line = line - 1, character = 4 } }
local res = vim.lsp.buf_request_sync(buf, "textDocument/hover", params, 10000) or {}
local text = ""
for _, r in pairs(res) do
  if r.result then
    text = r.result.contents.value
  end
end
check(text:find("field of `react`", 1, true) ~= nil, "hover: " .. text)

-- Definition of a stdlib constructor: a read-only `wrl-stdlib://` buffer with its text.
local at = vim.fn.search("grpo(")
params.position = { line = at - 1, character = vim.fn.col(".") }
res = vim.lsp.buf_request_sync(buf, "textDocument/definition", params, 10000) or {}
local loc
for _, r in pairs(res) do
  loc = r.result and (r.result.uri and r.result or r.result[1])
end
check(loc and loc.uri == "wrl-stdlib:///std/prelude.wrl", "definition: " .. vim.inspect(loc))
if loc then
  vim.lsp.util.jump_to_location(loc, "utf-16")
  local sbuf = vim.api.nvim_get_current_buf()
  local l = vim.api.nvim_buf_get_lines(sbuf, loc.range.start.line, loc.range.start.line + 1, false)[1] or ""
  check(l:find("^builtin grpo%(") ~= nil, "stdlib line: " .. l)
  check(vim.bo[sbuf].readonly and not vim.bo[sbuf].modifiable, "stdlib read-only")
end

if #failures > 0 then
  io.stderr:write("nvim LSP test failed:\n  " .. table.concat(failures, "\n  ") .. "\n")
  vim.cmd("cquit 1")
end
io.stdout:write("nvim LSP test: ok\n")
vim.cmd("qall!")
