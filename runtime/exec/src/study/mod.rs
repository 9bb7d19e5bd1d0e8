//! A study: seeded copies of one run (`wrlc run FILE --seeds N`), each its own run directory
//! `seed-K` under the study's, and `study.json`, which lists the seeds and, once they have
//! run, aggregates their evaluations — each one's mean over seeds with a 95 % interval over
//! episodes and seeds ([`stats`]).

pub mod claims;
pub mod stats;
pub mod variants;
pub mod verdict;

use std::path::Path;

use serde::{Deserialize, Serialize};
use wrl_plan::params::{Metric, Params, TypedPlan};

use crate::rundir::records::{EvalResult, Summary};
use crate::rundir::{RunDirError, write_atomic};

/// The study's file, in its directory.
pub const STUDY_FILE: &str = "study.json";

/// A run's seed offset, in its run directory (absent: 0, a plain run).
pub const SEED_FILE: &str = "seed.json";

/// The run directory of seed `k`, relative to the study's.
pub fn seed_dir(k: u64) -> String {
    format!("seed-{k}")
}

/// What `study.json` holds (keys in alphabetical order: the file is deterministic).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Study {
    /// Each claim of the recipe decided over the seeds; empty until every seed finished.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<verdict::ClaimResult>,
    /// With variants: whether their compute matches the recipe's (`variants::ComputeMatch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute: Option<variants::ComputeMatch>,
    /// Each evaluation over the seeds, in the plan's order; empty until every seed finished.
    /// With variants, the recipe's own (`base`); each variant's are in `variants`.
    #[serde(default)]
    pub evals: Vec<StudyEval>,
    pub recipe: String,
    /// Each seed's run directory, relative to the study's.
    pub runs: Vec<String>,
    /// The seeds (each run's seed offset), in the order they run.
    pub seeds: Vec<u64>,
    /// `running` until every seed finished, then `finished`.
    pub status: String,
    /// The recipe (`base`) and each variant it ran, side by side (absent: a study of the
    /// recipe alone, its runs `seed-K`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<variants::VariantStudy>,
}

/// One evaluation over the seeds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudyEval {
    /// The stage it ran after (the eval's own name when it follows none).
    pub after: String,
    /// Episodes over all seeds.
    pub episodes: usize,
    pub eval: String,
    /// The upper and lower ends of the 95 % interval.
    pub high: f64,
    /// How the interval was made: `wilson` (pooled episodes), `bootstrap` (seeds and tasks), or
    /// `bootstrap+wilson` (a rate over tasks: the wider of the two at each end).
    pub interval: String,
    pub low: f64,
    /// The mean over seeds.
    pub mean: f64,
    /// `success`, `pass_at_k`, `cons_at_k` or `mean_reward`.
    pub metric: String,
    /// Each seed's figure, in the order of `seeds`.
    pub per_seed: Vec<f64>,
    /// Tasks over all seeds (episodes over k).
    pub tasks: u64,
    /// Where some seed's tasks repeat goals: the independent tasks they are worth over all seeds,
    /// which the interval counts in place of `tasks`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worth: Option<u64>,
    /// With `by`: each subset's counts pooled over the seeds, with Wilson's interval.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub subsets: std::collections::BTreeMap<String, crate::rundir::records::SubsetResult>,
}

/// Aggregates the summaries of the seeds' runs (in the order of `seeds`) of `plan`.
pub fn aggregate(plan: &TypedPlan<'_>, seeds: &[u64], runs: &[Summary]) -> Study {
    let mut s = study(plan, seeds, evals_of(plan, runs));
    if !runs.is_empty() {
        s.claims = claims::decide(plan, runs);
    }
    s
}

