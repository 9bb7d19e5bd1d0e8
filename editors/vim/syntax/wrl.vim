" Vim syntax file for .wrl recipes.
" The word lists are checked against compiler/syntax/src/tokens.rs by
" compiler/fmt/tests/editor_sync.rs (WRL_BLESS=1 rewrites them).
if exists('b:current_syntax')
  finish
endif

syn case match
syn sync fromstart

" Reserved words (tokens.rs KEYWORDS).
syn keyword wrlKwConditional if then else when
syn keyword wrlKwOperator and or not
syn keyword wrlKwBoolean true false
syn keyword wrlKwConstant unknown
syn keyword wrlKwInclude use

" Contextual keywords: only where the grammar expects them.
syn match wrlContextual "\v^\s*\zs(profile)\ze\s+\h" nextgroup=wrlProfileName skipwhite
syn match wrlContextual "\v^\s*\zs(variant)\ze\s+\h" nextgroup=wrlProfileName skipwhite
syn match wrlProfileName "\h\w*" contained
syn match wrlContextual "\v^\s*\zs(extends)>"
syn match wrlContextual "\v^\s*\zs(builtin)\ze\s+\h" nextgroup=wrlDeclName skipwhite
syn match wrlContextual "\v<(module)\ze\s+\h\w*\s*\=" nextgroup=wrlDeclName skipwhite
syn match wrlContextual "\v<(tool)\ze\s+\h\w*\s*\(" nextgroup=wrlDeclName skipwhite
syn match wrlContextual "\v(\"\s+)@<=(as)>"
syn match wrlContextual "\v<(limit)>\ze\s+[^ \t=:,})\]]"

" Declarations: `stage online = …`.
syn match wrlDeclKind "\v^\s*\zs(model|dataset|env|tools|agent|reward|stage|eval|param|claim)\ze\s+\h" nextgroup=wrlDeclName skipwhite
syn match wrlDeclName "\h\w*" contained

" Numbers, magnitudes and units on the same line: `32k tokens`, `45 s`, `10%`, `1280 x 1000`.
syn match wrlNumber "\v<\d(_?\d)*(\.\d+)?([eE][+-]?\d+)?((Ki|Mi|Gi|k|M|G)>)?" nextgroup=wrlUnit,wrlDimsX skipwhite
syn match wrlUnit "\v(trajectories|trajectory|prompts|samples|epochs|images|prompt|sample|tokens|calls|epoch|image|iters|steps|token|turns|call|iter|step|turn|GiB|KiB|MiB|TiB|min|GB|KB|MB|TB|ms|px|\%|B|h|s)>" contained
syn match wrlUnit "%" contained
syn match wrlDimsX "\vx\ze\s*\d" contained

" Strings with escapes, and raw `"""` text blocks.
syn region wrlTextBlock start=+"""+ end=+"""+ keepend
syn region wrlString start=+"\(""\)\@!+ skip=+\\\\\|\\"+ end=+"\|$+ contains=wrlEscape,wrlBadEscape oneline
syn match wrlBadEscape "\\." contained
syn match wrlEscape "\v\\([ntr\\"0]|u\{\x+\})" contained

" The standard library: `std::models::tiny`.
syn match wrlStdPath "\v<std(::\h\w*)+"

" Operators and agent-graph arrows.
syn match wrlArrow "->"
syn match wrlOperator "\v\=\=|!\=|\<\=|\>\=|\.\.|[+*/<>|]|-(\>)@!"

" Calls and fields.
syn match wrlCall "\v<\h\w*\ze\s*\("
syn match wrlField "\v<\h\w*\ze\s*\=(\=)@!"

" Comments: `///` documents the item below.
syn keyword wrlTodo TODO FIXME XXX NOTE contained
syn match wrlComment "//.*$" contains=wrlTodo,@Spell
syn match wrlDocComment "///\(/\)\@!.*$" contains=wrlTodo,@Spell

hi def link wrlKwConditional Conditional
hi def link wrlKwOperator Operator
hi def link wrlKwBoolean Boolean
hi def link wrlKwConstant Constant
hi def link wrlKwInclude Include
hi def link wrlContextual Keyword
hi def link wrlProfileName Identifier
hi def link wrlDeclKind StorageClass
hi def link wrlDeclName Function
hi def link wrlNumber Number
hi def link wrlUnit Type
hi def link wrlDimsX Operator
hi def link wrlString String
hi def link wrlTextBlock String
hi def link wrlEscape SpecialChar
hi def link wrlBadEscape Error
hi def link wrlStdPath Include
hi def link wrlArrow Operator
hi def link wrlOperator Operator
hi def link wrlCall Function
hi def link wrlField Identifier
hi def link wrlComment Comment
hi def link wrlDocComment SpecialComment
hi def link wrlTodo Todo

let b:current_syntax = 'wrl'
