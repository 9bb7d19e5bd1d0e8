//! `wrlc run FILE [--profile NAME] [--out DIR] [--set PATH=VALUE]… [--dry-run] | --resume DIR`:
//! checks the recipe, lowers it to a plan, refuses it before any work if the runtime cannot run
//! it (the preflight, reported like `wrlc check`'s diagnostics), and executes it into a run
//! directory with an HTML report. `--dry-run` stops after the preflight.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use wrl_diagnostics::{Diagnostic, FileId, SourceMap};
use wrl_plan::{NodeKind, Plan};
use wrl_runtime::report::{Chart, ReportData, Series, StepView, TrajectoryView};
use wrl_runtime::{Executor, RunDir, RunError, RunOptions, Summary};

use crate::args::{ErrorFormat, GlobalOpts, RunCmd};
use crate::commands::run_errors::{Origin, to_diagnostic};
use crate::load::display_name;
use crate::render::emit;
use crate::{EXIT_OK, EXIT_USAGE, EXIT_USER, Io};

/// The synthetic profile that carries `--set` overrides.
const SET_PROFILE: &str = "__set__";

/// A recipe checked and lowered: the plan, and what it came from (to place runtime problems).
struct Planned {
    plan: Plan,
    sources: SourceMap,
    recipe: wrl_check::Recipe,
    entry: FileId,
}

pub fn run(cmd: RunCmd, global: &GlobalOpts, io: &mut Io) -> u8 {
    let opts = RunOptions { chromium: cmd.chromium.clone(), progress: true };
    let mut planned = None;
    let (root, plan_json) = if let Some(dir) = &cmd.resume {
        match RunDir::resume(dir).and_then(|r| r.plan_json().map(|p| (r, p))) {
            Ok((r, p)) => {
                drop(r);
                (dir.clone(), p)
            }
            Err(e) => {
                let _ = writeln!(io.err, "error: {e}");
                return EXIT_USAGE;
            }
        }
    } else {
        let Some(file) = &cmd.file else {
            let _ = writeln!(io.err, "error: give a recipe to run, or `--resume DIR`");
            return EXIT_USAGE;
        };
        let p = match plan_for(file, cmd.profile.as_deref(), &cmd.set, global, io) {
            Ok(p) => p,
            Err(code) => return code,
        };
        let out = cmd.out.clone().unwrap_or_else(|| default_out(file, cmd.profile.as_deref()));
        let mut errs = wrl_runtime::preflight(&p.plan, cmd.chromium.as_deref()).err();
        if let Err(e) = wrl_runtime::check_out(&out) {
            errs.get_or_insert_with(Vec::new).push(e);
        }
        if let Some(errs) = errs {
            let origin = Origin { recipe: &p.recipe, entry: p.entry };
            let mut diags: Vec<Diagnostic> =
                errs.iter().map(|e| to_diagnostic(e, Some(&origin))).collect();
            // In the recipe's order, as `wrlc check` shows them; unplaced problems last.
            diags.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
            emit(&diags, &p.sources, global.error_format, io);
            if global.error_format == ErrorFormat::Human {
                let _ = writeln!(
                    io.err,
                    "refused before starting: {} {}",
                    errs.len(),
                    if errs.len() == 1 { "problem" } else { "problems" }
                );
            }
            return EXIT_USER;
        }
        if cmd.dry_run {
            let _ = writeln!(io.out, "{}", dry_run_summary(&p.plan, &out));
            return EXIT_OK;
        }
        let json = match serde_json::to_string_pretty(&p.plan) {
            Ok(j) => j,
            Err(e) => {
                let _ = writeln!(io.err, "error: cannot serialise the plan: {e}");
                return EXIT_USAGE;
            }
        };
        if let Err(e) = RunDir::create(&out, &json) {
            let _ = writeln!(io.err, "error: {e}");
            return EXIT_USAGE;
        }
        planned = Some(p);
        (out, json)
    };
    let plan = match wrl_plan::parse_json(&plan_json) {
        Ok(p) => p,
        Err(e) => {
            let _ = writeln!(io.err, "error: `{}/plan.json` cannot be read: {e}", root.display());
            return EXIT_USAGE;
        }
    };
    let _ = writeln!(io.err, "running {} into {}", plan.recipe, root.display());
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            let _ = writeln!(io.err, "error: cannot start the async runtime: {e}");
            return EXIT_USAGE;
        }
    };
    let result = rt.block_on(async {
        let mut run = RunDir::resume(&root).map_err(|e| RunError::new("E0504", e.to_string()))?;
        let exec = Executor::new(&plan, &mut run, opts);
        tokio::select! {
            r = exec.run() => r.map(Some),
            _ = tokio::signal::ctrl_c() => Ok(None),
        }
    });
    match result {
        Ok(Some(summary)) => {
            write_report(&root, &plan.recipe, plan.profile.clone(), &summary);
            let evals: Vec<String> = summary
                .evals
                .iter()
                .map(|e| {
                    let rate = e.success * 100.0;
                    // An eval that follows no stage is named by itself; two evals after the same
                    // stage are told apart by name.
                    if e.after == e.eval {
                        return format!("{}: {rate:.1}%", e.eval);
                    }
                    let shared = summary.evals.iter().filter(|o| o.after == e.after).count() > 1;
                    let name = if shared { format!("{} ", e.eval) } else { String::new() };
                    format!("{name}after {}: {rate:.1}%", e.after)
                })
                .collect();
            let _ = writeln!(
                io.err,
                "finished in {:.0} s; {}",
                summary.wall_s,
                if evals.is_empty() {
                    "no evaluations".into()
                } else {
                    format!("held-out success {}", evals.join(", "))
                }
            );
            let _ = writeln!(io.out, "{}", root.join("report.html").display());
            EXIT_OK
        }
        Ok(None) => {
            let _ = writeln!(io.err, "stopped; resume with `wrlc run --resume {}`", root.display());
            130
        }
        Err(e) => {
            // A fresh run can still place a problem in its recipe; a resumed one has no source.
            let origin = planned.as_ref().map(|p| Origin { recipe: &p.recipe, entry: p.entry });
            let sources = planned.as_ref().map_or_else(SourceMap::new, |p| p.sources.clone());
            emit(&[to_diagnostic(&e, origin.as_ref())], &sources, global.error_format, io);
            let _ = writeln!(
                io.err,
                "the run stopped; what was committed is kept: `wrlc run --resume {}`",
                root.display()
            );
            EXIT_USAGE
        }
    }
}

