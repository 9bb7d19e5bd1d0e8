; Highlights for .wrl, Helix capture names. Generated from ../highlights.scm by helix.sed.

(comment) @comment.line
(doc_comment) @comment.line.documentation

(string) @string
(escape_sequence) @constant.character.escape
(text_block) @string

(number) @constant.numeric
(magnitude) @constant.numeric
(unit) @type.builtin
(dims "x" @operator)
(boolean) @constant.builtin.boolean
(unknown) @constant.builtin

; Keywords.
["if" "then" "else"] @keyword.control.conditional
["when" "limit"] @keyword.control.repeat
["and" "or" "not"] @keyword.operator
["use" "as"] @keyword.control.import
["extends" "profile" "variant" "builtin" "module" "tool"] @keyword
(decl_kind) @keyword.storage.type

; Declarations and their names.
(declaration name: (identifier) @function)
(builtin_item name: (identifier) @function)
(module_item name: (identifier) @function)
(tool_item name: (identifier) @function)
(profile_item name: (identifier) @namespace)

; The standard library and other paths.
((path . (identifier) @namespace)
  (#eq? @namespace "std"))
((use_path . (identifier) @namespace)
  (#eq? @namespace "std"))
((use_path (identifier) @namespace)
  (#not-eq? @namespace "std"))
(use_group (identifier) @variable)
(return_type (path (identifier) @type))

; Calls, fields, arguments, parameters.
(call function: (path (identifier) @function .))
(call function: (member name: (identifier) @function.method))
(field_path (identifier) @variable.other.member)
(member name: (identifier) @variable.other.member)
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
