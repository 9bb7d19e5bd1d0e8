-- `wrlc lsp` in Neovim: starts the language server for every `wrl` buffer (one server per
-- project root), opens the embedded stdlib's `wrl-stdlib://` documents read-only when a
-- definition leads there, and maps hover, definition, references, code actions and
-- formatting where nothing is mapped yet. Uses `vim.lsp.start` (Neovim 0.8+) and falls back
-- to `vim.lsp.start_client` on 0.7 (Debian 12's neovim). Put editors/nvim and editors/vim on
-- 'runtimepath' (see editors/README.md). Settings, all optional, before the plugin loads:
--   vim.g.wrlc_path = "/path/to/wrlc"        -- default: `wrlc` on $PATH
--   vim.g.wrl_lsp_init_options = { errorPages = "https://…/docs/errors/", debounceMs = 4 }
--   vim.g.wrl_lsp_no_maps = true             -- keep your own mappings

if vim.g.loaded_wrl_lsp then
  return
end
vim.g.loaded_wrl_lsp = true

local clients = {} -- root directory -> client id (Neovim 0.7 path)

local function root_of(fname)
  local dir = vim.fn.fnamemodify(fname, ":p:h")
  local found = vim.fn.finddir(".git", dir .. ";")
  if found ~= "" then
    return vim.fn.fnamemodify(found, ":p:h:h")
  end
  return dir
end

local function maps(bufnr)
  if vim.g.wrl_lsp_no_maps then
    return
  end
  local function map(lhs, fn)
    if vim.fn.maparg(lhs, "n") == "" then
      vim.api.nvim_buf_set_keymap(bufnr, "n", lhs, "", { noremap = true, silent = true, callback = fn })
    end
  end
  map("K", vim.lsp.buf.hover)
  map("gd", vim.lsp.buf.definition)
  map("gr", vim.lsp.buf.references)
  map("<leader>ca", vim.lsp.buf.code_action)
  map("<leader>f", function()
    if vim.lsp.buf.format then
      vim.lsp.buf.format({ async = false })
    else
      vim.lsp.buf.formatting_sync() -- Neovim 0.7
    end
  end)
end

local function config(root)
  return {
    name = "wrlc",
    cmd = { vim.g.wrlc_path or "wrlc", "lsp" },
    root_dir = root,
    init_options = vim.g.wrl_lsp_init_options or vim.empty_dict(),
    on_attach = function(_, bufnr)
      maps(bufnr)
    end,
  }
end

local function attach(bufnr, root)
  if vim.lsp.start then
    return vim.lsp.start(config(root), { bufnr = bufnr })
  end
  local id = clients[root]
  if not id or not vim.lsp.get_client_by_id(id) then
    id = vim.lsp.start_client(config(root))
    clients[root] = id
  end
  if id then
    vim.lsp.buf_attach_client(bufnr, id)
  end
  return id
end

vim.api.nvim_create_autocmd("FileType", {
  pattern = "wrl",
  callback = function(args)
    local name = vim.api.nvim_buf_get_name(args.buf)
    if name:match("^wrl%-stdlib:") then
      return -- attached by the BufReadCmd below
    end
    attach(args.buf, root_of(name ~= "" and name or vim.fn.getcwd()))
  end,
})

-- A definition in the stdlib opens `wrl-stdlib:///std/…`: ask the server for the text.
vim.api.nvim_create_autocmd("BufReadCmd", {
  pattern = "wrl-stdlib://*",
  callback = function(args)
    local bufnr = args.buf
    local client
    for _, c in pairs(vim.lsp.get_active_clients()) do
      if c.name == "wrlc" then
        client = c
        break
      end
    end
    if not client then
      vim.notify("wrl: no wrlc lsp running to read " .. args.match, vim.log.levels.WARN)
      return
    end
    local resp = client.request_sync("wrl/virtualTextDocument", { textDocument = { uri = args.match } }, 5000, bufnr)
    if not resp or resp.err or type(resp.result) ~= "string" then
      vim.notify("wrl: cannot read " .. args.match, vim.log.levels.WARN)
      return
    end
    vim.api.nvim_buf_set_option(bufnr, "modifiable", true)
    local lines = vim.split(resp.result, "\n", { plain = true })
    if lines[#lines] == "" then
      table.remove(lines)
    end
    vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, lines)
    vim.api.nvim_buf_set_option(bufnr, "modifiable", false)
    vim.api.nvim_buf_set_option(bufnr, "readonly", true)
    vim.api.nvim_buf_set_option(bufnr, "buftype", "nofile")
    vim.api.nvim_buf_set_option(bufnr, "filetype", "wrl")
    vim.lsp.buf_attach_client(bufnr, client.id)
  end,
})
