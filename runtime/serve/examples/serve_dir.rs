//! Serves a checkpoint directory on a free loopback port and prints the base URL, like
//! `wrlc serve DIR --addr 127.0.0.1:0 --model-name tiny`, without building the whole CLI
//! (`tests/scripts/openai-client.sh --no-cli`).

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: serve_dir CHECKPOINT");
        return ExitCode::from(2);
    };
    let trainer = match wrl_serve::load_policy(std::path::Path::new(&dir)) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let opts = wrl_serve::ServeOptions {
        addr: "127.0.0.1:0".into(),
        model_name: "tiny".into(),
        ..wrl_serve::ServeOptions::default()
    };
    let server = match wrl_serve::Server::bind(trainer, &opts).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("serving policy at http://{}/v1", server.local_addr());
    match server.run(async { std::future::pending::<()>().await }).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