/// What a dry run would run, in one line: the recipe, its stages by kind, and the directory.
fn dry_run_summary(plan: &Plan, out: &Path) -> String {
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

fn default_out(file: &Path, profile: Option<&str>) -> PathBuf {
    let stem =
        file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "run".into());
    let name = match profile {
        Some(p) => format!("{stem}-{p}"),
        None => stem,
    };
    PathBuf::from("runs").join(name)
}

/// Checks the recipe (with `--set` overrides as a synthetic profile) and lowers it.
fn plan_for(
    file: &Path,
    profile: Option<&str>,
    sets: &[String],
    global: &GlobalOpts,
    io: &mut Io,
) -> Result<Planned, u8> {
    let mut text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) => {
            let _ = writeln!(io.err, "error: cannot read `{}`: {e}", file.display());
            return Err(EXIT_USAGE);
        }
    };
    if !sets.is_empty() {
        text.push_str(&format!("\n\n// --set\nprofile {SET_PROFILE} {{\n"));
        for s in sets {
            let Some((path, value)) = s.split_once('=') else {
                let _ = writeln!(
                    io.err,
                    "error: `--set {s}` needs the form PATH=VALUE, e.g. `--set online.group=8`"
                );
                return Err(EXIT_USAGE);
            };
            text.push_str(&format!("  {} = {}\n", path.trim(), value.trim()));
        }
        text.push_str("}\n");
    }
    let mut sources = SourceMap::new();
    let id = sources.add(display_name(file), text.clone());
    let parsed = wrl_syntax::parse(id, &text);
    let mut diags: Vec<Diagnostic> = parsed.diagnostics;
    let checked = wrl_check::check(&mut sources, &[(id, &parsed.file)], &wrl_check::FsLoader);
    diags.extend(checked.diagnostics);
    let errors = diags.iter().any(Diagnostic::is_error);
    let recipe = match checked.recipes.into_iter().next() {
        Some(r) if !errors => r,
        _ => {
            diags.retain(Diagnostic::is_error);
            emit(&diags, &sources, global.error_format, io);
            return Err(EXIT_USER);
        }
    };
    let mut recipe = match profile {
        Some(p) => match recipe.with_profile(p) {
            Ok(r) => r,
            Err(d) => {
                emit(&[d], &sources, global.error_format, io);
                return Err(EXIT_USER);
            }
        },
        None => recipe,
    };
    if !sets.is_empty() {
        match recipe.with_profile(SET_PROFILE) {
            Ok(r) => recipe = r,
            Err(d) => {
                emit(&[d], &sources, global.error_format, io);
                return Err(EXIT_USER);
            }
        }
        recipe.profile = profile.map(str::to_string);
    }
    match wrl_plan::lower(&recipe) {
        Ok(plan) => Ok(Planned { plan, sources, recipe, entry: id }),
        Err(ds) => {
            emit(&ds, &sources, global.error_format, io);
            Err(EXIT_USER)
        }
    }
}

