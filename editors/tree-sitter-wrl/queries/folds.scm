; Folding: blocks, lists, argument and parameter lists, text blocks.
[
  (block)
  (record)
  (spec_block)
  (list)
  (arguments)
  (parameters)
  (text_block)
] @fold
