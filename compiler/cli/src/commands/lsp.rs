//! `wrlc lsp`: the language server over stdio (crate `wrl-lsp`); editors start it.

use crate::args::LspCmd;

pub fn run(cmd: LspCmd) -> u8 {
    // `--stdio` is what language clients pass; stdio is the only transport.
    let _ = cmd.stdio;
    if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        eprintln!(
            "wrlc lsp speaks the Language Server Protocol on stdin/stdout: an editor starts it \
             (editors/README.md says how); Ctrl-D ends it"
        );
    }
    let config = wrl_lsp::Config {
        debounce: std::time::Duration::from_millis(cmd.debounce_ms),
        pages: cmd.error_pages,
        stdlib: wrl_lsp::StdlibDocs::Virtual,
    };
    wrl_lsp::run_stdio(config)
}
