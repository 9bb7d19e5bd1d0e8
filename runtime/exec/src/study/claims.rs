//! Deciding a recipe's claims (`params::Claim`) from the evaluation records of a run, or of
//! every seed of a study: the difference of the two figures' means over seeds with a 95 %
//! interval, the hull of a seeded bootstrap over seeds and tasks ([`stats::bootstrap_diff`],
//! the seeds' spread) and Newcombe's score interval on the pooled tasks ([`stats::newcombe`],
//! which keeps its width at 0 % and 100 %, where the bootstrap has none). A claim holds when
//! the interval's lower end is above its margin, fails when the upper end is below it, and is
//! undecided otherwise (docs/run.md, "Claims and variants").

use wrl_plan::NodeKind;
use wrl_plan::params::{Claim, ClaimSide, TypedPlan};

use super::stats::{self, Counts, PairedCounts};
pub use super::verdict::{ClaimResult, Verdict};
use crate::rundir::records::{EvalResult, Summary};

/// One variant of a study as its claims see it: its name (`base` for the recipe itself), its
/// plan and its runs' summaries, one per seed in the study's order.
pub struct Arm<'a, 'p> {
    pub name: &'a str,
    pub plan: &'a TypedPlan<'p>,
    pub runs: &'a [Summary],
}

/// Decides every claim of `plan` from the summaries of its runs (one per seed). A claim across
/// variants has no figure in a run of one variant: it is undecided over no seeds.
pub fn decide(plan: &TypedPlan<'_>, runs: &[Summary]) -> Vec<ClaimResult> {
    decide_across(plan, &[Arm { name: wrl_plan::BASE_VARIANT, plan, runs }])
}

/// Decides the claims of `base` (the recipe's plan) over the study's variants, each side from
/// the runs of the variant it names (`base` when it names none). A claim stated for other
/// profiles than the plan's is not decided (the planner leaves it out; a plan written by
/// hand may not).
pub fn decide_across(base: &TypedPlan<'_>, arms: &[Arm<'_, '_>]) -> Vec<ClaimResult> {
    let profile = base.plan.profile.as_deref();
    (base.plan.claims.iter()).filter(|c| c.in_scope(profile)).map(|c| decide_one(c, arms)).collect()
}

fn decide_one(c: &Claim, arms: &[Arm<'_, '_>]) -> ClaimResult {
    let arm = |side: &ClaimSide| arms.iter().find(|a| a.name == side.variant_name());
    let (a, b) = (arm(&c.eval), arm(&c.over));
    // Each seed's figures, the two sides from the same seed (the study runs every variant
    // with the same seeds, in the same order).
    let seeds = a.zip(b).map_or(0, |(a, b)| a.runs.len().min(b.runs.len()));
    // Each seed's two rates (as recorded) and their counts as the intervals count them.
    let seeded: Vec<((f64, f64), PairedCounts)> = match a.zip(b) {
        Some((a, b)) => (0..seeds)
            .filter_map(|i| {
                let (ra, ca) = counts(a, &a.runs[i], &c.eval)?;
                let (rb, cb) = counts(b, &b.runs[i], &c.over)?;
                Some(((ra, rb), (ca, cb)))
            })
            .collect(),
        None => Vec::new(),
    };
    let pairs: Vec<PairedCounts> = seeded.iter().map(|s| s.1).collect();
    // Across variants, seeds pair only where both sides evaluate the same tasks.
    let pairing = match a.zip(b) {
        Some((a, b)) if c.across_variants() => {
            Some(if same_tasks(a.plan, b.plan, &c.eval.eval, &c.over.eval) {
                "seed"
            } else {
                "unpaired"
            })
        }
        _ => None,
    };
    // The recorded rates, not the counts: where tasks repeat goals the counts are the worth's,
    // rounded.
    let difference = if seeded.is_empty() {
        0.0
    } else {
        seeded.iter().map(|((a, b), _)| a - b).sum::<f64>() / seeded.len() as f64
    };
    let (b_low, b_high) = match pairing {
        Some("unpaired") => stats::bootstrap_diff_unpaired(&pairs, stats::RESAMPLES),
        _ => stats::bootstrap_diff(&pairs, stats::RESAMPLES),
    };
    let pooled = |f: fn(&PairedCounts) -> Counts| {
        pairs.iter().map(f).fold((0, 0), |(s, n), (a, b)| (s + a, n + b))
    };
    let (n_low, n_high) = stats::newcombe(pooled(|p| p.0), pooled(|p| p.1), stats::Z95);
    let (low, high) = (b_low.min(n_low), b_high.max(n_high));
    let verdict = if pairs.is_empty() {
        Verdict::Undecided
    } else if low > c.at_least {
        Verdict::Holds
    } else if high < c.at_least {
        Verdict::Fails
    } else {
        Verdict::Undecided
    };
    ClaimResult {
        at_least: c.at_least,
        difference: super::round6(difference),
        eval_tasks: pairs.iter().map(|p| p.0.1).sum(),
        high: super::round6(high),
        low: super::round6(low),
        name: c.name.clone(),
        over_tasks: pairs.iter().map(|p| p.1.1).sum(),
        pairing: pairing.map(str::to_string),
        paper: c.paper.clone(),
        seeds: pairs.len(),
        source: c.source.clone(),
        statement: c.statement(),
        verdict,
    }
}

