//! The nodes the RL runs do not lower themselves: SFT stages (run before the job), their data
//! and checkpoints, rewards (scored by the env service), judge models (its endpoints), and
//! whatever the job does not read. Each field gets its entry; a node that did not decode is
//! accounted from its raw parameters, and refused where the job needs a value it lacks.

use std::collections::BTreeSet;

use serde_json::json;
use wrl_plan::params::{JudgeModel, Params, RewardRef, Signal};
use wrl_plan::{Expr, Node, NodeKind};

use crate::ctx::{Ctx, E_UNKNOWN, E_UNMAPPED};
use crate::report::leaves;

/// Accounts for every node the stages did not.
pub(crate) fn account_nodes(c: &mut Ctx<'_>) {
    crate::evals::outside(c);
    let rewards = used_rewards(c);
    c.used.extend(rewards.iter().cloned());
    let judges = judge_models(c, &rewards);
    let rl_stages: BTreeSet<String> = c.runs.iter().map(|r| r.stage.clone()).collect();
    let plan = c.plan;
    for n in &plan.nodes {
        let fields: Vec<String> = leaves(n).into_iter().filter(|f| !c.has(n, f)).collect();
        if fields.is_empty() {
            continue;
        }
        let decoded = c.d.nodes.iter().find(|(m, _)| m.id == n.id).map(|(_, p)| p.is_ok());
        for f in &fields {
            account_field(c, n, f, &rewards, &judges, &rl_stages);
        }
        if decoded == Some(false) && c.used.contains(&n.id) {
            // The job reads this node, but it does not decode: its unknowns are refused above;
            // anything else is a format problem.
            let unknown = c.d.unknown.iter().any(|(m, _)| m == &n.id);
            if !unknown && let Some(e) = c.entries.iter_mut().rev().find(|e| e.node == n.id) {
                e.refuse(E_UNMAPPED);
            }
        }
    }
}

fn account_field(
    c: &mut Ctx<'_>,
    n: &Node,
    f: &str,
    rewards: &BTreeSet<String>,
    judges: &BTreeSet<String>,
    rl_stages: &BTreeSet<String>,
) {
    let unknown = c.d.is_unknown(&n.id, f);
    match n.kind {
        NodeKind::Reward if rewards.contains(&n.id) => {
            let served = has_endpoint(c, &n.id);
            let e = c.wrl(n, f, &[("env service", json!(n.id))]);
            if served {
                // verl's `custom_reward_function` would be a second client of the endpoint, in
                // Python, with its own retries and no failure classes: the env service's is
                // `wrlc run`'s, and an unanswered call excludes the episode as there.
                e.note("the env service evaluates the reward as typed when an episode ends and calls its reward endpoint as `wrlc run` does (the request of docs/reward-endpoint.md, its retries and failure classes; an unanswered call excludes the episode, never 0), not through verl's custom_reward_function");
            } else {
                e.note("the env service evaluates the reward as typed (judges asked only when the branch taken needs them) when an episode ends");
            }
            if unknown {
                let paths = c.d.unknown_under(&n.id, f).join(", ");
                let e = c.entries.iter_mut().rev().find(|e| e.node == n.id && e.field == f);
                if let Some(e) = e {
                    e.why = Some(format!(
                        "`{paths}` is `unknown`: the env service cannot score episodes"
                    ));
                    e.instead = Some("give it a value in the recipe, a profile or `--set`".into());
                    e.refuse(E_UNKNOWN);
                }
            }
        }
        NodeKind::LoadModel if judges.contains(&n.id) => {
            c.wrl(n, f, &[("env service", json!("judge endpoint"))])
                .note("a judge's model: the env service calls it over OpenAI-compatible HTTP");
        }
        NodeKind::Sft => {
            let stage = c.d.node(&n.id).map_or(String::new(), |n| n.decl.clone());
            let (why, instead) = sft_note(&stage);
            c.not_mapped(n, f, why, instead);
        }
        NodeKind::Checkpoint => {
            let stage = n.id.strip_prefix("checkpoint:").unwrap_or(&n.id).to_string();
            if rl_stages.contains(&stage) {
                c.implied(n, f, format!("the runs' checkpoints: checkpoints/{stage}-<phase>/global_step_<N>, saved every trainer.save_freq steps and at each run's last step"));
            } else {
                let (why, instead) = sft_note(&stage);
                c.not_mapped(n, f, why, instead);
            }
        }
        NodeKind::LoadDataset => {
            #[derive(Default, serde::Deserialize)]
            #[serde(default)]
            struct Records {
                kind: Option<wrl_plan::params::RecordKind>,
            }
            let read: Option<Records> = wrl_plan::params::partial::read(n);
            use wrl_plan::params::RecordKind as K;
            let sft_data =
                matches!(read.and_then(|r| r.kind), Some(K::Trajectories | K::Grounding));
            if sft_data {
                c.not_mapped(
                    n,
                    f,
                    "demonstrations for SFT, which runs before this job",
                    "the SFT stage's output is the job's MODEL",
                );
            } else {
                c.not_mapped(n, f, "no run of the job reads this dataset", "nothing");
            }
        }
        NodeKind::LoadModel | NodeKind::Env | NodeKind::Agent | NodeKind::Reward => {
            c.not_mapped(n, f, "no run of the job uses it", "nothing");
        }
        NodeKind::RlPhase | NodeKind::Eval => {
            let why =
                c.d.nodes
                    .iter()
                    .find(|(m, _)| m.id == n.id)
                    .and_then(|(_, p)| p.as_ref().err().cloned())
                    .unwrap_or_else(|| "not lowered".into());
            let e = c.not_mapped(n, f, format!("the node does not decode: {why}"), "nothing");
            e.refuse(if unknown { E_UNKNOWN } else { E_UNMAPPED });
        }
    }
}