/// Each evaluation of `plan` over the seeds' runs, in the order of the first run's records.
pub(crate) fn evals_of(plan: &TypedPlan<'_>, runs: &[Summary]) -> Vec<StudyEval> {
    let mut evals = Vec::new();
    let Some(first) = runs.first() else {
        return evals;
    };
    for (i, e) in first.evals.iter().enumerate() {
        let (metric, k) = metric_of(plan, &e.eval);
        // Each seed's record of this evaluation, found at its place in the run.
        let records: Vec<&EvalResult> = runs
            .iter()
            .filter_map(|s| s.evals.get(i))
            .filter(|r| r.eval == e.eval && r.after == e.after)
            .collect();
        // Each seed's (solved, tasks as counted), rate and episodes.
        let counts: Vec<(u64, u64, f64, usize)> = records
            .iter()
            .map(|r| {
                let (solved, tasks) = solved_of(r, k);
                (solved, tasks, r.success, r.episodes)
            })
            .collect();
        let worth =
            records.iter().any(|r| r.repeats.is_some()).then(|| counts.iter().map(|c| c.1).sum());
        let per_seed: Vec<f64> = counts.iter().map(|c| c.2).collect();
        let mean = if per_seed.is_empty() {
            0.0
        } else {
            per_seed.iter().sum::<f64>() / per_seed.len() as f64
        };
        let pairs: Vec<(u64, u64)> = counts.iter().map(|c| (c.0, c.1)).collect();
        let (interval, (low, high)) = match metric {
            Metric::Success => {
                let (s, n) = pairs.iter().fold((0, 0), |(s, n), p| (s + p.0, n + p.1));
                ("wilson", stats::wilson(s, n, stats::Z95))
            }
            // A rate over tasks: the bootstrap, widened end by end to Wilson's interval over
            // the pooled tasks, which keeps its width where every seed solved nothing or
            // everything (the bootstrap alone is a point there; claims take the same hull).
            Metric::PassAtK | Metric::ConsAtK => {
                let (s, n) = pairs.iter().fold((0, 0), |(s, n), p| (s + p.0, n + p.1));
                let (bl, bh) = stats::bootstrap(&pairs, stats::RESAMPLES);
                let (wl, wh) = stats::wilson(s, n, stats::Z95);
                ("bootstrap+wilson", (bl.min(wl), bh.max(wh)))
            }
            Metric::MeanReward => ("bootstrap", stats::bootstrap(&pairs, stats::RESAMPLES)),
        };
        evals.push(StudyEval {
            after: e.after.clone(),
            episodes: counts.iter().map(|c| c.3).sum(),
            eval: e.eval.clone(),
            high: round6(high),
            interval: interval.into(),
            low: round6(low),
            mean: round6(mean),
            metric: metric_name(metric).into(),
            per_seed: per_seed.into_iter().map(round6).collect(),
            tasks: records.iter().map(|r| tasks_of(r, k)).sum(),
            worth,
            subsets: pooled_subsets(records.iter().copied()),
        });
    }
    evals
}

/// Each subset's counts summed over the seeds' records of one evaluation, with Wilson's
/// interval over the pooled tasks (episodes for `mean_reward`).
fn pooled_subsets<'r>(
    records: impl Iterator<Item = &'r EvalResult>,
) -> std::collections::BTreeMap<String, crate::rundir::records::SubsetResult> {
    // Solved, tried, what they are worth (a seed without repeats counts its tasks), and
    // whether any seed's tasks repeated goals.
    let mut counts: std::collections::BTreeMap<&str, (u64, u64, u64, bool)> = Default::default();
    for r in records {
        for (name, s) in &r.subsets {
            let c = counts.entry(name.as_str()).or_default();
            c.0 += s.solved;
            c.1 += s.out_of;
            c.2 += s.worth.unwrap_or(s.out_of);
            c.3 |= s.worth.is_some();
        }
    }
    counts
        .into_iter()
        .map(|(name, (s, n, w, repeated))| {
            (name.to_string(), crate::executor::subset_result(s, n, repeated.then_some(w)))
        })
        .collect()
}

/// An evaluation record's (solved, tasks) as its intervals count them: its episodes over k are
/// its tasks, or where its tasks repeat goals, the independent tasks they are worth.
pub(crate) fn solved_of(r: &EvalResult, k: u64) -> (u64, u64) {
    let tasks = tasks_of(r, k);
    let solved = (r.success * tasks as f64).round() as u64;
    stats::counted(solved, tasks, r.repeats.map(|rep| rep.worth))
}

/// An evaluation record's tasks: its episodes over k.
fn tasks_of(r: &EvalResult, k: u64) -> u64 {
    (r.episodes as u64) / k.max(1)
}

/// The study before its seeds have run: its seeds and run directories.
pub fn planned(plan: &TypedPlan<'_>, seeds: &[u64]) -> Study {
    let mut s = study(plan, seeds, Vec::new());
    s.status = "running".into();
    s
}

/// A study with no plan to name (no variant was given): its seeds alone.
pub(crate) fn planned_empty(seeds: &[u64]) -> Study {
    Study { seeds: seeds.to_vec(), status: "running".into(), ..Study::default() }
}

