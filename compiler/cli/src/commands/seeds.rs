//! `wrlc run FILE --seeds N [--seed-offset K] --out DIR`: a study of N seeded copies of one run,
//! run one after another into `DIR/seed-K`, `DIR/seed-K+1`, … (seed K's run mixes K into every
//! seed it draws; seed 0 is the plain run), then `DIR/study.json` aggregating their
//! evaluations and a table of them. `--resume DIR` on a study goes on with its unfinished seeds
//! and skips the finished ones.

use std::path::Path;

use wrl_exec::study::claims::{ClaimResult, Verdict};
use wrl_exec::study::{self, Study};
use wrl_exec::{RunDir, RunError, RunView, Summary};
use wrl_plan::params::TypedPlan;

use crate::commands::planned::Planned;
use crate::commands::run_one::{RunCmd, report, report_with, resume, start};
use crate::global::GlobalOpts;
use crate::{EXIT_OK, EXIT_USAGE, Io};

/// Whether `dir` holds a study (its `study.json`) rather than a run.
pub fn is_study(dir: &Path) -> bool {
    dir.join(study::STUDY_FILE).is_file() && !dir.join("plan.json").exists()
}

/// Runs a new study of `n` seeds from `cmd.seed_offset` into `out`.
#[allow(clippy::too_many_arguments)] // the run's own arguments, and the study's count
pub fn fresh_study(
    typed: &TypedPlan<'_>,
    out: &Path,
    inputs: &str,
    n: u64,
    cmd: &RunCmd,
    p: &Planned,
    global: &GlobalOpts,
    io: &mut Io,
) -> u8 {
    let seeds: Vec<u64> = (0..n).map(|i| cmd.seed_offset + i).collect();
    let planned = study::planned(typed, &seeds);
    let written = std::fs::create_dir_all(out)
        .map_err(|e| {
            RunError::new(
                wrl_exec::Fault::RunDir,
                format!("cannot create `{}`: {e}", out.display()),
            )
        })
        .and_then(|()| study::write(out, &planned).map_err(RunError::from));
    if let Err(e) = written {
        return report_with(&[e], Some(p), false, EXIT_USAGE, global, io);
    }
    for &k in &seeds {
        let _ = writeln!(io.err, "seed {k} of the study in {}", out.display());
        let code = start(typed, &out.join(study::seed_dir(k)), inputs, k, cmd, p, global, io);
        if code != EXIT_OK {
            return stopped(out, code, io);
        }
    }
    finish(typed, out, &planned, cmd, global, io)
}

/// Goes on with the study in `dir`: resumes each unfinished seed, starts each seed not begun
/// (from the plan its other seeds ran), skips the finished ones, then aggregates.
pub fn resume_study(dir: &Path, cmd: &RunCmd, global: &GlobalOpts, io: &mut Io) -> u8 {
    let Some(planned) = study::read(dir) else {
        let e = RunError::new(
            wrl_exec::Fault::Damaged,
            format!("`{}` cannot be read", dir.join(study::STUDY_FILE).display()),
        );
        return report(&[e], None, true, global, io);
    };
    // Every seed runs the same plan: the first seed directory that holds one gives it.
    let plan_json = planned.runs.iter().find_map(|r| RunDir::read_plan(&dir.join(r)).ok());
    let Some(plan) = plan_json.and_then(|j| wrl_plan::parse_json(&j).ok()) else {
        let e = RunError::new(
            wrl_exec::Fault::RunDir,
            format!("no seed of the study in `{}` holds a plan to go on with", dir.display()),
        )
        .help("start the study again with `wrlc run FILE --seeds N --out DIR`");
        return report_with(&[e], None, false, EXIT_USAGE, global, io);
    };
    let typed = match wrl_exec::preflight(&plan, cmd.chromium.as_deref()) {
        Ok(t) => t,
        Err(errs) => return report(&errs, None, true, global, io),
    };
    for &k in &planned.seeds {
        let run = dir.join(study::seed_dir(k));
        match go_on(&typed, &run, k, &format!("seed {k}"), cmd, global, io) {
            Ok(EXIT_OK) => {}
            Ok(code) => return stopped(dir, code, io),
            Err(code) => return code,
        }
    }
    if cmd.dry_run {
        // A finished study's recorded verdicts, checked without running anything.
        if cmd.require_claims && planned.status == "finished" {
            return require(&planned.claims, global, io);
        }
        return EXIT_OK;
    }
    finish(&typed, dir, &planned, cmd, global, io)
}

/// Goes on with seed `k` of a resumed study in `run` (`label` names it on the console):
/// skipped when finished, resumed when started, started from `typed` when it never was.
/// `Ok`: the run's exit code (`EXIT_OK` when skipped); `Err`: its state could not be read,
/// already reported, with the code to exit with.
pub(crate) fn go_on(
    typed: &TypedPlan<'_>,
    run: &Path,
    k: u64,
    label: &str,
    cmd: &RunCmd,
    global: &GlobalOpts,
    io: &mut Io,
) -> Result<u8, u8> {
    match RunDir::inspect(run) {
        Ok(c) if c.finished => {
            let _ = writeln!(io.err, "{label}: finished, skipped");
            Ok(EXIT_OK)
        }
        Ok(_) => {
            let _ = writeln!(io.err, "{label}: resumed");
            Ok(resume(run, cmd, global, io))
        }
        Err(_) if !run.join("state.json").exists() && !cmd.dry_run => {
            let _ = writeln!(io.err, "{label}: started");
            Ok(start_bare(typed, run, k, cmd, global, io))
        }
        Err(e) => Err(report(&[RunError::from(e)], None, true, global, io)),
    }
}