/// Builds `report.html` from the committed metrics and trajectories.
fn write_report(root: &Path, recipe: &str, profile: Option<String>, summary: &Summary) {
    let Ok(run) = RunDir::resume(root) else { return };
    let metrics = run.read_log("metrics.jsonl").unwrap_or_default();
    let trajs = run.read_log("trajectories.jsonl").unwrap_or_default();
    let mut sft: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let mut reward: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let mut success: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for m in &metrics {
        let node = m["node"].as_str().unwrap_or("").to_string();
        match m["kind"].as_str() {
            Some("sft") => sft
                .entry(node)
                .or_default()
                .push((m["step"].as_f64().unwrap_or(0.0), m["loss"].as_f64().unwrap_or(f64::NAN))),
            Some("rl") => {
                let it = m["iter"].as_f64().unwrap_or(0.0);
                reward
                    .entry(node.clone())
                    .or_default()
                    .push((it, m["reward"].as_f64().unwrap_or(f64::NAN)));
                success
                    .entry(node)
                    .or_default()
                    .push((it, m["success"].as_f64().unwrap_or(f64::NAN)));
            }
            _ => {}
        }
    }
    let chart = |title: &str, x: &str, y: &str, m: BTreeMap<String, Vec<(f64, f64)>>| Chart {
        title: title.into(),
        x: x.into(),
        y: y.into(),
        series: m.into_iter().map(|(name, points)| Series { name, points }).collect(),
    };
    // Sample trajectories: those that kept their pages (the first episodes of each evaluation),
    // else the last few.
    let with_pages: Vec<&serde_json::Value> =
        trajs.iter().filter(|t| t["screenshots"].is_array()).collect();
    let picked: Vec<&serde_json::Value> = if with_pages.is_empty() {
        trajs.iter().rev().take(4).collect()
    } else {
        with_pages.iter().rev().take(4).rev().copied().collect()
    };
    let samples: Vec<TrajectoryView> = picked
        .into_iter()
        .map(|t| {
            let tr = &t["trajectory"];
            let pages: Vec<String> = t["screenshots"]
                .as_array()
                .map(|a| a.iter().filter_map(|p| p.as_str().map(str::to_string)).collect())
                .unwrap_or_default();
            let node = t["node"].as_str().unwrap_or("");
            TrajectoryView {
                title: match t["iter"].as_u64() {
                    Some(i) if i > 0 => format!("{node}, iteration {i}"),
                    _ => format!("{node}, trajectory {}", t["id"]),
                },
                goal: tr["goal"].as_str().unwrap_or("").into(),
                outcome: format!(
                    "{} {}",
                    tr["outcome"]["reason"].as_str().unwrap_or(""),
                    tr["outcome"]["detail"].as_str().unwrap_or("")
                ),
                reward: t["reward"].as_f64(),
                steps: tr["steps"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .enumerate()
                            .map(|(i, s)| StepView {
                                observation: s["observation"].as_str().unwrap_or("").into(),
                                action: s["actions"]
                                    .as_array()
                                    .map(|x| {
                                        x.iter()
                                            .filter_map(|v| v.as_str())
                                            .collect::<Vec<_>>()
                                            .join("; ")
                                    })
                                    .unwrap_or_default(),
                                feedback: s["feedback"].as_str().unwrap_or("").into(),
                                screenshot: pages.get(i).cloned(),
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            }
        })
        .collect();
    let data = ReportData {
        recipe: recipe.into(),
        profile,
        status: summary.status.clone(),
        wall_s: summary.wall_s,
        charts: vec![
            chart("SFT loss", "optimiser step", "loss", sft),
            chart("mean reward per iteration", "iteration", "reward", reward),
            chart("training success per iteration", "iteration", "success rate", success),
        ],
        evals: summary.evals.iter().map(|e| (e.after.clone(), e.success)).collect(),
        failures: summary.failures.clone(),
        judge_agreement: None,
        samples,
    };
    let _ = run.write_file("report.html", wrl_runtime::report::render(&data).as_bytes());
}