fn sft_note(stage: &str) -> (String, String) {
    (
        format!("SFT stage `{stage}` runs before this job"),
        format!(
            "run it with `wrlc run` (or verl's SFT trainer) and give its weights in Hugging Face layout as MODEL: the RL stage starts from `{stage}`'s weights"
        ),
    )
}

/// The reward nodes the job's runs score with: phase rewards, eval judges, and the rewards those
/// name.
fn used_rewards(c: &Ctx<'_>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut add = |r: &RewardRef| {
        if let RewardRef::Node(n) = r {
            out.insert(n.id().to_string());
        }
    };
    for run in &c.runs {
        if let Some(Params::RlPhase(r)) = c.d.get(&run.node) {
            add(&r.rollout.reward);
            if let Some(p) = r.algo.process_reward() {
                add(p);
            }
        }
    }
    for (n, p) in &c.d.nodes {
        if let Ok(Params::Eval(e)) = p
            && c.has(n, "agent")
            && c.entries
                .iter()
                .any(|x| x.node == n.id && x.status != crate::report::Status::NotMapped)
            && let Some(j) = &e.judge
        {
            add(j);
        }
    }
    // Rewards named by used rewards.
    let mut todo: Vec<String> = out.iter().cloned().collect();
    while let Some(id) = todo.pop() {
        let Some(n) = c.d.node(&id) else { continue };
        if let Some(expr) = wrl_plan::params::partial::reward_expr(n) {
            let mut named = Vec::new();
            named_rewards(expr, &mut named);
            for r in named {
                if out.insert(r.clone()) {
                    todo.push(r);
                }
            }
        }
    }
    out
}

fn named_rewards(e: &wrl_plan::PExpr, out: &mut Vec<String>) {
    match e {
        Expr::Reward { node } => out.push(node.clone()),
        Expr::Unary { arg, .. } => named_rewards(arg, out),
        Expr::Binary { lhs, rhs, .. } => {
            named_rewards(lhs, out);
            named_rewards(rhs, out);
        }
        Expr::If { cond, then, otherwise } => {
            named_rewards(cond, out);
            named_rewards(then, out);
            named_rewards(otherwise, out);
        }
        Expr::Const { .. } | Expr::Bool { .. } | Expr::Signal { .. } => {}
    }
}

/// Whether the reward node `id` asks a reward endpoint (`std::rewards::endpoint`).
fn has_endpoint(c: &Ctx<'_>, id: &str) -> bool {
    let Some(Params::Reward(r)) = c.d.get(id) else { return false };
    let mut signals = Vec::new();
    typed_signals(&r.expr, &mut signals);
    signals.iter().any(|s| matches!(s, Signal::Endpoint(_)))
}

/// The model nodes the used rewards' judges name.
fn judge_models(c: &Ctx<'_>, rewards: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for id in rewards {
        let Some(Params::Reward(r)) = c.d.get(id) else { continue };
        let mut signals = Vec::new();
        typed_signals(&r.expr, &mut signals);
        for s in signals {
            let m = match s {
                Signal::Judge(j) => Some(&j.model),
                Signal::Webjudge(w) => Some(&w.model),
                Signal::AnswerMatch { judge_model, .. } => judge_model.as_ref(),
                _ => None,
            };
            if let Some(JudgeModel::Model(n)) = m {
                out.insert(n.id().to_string());
            }
        }
    }
    out
}

fn typed_signals<'e>(e: &'e Expr<Signal>, out: &mut Vec<&'e Signal>) {
    match e {
        Expr::Signal { obj } => out.push(obj),
        Expr::Unary { arg, .. } => typed_signals(arg, out),
        Expr::Binary { lhs, rhs, .. } => {
            typed_signals(lhs, out);
            typed_signals(rhs, out);
        }
        Expr::If { cond, then, otherwise } => {
            typed_signals(cond, out);
            typed_signals(then, out);
            typed_signals(otherwise, out);
        }
        Expr::Const { .. } | Expr::Bool { .. } | Expr::Reward { .. } => {}
    }
}
