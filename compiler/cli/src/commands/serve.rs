//! `wrlc serve CHECKPOINT [--base MODEL] [--addr ADDR] [--model-name NAME] [--max-concurrency N]
//! [--max-connections N] [--idle-timeout SECS] [--public]`: serves a trained policy over an
//! OpenAI-compatible HTTP API until Ctrl-C, so judges and frozen agent modules can run locally.
//! The server itself is the `wrl-serve` crate; refusals are diagnostics (human or JSON).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use wrl_diagnostics::{Diagnostic, SourceMap};
use wrl_exec::RunError;
use wrl_serve::{
    Limits, ServeError, ServeOptions, Served, Server, check_addr, load_adapter, load_policy,
    resolve_checkpoint,
};

use crate::global::GlobalOpts;
use crate::render::emit;
use crate::{EXIT_OK, EXIT_USAGE, Io};

#[derive(Debug, Args)]
pub struct ServeCmd {
    /// A checkpoint directory (`runs/<run>/checkpoints/<name>`), a run directory to serve its
    /// latest committed checkpoint, a Hugging Face model directory or cached hub id, or a PEFT
    /// adapter directory (served over its base model)
    #[arg(value_name = "CHECKPOINT")]
    pub checkpoint: PathBuf,
    /// The base model a PEFT adapter directory is served over (a model directory or cached hub
    /// id; default: the one its `adapter_config.json` names)
    #[arg(long, value_name = "MODEL")]
    pub base: Option<PathBuf>,
    /// Address to listen on; port 0 picks a free port (the first line of stdout names it)
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:8000")]
    pub addr: String,
    /// The model id clients send and `/v1/models` lists (default: the checkpoint's name)
    #[arg(long, value_name = "NAME")]
    pub model_name: Option<String>,
    /// Requests admitted at once (one samples, the others wait); more are answered 429
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_concurrency: u32,
    /// Connections served at once; more are answered 503 and closed
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    /// Seconds a connection may stay without sending a complete request (new, kept alive, or
    /// trickling its head or body) before it is closed
    #[arg(long, value_name = "SECS", default_value_t = 10.0, value_parser = positive_secs)]
    pub idle_timeout: f64,
    /// Allow a non-loopback address (there is no authentication: anyone who reaches the port
    /// can use the policy)
    #[arg(long)]
    pub public: bool,
}

/// Prints a refusal (human or JSON, as asked) and gives the usage exit status.
fn fail(d: Diagnostic, global: &GlobalOpts, io: &mut Io) -> u8 {
    emit(&[d], &SourceMap::new(), global.error_format, io);
    EXIT_USAGE
}

fn positive_secs(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x > 0.0 && x <= 86_400.0 => Ok(x),
        _ => Err(format!("`{s}` is not a number of seconds between 0 and 86400")),
    }
}

pub fn run(cmd: ServeCmd, global: &GlobalOpts, io: &mut Io) -> u8 {
    if let Err(e) = check_addr(&cmd.addr, cmd.public) {
        return fail(serve_diagnostic(&e), global, io);
    }
    let resolved = match resolve_checkpoint(&cmd.checkpoint) {
        Ok(r) => r,
        Err(e) => return fail(run_diagnostic(&e), global, io),
    };
    if let Some(run) = &resolved.run {
        let _ = writeln!(
            io.err,
            "run `{}`: latest committed checkpoint is `{}`",
            run.display(),
            resolved.dir.display()
        );
    }
    if cmd.base.is_some() && resolved.kind != Served::Adapter {
        let d = Diagnostic::new(
            crate::global::USAGE_CODE,
            format!(
                "`--base` is for a PEFT adapter directory; `{}` is not one (it has no \
                 `adapter_config.json`)",
                cmd.checkpoint.display()
            ),
        )
        .help("leave out `--base`, or give the adapter directory (a run's `…/adapter/`)");
        return fail(d, global, io);
    }
    let _ = writeln!(io.err, "loading `{}`", resolved.dir.display());
    let loaded = match resolved.kind {
        Served::Adapter => load_adapter(&resolved.dir, cmd.base.as_deref()).map(|(t, base)| {
            let _ = writeln!(io.err, "over the base model `{}`", base.display());
            t
        }),
        Served::Checkpoint | Served::BaseModel => load_policy(&resolved.dir),
    };
    let trainer = match loaded {
        Ok(t) => t,
        Err(e) => return fail(run_diagnostic(&e), global, io),
    };
    let step = trainer.step();
    let hub_id = (resolved.kind == Served::BaseModel && !cmd.checkpoint.exists())
        .then(|| cmd.checkpoint.display().to_string());
    let model_name = cmd.model_name.clone().or(hub_id).unwrap_or_else(|| {
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
        recipe: wrl_trainer::Trainer::recipe_of(&resolved.dir),
    };
    let limits = Limits {
        max_connections: cmd.max_connections as usize,
        idle_timeout: Duration::from_secs_f64(cmd.idle_timeout),
    };
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            let _ = writeln!(io.err, "error: cannot start the async runtime: {e}");
            return EXIT_USAGE;
        }
    };
    let server = match rt.block_on(Server::bind_with(trainer, &opts, limits)) {
        Ok(s) => s,
        Err(e) => return fail(serve_diagnostic(&e), global, io),
    };
    let _ = writeln!(io.out, "serving policy at http://{}/v1", server.local_addr());
    let _ = io.out.flush();
    let _ = writeln!(
        io.err,
        "model `{model_name}` (step {step}); POST /v1/chat/completions, POST /v1/completions, \
         GET /v1/models, GET /health; Ctrl-C stops"
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
        Err(e) => fail(serve_diagnostic(&e), global, io),
    }
}

/// A checkpoint refusal (E0503, E0505) as a diagnostic without a place in a recipe.
fn run_diagnostic(e: &RunError) -> Diagnostic {
    crate::commands::run_errors::to_diagnostic(e, None)
}

/// An address refusal as a diagnostic (E0530).
fn serve_diagnostic(e: &ServeError) -> Diagnostic {
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
    Diagnostic::new("E0530", e.to_string()).maybe_help(help.map(str::to_string))
}
