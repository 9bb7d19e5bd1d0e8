//! The run's report: built from the run directory's typed records — SFT loss, reward and
//! success per RL iteration, the held-out evaluations, how episodes ended, and sample
//! trajectories with their screenshots — and rendered as one self-contained page ([`html`]).

pub mod html;

use std::collections::BTreeMap;

use html::{Chart, ReportData, Series, StepView, TrajectoryView};

use crate::error::RunError;
use crate::rundir::RunDir;
use crate::rundir::records::{MetricLine, Scored, Summary, TrajectoryLine};

/// The report of the run in `run`, from its committed logs.
pub fn build(
    run: &RunDir,
    recipe: &str,
    profile: Option<String>,
    summary: &Summary,
) -> Result<ReportData, RunError> {
    let metrics = run.read_metrics()?;
    let trajs = run.read_trajectories()?;
    let mut sft: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let mut reward: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let mut success: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for m in &metrics {
        match m {
            MetricLine::Sft(s) => {
                sft.entry(s.node.clone()).or_default().push((s.step as f64, s.loss))
            }
            MetricLine::Rl(r) => {
                let it = r.iter as f64;
                reward.entry(r.node.clone()).or_default().push((it, r.reward));
                success.entry(r.node.clone()).or_default().push((it, r.success));
            }
            MetricLine::Eval(_) => {}
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
    let with_pages: Vec<&TrajectoryLine> =
        trajs.iter().filter(|t| t.screenshots.is_some()).collect();
    let picked: Vec<&TrajectoryLine> = if with_pages.is_empty() {
        trajs.iter().rev().take(4).collect()
    } else {
        with_pages.iter().rev().take(4).rev().copied().collect()
    };
    let samples = picked.into_iter().map(view).collect();
    Ok(ReportData {
        recipe: recipe.into(),
        profile,
        status: summary.status.clone(),
        wall_s: summary.wall_s,
        charts: vec![
            chart("SFT loss", "optimiser step", "loss", sft),
            chart("mean reward per iteration", "iteration", "reward", reward),
            chart("training success per iteration", "iteration", "success rate", success),
        ],
        evals: summary
            .evals
            .iter()
            .map(|e| {
                let paper = e
                    .published
                    .iter()
                    .map(|p| format!("{}: {:.1}% ({})", p.model, p.value * 100.0, p.source))
                    .collect();
                (e.after.clone(), e.success, paper)
            })
            .collect(),
        failures: summary.failures.clone(),
        excluded: summary.excluded.clone(),
        warnings: summary.warnings.clone(),
        judge_agreement: None,
        samples,
    })
}

/// One logged episode as the report shows it.
fn view(t: &TrajectoryLine) -> TrajectoryView {
    let tr = &t.trajectory;
    let pages = t.screenshots.clone().unwrap_or_default();
    TrajectoryView {
        title: if t.iter > 0 {
            format!("{}, iteration {}", t.node, t.iter)
        } else {
            format!("{}, trajectory {}", t.node, t.id)
        },
        goal: tr.goal.clone(),
        outcome: format!("{} {}", tr.outcome.reason, tr.outcome.detail),
        reward: match t.reward {
            Scored::Value(v) => Some(v),
            Scored::Excluded { .. } => None,
        },
        steps: tr
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| StepView {
                observation: s.observation.clone(),
                action: s.actions.join("; "),
                feedback: s.feedback.clone(),
                screenshot: pages.get(i).cloned(),
            })
            .collect(),
    }
}
