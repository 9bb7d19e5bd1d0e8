//! `wrlc run FILE [--profile NAME] [--out DIR] [--set PATH=VALUE]… [--dry-run] | --resume DIR
//! [--dry-run]`: checks the recipe, lowers it to a plan, refuses it before any work if the
//! runtime cannot run it (the preflight, reported like `wrlc check`'s diagnostics), and hands
//! the decoded plan to the runtime, which writes the run directory and its report. `--dry-run`
//! stops after the preflight; with `--resume`, after checking that the run can go on.
//! `--seeds N` runs a study of seeded copies instead (`commands/seeds.rs`), of the recipe and
//! each of its variants when it declares some (`commands/variants.rs`); `--variant NAME` runs
//! one variant alone.

use std::path::Path;

use crate::commands::planned::{plan_for, variant_plan};
pub use crate::commands::run_one::RunCmd;
use crate::commands::run_one::{check_lock, dry_run_summary, report, resume, start};
use crate::commands::{seeds, variants};
use crate::global::GlobalOpts;
use crate::{EXIT_OK, EXIT_USAGE, Io};

pub fn run(cmd: RunCmd, global: &GlobalOpts, io: &mut Io) -> u8 {
    match &cmd.resume {
        Some(dir) if variants::is_variants_study(dir) => {
            variants::resume_study(dir, &cmd, global, io)
        }
        Some(dir) if seeds::is_study(dir) => seeds::resume_study(dir, &cmd, global, io),
        Some(dir) => required(dir, resume(dir, &cmd, global, io), &cmd, global, io),
        None => fresh(&cmd, global, io),
    }
}

fn fresh(cmd: &RunCmd, global: &GlobalOpts, io: &mut Io) -> u8 {
    let Some(file) = &cmd.file else {
        let _ = writeln!(io.err, "error: give a recipe to run, or `--resume DIR`");
        return EXIT_USAGE;
    };
    let mut p = match plan_for(file, cmd.profile.as_deref(), &cmd.set, global, io) {
        Ok(p) => p,
        Err(code) => return code,
    };
    if let Some(v) = &cmd.variant {
        p.plan = match variant_plan(&p, v, global, io) {
            Ok(plan) => plan,
            Err(code) => return code,
        };
    }
    // Nothing to require: refused before any work (E0522).
    if cmd.require_claims && p.plan.claims.is_empty() {
        let e = seeds::no_claims(Some(&p.recipe), cmd.profile.as_deref());
        return report(&[e], Some(&p), true, global, io);
    }
    // A study of the recipe and its variants (unless `--variants`: those its profile's claims
    // compare, and those no claim compares).
    let arms: Vec<String> = match (&cmd.variants, cmd.seeds, &cmd.variant) {
        (Some(chosen), Some(_), None) => chosen.clone(),
        (None, Some(_), None) => {
            p.recipe.study_variants().into_iter().map(str::to_string).collect()
        }
        _ => Vec::new(),
    };
    if !arms.is_empty() {
        return variants::fresh(file, &arms, &p, cmd, global, io);
    }
    let label = match (&cmd.profile, &cmd.variant) {
        (Some(pr), Some(v)) => Some(format!("{pr}-{v}")),
        (pr, v) => pr.clone().or_else(|| v.clone()),
    };
    let out = cmd
        .out
        .clone()
        .unwrap_or_else(|| crate::commands::run_one::default_out(file, label.as_deref()));
    let (typed, mut errs) = match wrl_exec::preflight(&p.plan, cmd.chromium.as_deref()) {
        Ok(t) => (Some(t), Vec::new()),
        Err(errs) => (None, errs),
    };
    if let Err(e) = wrl_exec::check_out(&out) {
        errs.push(e);
    }
    let Some(typed) = typed.filter(|_| errs.is_empty()) else {
        return report(&errs, Some(&p), true, global, io);
    };
    let inputs = match check_lock(file, &typed, cmd, global, io) {
        Ok(lock) => lock,
        Err(code) => return code,
    };
    if cmd.dry_run {
        let mut said = dry_run_summary(&p.plan, &out);
        if let Some(n) = cmd.seeds {
            let (first, last) = (cmd.seed_offset, cmd.seed_offset + n - 1);
            said.push_str(&format!(
                ", a study of {n} seeds ({first} to {last}), each in its own seed-K directory there"
            ));
        }
        let _ = writeln!(io.out, "{said}");
        return EXIT_OK;
    }
    let inputs = wrl_exec::inputs::to_text(&inputs);
    match cmd.seeds {
        Some(n) => seeds::fresh_study(&typed, &out, &inputs, n, cmd, &p, global, io),
        None => {
            let code = start(&typed, &out, &inputs, 0, cmd, &p, global, io);
            required(&out, code, cmd, global, io)
        }
    }
}

/// Under `--require-claims`, a finished run whose claims do not all hold exits with E0550 (with
/// `--dry-run --resume`, the verdicts it recorded).
fn required(dir: &Path, code: u8, cmd: &RunCmd, global: &GlobalOpts, io: &mut Io) -> u8 {
    if code != EXIT_OK || !cmd.require_claims {
        return code;
    }
    match wrl_exec::RunView::read(dir) {
        // A dry run checks the verdicts a finished run recorded; an unfinished one has none.
        Ok(v) if cmd.dry_run && v.summary.is_none() => code,
        Ok(v) => seeds::require(&v.figures().claims, global, io),
        Err(e) => report(&[wrl_exec::RunError::from(e)], None, false, global, io),
    }
}
