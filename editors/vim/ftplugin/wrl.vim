" Editing settings for .wrl recipes: `//` comments, two-space indentation (the `wrlc fmt` layout).
if exists('b:did_ftplugin')
  finish
endif
let b:did_ftplugin = 1

setlocal commentstring=//\ %s
setlocal comments=:///,://
setlocal formatoptions-=t formatoptions+=croql
setlocal expandtab shiftwidth=2 softtabstop=2 tabstop=2
setlocal iskeyword=@,48-57,_
setlocal suffixesadd=.wrl

let b:undo_ftplugin = 'setlocal commentstring< comments< formatoptions< expandtab< shiftwidth< softtabstop< tabstop< iskeyword< suffixesadd<'
