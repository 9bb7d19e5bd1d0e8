//! One run directory from a checked plan: start it, resume it, execute the plan in it, and
//! turn the runtime's problems into diagnostics — what `wrlc run` does for a plain run and for
//! each seed of a study (`commands/seeds.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;
use wrl_diagnostics::{Diagnostic, SourceMap};
use wrl_exec::{Executor, RunDir, RunError, RunOptions};
use wrl_plan::params::TypedPlan;
use wrl_plan::{NodeKind, Plan};

use crate::commands::planned::Planned;
use crate::commands::run_errors::{Origin, to_diagnostic};
use crate::global::{ErrorFormat, GlobalOpts};
use crate::render::emit;
use crate::{EXIT_OK, EXIT_USAGE, EXIT_USER, Io};

#[derive(Debug, Args)]
pub struct RunCmd {
    /// The recipe to run
    #[arg(value_name = "FILE", required_unless_present = "resume")]
    pub file: Option<PathBuf>,
    /// Apply a profile of the recipe (e.g. `smoke`)
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Where to write the run (default: runs/<recipe>[-<profile>])
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Override a value, checked like a profile override: `--set online.group=8`
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
    /// Resume a run that was stopped or killed, from its last commit
    #[arg(long, value_name = "DIR", conflicts_with_all = ["file", "profile", "set", "out"])]
    pub resume: Option<PathBuf>,
    /// Chromium binary (default: $WRL_CHROMIUM, else the headless shell, else `chromium`)
    #[arg(long, value_name = "PATH")]
    pub chromium: Option<PathBuf>,
    /// Check, lower and preflight the recipe, print what would run, and stop: no run
    /// directory, no browser, no training. With `--resume DIR`: check that the run can go on
    /// (its state, plan and cached inputs), changing nothing
    #[arg(long)]
    pub dry_run: bool,
    /// The lock to compare what the run reads with (default: FILE.lock beside the recipe, when
    /// there is one; see `wrlc lock`)
    #[arg(long, value_name = "LOCK", conflicts_with = "resume")]
    pub lock: Option<PathBuf>,
    /// Refuse to start when a file the run reads differs from the lock (E0542), instead of
    /// warning (W0240)
    #[arg(long, conflicts_with = "resume")]
    pub locked: bool,
    /// Run N seeded copies one after another, each its own run directory `DIR/seed-K` under
    /// the study directory `--out DIR`, and aggregate their evaluations in `DIR/study.json`
    #[arg(long, value_name = "N", conflicts_with = "resume",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub seeds: Option<u64>,
    /// The first seed of `--seeds` (seeds K, K+1, …): seeds no one has tuned to
    #[arg(long, value_name = "K", requires = "seeds", default_value_t = 0)]
    pub seed_offset: u64,
    /// Run this variant of the recipe (`variant NAME { … }`, on top of the profile) alone, as
    /// a plain run, or a study of it alone with `--seeds`
    #[arg(long, value_name = "NAME", conflicts_with_all = ["resume", "variants"])]
    pub variant: Option<String>,
    /// With `--seeds`: the variants run beside the recipe with the same seeds, each its own
    /// `DIR/NAME/seed-K` (default: those the profile's claims compare and those no claim
    /// compares; `base` is the recipe)
    #[arg(
        long,
        value_name = "A,B",
        value_delimiter = ',',
        requires = "seeds",
        conflicts_with = "resume"
    )]
    pub variants: Option<Vec<String>>,
    /// Exit non-zero (E0550) when a claim of the recipe does not hold once the run (or every
    /// seed of the study) has finished
    #[arg(long)]
    pub require_claims: bool,
}

/// Reports runtime problems as diagnostics (placed in the recipe when there is one); with
/// `refused`, the count of problems that kept the run from starting.
pub(crate) fn report(
    errs: &[RunError],
    planned: Option<&Planned>,
    refused: bool,
    global: &GlobalOpts,
    io: &mut Io,
) -> u8 {
    report_with(errs, planned, refused, EXIT_USER, global, io)
}

