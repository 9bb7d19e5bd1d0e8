//! A study of the recipe and its variants (`variant NAME { … }`), run with the same seeds:
//! each variant's runs `NAME/seed-K` (the recipe's own `base/seed-K`), its evaluations over
//! the seeds side by side with the others', its compute — the environment steps its runs
//! took, and the estimate's bounds on steps and generated tokens — and whether that compute
//! matches the recipe's (within [`TOLERANCE`]); the claims across variants decided from them.

use serde::{Deserialize, Serialize};
use wrl_plan::params::TypedPlan;

use super::claims::{self, Arm};
use super::{Study, StudyEval};
use crate::rundir::records::Summary;
use crate::rundir::view::RunView;

/// How far a variant's compute may be from the recipe's and still match it (a fraction).
pub const TOLERANCE: f64 = 0.01;

/// The run directory of variant `name` at seed `k`, relative to the study's.
pub fn variant_dir(name: &str, k: u64) -> String {
    format!("{name}/{}", super::seed_dir(k))
}

/// One variant of the study (keys in alphabetical order: the file is deterministic).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariantStudy {
    pub compute: Compute,
    /// Each evaluation over the seeds, as the study's `evals`; empty until the study finished.
    #[serde(default)]
    pub evals: Vec<StudyEval>,
    /// The identity of the plan it ran (`sha256:…`): each variant is its own plan.
    pub identity: String,
    /// `base` for the recipe itself.
    pub name: String,
    /// Its runs, one per seed in the study's order, relative to the study's directory.
    pub runs: Vec<String>,
}

/// What a variant's runs cost.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Compute {
    /// Environment steps its runs took, over every seed (training and evaluation episodes).
    pub env_steps: u64,
    /// The estimate's bound on environment steps per run (`wrlc estimate`: training, refills,
    /// validation and evaluation), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_env_steps: Option<u64>,
    /// The estimate's bound on generated tokens per run, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_tokens: Option<u64>,
}

/// Whether every variant's compute matches the recipe's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComputeMatch {
    /// Every figure of every variant within the tolerance of the recipe's.
    pub matches: bool,
    /// What differs, in words (`flat: env steps 96 against 120 (−20.0 %)`); empty when all match.
    pub note: String,
    /// The tolerance, as a fraction.
    pub tolerance: f64,
}

/// One variant as the study runs it: its name, plan and the seeds' summaries once they ran.
pub struct Ran<'a, 'p> {
    pub name: &'a str,
    pub plan: &'a TypedPlan<'p>,
    pub runs: Vec<Summary>,
    /// Environment steps its runs took, over every seed.
    pub env_steps: u64,
}

