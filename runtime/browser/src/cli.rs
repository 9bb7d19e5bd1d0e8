//! `wrlc sandbox …`: the clap subcommand the CLI embeds, and its runner.
//!
//! ```ignore
//! #[derive(clap::Subcommand)]
//! enum Command { #[command(subcommand)] Sandbox(wrl_browser::cli::SandboxCommand), … }
//! // …
//! Command::Sandbox(cmd) => wrl_browser::cli::run(cmd),
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use wrl_sandbox::{Sandbox, Split};

use crate::allow::AllowList;
use crate::pool::{BrowserPool, PoolCfg};
use crate::runner;

/// `wrlc sandbox …` subcommands.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum SandboxCommand {
    /// Serve the sandbox web (shop, forum, wiki, lab) on 127.0.0.1, print its URLs, and serve until Ctrl-C.
    Serve {
        /// Port (0 = any free port).
        #[arg(long, default_value_t = 8600)]
        port: u16,
        /// Content seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
    /// Print generated tasks as JSONL on stdout.
    Tasks {
        /// Number of tasks.
        #[arg(long, default_value_t = 10)]
        count: usize,
        /// `train` or `test`.
        #[arg(long, default_value = "train")]
        split: Split,
        /// Seed of the content and of the task draw.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Print question/answer pairs over the wiki instead (QA JSONL, `kind = qa`, for
        /// search agents): `{"id", "question", "answer"}` per line.
        #[arg(long)]
        qa: bool,
    },
    /// Run the scripted expert on generated tasks in real Chromium and write trajectories.
    Expert {
        /// Number of tasks.
        #[arg(long, default_value_t = 20)]
        count: usize,
        /// Output directory (created): tasks.jsonl and trajectories.jsonl.
        #[arg(long)]
        out: PathBuf,
        /// `train` or `test`.
        #[arg(long, default_value = "train")]
        split: Split,
        /// Seed of the content and of the task draw.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Concurrent episodes.
        #[arg(long, default_value_t = 4)]
        concurrency: usize,
        /// Chromium binary (default: $WRL_CHROMIUM, else the headless shell, else `chromium`).
        #[arg(long)]
        chromium: Option<PathBuf>,
    },
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

/// Runs a sandbox subcommand (builds its own tokio runtime). Exit codes: 0 success (for
/// `expert`, however many tasks were solved: see the last line), 2 usage or environment error
/// (message on stderr). Never panics on bad input.
pub fn run(cmd: SandboxCommand) -> ExitCode {
    match run_inner(cmd) {
        Ok(code) => code,
        Err(msg) => {
            eprintln!("error: {msg}");
            ExitCode::from(2)
        }
    }
}

fn run_inner(cmd: SandboxCommand) -> Result<ExitCode, String> {
    match cmd {
        SandboxCommand::Serve { port, seed } => {
            let rt = runtime()?;
            rt.block_on(async {
                let sb = Sandbox::start(seed, port)
                    .await
                    .map_err(|e| format!("wrlc sandbox serve: {e}"))?;
                println!("sandbox web (seed {seed}) at {}", sb.base_url());
                for (name, url) in sb.site_urls() {
                    println!("  {name:<6}{url}");
                }
                println!("press Ctrl-C to stop");
                let _ = std::io::stdout().flush();
                tokio::signal::ctrl_c()
                    .await
                    .map_err(|e| format!("cannot wait for Ctrl-C: {e}"))?;
                Ok(ExitCode::SUCCESS)
            })
        }
        SandboxCommand::Tasks { count, split, seed, qa } => {
            let content = wrl_sandbox::Content::new(seed);
            let lines: Vec<serde_json::Value> = if qa {
                wrl_sandbox::generate_qa(&content, split, count, seed)
                    .into_iter()
                    .map(|t| {
                        let answer = match &t.checker {
                            wrl_sandbox::Checker::Answer { expected, .. } => expected.clone(),
                            _ => String::new(),
                        };
                        serde_json::json!({"id": t.id, "question": t.goal, "answer": answer})
                    })
                    .collect()
            } else {
                wrl_sandbox::generate(&content, split, count, seed)
                    .into_iter()
                    .map(serde_json::to_value)
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("cannot serialize a task: {e}"))?
            };
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            for t in lines {
                let line = serde_json::to_string(&t)
                    .map_err(|e| format!("cannot serialize a task: {e}"))?;
                if writeln!(out, "{line}").is_err() {
                    break; // closed pipe (e.g. `| head`): stop quietly
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        SandboxCommand::Expert { count, out, split, seed, concurrency, chromium } => {
            std::fs::create_dir_all(&out)
                .map_err(|e| format!("cannot create output directory {}: {e}", out.display()))?;
            let rt = runtime()?;
            rt.block_on(expert(count, &out, split, seed, concurrency, chromium))
        }
    }
}

async fn expert(
    count: usize,
    out: &Path,
    split: Split,
    seed: u64,
    concurrency: usize,
    chromium: Option<PathBuf>,
) -> Result<ExitCode, String> {
    let sandbox = Arc::new(Sandbox::start(seed, 0).await.map_err(|e| e.to_string())?);
    let tasks = wrl_sandbox::generate(sandbox.content(), split, count, seed);
    let cfg = PoolCfg {
        chromium,
        max_concurrent: concurrency.max(1),
        allow: AllowList::only([format!("127.0.0.1:{}", sandbox.addr().port())]),
        ..PoolCfg::default()
    };
    let pool = BrowserPool::launch(cfg).await.map_err(|e| e.to_string())?;
    let tasks_path = out.join("tasks.jsonl");
    let traj_path = out.join("trajectories.jsonl");
    let mut task_lines = String::new();
    for t in &tasks {
        task_lines.push_str(&serde_json::to_string(t).map_err(|e| e.to_string())?);
        task_lines.push('\n');
    }
    std::fs::write(&tasks_path, task_lines)
        .map_err(|e| format!("cannot write {}: {e}", tasks_path.display()))?;
    let results = runner::run_expert(&pool, &sandbox, &tasks, concurrency).await;
    let mut lines = String::new();
    let mut solved = 0;
    for (t, r) in tasks.iter().zip(&results) {
        match r {
            Ok(traj) => {
                if traj.outcome.success {
                    solved += 1;
                } else {
                    eprintln!(
                        "unsolved {} ({}): {} {}",
                        t.id, t.template, traj.outcome.reason, traj.outcome.detail
                    );
                }
                lines.push_str(&serde_json::to_string(traj).map_err(|e| e.to_string())?);
                lines.push('\n');
            }
            Err(e) => eprintln!("failed {}: {e}", t.id),
        }
    }
    std::fs::write(&traj_path, lines)
        .map_err(|e| format!("cannot write {}: {e}", traj_path.display()))?;
    println!("wrote {} and {}", tasks_path.display(), traj_path.display());
    println!("solved: {solved}/{}", tasks.len());
    Ok(ExitCode::SUCCESS)
}
