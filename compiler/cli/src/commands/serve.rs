//! `wrlc serve CHECKPOINT [--addr ADDR] [--model-name NAME] [--max-concurrency N] [--public]`:
//! serves a trained policy over an OpenAI-compatible HTTP API until Ctrl-C, so judges and frozen
//! agent modules can run locally. The server itself is the `wrl-serve` crate.

use std::path::PathBuf;

use clap::Args;
use wrl_exec::RunError;
use wrl_serve::{ServeError, ServeOptions, Server, check_addr, load_policy, resolve_checkpoint};

use crate::{EXIT_OK, EXIT_USAGE, Io};

#[derive(Debug, Args)]
pub struct ServeCmd {
    /// A checkpoint directory (`runs/<run>/checkpoints/<name>`), or a run directory to serve its
    /// latest committed checkpoint
    #[arg(value_name = "CHECKPOINT")]
    pub checkpoint: PathBuf,
    /// Address to listen on; port 0 picks a free port (the first line of stdout names it)
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:8000")]
    pub addr: String,
    /// The model id clients send and `/v1/models` lists (default: the checkpoint's name)
    #[arg(long, value_name = "NAME")]
    pub model_name: Option<String>,
    /// Requests admitted at once (one samples, the others wait); more are answered 429
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_concurrency: u32,
    /// Allow a non-loopback address (there is no authentication: anyone who reaches the port
    /// can use the policy)
    #[arg(long)]
    pub public: bool,
}

pub fn run(cmd: ServeCmd, io: &mut Io) -> u8 {
    if let Err(e) = check_addr(&cmd.addr, cmd.public) {
        print_serve_error(&e, io);
        return EXIT_USAGE;
    }
    let resolved = match resolve_checkpoint(&cmd.checkpoint) {
        Ok(r) => r,
        Err(e) => {
            print_run_error(&e, io);
            return EXIT_USAGE;
        }
    };
    if let Some(run) = &resolved.run {
        let _ = writeln!(
            io.err,
            "run `{}`: latest committed checkpoint is `{}`",
            run.display(),
            resolved.dir.display()
        );
    }
    let _ = writeln!(io.err, "loading `{}`", resolved.dir.display());
    let trainer = match load_policy(&resolved.dir) {
        Ok(t) => t,
        Err(e) => {
            print_run_error(&e, io);
            return EXIT_USAGE;
        }
    };
    let step = trainer.step();
    let model_name = cmd.model_name.clone().unwrap_or_else(|| {
        resolved
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "policy".into())
    });
    let opts = ServeOptions {
        addr: cmd.addr.clone(),
        model_name: model_name.clone(),
        max_concurrency: cmd.max_concurrency as usize,
        public: cmd.public,
        fixed_created: None,
    };
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            let _ = writeln!(io.err, "error: cannot start the async runtime: {e}");
            return EXIT_USAGE;
        }
    };
    let server = match rt.block_on(Server::bind(trainer, &opts)) {
        Ok(s) => s,
        Err(e) => {
            print_serve_error(&e, io);
            return EXIT_USAGE;
        }
    };
    let _ = writeln!(io.out, "serving policy at http://{}/v1", server.local_addr());
    let _ = io.out.flush();
    let _ = writeln!(
        io.err,
        "model `{model_name}` (step {step}); POST /v1/chat/completions, GET /v1/models, GET \
         /health; Ctrl-C stops"
    );
    let result = rt.block_on(server.run(async {
        let _ = tokio::signal::ctrl_c().await;
        // Requests in flight finish first; a second Ctrl-C does not wait for them.
        tokio::spawn(async {
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(130);
            }
        });
    }));
    match result {
        Ok(()) => {
            let _ = writeln!(io.err, "stopped");
            EXIT_OK
        }
        Err(e) => {
            print_serve_error(&e, io);
            EXIT_USAGE
        }
    }
}

fn print_run_error(e: &RunError, io: &mut Io) {
    // `RunError`'s display: `E05xx: message` and, when known, a `help:` line.
    let _ = writeln!(io.err, "error: {e}");
}

fn print_serve_error(e: &ServeError, io: &mut Io) {
    let _ = writeln!(io.err, "error: {e}");
    let help = match e {
        ServeError::NotLoopback { .. } => Some(
            "pass `--public` to listen there; there is no authentication, so anyone who can \
             reach the port can use the policy",
        ),
        ServeError::BadAddr { .. } => Some("give HOST:PORT, e.g. `--addr 127.0.0.1:8000`"),
        ServeError::Bind { .. } => {
            Some("choose another port, or `--addr 127.0.0.1:0` for a free one")
        }
        ServeError::Serve(_) => None,
    };
    if let Some(h) = help {
        let _ = writeln!(io.err, "  help: {h}");
    }
}