/// The study before its seeds have run: every variant with its runs, no figures yet.
pub fn planned(arms: &[(&str, &TypedPlan<'_>)], seeds: &[u64]) -> Study {
    let Some((_, base)) = arms.first() else {
        return super::planned_empty(seeds);
    };
    let mut s = super::study(base, seeds, Vec::new());
    s.status = "running".into();
    s.runs = arms.iter().flat_map(|(n, _)| seeds.iter().map(move |&k| variant_dir(n, k))).collect();
    s.variants = arms.iter().map(|(n, p)| variant(n, p, seeds, Compute::default())).collect();
    s
}

fn variant(name: &str, plan: &TypedPlan<'_>, seeds: &[u64], compute: Compute) -> VariantStudy {
    VariantStudy {
        compute,
        evals: Vec::new(),
        identity: wrl_plan::Identity::of(plan.plan).plan,
        name: name.to_string(),
        runs: seeds.iter().map(|&k| variant_dir(name, k)).collect(),
    }
}

/// Aggregates every variant's runs (the recipe's first), decides the claims across them and
/// says whether their compute matches.
pub fn aggregate(ran: &[Ran<'_, '_>], seeds: &[u64]) -> Study {
    let Some(base) = ran.first() else {
        return super::planned_empty(seeds);
    };
    let mut s = super::study(base.plan, seeds, super::evals_of(base.plan, &base.runs));
    s.runs = ran.iter().flat_map(|r| seeds.iter().map(move |&k| variant_dir(r.name, k))).collect();
    s.variants = ran
        .iter()
        .map(|r| {
            let mut v = variant(r.name, r.plan, seeds, compute_of(r));
            v.evals = super::evals_of(r.plan, &r.runs);
            v
        })
        .collect();
    let arms: Vec<Arm<'_, '_>> =
        ran.iter().map(|r| Arm { name: r.name, plan: r.plan, runs: &r.runs }).collect();
    s.claims = claims::decide_across(base.plan, &arms);
    s.compute = Some(compute_match(&s.variants));
    s
}

/// A variant's compute: the steps its runs took, and the estimate's bounds for a whole run
/// (training, refills, validation and evaluation).
fn compute_of(r: &Ran<'_, '_>) -> Compute {
    let e = wrl_plan::estimate(r.plan.plan, None);
    let parts = [&e.refill, &e.validation, &e.evaluation];
    let sum = |train: Option<u64>, of: fn(&wrl_plan::estimate::Totals) -> Option<u64>| {
        parts.iter().try_fold(train?, |acc, t| Some(acc + of(t)?))
    };
    Compute {
        env_steps: r.env_steps,
        estimated_env_steps: sum(e.max_env_steps, |t| t.max_env_steps),
        estimated_tokens: sum(e.max_generated_tokens, |t| t.max_generated_tokens),
    }
}

/// Environment steps a run took: the steps of every episode it recorded.
pub fn env_steps(view: &RunView) -> u64 {
    view.trajectories.iter().map(|t| t.trajectory.steps.len() as u64).sum()
}

/// Each variant's compute against the recipe's (the first): measured steps, and the
/// estimate's steps and tokens, each within [`TOLERANCE`].
pub fn compute_match(variants: &[VariantStudy]) -> ComputeMatch {
    let mut notes = Vec::new();
    if let Some((base, rest)) = variants.split_first() {
        for v in rest {
            let (b, c) = (&base.compute, &v.compute);
            let figures = [
                ("env steps", Some(b.env_steps), Some(c.env_steps)),
                ("estimated env steps", b.estimated_env_steps, c.estimated_env_steps),
                ("estimated generated tokens", b.estimated_tokens, c.estimated_tokens),
            ];
            for (what, x, y) in figures {
                if let Some(n) = differs(x, y) {
                    notes.push(format!("{}: {what} {} against {}{n}", v.name, show(y), show(x)));
                }
            }
        }
    }
    ComputeMatch { matches: notes.is_empty(), note: notes.join("; "), tolerance: TOLERANCE }
}

/// ` (+20.0 %)` when `y` is more than the tolerance away from `x`, ` (unknown)` when only one
/// is known; `None` when they match.
fn differs(x: Option<u64>, y: Option<u64>) -> Option<String> {
    match (x, y) {
        (Some(x), Some(y)) => {
            let base = x.max(1) as f64;
            let rel = (y as f64 - x as f64) / base;
            (rel.abs() > TOLERANCE).then(|| format!(" ({:+.1} %)", rel * 100.0))
        }
        (None, None) => None,
        (Some(_), None) | (None, Some(_)) => Some(" (one is unknown)".to_string()),
    }
}

fn show(x: Option<u64>) -> String {
    x.map_or_else(|| "unknown".to_string(), |n| n.to_string())
}

/// The variants side by side: each evaluation a row, each variant's mean and interval a
/// column; then each variant's compute and whether it matches.
pub fn table(study: &Study) -> String {
    let mut out = format!(
        "{} and {} variant{} over {} seeds ({}):\n",
        study.recipe,
        study.variants.len().saturating_sub(1),
        if study.variants.len() == 2 { "" } else { "s" },
        study.seeds.len(),
        study.seeds.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
    );
    let Some(base) = study.variants.first() else {
        return out;
    };
    for e in &base.evals {
        let name = if e.after == e.eval {
            e.eval.clone()
        } else {
            format!("{} after {}", e.eval, e.after)
        };
        out.push_str(&format!("  {name} ({})\n", e.metric));
        for v in &study.variants {
            let fig = v.evals.iter().find(|x| x.eval == e.eval && x.after == e.after).map_or_else(
                || "no figure".to_string(),
                |x| {
                    format!(
                        "{:5.1}%  [{:5.1}%, {:5.1}%]",
                        x.mean * 100.0,
                        x.low * 100.0,
                        x.high * 100.0
                    )
                },
            );
            out.push_str(&format!("    {:<12}  {fig}\n", v.name));
        }
    }
    out.push_str("  compute (env steps over the seeds; estimate per run: steps, tokens)\n");
    for v in &study.variants {
        let c = &v.compute;
        out.push_str(&format!(
            "    {:<12}  {} steps; estimate ≤ {} steps, ≤ {} tokens\n",
            v.name,
            c.env_steps,
            show(c.estimated_env_steps),
            show(c.estimated_tokens)
        ));
    }
    if let Some(m) = &study.compute {
        if m.matches {
            out.push_str(&format!("  compute matches (within {} %)\n", m.tolerance * 100.0));
        } else {
            out.push_str(&format!("  compute differs: {}\n", m.note));
        }
    }
    out
}