/// Starts seed `k` of a resumed study, whose recipe is not at hand: its plan as the other seeds
/// ran it.
pub(crate) fn start_bare(
    typed: &TypedPlan<'_>,
    run: &Path,
    k: u64,
    cmd: &RunCmd,
    global: &GlobalOpts,
    io: &mut Io,
) -> u8 {
    let created = RunDir::create(run, &wrl_plan::render_json(typed.plan))
        .and_then(|r| r.write_file(study::SEED_FILE, study::seed_file_text(k).as_bytes()));
    if let Err(e) = created {
        return report_with(&[RunError::from(e)], None, false, EXIT_USAGE, global, io);
    }
    // Created and left: the resume opens it as any stopped run, with its seed.
    resume(run, cmd, global, io)
}

/// The study stopped at a seed: what is committed is kept, and says how to go on.
pub(crate) fn stopped(dir: &Path, code: u8, io: &mut Io) -> u8 {
    let _ = writeln!(
        io.err,
        "the study stopped; its finished seeds are kept: `wrlc run --resume {}`",
        dir.display()
    );
    code
}

/// Reads every seed's summary, writes `study.json` and prints its table.
fn finish(
    typed: &TypedPlan<'_>,
    dir: &Path,
    planned: &Study,
    cmd: &RunCmd,
    global: &GlobalOpts,
    io: &mut Io,
) -> u8 {
    let mut summaries: Vec<Summary> = Vec::new();
    for r in &planned.runs {
        match RunView::read(&dir.join(r)) {
            Ok(v) => summaries.push(v.figures()),
            Err(e) => return report(&[RunError::from(e)], None, false, global, io),
        }
    }
    let study = study::aggregate(typed, &planned.seeds, &summaries);
    if let Err(e) =
        study::write(dir, &study).and_then(|()| wrl_exec::report::study::write(dir, &study))
    {
        return report_with(&[RunError::from(e)], None, false, EXIT_USAGE, global, io);
    }
    let _ = write!(io.out, "{}", study::table(&study));
    let _ = write!(io.out, "{}", study::claims::lines(&study.claims));
    let _ = writeln!(io.out, "{}", dir.join(study::STUDY_FILE).display());
    if cmd.require_claims {
        return require(&study.claims, global, io);
    }
    EXIT_OK
}

/// `--require-claims`: each claim that does not hold is an error (E0550); none at all, E0522.
pub fn require(claims: &[ClaimResult], global: &GlobalOpts, io: &mut Io) -> u8 {
    if claims.is_empty() {
        return report(&[no_claims(None, None)], None, false, global, io);
    }
    let errs: Vec<RunError> = claims
        .iter()
        .filter(|c| c.verdict != Verdict::Holds)
        .map(|c| {
            RunError::new(
                wrl_exec::Fault::Claim,
                format!(
                    "claim `{}` {}: {} (the difference's 95 % interval is [{:+.1}, {:+.1}] points)",
                    c.name,
                    match c.verdict {
                        Verdict::Holds => "holds",
                        Verdict::Fails => "does not hold",
                        Verdict::Undecided => "is undecided",
                    },
                    c.statement,
                    c.low * 100.0,
                    c.high * 100.0
                ),
            )
            .help(match c.verdict {
                Verdict::Fails | Verdict::Holds => "a claim that fails is a result to report: \
                    say so beside the recipe, or change what it claims"
                    .to_string(),
                Verdict::Undecided => "more seeds or larger evaluations narrow the interval \
                    (`wrlc check`'s W0230 says how many tasks decide it)"
                    .to_string(),
            })
        })
        .collect();
    if errs.is_empty() {
        return EXIT_OK;
    }
    report(&errs, None, false, global, io)
}

/// E0522: `--require-claims` where the plan holds no claim — the recipe states none, or none
/// for the run's profile (`profile`; `None`: the recipe without one). With the recipe, the help
/// says which profiles its claims are stated for.
pub fn no_claims(recipe: Option<&wrl_check::Recipe>, profile: Option<&str>) -> RunError {
    let under = match profile {
        Some(p) => format!("profile `{p}`"),
        None => "the recipe without a profile".to_string(),
    };
    let Some(r) = recipe else {
        return RunError::new(wrl_exec::Fault::NoClaims, "`--require-claims`, but the run decides no claim")
            .help("a run decides the claims its plan holds: those its recipe states for the profile it ran under; leave `--require-claims` out, or run the profile they are stated for");
    };
    let mut names: Vec<&str> = Vec::new();
    let scoped: Vec<String> = (r.decls.iter())
        .filter(|d| !d.std && d.kind == wrl_syntax::ast::DeclKind::Claim)
        .map(|d| match wrl_check::claim_profiles(d) {
            Some(ps) => {
                let ps: Vec<&str> = ps.iter().map(|(n, _)| *n).collect();
                names.extend(ps.iter().copied().filter(|n| *n != wrl_check::BASE_PROFILE));
                format!("`{}` for {}", d.name, ps.join(", "))
            }
            None => format!("`{}` for every profile", d.name),
        })
        .collect();
    names.sort_unstable();
    names.dedup();
    let run_with = match names.as_slice() {
        [one] => format!("`--profile {one}`"),
        _ => "`--profile NAME`".to_string(),
    };
    let message = format!("`--require-claims`, but `{}` states no claim for {under}", r.file);
    let help = if scoped.is_empty() {
        "declare one (`claim NAME = std::claims::gain(…)`, docs/run.md \"Claims and variants\"), \
         or leave `--require-claims` out"
            .to_string()
    } else {
        format!(
            "its claims are stated for other profiles ({}): run with {run_with}",
            scoped.join("; ")
        )
    };
    RunError::new(wrl_exec::Fault::NoClaims, message).help(help)
}
