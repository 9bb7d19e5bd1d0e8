//! The run's report, built from what the run directory committed ([`RunView`]): the resolved
//! configuration, every logged series on one step axis with the evaluations on it, how
//! episodes ended per iteration and per task template, and each evaluation's chosen episodes
//! (best, worst, one per failure class) step by step with their pages. [`html`] renders one
//! run, [`compare`] several side by side (`wrlc report RUN…`), [`study`] a study over seeds.

pub mod chart;
pub mod chosen;
pub mod claims;
pub mod compare;
pub mod config;
pub mod html;
pub mod memory;
pub mod series;
pub mod study;
pub mod tables;

use std::path::Path;

use base64::Engine as _;

use crate::rundir::RunDirError;
use crate::rundir::records::{Scored, Summary, TrajectoryLine};
use crate::rundir::view::RunView;
use chart::Chart;
use config::NodeConfig;
use tables::Counts;

/// PNG bytes a report embeds at most; pages past it are linked from the run directory.
pub const EMBED_BUDGET: usize = 24 << 20;

/// A page the agent saw: its file in the run directory, and its bytes in base64 when embedded.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Shot {
    pub path: String,
    pub data: Option<String>,
    /// The file named in the log is not there (deleted, or a copy without `screens/`).
    pub missing: bool,
}

/// One step of a shown episode.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepView {
    pub observation: String,
    pub action: String,
    pub feedback: String,
    pub shot: Option<Shot>,
}

/// An episode the report shows, and why it was chosen.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EpisodeView {
    pub title: String,
    pub labels: Vec<String>,
    pub template: String,
    pub goal: String,
    pub outcome: String,
    pub reward: Option<f64>,
    pub steps: Vec<StepView>,
    /// The page after the last step.
    pub final_page: Option<Shot>,
}

/// Everything the report of one run shows.
#[derive(Clone, Debug, Default)]
pub struct ReportData {
    pub recipe: String,
    pub profile: Option<String>,
    /// The recipe's identity (`sha256:… (wrlc …)`), from the run's plan.
    pub identity: String,
    /// Status, wall time, evaluations, endings, exclusions and warnings.
    pub summary: Summary,
    pub config: Vec<NodeConfig>,
    pub charts: Vec<Chart>,
    /// Each trained stage's measured memory beside the estimate.
    pub memory: Vec<memory::MemoryRow>,
    /// Episodes by class: training, then each evaluation.
    pub by_source: Counts,
    pub by_iteration: Counts,
    pub by_template: Vec<(String, Counts)>,
    /// When the run logged its first line (UTC), if it has.
    pub started: Option<String>,
    /// Per evaluation (its name), the episodes chosen to show.
    pub chosen: Vec<(String, Vec<EpisodeView>)>,
    /// Pages linked rather than embedded because the page would pass [`EMBED_BUDGET`].
    pub linked_pages: usize,
}

