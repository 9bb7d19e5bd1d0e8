//! The figures of each node kind: SFT stages, RL phases (with the groups `refill` or dynamic
//! sampling draws again) and evals, and the judge calls (and, where a judge declares
//! `tokens_per_call`, the judge tokens) a reward expression makes.

use std::collections::BTreeMap;

use super::{Count, JudgeTokens, StageEstimate, add, ceil_div, count, empty, input, mul};
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

/// How many examples a dataset node holds (see `dataset_count`).
pub(super) fn dataset_size(plan: &Plan, d: &Node) -> Count {
    dataset_count(plan, d, 0)
}

/// Tokens an agent may generate in one step: a ReAct turn, or one call of every module.
/// The most tokens one episode generates: its turns × the reply cap, cut at the agent's
/// `trajectory_tokens` (`unlimited` is no number, so no cut).
pub(super) fn per_episode(agent: Option<&Node>, turns: Count, per_step: Count) -> Count {
    let all = mul(turns, per_step);
    match agent.and_then(|a| count(a.params.get("trajectory_tokens"))) {
        Some(budget) => all.map(|x| x.min(budget)),
        None => all,
    }
}

pub(super) fn tokens_per_step(agent: Option<&Node>) -> Count {
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

/// A judge signal's calls and model, and the tokens of one call when it declares them.
/// Input and output tokens.
type InOut = (u64, u64);

fn judge_use(obj: &PObj) -> ((u64, Option<String>), Option<InOut>) {
    let tokens = obj
        .fields
        .get("tokens_per_call")
        .and_then(|t| Some((count(t.field("input"))?, count(t.field("output"))?)));
    (judge_calls(obj), tokens)
}

/// Judge calls one evaluation of a signal makes: `judge` 1, `webjudge` 2 (key points, then the
/// verdict), `vlm_progress` 1, `answer_match(mode: judge)` 1, rules 0.
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
        // One call per step whose branch reaches it (OpAgent's RDT).
        "vlm_progress" => (1, Some(model("model"))),
        "answer_match" if obj.fields.get("mode").and_then(PVal::as_str) == Some("judge") => {
            (1, Some(model("judge_model")))
        }
        _ => (0, None),
    }
}

/// What one evaluation of a reward expression asks its judges, by judge model: calls, and the
/// tokens of those calls (`None` once a call of that model does not declare them).
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Asks {
    pub calls: u64,
    pub tokens: Option<InOut>,
}

/// Judge calls per evaluation of a reward expression, by judge model, following reward nodes
/// and the rewards a signal names in its fields (`eval_types`' evaluators). A judge signal is
/// asked once per episode however often it appears (the runtime keys verdicts by signal).
fn expr_judges(
    plan: &Plan,
    e: &PExpr,
    out: &mut BTreeMap<String, Asks>,
    seen: &mut Vec<PObj>,
    depth: usize,
) {
    if depth > 16 {
        return;
    }
    for s in e.signals() {
        if seen.contains(s) {
            continue;
        }
        seen.push(s.clone());
        if let ((n, Some(m)), tokens) = judge_use(s) {
            let fresh = !out.contains_key(&m);
            let a = out.entry(m).or_default();
            a.calls += n;
            a.tokens = match (fresh, a.tokens, tokens) {
                (true, _, Some((i, o))) => Some((i * n, o * n)),
                (false, Some((ai, ao)), Some((i, o))) => Some((ai + i * n, ao + o * n)),
                _ => None,
            };
        }
        for v in s.fields.values() {
            match v {
                PVal::Ref { node } => node_judges(plan, node, out, seen, depth + 1),
                PVal::Reward { expr } => expr_judges(plan, expr, out, seen, depth + 1),
                _ => {}
            }
        }
    }
    for r in e.reward_refs() {
        node_judges(plan, r, out, seen, depth + 1);
    }
}

fn node_judges(
    plan: &Plan,
    node: &str,
    out: &mut BTreeMap<String, Asks>,
    seen: &mut Vec<PObj>,
    depth: usize,
) {
    if let Some(PVal::Reward { expr }) = plan.node(node).and_then(|n| n.params.get("expr")) {
        expr_judges(plan, expr, out, seen, depth);
    }
}

pub(super) fn reward_judges(plan: &Plan, reward: Option<&Node>) -> BTreeMap<String, Asks> {
    let mut out = BTreeMap::new();
    if let Some(PVal::Reward { expr }) = reward.and_then(|r| r.params.get("expr")) {
        expr_judges(plan, expr, &mut out, &mut Vec::new(), 0);
    }
    out
}

pub(super) fn add_judges(e: &mut StageEstimate, by: BTreeMap<String, Asks>, times: Count) {
    for (m, a) in by {
        let c = mul(Some(a.calls), times);
        let slot = e.judge_calls_by_model.entry(m.clone()).or_insert(Some(0));
        *slot = add(*slot, c);
        e.judge_calls_max = add(e.judge_calls_max, c);
        let t = JudgeTokens {
            input: a.tokens.and_then(|(i, _)| mul(Some(i), times)),
            output: a.tokens.and_then(|(_, o)| mul(Some(o), times)),
        };
        let slot = e
            .judge_tokens_by_model
            .entry(m)
            .or_insert(JudgeTokens { input: Some(0), output: Some(0) });
        slot.input = add(slot.input, t.input);
        slot.output = add(slot.output, t.output);
    }
}