/// Whether two plans evaluate the same tasks: the evaluations are the same declaration, with
/// the same parameters, over datasets with the same parameters.
fn same_tasks(a: &TypedPlan<'_>, b: &TypedPlan<'_>, eval_a: &str, eval_b: &str) -> bool {
    if eval_a != eval_b {
        return false;
    }
    let (x, y) = (eval_inputs(a.plan, eval_a), eval_inputs(b.plan, eval_a));
    matches!((x, y), (Some(x), Some(y)) if x == y)
}

/// An evaluation node's parameters, and each dataset it reads (constructor and parameters).
type EvalInputs<'p> = (&'p Params, Vec<(&'p String, &'p Params)>);
type Params = std::collections::BTreeMap<String, wrl_plan::PVal>;

fn eval_inputs<'p>(plan: &'p wrl_plan::Plan, eval: &str) -> Option<EvalInputs<'p>> {
    let node = plan.nodes.iter().find(|n| n.kind == NodeKind::Eval && n.decl == eval)?;
    let data: Vec<(&String, &Params)> = (plan.edges.iter())
        .filter(|e| e.to == node.id)
        .filter_map(|e| plan.node(&e.from))
        .filter(|n| n.kind == NodeKind::LoadDataset)
        .map(|n| (&n.ctor, &n.params))
        .collect();
    Some((&node.params, data))
}

/// One run's rate and (solved, tasks) for one side of a claim, from its evaluation record.
fn counts(arm: &Arm<'_, '_>, s: &Summary, side: &ClaimSide) -> Option<(f64, Counts)> {
    let r: &EvalResult = s.evals.iter().find(|r| r.eval == side.eval && r.after == side.after)?;
    let (_, k) = super::metric_of(arm.plan, &side.eval);
    let (solved, n) = super::solved_of(r, k);
    Some((if n == 0 { 0.0 } else { r.success }, (solved, n)))
}

