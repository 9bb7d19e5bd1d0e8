; Highlights for .wrl (nvim-treesitter capture names; Helix and Zed map most of them).

(comment) @comment
(doc_comment) @comment.documentation

(string) @string
(escape_sequence) @string.escape
(text_block) @string

(number) @number
(magnitude) @number
(unit) @type.builtin
(dims "x" @operator)
(boolean) @boolean
(unknown) @constant.builtin

; Keywords.
["if" "then" "else"] @keyword.conditional
["when" "limit"] @keyword.repeat
["and" "or" "not"] @keyword.operator
["use" "as"] @keyword.import
["extends" "profile" "variant" "builtin" "module" "tool"] @keyword
(decl_kind) @keyword.type

; Declarations and their names.
(declaration name: (identifier) @function)
(builtin_item name: (identifier) @function)
(module_item name: (identifier) @function)
(tool_item name: (identifier) @function)
(profile_item name: (identifier) @module)

; The standard library and other paths.
((path . (identifier) @module.builtin)
  (#eq? @module.builtin "std"))
((use_path . (identifier) @module.builtin)
  (#eq? @module.builtin "std"))
((use_path (identifier) @module)
  (#not-eq? @module "std"))
(use_group (identifier) @variable)
(return_type (path (identifier) @type))

; Calls, fields, arguments, parameters.
(call function: (path (identifier) @function.call .))
(call function: (member name: (identifier) @function.method.call))
(field_path (identifier) @property)
(member name: (identifier) @property)
(argument name: (identifier) @variable.parameter)
(parameter name: (identifier) @variable.parameter)
(flag (identifier) @constant)

; Agent graphs.
(edge (identifier) @label)
(guard (identifier) @constant)

; Operators and punctuation.
["->" ".." "==" "!=" "<=" ">=" "<" ">" "+" "-" "*" "/" "=" "|"] @operator
["(" ")" "[" "]" "{" "}"] @punctuation.bracket
["," "." ":" "::"] @punctuation.delimiter