/// [`report`], exiting with `code`.
pub(crate) fn report_with(
    errs: &[RunError],
    planned: Option<&Planned>,
    refused: bool,
    code: u8,
    global: &GlobalOpts,
    io: &mut Io,
) -> u8 {
    let origin = planned.map(|p| Origin { recipe: &p.recipe, entry: p.entry });
    let sources = planned.map_or_else(SourceMap::new, |p| p.sources.clone());
    let mut diags: Vec<Diagnostic> =
        errs.iter().map(|e| to_diagnostic(e, origin.as_ref())).collect();
    // In the recipe's order, as `wrlc check` shows them; unplaced problems last.
    diags.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    emit(&diags, &sources, global.error_format, io);
    if refused && global.error_format == ErrorFormat::Human {
        let _ = writeln!(
            io.err,
            "refused before starting: {} {}",
            errs.len(),
            if errs.len() == 1 { "problem" } else { "problems" }
        );
    }
    code
}

/// Creates the run directory `out` of a new run with seed offset `seed_offset` (the plan, the
/// lock of its inputs `inputs`, its seed) and runs it.
#[allow(clippy::too_many_arguments)]
pub(crate) fn start(
    typed: &TypedPlan<'_>,
    out: &Path,
    inputs: &str,
    seed_offset: u64,
    cmd: &RunCmd,
    p: &Planned,
    global: &GlobalOpts,
    io: &mut Io,
) -> u8 {
    let created = RunDir::create(out, &wrl_plan::render_json(typed.plan)).map_err(RunError::from);
    let run = match created {
        Ok(run) => run,
        Err(e) => return report_with(&[e], Some(p), false, EXIT_USAGE, global, io),
    };
    // What this run reads, for anyone who reruns it (`wrlc run --lock RUN/inputs.lock.json`).
    let mut written = run.write_file("inputs.lock.json", inputs.as_bytes());
    // A seeded copy records its seed, which a resume reads back; a plain run records none.
    if seed_offset != 0 && written.is_ok() {
        let text = wrl_exec::study::seed_file_text(seed_offset);
        written = run.write_file(wrl_exec::study::SEED_FILE, text.as_bytes());
    }
    if let Err(e) = written {
        return report_with(&[RunError::from(e)], Some(p), false, EXIT_USAGE, global, io);
    }
    // The new run stays open (and locked) from its creation to its end.
    execute(typed, out, Some(run), seed_offset, cmd, Some(p), global, io)
}

/// The lock of what the run reads, compared with the recipe's lock: its differences are
/// printed as warnings (W0240), or refuse the run with `--locked` (E0542); a lock that cannot
/// be read refuses it (E0541).
pub(crate) fn check_lock(
    file: &Path,
    typed: &TypedPlan<'_>,
    cmd: &RunCmd,
    global: &GlobalOpts,
    io: &mut Io,
) -> Result<wrl_exec::inputs::Lock, u8> {
    use crate::commands::lock::{differences, lock_now, recipe_lock};
    let fail = |d: Diagnostic, io: &mut Io| {
        emit(&[d], &SourceMap::new(), global.error_format, io);
        EXIT_USER
    };
    let now = lock_now(typed).map_err(|d| fail(d, io))?;
    let Some((path, locked)) = recipe_lock(file, cmd.lock.as_deref()).map_err(|d| fail(d, io))?
    else {
        return Ok(now);
    };
    let diags = differences(&path, &locked, &now, cmd.locked);
    if !diags.is_empty() {
        emit(&diags, &SourceMap::new(), global.error_format, io);
        if cmd.locked {
            return Err(EXIT_USER);
        }
    }
    Ok(now)
}

