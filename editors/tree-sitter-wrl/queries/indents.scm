; Indentation (nvim-treesitter / Helix): one level inside brackets.
[
  (block)
  (record)
  (spec_block)
  (list)
  (arguments)
  (parameters)
  (use_group)
] @indent.begin

["}" "]" ")"] @indent.branch @indent.end
