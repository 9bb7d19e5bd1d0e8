" .wrl recipes (wrl: training web agents). Vim's own filetype.vim maps *.wrl to VRML, so this
" overrides it with `set filetype` rather than `setfiletype`.
autocmd BufRead,BufNewFile *.wrl set filetype=wrl
