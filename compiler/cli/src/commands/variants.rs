//! `wrlc run FILE --seeds N` on a recipe that declares variants (`variant NAME { … }`): the
//! recipe (`base`) and each variant (or those `--variants` names) run with the same seeds, one
//! after another, each seed of each its own run directory `DIR/NAME/seed-K`; then
//! `DIR/study.json` lays them side by side, with their compute and the claims across them.
//! `--resume DIR` goes on with the unfinished runs, each variant from the plan it ran.

use std::path::Path;

use wrl_exec::study::variants::{self, Ran};
use wrl_exec::study::{self, Study};
use wrl_exec::{RunDir, RunError, RunView};
use wrl_plan::params::TypedPlan;
use wrl_plan::{BASE_VARIANT, Plan};

use crate::commands::planned::{Planned, variant_plan};
use crate::commands::run_one::start;
use crate::commands::run_one::{RunCmd, check_lock, dry_run_summary, report, report_with};
use crate::commands::seeds::{go_on, require, stopped};
use crate::global::GlobalOpts;
use crate::{EXIT_OK, EXIT_USAGE, Io};

/// Whether `dir` holds a study of variants (its `study.json` lists them).
pub fn is_variants_study(dir: &Path) -> bool {
    crate::commands::seeds::is_study(dir)
        && study::read(dir).is_some_and(|s| !s.variants.is_empty())
}