pub(crate) fn study(plan: &TypedPlan<'_>, seeds: &[u64], evals: Vec<StudyEval>) -> Study {
    Study {
        claims: Vec::new(),
        compute: None,
        evals,
        recipe: recipe_name(&plan.plan.recipe),
        runs: seeds.iter().map(|&k| seed_dir(k)).collect(),
        seeds: seeds.to_vec(),
        status: "finished".into(),
        variants: Vec::new(),
    }
}

/// The recipe by its file name: the study's file names no directory of the machine it ran on.
pub(crate) fn recipe_name(recipe: &str) -> String {
    Path::new(recipe)
        .file_name()
        .map_or_else(|| recipe.to_string(), |n| n.to_string_lossy().into_owned())
}

/// Figures are written to six decimals: enough for a rate, and the same text on every machine.
pub(crate) fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// The metric of the evaluation `decl` and its k (1 for success and mean reward).
pub(crate) fn metric_of(plan: &TypedPlan<'_>, decl: &str) -> (Metric, u64) {
    for (n, p) in &plan.nodes {
        if let Params::Eval(e) = p
            && n.decl == decl
        {
            let k = match e.metric {
                Metric::PassAtK | Metric::ConsAtK => e.k.max(1),
                Metric::Success | Metric::MeanReward => 1,
            };
            return (e.metric, u64::from(k));
        }
    }
    (Metric::Success, 1)
}

pub(crate) fn metric_name(m: Metric) -> &'static str {
    match m {
        Metric::Success => "success",
        Metric::PassAtK => "pass_at_k",
        Metric::ConsAtK => "cons_at_k",
        Metric::MeanReward => "mean_reward",
    }
}

/// Writes `study.json` into the study directory (pretty, keys sorted, a final newline).
pub fn write(dir: &Path, study: &Study) -> Result<(), RunDirError> {
    let path = dir.join(STUDY_FILE);
    let mut text = serde_json::to_string_pretty(study).map_err(|e| RunDirError::Damaged {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    text.push('\n');
    write_atomic(&path, text.as_bytes())
}

/// Reads `study.json` from the study directory; `None` when there is none.
pub fn read(dir: &Path) -> Option<Study> {
    let text = std::fs::read_to_string(dir.join(STUDY_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

/// The seed offset a run directory records (0 when it records none: a plain run).
pub fn seed_offset_of(run: &Path) -> u64 {
    #[derive(Deserialize)]
    struct SeedFile {
        seed_offset: u64,
    }
    std::fs::read_to_string(run.join(SEED_FILE))
        .ok()
        .and_then(|t| serde_json::from_str::<SeedFile>(&t).ok())
        .map_or(0, |s| s.seed_offset)
}

/// The text of a run's seed file.
pub fn seed_file_text(offset: u64) -> String {
    format!("{{\"seed_offset\": {offset}}}\n")
}

/// The study as a table: an evaluation a row, its mean and interval in percent.
pub fn table(study: &Study) -> String {
    let mut out = format!(
        "{} over {} seeds ({}):\n",
        study.recipe,
        study.seeds.len(),
        study.seeds.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
    );
    let rows: Vec<(String, String, String)> = study
        .evals
        .iter()
        .flat_map(|e| {
            let name = if e.after == e.eval {
                e.eval.clone()
            } else {
                format!("{} after {}", e.eval, e.after)
            };
            let fig = |mean: f64, low: f64, high: f64| {
                format!("{:5.1}%  [{:5.1}%, {:5.1}%]", mean * 100.0, low * 100.0, high * 100.0)
            };
            let worth = e.worth.map(|w| format!(", worth {w} tasks")).unwrap_or_default();
            let whole = (
                name,
                format!("{} ({}, {} episodes{worth})", e.metric, e.interval, e.episodes),
                fig(e.mean, e.low, e.high),
            );
            // With `by`: each subset, pooled over the seeds.
            let parts = e.subsets.iter().map(move |(sub, r)| {
                (
                    format!("  [{sub}]"),
                    format!("{}/{} solved (wilson, pooled)", r.solved, r.out_of),
                    fig(r.success, r.low, r.high),
                )
            });
            std::iter::once(whole).chain(parts)
        })
        .collect();
    let w = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    for (name, what, fig) in rows {
        out.push_str(&format!("  {name:<w$}  {fig}  {what}\n"));
    }
    out
}
