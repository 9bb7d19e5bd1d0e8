//! Every series `metrics.jsonl` logs, as charts on one x axis — the run's global step — with
//! the held-out evaluations as points on the success chart and as marks on every chart. One
//! run or several (the comparison names each series by its run).

use std::collections::BTreeMap;

use super::chart::{Chart, Mark, Series, Style};
use crate::rundir::records::{MetricLine, RlIter};

/// What one chart plots: its title, its y axis, and the value of a line (if it has one).
struct Metric {
    title: &'static str,
    y: &'static str,
    value: fn(&MetricLine) -> Option<f64>,
    /// Left out when every value is 0 (no episode retried: no chart of zeros).
    hide_zero: bool,
}

fn rl(m: &MetricLine) -> Option<&RlIter> {
    match m {
        MetricLine::Rl(r) => Some(r),
        MetricLine::Sft(_) | MetricLine::Eval(_) => None,
    }
}

fn metric(title: &'static str, y: &'static str, value: fn(&MetricLine) -> Option<f64>) -> Metric {
    Metric { title, y, value, hide_zero: false }
}

impl Metric {
    fn hide_zero(self) -> Metric {
        Metric { hide_zero: true, ..self }
    }
}

/// The charts, in the order the report shows them.
fn metrics() -> Vec<Metric> {
    vec![
        metric("SFT loss", "loss (nats per token)", |m| match m {
            MetricLine::Sft(s) => Some(s.loss),
            MetricLine::Rl(_) | MetricLine::Eval(_) => None,
        }),
        metric("RL mean reward", "reward", |m| rl(m).map(|r| r.reward)),
        metric(
            "success: training episodes and held-out evaluations",
            "success rate",
            |m| match m {
                MetricLine::Rl(r) => Some(r.success),
                MetricLine::Eval(e) => Some(e.success),
                MetricLine::Sft(_) => None,
            },
        ),
        metric("RL loss", "loss", |m| rl(m).map(|r| r.loss)),
        metric("learning rate", "learning rate", |m| match m {
            MetricLine::Sft(s) => Some(s.lr),
            MetricLine::Rl(r) => Some(r.lr),
            MetricLine::Eval(_) => None,
        }),
        metric("gradient norm (before clipping)", "L2 norm", |m| match m {
            MetricLine::Sft(s) => Some(s.grad_norm),
            MetricLine::Rl(r) => Some(r.grad_norm),
            MetricLine::Eval(_) => None,
        }),
        metric("RL clip fraction", "fraction of tokens clipped", |m| {
            rl(m).and_then(|r| r.clip_frac)
        }),
        metric("critic value loss", "loss", |m| rl(m).and_then(|r| r.value_loss)),
        metric("GiGPO step-level advantage", "mean |advantage|", |m| {
            rl(m).and_then(|r| r.step_advantage)
        }),
        metric("branches per iteration", "trajectories", |m| {
            rl(m).and_then(|r| r.branches).map(|n| n as f64)
        }),
        metric("tasks replayed per iteration", "tasks", |m| {
            rl(m).and_then(|r| r.replayed).map(|n| n as f64)
        })
        .hide_zero(),
        metric("generated tasks drawn per iteration", "tasks", |m| {
            rl(m).and_then(|r| r.generated).map(|g| g.drawn as f64)
        })
        .hide_zero(),
        metric("generated tasks kept per iteration", "tasks", |m| {
            rl(m).and_then(|r| r.generated).map(|g| g.kept as f64)
        })
        .hide_zero(),
        metric("groups with equal rewards", "groups", |m| rl(m).map(|r| r.uniform_groups as f64)),
        metric("RL samples per update", "samples", |m| rl(m).map(|r| r.samples as f64)),
        metric("screenshots shown per iteration", "images", |m| {
            rl(m).and_then(|r| r.images).map(|n| n as f64)
        }),
        metric("episodes left out of the loss", "episodes", |m| {
            rl(m).map(|r| r.excluded.values().sum::<usize>() as f64)
        })
        .hide_zero(),
        metric("episodes run again", "episodes", |m| rl(m).map(|r| r.retried as f64)).hide_zero(),
        metric("rollout time per iteration", "seconds", |m| rl(m).map(|r| r.rollout_s)),
        metric("update time per iteration", "seconds", |m| rl(m).map(|r| r.update_s)),
        metric("peak host memory per step", "MiB", |m| {
            memory(m).and_then(|x| x.host_peak_bytes).map(|b| b as f64 / (1024.0 * 1024.0))
        }),
        metric("GPU memory in use after each step", "MiB", |m| {
            memory(m).and_then(|x| x.device_bytes).map(|b| b as f64 / (1024.0 * 1024.0))
        }),
    ]
}