/// Runs a new study of the recipe and the variants `names` over `cmd.seeds` seeds.
pub fn fresh(
    file: &Path,
    names: &[String],
    p: &Planned,
    cmd: &RunCmd,
    global: &GlobalOpts,
    io: &mut Io,
) -> u8 {
    // The recipe first, then each variant named (once; `base` is the recipe).
    let mut plans: Vec<(String, Plan)> = vec![(BASE_VARIANT.to_string(), p.plan.clone())];
    for name in names {
        if plans.iter().any(|(n, _)| n == name) {
            continue;
        }
        match variant_plan(p, name, global, io) {
            Ok(plan) => plans.push((name.clone(), plan)),
            Err(code) => return code,
        }
    }
    let mut typed = Vec::new();
    for (name, plan) in &plans {
        match wrl_exec::preflight(plan, cmd.chromium.as_deref()) {
            Ok(t) => typed.push((name.as_str(), t)),
            Err(errs) => return report(&errs, Some(p), true, global, io),
        }
    }
    let out = cmd
        .out
        .clone()
        .unwrap_or_else(|| crate::commands::run_one::default_out(file, cmd.profile.as_deref()));
    if let Err(e) = wrl_exec::check_out(&out) {
        return report(&[e], Some(p), true, global, io);
    }
    let Some((_, base)) = typed.first() else { return EXIT_USAGE };
    let inputs = match check_lock(file, base, cmd, global, io) {
        Ok(lock) => wrl_exec::inputs::to_text(&lock),
        Err(code) => return code,
    };
    let n = cmd.seeds.unwrap_or(1);
    let seeds: Vec<u64> = (0..n).map(|i| cmd.seed_offset + i).collect();
    if cmd.dry_run {
        let listed: Vec<&str> = typed.iter().map(|(n, _)| *n).collect();
        let _ = writeln!(
            io.out,
            "{}, a study of {} and {} over {n} seeds ({} to {}), each in its own NAME/seed-K \
             directory there",
            dry_run_summary(&p.plan, &out),
            listed.first().copied().unwrap_or(BASE_VARIANT),
            listed.get(1..).unwrap_or_default().join(", "),
            cmd.seed_offset,
            cmd.seed_offset + n - 1
        );
        return EXIT_OK;
    }
    let arms: Vec<(&str, &TypedPlan<'_>)> = typed.iter().map(|(n, t)| (*n, t)).collect();
    let planned = variants::planned(&arms, &seeds);
    let written = std::fs::create_dir_all(&out)
        .map_err(|e| {
            RunError::new(
                wrl_exec::Fault::RunDir,
                format!("cannot create `{}`: {e}", out.display()),
            )
        })
        .and_then(|()| study::write(&out, &planned).map_err(RunError::from));
    if let Err(e) = written {
        return report_with(&[e], Some(p), false, EXIT_USAGE, global, io);
    }
    for (name, t) in &arms {
        for &k in &seeds {
            let _ = writeln!(io.err, "{name}, seed {k} of the study in {}", out.display());
            let run = out.join(variants::variant_dir(name, k));
            let code = start(t, &run, &inputs, k, cmd, p, global, io);
            if code != EXIT_OK {
                return stopped(&out, code, io);
            }
        }
    }
    finish(&arms, &out, &planned, cmd, global, io)
}

/// Goes on with the study of variants in `dir`: each variant's plan is the one its runs
/// recorded; each unfinished run is resumed, each not begun started, the finished skipped.
pub fn resume_study(dir: &Path, cmd: &RunCmd, global: &GlobalOpts, io: &mut Io) -> u8 {
    let Some(planned) = study::read(dir) else {
        let e = RunError::new(
            wrl_exec::Fault::Damaged,
            format!("`{}` cannot be read", dir.join(study::STUDY_FILE).display()),
        );
        return report(&[e], None, true, global, io);
    };
    let mut plans: Vec<(String, Plan)> = Vec::new();
    for v in &planned.variants {
        let json = v.runs.iter().find_map(|r| RunDir::read_plan(&dir.join(r)).ok());
        let Some(plan) = json.and_then(|j| wrl_plan::parse_json(&j).ok()) else {
            let e = RunError::new(
                wrl_exec::Fault::RunDir,
                format!(
                    "no run of variant `{}` in `{}` holds a plan to go on with",
                    v.name,
                    dir.display()
                ),
            )
            .help("start the study again with `wrlc run FILE --seeds N --out DIR`");
            return report_with(&[e], None, false, EXIT_USAGE, global, io);
        };
        plans.push((v.name.clone(), plan));
    }
    let mut typed = Vec::new();
    for (name, plan) in &plans {
        match wrl_exec::preflight(plan, cmd.chromium.as_deref()) {
            Ok(t) => typed.push((name.as_str(), t)),
            Err(errs) => return report(&errs, None, true, global, io),
        }
    }
    let arms: Vec<(&str, &TypedPlan<'_>)> = typed.iter().map(|(n, t)| (*n, t)).collect();
    for (name, t) in &arms {
        for &k in &planned.seeds {
            let run = dir.join(variants::variant_dir(name, k));
            match go_on(t, &run, k, &format!("{name}, seed {k}"), cmd, global, io) {
                Ok(EXIT_OK) => {}
                Ok(code) => return stopped(dir, code, io),
                Err(code) => return code,
            }
        }
    }
    if cmd.dry_run {
        if cmd.require_claims && planned.status == "finished" {
            return require(&planned.claims, global, io);
        }
        return EXIT_OK;
    }
    finish(&arms, dir, &planned, cmd, global, io)
}

/// Reads every run of every variant, writes `study.json` and the study's page, prints the
/// variants side by side and the claims.
fn finish(
    arms: &[(&str, &TypedPlan<'_>)],
    dir: &Path,
    planned: &Study,
    cmd: &RunCmd,
    global: &GlobalOpts,
    io: &mut Io,
) -> u8 {
    let mut ran = Vec::new();
    for (name, plan) in arms {
        let mut r = Ran { name, plan, runs: Vec::new(), env_steps: 0 };
        for &k in &planned.seeds {
            match RunView::read(&dir.join(variants::variant_dir(name, k))) {
                Ok(v) => {
                    r.env_steps += variants::env_steps(&v);
                    r.runs.push(v.figures());
                }
                Err(e) => return report(&[RunError::from(e)], None, false, global, io),
            }
        }
        ran.push(r);
    }
    let study = variants::aggregate(&ran, &planned.seeds);
    if let Err(e) =
        study::write(dir, &study).and_then(|()| wrl_exec::report::study::write(dir, &study))
    {
        return report_with(&[RunError::from(e)], None, false, EXIT_USAGE, global, io);
    }
    let _ = write!(io.out, "{}", variants::table(&study));
    let _ = write!(io.out, "{}", study::claims::lines(&study.claims));
    let _ = writeln!(io.out, "{}", dir.join(study::STUDY_FILE).display());
    if cmd.require_claims {
        return require(&study.claims, global, io);
    }
    EXIT_OK
}
