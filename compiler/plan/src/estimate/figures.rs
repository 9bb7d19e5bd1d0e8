//! The figures of each node kind: SFT stages, RL phases and evals, and the judge calls a
//! reward expression makes.

use std::collections::BTreeMap;

use super::{Count, StageEstimate, add, ceil_div, count, empty, input, mul};
use crate::model::{Node, Plan};
use crate::value::{PExpr, PObj, PVal};

/// How many examples a dataset holds: its `count` (with `augment` rewritten copies of each,
/// for sandbox demonstrations), or the sum of a mixture's parts.
fn dataset_count(plan: &Plan, d: &Node, depth: usize) -> Count {
    if let Some(PVal::List { items }) = d.params.get("parts") {
        if depth > 16 {
            return None;
        }
        let mut sum = Some(0);
        for i in 0..items.len() {
            let part = input(plan, &d.id, &format!("parts[{i}]"))?;
            sum = add(sum, dataset_count(plan, part, depth + 1));
        }
        return sum;
    }
    let copies = d.params.get("augment").map_or(Some(0), |a| count(Some(a)));
    mul(count(d.params.get("count")), copies.map(|c| c + 1))
}

pub(super) fn sft(plan: &Plan, n: &Node) -> StageEstimate {
    let mut e = empty(n);
    let data = input(plan, &n.id, "data").and_then(|d| dataset_count(plan, d, 0));
    let epochs = count(n.params.get("epochs"));
    let per_turn = n.params.get("loss_on").and_then(PVal::as_str) == Some("current_turn");
    // Examples are demonstrations seen. With a per-turn loss every assistant turn is its own
    // training sequence, and the plan does not know how many turns a demonstration has: the
    // token bound and the optimiser steps are then unknown.
    e.sft_examples = mul(data, epochs);
    let examples_per_epoch = if per_turn { None } else { data };
    e.sft_max_tokens = mul(mul(examples_per_epoch, epochs), count(n.params.get("max_length")));
    e.optimizer_steps = mul(ceil_div(examples_per_epoch, count(n.params.get("batch"))), epochs);
    e
}

/// Tokens an agent may generate in one step: a ReAct turn, or one call of every module.
fn tokens_per_step(agent: Option<&Node>) -> Count {
    let a = agent?;
    if a.ctor == "react" {
        return count(a.params.get("max_response"));
    }
    match a.params.get("modules") {
        Some(PVal::Record { fields }) => {
            let mut sum = Some(0);
            for m in fields.values() {
                sum = add(sum, count(m.field("max_response")));
            }
            sum
        }
        _ => None,
    }
}

/// Judge calls one evaluation of a signal makes: `judge` 1, `webjudge` 2 (key points, then the
/// verdict), `answer_match(mode: judge)` 1, rules 0.
fn judge_calls(obj: &PObj) -> (u64, Option<String>) {
    let short = obj.ctor.rsplit("::").next().unwrap_or(&obj.ctor);
    let model = |field: &str| match obj.fields.get(field) {
        Some(PVal::Str { value }) => value.clone(),
        Some(PVal::Ref { node }) => node.clone(),
        _ => "unknown".to_string(),
    };
    match short {
        "judge" => (1, Some(model("model"))),
        "webjudge" => (2, Some(model("model"))),
        "answer_match" if obj.fields.get("mode").and_then(PVal::as_str) == Some("judge") => {
            (1, Some(model("judge_model")))
        }
        _ => (0, None),
    }
}

/// Judge calls per evaluation of a reward expression, by judge model, following reward nodes.
fn expr_judges(plan: &Plan, e: &PExpr, out: &mut BTreeMap<String, u64>, depth: usize) {
    if depth > 16 {
        return;
    }
    for s in e.signals() {
        if let (n, Some(m)) = judge_calls(s) {
            *out.entry(m).or_default() += n;
        }
    }
    for r in e.reward_refs() {
        if let Some(PVal::Reward { expr }) = plan.node(r).and_then(|n| n.params.get("expr")) {
            expr_judges(plan, expr, out, depth + 1);
        }
    }
}

fn reward_judges(plan: &Plan, reward: Option<&Node>) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    if let Some(PVal::Reward { expr }) = reward.and_then(|r| r.params.get("expr")) {
        expr_judges(plan, expr, &mut out, 0);
    }
    out
}

fn add_judges(e: &mut StageEstimate, by: BTreeMap<String, u64>, times: Count) {
    for (m, n) in by {
        let c = mul(Some(n), times);
        let slot = e.judge_calls_by_model.entry(m).or_insert(Some(0));
        *slot = add(*slot, c);
        e.judge_calls_max = add(e.judge_calls_max, c);
    }
}

pub(super) fn rl_phase(plan: &Plan, n: &Node) -> StageEstimate {
    let mut e = empty(n);
    let iters = count(n.params.get("iters"));
    let per_iter = mul(count(n.params.get("prompts")), count(n.params.get("group")));
    let horizon = count(n.params.get("horizon"));
    // Dynamic sampling (DAPO) may generate up to `max_batches` batches per iteration.
    let rounds = match n.params.get("dynamic_sampling").and_then(|d| d.field("max_batches")) {
        Some(v) => count(Some(v)).map(|r| r.max(1)),
        None => Some(1),
    };
    e.trajectories = mul(mul(iters, per_iter), rounds);
    e.max_env_steps = mul(e.trajectories, horizon);
    e.max_generated_tokens = mul(e.max_env_steps, tokens_per_step(input(plan, &n.id, "agent")));
    let (traj, steps) = (e.trajectories, e.max_env_steps);
    add_judges(&mut e, reward_judges(plan, input(plan, &n.id, "reward")), traj);
    let process = input(plan, &n.id, "process_reward");
    add_judges(&mut e, reward_judges(plan, process), steps);
    // Turn-level training makes one sample per turn (at most `horizon` per trajectory).
    let turn_level = n.params.get("level").and_then(PVal::as_str) != Some("trajectory");
    let samples = if turn_level { mul(per_iter, horizon) } else { per_iter };
    let updates = ceil_div(samples, count(n.params.get("mini_batch")));
    e.optimizer_steps = mul(mul(updates, count(n.params.get("ppo_epochs"))), iters);
    e
}

pub(super) fn eval(plan: &Plan, n: &Node) -> StageEstimate {
    let mut e = empty(n);
    let tasks = input(plan, &n.id, "tasks").and_then(|d| dataset_count(plan, d, 0));
    let tasks = match n.params.get("count") {
        Some(PVal::Num { .. }) => count(n.params.get("count")),
        _ => tasks,
    };
    e.trajectories = mul(tasks, count(n.params.get("k")));
    // An episode ends at the eval's step budget or the agent's turn limit, whichever is first.
    let agent = input(plan, &n.id, "agent");
    let steps = count(n.params.get("max_steps"));
    let turns = agent.and_then(|a| count(a.params.get("max_turns")));
    let steps = match (steps, turns) {
        (Some(s), Some(t)) => Some(s.min(t)),
        (s, t) => s.or(t),
    };
    e.max_env_steps = mul(e.trajectories, steps);
    e.max_generated_tokens = mul(e.max_env_steps, tokens_per_step(agent));
    let traj = e.trajectories;
    add_judges(&mut e, reward_judges(plan, input(plan, &n.id, "judge")), traj);
    e
}