/// What a training line measured of memory (`None` for an evaluation).
fn memory(m: &MetricLine) -> Option<&crate::rundir::records::StepMemory> {
    match m {
        MetricLine::Sft(s) => Some(&s.memory),
        MetricLine::Rl(r) => Some(&r.memory),
        MetricLine::Eval(_) => None,
    }
}

/// A series: whether it holds evaluations (drawn as points), and its name.
type SeriesKey = (bool, String);

/// The node a line belongs to, as a series name: `warmup`, `online phase 1`, `after_rl`.
fn series_name(m: &MetricLine) -> String {
    let (stage, phase) = match m {
        MetricLine::Sft(s) => (&s.stage, s.phase),
        MetricLine::Rl(r) => (&r.stage, r.phase),
        MetricLine::Eval(e) => return format!("held-out {}", e.stage),
    };
    match phase {
        Some(p) => format!("{stage} phase {p}"),
        None => stage.clone(),
    }
}

/// The charts of runs: each run's lines with its label (empty for a single run). A chart with
/// nothing to plot (no RL stage, no clip fraction) is left out; roles' losses get their own.
pub fn charts(runs: &[(String, &[MetricLine])]) -> Vec<Chart> {
    let name = |run: &str, series: String| {
        if run.is_empty() { series } else { format!("{run}: {series}") }
    };
    let mut marks = Vec::new();
    for (run, lines) in runs {
        for m in lines.iter() {
            if let MetricLine::Eval(e) = m {
                marks.push(Mark { x: e.global_step as f64, label: name(run, e.stage.clone()) });
            }
        }
    }
    let mut out = Vec::new();
    for metric in metrics() {
        // Series in order of first appearance: runs in order, each run's nodes as they ran.
        let mut series: Vec<(SeriesKey, Vec<(f64, f64)>)> = Vec::new();
        for (run, lines) in runs {
            for m in lines.iter() {
                let Some(v) = (metric.value)(m) else { continue };
                let key = (matches!(m, MetricLine::Eval(_)), name(run, series_name(m)));
                let point = (m.stamp().0 as f64, v);
                match series.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, points)) => points.push(point),
                    None => series.push((key, vec![point])),
                }
            }
        }
        let chart = Chart {
            title: metric.title.into(),
            x: "global step (SFT steps and RL iterations)".into(),
            y: metric.y.into(),
            series: series
                .into_iter()
                .map(|((eval, name), points)| Series {
                    name,
                    points,
                    style: if eval { Style::Points } else { Style::Line },
                    color: 0,
                })
                .collect(),
            marks: marks.clone(),
        };
        let zeros = chart.series.iter().all(|s| s.points.iter().all(|p| p.1 == 0.0));
        if !(chart.is_empty() || metric.hide_zero && zeros) {
            out.push(chart);
        }
    }
    out.extend(role_losses(runs, &marks, name));
    // One colour per series name across the page, in order of first appearance.
    let mut colors: Vec<String> = Vec::new();
    for s in out.iter_mut().flat_map(|c| c.series.iter_mut()) {
        s.color = match colors.iter().position(|n| *n == s.name) {
            Some(i) => i,
            None => {
                colors.push(s.name.clone());
                colors.len() - 1
            }
        };
    }
    out
}

/// Each graph role's loss, when roles train separate weights.
fn role_losses(
    runs: &[(String, &[MetricLine])],
    marks: &[Mark],
    name: impl Fn(&str, String) -> String,
) -> Option<Chart> {
    let mut series: BTreeMap<(usize, String), Vec<(f64, f64)>> = BTreeMap::new();
    for (r, (run, lines)) in runs.iter().enumerate() {
        for m in lines.iter() {
            let Some(it) = rl(m) else { continue };
            for (role, u) in it.roles.iter().flatten() {
                let key = (r, name(run, format!("{} {role}", series_name(m))));
                series.entry(key).or_default().push((it.global_step as f64, u.loss));
            }
        }
    }
    let chart = Chart {
        title: "RL loss per role".into(),
        x: "global step (SFT steps and RL iterations)".into(),
        y: "loss".into(),
        series: series
            .into_iter()
            .map(|((_, name), points)| Series { name, points, style: Style::Line, color: 0 })
            .collect(),
        marks: marks.to_vec(),
    };
    (!chart.is_empty()).then_some(chart)
}