pub(crate) fn resume(dir: &Path, cmd: &RunCmd, global: &GlobalOpts, io: &mut Io) -> u8 {
    // Read only: a dry run changes nothing, and a real one opens the run once it starts.
    // A directory that is not a run (or cannot be read) is the command's mistake: exit 2.
    let committed = match RunDir::inspect(dir) {
        Ok(c) => c,
        Err(e @ (wrl_exec::RunDirError::NotARun { .. } | wrl_exec::RunDirError::Io { .. })) => {
            return report_with(&[RunError::from(e)], None, false, EXIT_USAGE, global, io);
        }
        Err(e) => return report(&[RunError::from(e)], None, true, global, io),
    };
    // Another process writing this run now: refused before anything else, naming it.
    if !cmd.dry_run
        && let Some(pid) = wrl_exec::rundir::lock::Lock::holder(dir)
    {
        let busy = wrl_exec::RunDirError::Busy { path: dir.display().to_string(), pid };
        return report_with(&[RunError::from(busy)], None, false, EXIT_USAGE, global, io);
    }
    let plan = match RunDir::read_plan(dir) {
        Ok(json) => match wrl_plan::parse_json(&json) {
            Ok(plan) => plan,
            Err(e) => {
                let e = RunError::new(
                    wrl_exec::Fault::PlanFormat,
                    format!("`{}` cannot be read: {e}", dir.join("plan.json").display()),
                )
                .help("the run was written by another wrlc; resume it with that wrlc");
                return report(&[e], None, true, global, io);
            }
        },
        Err(e) => return report(&[RunError::from(e)], None, true, global, io),
    };
    let typed = match wrl_exec::preflight(&plan, cmd.chromium.as_deref()) {
        Ok(t) => t,
        Err(errs) => return report(&errs, None, true, global, io),
    };
    if let Err(e) = wrl_exec::executor::check_cached_inputs(dir, &typed) {
        return report(&[e], None, true, global, io);
    }
    if cmd.dry_run {
        // The checkpoint the resume would load, checked as the resume checks it.
        match wrl_exec::rundir::fallback::usable(dir, &committed) {
            Ok(wrl_exec::rundir::fallback::Usable::Last) => {}
            Ok(wrl_exec::rundir::fallback::Usable::Previous { why }) => {
                let _ = writeln!(
                    io.err,
                    "warning: the last checkpoint is damaged ({why}); a resume goes back to the \
                     previous commit"
                );
            }
            Err(e) => return report(&[RunError::from(e)], None, true, global, io),
        }
        let _ = writeln!(io.out, "{}", dry_run_resume(&plan, &committed, dir));
        return EXIT_OK;
    }
    let seed_offset = wrl_exec::study::seed_offset_of(dir);
    execute(&typed, dir, None, seed_offset, cmd, None, global, io)
}

