" .wrl recipes (wrl: training web agents)
autocmd BufRead,BufNewFile *.wrl setfiletype wrl