/// The report of the run `view` holds.
pub fn build(view: &RunView) -> Result<ReportData, RunDirError> {
    let plan = wrl_plan::parse_json(&view.plan_json).map_err(|reason| RunDirError::Damaged {
        path: view.root.join("plan.json").display().to_string(),
        reason,
    })?;
    let mut budget = EMBED_BUDGET;
    let mut linked = 0;
    let mut chosen = Vec::new();
    let mut evals: Vec<&str> = Vec::new();
    for t in view.trajectories.iter().filter(|t| t.node.starts_with("eval:")) {
        if !evals.contains(&t.node.as_str()) {
            evals.push(&t.node);
        }
    }
    for node in evals {
        let lines: Vec<&TrajectoryLine> =
            view.trajectories.iter().filter(|t| t.node == node).collect();
        let candidates: Vec<chosen::Candidate> = lines
            .iter()
            .map(|t| chosen::Candidate {
                reward: scored(&t.reward),
                trajectory: &t.trajectory,
                screened: t.screenshots.is_some(),
            })
            .collect();
        // An evaluation scored by the tasks' checkers logs the same reward for every episode:
        // the report then shows none.
        let informative = candidates.windows(2).any(|w| w[0].reward != w[1].reward);
        let shown = chosen::choose(&candidates)
            .into_iter()
            .map(|(i, labels)| {
                let mut e = episode(&view.root, lines[i], labels, &mut budget, &mut linked);
                e.reward = e.reward.filter(|_| informative);
                e
            })
            .collect();
        chosen.push((tables::node_name(node), shown));
    }
    Ok(ReportData {
        recipe: plan.recipe.clone(),
        profile: plan.profile.clone(),
        identity: wrl_plan::Identity::of(&plan).line(),
        summary: view.figures(),
        config: config::nodes(&plan),
        charts: series::charts(&[(String::new(), &view.metrics)]),
        memory: memory::rows(&plan, &view.metrics),
        by_source: tables::by_source(&view.trajectories),
        by_iteration: tables::by_iteration(&view.trajectories),
        started: view.metrics.first().map(|m| utc(m.stamp().1)),
        by_template: tables::by_template(&view.trajectories),
        chosen,
        linked_pages: linked,
    })
}

/// Builds and writes `report.html` into the run directory; returns its path.
pub fn write(root: &Path) -> Result<std::path::PathBuf, RunDirError> {
    let view = RunView::read(root)?;
    let page = html::render(&build(&view)?);
    let path = root.join("report.html");
    crate::rundir::write_atomic(&path, page.as_bytes())?;
    Ok(path)
}

/// Unix seconds as `2026-12-01 18:07 UTC`.
fn utc(secs: f64) -> String {
    chrono::DateTime::from_timestamp(secs as i64, 0)
        .map_or_else(|| "an unknown time".into(), |t| t.format("%Y-%m-%d %H:%M UTC").to_string())
}

fn scored(s: &Scored) -> Option<f64> {
    match s {
        Scored::Value(v) => Some(*v),
        Scored::Excluded { .. } => None,
    }
}

/// One chosen episode, its pages read from the run directory and embedded within `budget`.
fn episode(
    root: &Path,
    t: &TrajectoryLine,
    labels: Vec<String>,
    budget: &mut usize,
    linked: &mut usize,
) -> EpisodeView {
    let tr = &t.trajectory;
    let mut shots: Vec<Option<Shot>> =
        t.screenshots.iter().flatten().map(|rel| Some(shot(root, rel, budget, linked))).collect();
    let final_page = if shots.len() > tr.steps.len() { shots.pop().flatten() } else { None };
    EpisodeView {
        title: format!("trajectory {} · task {}", t.id, tr.task_id),
        labels,
        template: tr.template.clone(),
        goal: tr.goal.clone(),
        outcome: format!("{} — {}", chosen::class(tr), tr.outcome.detail),
        reward: scored(&t.reward),
        steps: tr
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| StepView {
                observation: s.observation.clone(),
                action: s.actions.join("; "),
                feedback: s.feedback.clone(),
                shot: shots.get_mut(i).and_then(Option::take),
            })
            .collect(),
        final_page,
    }
}

fn shot(root: &Path, rel: &str, budget: &mut usize, linked: &mut usize) -> Shot {
    // Only the run's own `screens/`: a damaged log must not make the report embed other files.
    let inside = rel.starts_with("screens/")
        && Path::new(rel).components().all(|c| matches!(c, std::path::Component::Normal(_)));
    if !inside {
        return Shot { path: rel.into(), data: None, missing: true };
    }
    match std::fs::read(root.join(rel)) {
        Ok(png) if png.len() <= *budget => {
            *budget -= png.len();
            let data = base64::engine::general_purpose::STANDARD.encode(&png);
            Shot { path: rel.into(), data: Some(data), missing: false }
        }
        Ok(_) => {
            *linked += 1;
            Shot { path: rel.into(), data: None, missing: false }
        }
        Err(_) => Shot { path: rel.into(), data: None, missing: true },
    }
}