/// Runs the decoded plan into the run directory `root` (`created`, or opened here to resume)
/// until it finishes, fails or is stopped, every seed it draws mixed with `seed_offset`.
#[allow(clippy::too_many_arguments)]
fn execute(
    typed: &TypedPlan<'_>,
    root: &Path,
    created: Option<RunDir>,
    seed_offset: u64,
    cmd: &RunCmd,
    planned: Option<&Planned>,
    global: &GlobalOpts,
    io: &mut Io,
) -> u8 {
    // The executor writes its progress lines itself: as text (a bar on a terminal), as the
    // stream's `log` objects under `--error-format json`, and not at all under `sarif`, whose
    // standard error is one SARIF log (metrics.jsonl has every figure).
    let (progress, json_lines) = match global.error_format {
        ErrorFormat::Human => (true, false),
        ErrorFormat::Json => (true, true),
        ErrorFormat::Sarif => (false, false),
    };
    // Set on SIGINT or SIGTERM: a stage inside a step (SFT) stops at its next one, committed.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let opts = RunOptions {
        chromium: cmd.chromium.clone(),
        progress,
        json_lines,
        stop: Some(stop.clone()),
        seed_offset,
    };
    let _ = writeln!(io.err, "running {} into {}", typed.plan.recipe, root.display());
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            let _ = writeln!(io.err, "error: cannot start the async runtime: {e}");
            return EXIT_USAGE;
        }
    };
    // SIGTERM (a scheduler, `kill`) stops the run as SIGINT does, with the same message; its
    // handler is in place before the run directory is locked, so a signal sent once the lock
    // is seen cannot end the process unannounced.
    let term = {
        let _in = rt.enter();
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok()
    };
    // A resume goes back to the previous commit when the last checkpoint is damaged. Refused
    // here (held by another process, damaged beyond the previous commit), a resume would fail
    // the same way again: the error's help says what to do instead.
    let mut run = match created {
        Some(run) => run,
        None => match RunDir::resume_usable(root) {
            Ok((run, warning)) => {
                if let Some(w) = warning {
                    let _ = writeln!(io.err, "warning: {w}");
                }
                run
            }
            Err(e) => return report_with(&[e.into()], planned, false, EXIT_USAGE, global, io),
        },
    };
    // The signals are awaited on the runtime's workers, not beside the run: a stage that does
    // not yield between its steps (SFT) still sees the flag and stops at the next step; a run
    // waiting at an `await` is dropped there (its last commit kept).
    let signalled = rt.spawn(async move {
        let term = async {
            match term {
                Some(mut s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term => {}
        }
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    let result = rt.block_on(async {
        let exec = Executor::new(typed, &mut run, opts);
        tokio::select! {
            r = exec.run() => r,
            _ = signalled => Ok(None),
        }
    });
    // Its browsers go with the runtime; their folders are removed before the process exits.
    drop(rt);
    wrl_browser::settle(std::time::Duration::from_secs(10));
    match result {
        Ok(Some(summary)) => {
            let _ = writeln!(io.err, "{}", summary.describe());
            let _ = write!(io.err, "{}", wrl_exec::study::claims::lines(&summary.claims));
            let _ = writeln!(io.out, "{}", root.join("report.html").display());
            EXIT_OK
        }
        Ok(None) => {
            let _ = writeln!(io.err, "stopped; resume with `wrlc run --resume {}`", root.display());
            130
        }
        Err(e) => {
            // A fresh run can still place a problem in its recipe; a resumed one has no source.
            // A damaged file: resuming would fail the same way; its help says what to do.
            let again = !matches!(e.fault, wrl_exec::Fault::Damaged);
            report(&[e], planned, false, global, io);
            if again {
                let _ = writeln!(
                    io.err,
                    "the run stopped; what was committed is kept: `wrlc run --resume {}`",
                    root.display()
                );
            }
            EXIT_USAGE
        }
    }
}

/// What a resumed run would do, in one line: how far it is, and the directory.
fn dry_run_resume(plan: &Plan, committed: &wrl_exec::Committed, dir: &Path) -> String {
    let done = committed.cursor.done.len();
    let work = plan
        .nodes
        .iter()
        .filter(|n| matches!(n.kind, NodeKind::Sft | NodeKind::RlPhase | NodeKind::Eval))
        .count();
    format!(
        "dry run: `{}` can be resumed: {done} of {work} stages and evaluations done; it would go on in {}",
        plan.recipe,
        dir.display()
    )
}

/// What a dry run would run, in one line: the recipe, its stages by kind, and the directory.
pub(crate) fn dry_run_summary(plan: &Plan, out: &Path) -> String {
    let mut counts: BTreeMap<NodeKind, usize> = BTreeMap::new();
    for n in &plan.nodes {
        *counts.entry(n.kind).or_default() += 1;
    }
    let parts: Vec<String> = counts
        .iter()
        .map(|(k, n)| {
            let (one, many) = match k {
                NodeKind::LoadModel => ("model", "models"),
                NodeKind::LoadDataset => ("dataset", "datasets"),
                NodeKind::Env => ("environment", "environments"),
                NodeKind::Agent => ("agent", "agents"),
                NodeKind::Reward => ("reward", "rewards"),
                NodeKind::Sft => ("SFT stage", "SFT stages"),
                NodeKind::RlPhase => ("RL phase", "RL phases"),
                NodeKind::Checkpoint => ("checkpoint", "checkpoints"),
                NodeKind::Eval => ("evaluation", "evaluations"),
            };
            format!("{n} {}", if *n == 1 { one } else { many })
        })
        .collect();
    let profile = plan.profile.as_ref().map(|p| format!(" (profile {p})")).unwrap_or_default();
    format!(
        "dry run: `{}`{profile} is ready to run: {}; it would write {}",
        plan.recipe,
        parts.join(", "),
        out.display()
    )
}

/// Where a run goes without `--out`: `runs/<recipe stem>[-<profile>]`.
pub(crate) fn default_out(file: &Path, profile: Option<&str>) -> PathBuf {
    let stem =
        file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "run".into());
    let name = match profile {
        Some(p) => format!("{stem}-{p}"),
        None => stem,
    };
    PathBuf::from("runs").join(name)
}
