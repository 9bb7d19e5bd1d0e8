" Headless check of the Vim syntax: run from editors/ by check.sh as
"   vim -Nu NONE -i NONE -es -S vim/test.vim
" It opens the TextMate fixture and asserts the syntax group at a few places; exits 1 on failure.
set runtimepath^=vim
filetype plugin on
syntax on
edit vscode/test/fixture.wrl
let s:errors = []
function! s:Expect(line, text, group) abort
  let col = stridx(getline(a:line), a:text) + 1
  if col == 0
    call add(s:errors, printf('line %d: no %s', a:line, a:text))
    return
  endif
  let got = synIDattr(synID(a:line, col, 1), 'name')
  if got !=# a:group
    call add(s:errors, printf('line %d %s: expected %s, got %s', a:line, a:text, a:group, got))
  endif
endfunction
call s:Expect(1, 'use', 'wrlKwInclude')
call s:Expect(1, 'std::tools', 'wrlStdPath')
call s:Expect(2, 'as', 'wrlContextual')
call s:Expect(3, '///', 'wrlDocComment')
call s:Expect(4, 'model', 'wrlDeclKind')
call s:Expect(4, 'policy', 'wrlDeclName')
call s:Expect(4, '\n', 'wrlEscape')
call s:Expect(5, '32', 'wrlNumber')
call s:Expect(5, 'tokens', 'wrlUnit')
call s:Expect(5, '// magnitude', 'wrlComment')
call s:Expect(8, '45s', 'wrlNumber')
call s:Expect(8, 'min ', 'wrlUnit')
call s:Expect(8, '%', 'wrlUnit')
call s:Expect(8, 'MB', 'wrlUnit')
call s:Expect(9, 'if', 'wrlKwConditional')
call s:Expect(12, 'module', 'wrlContextual')
call s:Expect(13, '->', 'wrlArrow')
call s:Expect(13, 'when', 'wrlKwConditional')
call s:Expect(13, 'limit', 'wrlContextual')
call s:Expect(15, 'tool ', 'wrlContextual')
call s:Expect(16, 'profile', 'wrlContextual')
call s:Expect(17, 'extends', 'wrlContextual')
call s:Expect(18, 'builtin', 'wrlContextual')
call s:Expect(20, 'not // a comment', 'wrlTextBlock')
if &commentstring !=# '// %s'
  call add(s:errors, 'commentstring is ' . &commentstring)
endif
if empty(s:errors)
  echo 'vim syntax: ok'
  qall!
endif
for e in s:errors
  echo e
endfor
cquit!
