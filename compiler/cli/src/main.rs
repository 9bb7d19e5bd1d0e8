//! The `wrlc` binary: a thin shell around `wrl_cli::main`.

fn main() -> std::process::ExitCode {
    wrl_cli::malloc::tune();
    wrl_cli::main()
}
