//! The command line as clap reads it: the global options and one variant per subcommand, each
//! holding the arguments its command declares beside its `run` (clap derive).

use clap::{Parser, Subcommand};

use crate::global::GlobalOpts;

#[derive(Debug, Parser)]
#[command(
    name = "wrlc",
    version,
    about = "The wrl compiler: check, plan and run recipes for training web agents",
    long_about = "wrlc checks a whole .wrl recipe before anything runs, lowers it to an \
                  execution plan, and runs that plan on real Chromium with a candle trainer.",
    after_help = "Examples:\n  wrlc check recipes/\n  wrlc explain E0103"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalOpts,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check recipes: every error at once, with codes, places and fixes
    #[command(
        after_help = "Examples:\n  wrlc check recipes/quickstart.wrl\n  wrlc check recipes/ \
                            --error-format json\n  wrlc check recipes/openwebrl.wrl --profile smoke\n\nWithout \
                            --profile, the recipe rules also run on every profile of each recipe \
                            (a mistake only a profile makes names it).\n\nExit status: 0 clean (warnings allowed), 1 errors \
                            in the input, 2 usage or internal error."
    )]
    Check(crate::commands::check::CheckCmd),
    /// Explain a diagnostic code: what it means, an example and the fix
    #[command(after_help = "Example:\n  wrlc explain E0103")]
    Explain(crate::explain::ExplainCmd),
    /// Show the execution plan: the stages a recipe runs, their parameters and hand-offs
    #[command(
        after_help = "Examples:\n  wrlc plan recipes/openwebrl.wrl\n  wrlc plan recipes/openwebrl.wrl \
                      --profile smoke --format json\n  wrlc plan recipes/openwebrl.wrl --format dot \
                      | dot -Tsvg > plan.svg\n\nExit status: 0 plan printed, 1 errors in the recipe \
                      (nothing on stdout), 2 usage or internal error."
    )]
    Plan(crate::commands::plan::PlanCmd),
    /// Estimate what a recipe costs before it runs: trajectories, env steps, tokens, judge
    /// calls, and each trained model's parameters and memory per dtype
    #[command(after_help = "Examples:\n  wrlc estimate recipes/openwebrl.wrl\n  wrlc estimate \
                      recipes/openwebrl.wrl --format json --prices prices.json\n  wrlc estimate \
                      recipes/quickstart.wrl --set 'policy=hf(\"./my-qwen3\") { family = qwen3 }'\n\nPrices (JSON, every \
                      field optional): {\"judge_call\": 0.01, \"judge_call_by_model\": {\"gpt-4.1\": \
                      0.02}, \"per_million_tokens\": 0.5, \"gpu_hour\": 3.0, \
                      \"gpu_hours_per_million_tokens\": 0.2}; see docs/plan-format.md.\n\nExit status: 0 \
                      estimate printed, 1 errors in the recipe, 2 usage or internal error.")]
    Estimate(crate::commands::estimate::EstimateCmd),
    /// Compare two recipes (or the recipes two runs ran) by their resolved plans: every field
    /// that differs, where each value came from, and the estimate's figures that change
    #[command(
        after_help = "Examples:\n  wrlc diff recipes/openwebrl.wrl recipes/openwebrl-8b.wrl\n  \
                      wrlc diff recipes/openwebrl.wrl recipes/openwebrl.wrl --profile-b smoke\n  wrlc \
                      diff runs/a runs/b --format json\n\nEach value is followed by where it came \
                      from: a stdlib default, the recipe, a profile or --set (a run directory's plan \
                      does not say: `run`). JSON: docs/diff.md.\n\nExit status: 0 the same plan, 1 \
                      they differ, 2 an input that cannot be read or does not check."
    )]
    Diff(crate::commands::diff::DiffCmd),
    /// Write the lock of what a recipe's run reads (datasets, model files, corpora with their
    /// sizes and SHA-256), to share beside the recipe
    #[command(after_help = "Examples:\n  wrlc lock recipes/quickstart.wrl\n  wrlc lock \
                      recipes/openwebrl.wrl --profile smoke --out openwebrl-smoke.lock\n\n`wrlc \
                      run` compares the files it reads with `FILE.lock` beside the recipe (or \
                      `--lock LOCK`): a changed, missing or new file is a warning (W0240), an \
                      error with `--locked` (E0542). Hashes are cached by size and modification \
                      time (`$WRL_CACHE_DIR`, else ~/.cache/wrl). See docs/run.md.\n\nExit status: \
                      0 written, 1 errors in the recipe or an unreadable input, 2 usage error.")]
    Lock(crate::commands::lock::LockCmd),
    /// Format recipes in the one canonical layout (comments kept; meaning never changes)
    #[command(
        after_help = "Examples:\n  wrlc fmt recipes/\n  wrlc fmt --check recipes/   # CI: list \
                      files that would change\n\nExit status: 0 formatted (or already formatted), 1 \
                      syntax errors or, with --check, files that would change, 2 usage error."
    )]
    Fmt(crate::commands::fmt::FmtCmd),
    /// Rewrite fields renamed or removed since a recipe was written to what replaced them
    /// (comments and layout kept)
    #[command(
        after_help = "Examples:\n  wrlc migrate recipes/old.wrl\n  wrlc migrate --check recipes/   # \
                      CI: list files that still write old fields\n  wrlc fmt --migrate recipes/   # \
                      migrate, then format\n\nEach field the table in docs/language.md \
                      (\"Migrations\") names is rewritten in place; one no edit can migrate is \
                      reported as E0311 and left as written.\n\nExit status: 0 migrated (or \
                      nothing to migrate), 1 syntax errors, fields left for a hand or, with \
                      --check, files that would change, 2 usage error."
    )]
    Migrate(crate::commands::migrate::MigrateCmd),
    /// Run a recipe: datasets, SFT, rollouts in real Chromium, rewards, RL updates, evaluation
    #[command(
        after_help = "Examples:\n  wrlc run recipes/quickstart.wrl\n  wrlc run recipes/openwebrl.wrl \
                      --profile smoke --out runs/owrl\n  wrlc run recipes/quickstart.wrl --set \
                      online.phases[0].iters=2\n  wrlc run --dry-run recipes/openwebrl.wrl --profile \
                      smoke\n  wrlc run --resume runs/quickstart\n\nBefore any work, the preflight \
                      refuses what this runtime cannot run (E0500-E0505: `unknown` values, missing or \
                      malformed data, no Chromium, unsupported models, a run directory in the way); \
                      --dry-run stops there and prints what would run.\n\nThe run directory \
                      holds plan.json, trajectories.jsonl, metrics.jsonl, checkpoints/, summary.json and \
                      report.html.\n\nExit status: 0 finished (or, with --dry-run, ready to run), 1 \
                      errors in the recipe or refused before starting, 2 usage or runtime error, 130 \
                      stopped by Ctrl-C (resumable)."
    )]
    Run(crate::commands::run::RunCmd),
    /// Explore the sandbox web: serve it, print generated tasks, run the scripted expert
    #[command(
        subcommand,
        after_help = "Examples:\n  wrlc sandbox serve\n  wrlc sandbox tasks --count 5 \
                      --split test\n  wrlc sandbox expert --count 20 --out /tmp/demos"
    )]
    Sandbox(wrl_browser::cli::SandboxCommand),
    /// Build a run's report again from its directory, or compare several runs on one page
    #[command(
        after_help = "Examples:\n  wrlc report runs/quickstart\n  wrlc report runs/a runs/b --out \
                      compare.html\n\nOne run: its report.html is rebuilt from what it committed \
                      (finished, stopped or still running). Several: one page with each run's \
                      figures, the evaluations side by side, the configuration parameters that \
                      differ, and every curve with a line per run. The page is self-contained \
                      HTML (no network, no JavaScript); its path is printed on stdout.\n\nExit \
                      status: 0 written, 2 a run that cannot be read or a usage error."
    )]
    Report(crate::commands::report::ReportCmd),
    /// Serve a trained policy over an OpenAI-compatible HTTP API (chat completions, models)
    #[command(
        after_help = "Examples:\n  wrlc serve runs/quickstart/checkpoints/sft\n  wrlc serve \
                      runs/quickstart --addr 127.0.0.1:0 --model-name judge\n  curl \
                      http://127.0.0.1:8000/v1/chat/completions -d '{\"messages\": [{\"role\": \
                      \"user\", \"content\": \"hi\"}], \"max_tokens\": 32}'\n\nA run directory \
                      serves its latest committed checkpoint; a Hugging Face model directory or \
                      cached hub id (`wrlc serve Qwen/Qwen3-0.6B`) serves that base model. The \
                      first line of stdout is the \
                      base URL (`serving policy at http://HOST:PORT/v1`). See docs/serve.md.\n\nExit \
                      status: 0 stopped by Ctrl-C, 2 unreadable checkpoint, refused address or \
                      runtime error."
    )]
    Serve(crate::commands::serve::ServeCmd),
    /// Lower a recipe to another engine's job: verl 0.9.1 configs, data, launch scripts and a
    /// portability report of every plan field
    #[command(
        after_help = "Examples:\n  wrlc lower recipes/openwebrl.wrl --to verl --out jobs/openwebrl\n  wrlc lower recipes/openwebrl.wrl --to verl --profile smoke --out jobs/smoke --allow-unmapped\n  wrlc lower recipes/webdancer.wrl --to verl --dry-run --allow-unmapped\n\nEach RL phase becomes one verl run, later phases resumed from the previous one's last checkpoint; episodes run through `wrlc env serve` and the wrl agent loop (integrations/verl). A field verl cannot run as the recipe asks is refused at its place in the recipe (E0601-E0602, E0503) unless --allow-unmapped. See docs/scale.md.\n\nExit status: 0 written (or, with --dry-run, the table printed), 1 errors in the recipe or refused, 2 usage error."
    )]
    Lower(crate::commands::lower::LowerCmd),
    /// Serve a recipe's environment over HTTP: episodes in its browsers or search API, scored by
    /// its reward
    #[command(subcommand)]
    Env(crate::commands::env::EnvCommand),
    /// Run the language server over stdio: diagnostics, hover, navigation, completion, hints
    #[command(after_help = "Editors start it themselves (see editors/README.md); it speaks LSP \
                      on stdin/stdout and logs to stderr.\n\nExamples:\n  wrlc lsp\n  wrlc lsp \
                      --error-pages https://example.org/wrl/docs/errors/\n\nExit status: 0 after \
                      a `shutdown` request, 1 when the client exits without one, 2 internal error.")]
    Lsp(crate::commands::lsp::LspCmd),
}