/// The claims as lines: `claim NAME: holds — STATEMENT: +12.5 points [3.1, 21.9]`.
pub fn lines(claims: &[ClaimResult]) -> String {
    let mut out = String::new();
    for c in claims {
        let points = |x: f64| format!("{:+.1}", x * 100.0);
        out.push_str(&format!(
            "claim {}: {} — {}: {} points [{}, {}] over {} seed{}, {} and {} tasks{}{}\n",
            c.name,
            c.verdict.word(),
            c.statement,
            points(c.difference),
            points(c.low),
            points(c.high),
            c.seeds,
            if c.seeds == 1 { "" } else { "s" },
            c.eval_tasks,
            c.over_tasks,
            c.paper.as_ref().map_or(String::new(), |p| format!(" (paper: {p})")),
            c.pairing.as_deref().map_or("", |p| if p == "seed" {
                ", paired by seed"
            } else {
                ", unpaired"
            }),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use wrl_plan::params::ClaimKind;

    fn claim(name: &str, profiles: Option<&[&str]>) -> Claim {
        let side =
            |after: &str| ClaimSide { eval: "held".into(), after: after.into(), variant: None };
        Claim {
            name: name.into(),
            kind: ClaimKind::Gain,
            eval: side("online"),
            over: side("warmup"),
            at_least: 0.0,
            expect: None,
            paper: None,
            source: None,
            doc: None,
            profiles: profiles.map(|ps| ps.iter().map(|p| p.to_string()).collect()),
        }
    }

    /// A plan of no nodes stating `claims`.
    fn plan_of(claims: Vec<Claim>) -> wrl_plan::Plan {
        wrl_plan::Plan {
            version: wrl_plan::PLAN_VERSION,
            recipe: "r.wrl".into(),
            profile: None,
            variant: None,
            nodes: Vec::new(),
            edges: Vec::new(),
            claims,
        }
    }

    fn result(after: &str, success: f64) -> EvalResult {
        EvalResult {
            eval: "held".into(),
            after: after.into(),
            success,
            mean_reward: None,
            episodes: 100,
            published: Vec::new(),
            by: None,
            subsets: Default::default(),
            repeats: None,
        }
    }

    /// #45: a plan decides the claims stated for its own profile (or for every one) and none
    /// stated for others, whatever its records hold.
    #[test]
    fn a_claim_out_of_the_plans_profile_is_not_decided() {
        let mut plan = plan_of(vec![
            claim("everywhere", None),
            claim("scoped", Some(&["claims"])),
            claim("base_too", Some(&["base", "claims"])),
        ]);
        let run = Summary {
            status: "finished".into(),
            evals: vec![result("warmup", 0.2), result("online", 0.8)],
            ..Summary::default()
        };
        let names = |plan: &wrl_plan::Plan| -> Vec<(String, Verdict)> {
            let typed = TypedPlan::decode(plan).unwrap_or_else(|_| panic!("decodes"));
            decide(&typed, std::slice::from_ref(&run))
                .into_iter()
                .map(|c| (c.name, c.verdict))
                .collect()
        };
        let holds = |n: &str| (n.to_string(), Verdict::Holds);
        assert_eq!(names(&plan), [holds("everywhere"), holds("base_too")]);
        plan.profile = Some("claims".into());
        assert_eq!(names(&plan), [holds("everywhere"), holds("scoped"), holds("base_too")]);
        plan.profile = Some("smoke".into());
        assert_eq!(names(&plan), [holds("everywhere")]);
    }

    /// #45: where tasks repeat goals a claim's interval counts what they are worth (wider than
    /// over the tasks), and its difference is still the recorded rates'.
    #[test]
    fn repeated_goals_widen_a_claim_and_keep_its_difference() {
        let plan = plan_of(vec![claim("lifts", None)]);
        let typed = TypedPlan::decode(&plan).unwrap_or_else(|_| panic!("decodes"));
        let run = |worth: Option<(u64, u64)>| Summary {
            status: "finished".into(),
            evals: [("warmup", 0.33, worth.map(|w| w.0)), ("online", 0.61, worth.map(|w| w.1))]
                .into_iter()
                .map(|(after, success, worth)| EvalResult {
                    repeats: worth
                        .map(|worth| crate::rundir::records::Repeats { goals: 55, worth }),
                    ..result(after, success)
                })
                .collect(),
            ..Summary::default()
        };
        let distinct = &decide(&typed, &[run(None)])[0];
        let repeated = &decide(&typed, &[run(Some((42, 37)))])[0];
        assert_eq!((distinct.eval_tasks, distinct.over_tasks), (100, 100));
        assert_eq!((repeated.eval_tasks, repeated.over_tasks), (37, 42));
        // 0.61 of 37 is 22.57 tasks, rounded to 23 (0.62): the difference is not the counts'.
        assert!((repeated.difference - 0.28).abs() < 1e-9, "{repeated:?}");
        assert!((distinct.difference - 0.28).abs() < 1e-9, "{distinct:?}");
        let width = |c: &ClaimResult| c.high - c.low;
        assert!(width(repeated) > 1.4 * width(distinct), "{repeated:?} against {distinct:?}");
        assert_eq!((distinct.verdict, repeated.verdict), (Verdict::Holds, Verdict::Holds));
    }
}