/// The trajectories an RL phase rolls out besides those it trains on: the groups `drop` (or
/// DAPO's dynamic sampling) removed and `refill` drew again. With `kept` (the expected fraction
/// of drawn groups that survive) they are trained / kept − trained; without it, for DAPO, up to
/// `max_batches` − 1 further batches; a GRPO refill with `max_batches = 0` draws none.
pub(super) fn refilled(n: &Node, trained: Count) -> Count {
    let (kept, max_batches, extra_batches) = match n.params.get("dynamic_sampling") {
        Some(d) => (d.field("kept"), d.field("max_batches"), false),
        None => match n.params.get("refill") {
            Some(r) if n.params.get("drop").and_then(PVal::as_str) == Some("uniform_groups") => {
                (r.field("kept"), r.field("max_batches"), true)
            }
            _ => return Some(0),
        },
    };
    if let Some(k) = kept.and_then(PVal::num).filter(|k| *k > 0.0 && *k <= 1.0) {
        let t = trained?;
        let drawn = (t as f64 / k).round() as u64;
        return Some(drawn.saturating_sub(t));
    }
    match max_batches.and_then(|m| count(Some(m))) {
        Some(0) if extra_batches => Some(0),
        // DAPO counts the first batch in `max_batches`; a GRPO refill counts extra batches.
        Some(m) => mul(trained, Some(if extra_batches { m } else { m.saturating_sub(1) })),
        None => None,
    }
}

pub(super) fn rl_phase(plan: &Plan, n: &Node) -> StageEstimate {
    let mut e = empty(n);
    let iters = count(n.params.get("iters"));
    let per_iter = mul(count(n.params.get("prompts")), count(n.params.get("group")));
    // Episodes run to the horizon cut at the agent's `max_turns` (the runtime's one rule).
    let agent_turns = input(plan, &n.id, "agent").and_then(|a| count(a.params.get("max_turns")));
    let horizon = wrl_check::turns::turns_run(count(n.params.get("horizon")), agent_turns);
    // The trajectories trained on; those drawn again for dropped groups are `refill` figures.
    e.trajectories = mul(iters, per_iter);
    e.max_env_steps = mul(e.trajectories, horizon);
    let agent = input(plan, &n.id, "agent");
    e.max_generated_tokens =
        mul(e.trajectories, per_episode(agent, horizon, tokens_per_step(agent)));
    let (traj, steps) = (e.trajectories, e.max_env_steps);
    add_judges(&mut e, reward_judges(plan, input(plan, &n.id, "reward")), traj);
    let process = input(plan, &n.id, "process_reward");
    add_judges(&mut e, reward_judges(plan, process), steps);
    // Turn-level training makes one sample per turn (at most `horizon` per trajectory); a
    // mini-batch of prompts is that many groups of trajectories, and one of prompts or
    // trajectories takes all their turns along, so it counts trajectories at either level.
    let turn_level = n.params.get("level").and_then(PVal::as_str) != Some("trajectory");
    let mb = n.params.get("mini_batch");
    let (samples, mini) = match mb {
        Some(PVal::Qty { unit, .. }) if unit == "prompts" => {
            (per_iter, mul(count(mb), count(n.params.get("group"))))
        }
        Some(PVal::Qty { unit, .. }) if unit == "trajectories" => (per_iter, count(mb)),
        _ if turn_level => (mul(per_iter, horizon), count(mb)),
        _ => (per_iter, count(mb)),
    };
    let updates = ceil_div(samples, mini);
    let per_iter_steps = mul(updates, count(n.params.get("ppo_epochs")));
    // PPO's critic takes the policy's steps every iteration; during its warm-up (counted
    // from the stage's first iteration) the policy takes none.
    match n.params.get("critic") {
        Some(c @ PVal::Obj(_)) => {
            let warm = count(c.field("warmup"));
            let before = super::extra::iters_before(plan, n);
            let here = match (warm, before, iters) {
                (Some(w), Some(b), Some(i)) => Some(w.saturating_sub(b).min(i)),
                _ => None,
            };
            e.critic_steps = mul(per_iter_steps, iters);
            e.optimizer_steps = mul(per_iter_steps, iters.and_then(|i| Some(i - here?)));
        }
        _ => e.optimizer_steps = mul(per_iter_steps, iters),
    }
    // Generation from failures: at most `per_task` new tasks for every task of every batch
    // (each scored once by the critic under `critic_score`); they replace fresh tasks, so the
    // trajectories stay as counted.
    if let Some(g @ PVal::Obj(_)) = n.params.get("generate") {
        let per_task = count(g.field("per_task"));
        e.generated_tasks = mul(mul(iters, count(n.params.get("prompts"))), per_task);
    }
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
    let steps = wrl_check::turns::turns_run(steps, turns);
    e.max_env_steps = mul(e.trajectories, steps);
    // The eval's own reply length, for a ReAct agent (a graph's modules keep theirs).
    let per_step = match (n.params.get("max_response"), agent) {
        (Some(v @ PVal::Qty { .. }), Some(a)) if a.ctor == "react" => count(Some(v)),
        _ => tokens_per_step(agent),
    };
    e.max_generated_tokens = mul(e.trajectories, per_episode(agent, steps, per_step));
    let traj = e.trajectories;
    add_judges(&mut e, reward_judges(plan, input(plan, &n.id, "judge")), traj);
    e
}
