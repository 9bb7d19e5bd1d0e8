//! The figures of each node kind: SFT stages, RL phases (with the groups `refill` or dynamic
//! sampling draws again) and evals, and the judge calls (and, where a judge declares
//! `tokens_per_call`, the judge tokens) a reward expression makes.

use std::collections::BTreeMap;

use super::inputs::{self, AgentIn, DatasetIn, EvalIn, PhaseIn, SftIn};
use super::{Count, JudgeTokens, StageEstimate, add, ceil_div, empty, input, mul};
use crate::model::{Node, NodeKind, Plan};
use crate::params::partial::reward_expr;
use crate::params::{BatchSize, JudgeModel, Level, LossOn, OrAgent, OrNone, OrOff, OrUnlimited};
use crate::value::{PExpr, PObj, PVal};

/// How many examples a dataset holds: its `count` (with `augment` rewritten copies of each,
/// for sandbox demonstrations), or the sum of a mixture's parts.
fn dataset_count(plan: &Plan, d: &Node, depth: usize) -> Count {
    let DatasetIn { count, augment, parts } = inputs::read(d);
    if let Some(parts) = parts {
        if depth > 16 {
            return None;
        }
        let mut sum = Some(0);
        for part in parts {
            sum = add(sum, dataset_count(plan, plan.node(part.id())?, depth + 1));
        }
        return sum;
    }
    let copies = augment.unwrap_or(Some(0)).map(u64::from);
    mul(count, copies.map(|c| c + 1))
}

pub(super) fn sft(plan: &Plan, n: &Node) -> StageEstimate {
    let mut e = empty(n);
    let data = input(plan, &n.id, "data").and_then(|d| dataset_count(plan, d, 0));
    let SftIn { epochs, loss_on, max_length, batch } = inputs::read(n);
    let epochs = epochs.map(|e| u64::from(e.0));
    let per_turn = loss_on == Some(LossOn::CurrentTurn);
    // Examples are demonstrations seen. With a per-turn loss every assistant turn is its own
    // training sequence, and the plan does not know how many turns a demonstration has: the
    // token bound and the optimiser steps are then unknown.
    e.sft_examples = mul(data, epochs);
    let examples_per_epoch = if per_turn { None } else { data };
    e.sft_max_tokens = mul(mul(examples_per_epoch, epochs), max_length.map(|t| t.0));
    e.optimizer_steps = mul(ceil_div(examples_per_epoch, batch.map(u64::from)), epochs);
    e
}

/// How many examples a dataset node holds (see `dataset_count`).
pub(super) fn dataset_size(plan: &Plan, d: &Node) -> Count {
    dataset_count(plan, d, 0)
}

/// The most tokens one episode generates: its turns × the reply cap, cut at the agent's
/// `trajectory_tokens` (`unlimited` is no number, so no cut) — the reply part of the one rule
/// for an episode's sequence (`wrl_check::sequence`).
pub(super) fn per_episode(agent: Option<&Node>, turns: Count, per_step: Count) -> Count {
    capped(turns, per_step, trajectory_budget(agent))
}

/// The agent's `trajectory_tokens` (None: `unlimited`, unknown, or no agent).
pub(super) fn trajectory_budget(agent: Option<&Node>) -> Option<u64> {
    match agent.and_then(|a| inputs::read::<AgentIn>(a).trajectory_tokens) {
        Some(OrUnlimited::Value(b)) => Some(b.0),
        Some(OrUnlimited::Unlimited) | None => None,
    }
}

/// `turns` × `per_step` tokens cut at `budget` (`wrl_check::sequence::written`).
pub(super) fn capped(turns: Count, per_step: Count, budget: Option<u64>) -> Count {
    wrl_check::sequence::written(turns?, per_step?, budget)
}

/// Tokens an agent may generate in one step: a ReAct turn, or one call of every module.
pub(super) fn tokens_per_step(agent: Option<&Node>) -> Count {
    let a = agent?;
    let AgentIn { max_response, modules, .. } = inputs::read(a);
    if a.ctor == "react" {
        return max_response.map(|t| t.0);
    }
    let mut sum = Some(0);
    for m in modules?.values() {
        sum = add(sum, m.body.max_response.map(|t| t.0));
    }
    sum
}

/// The turns an agent may take (`None`: unknown).
pub(super) fn agent_turns(agent: Option<&Node>) -> Count {
    agent.and_then(|a| inputs::read::<AgentIn>(a).max_turns).map(|t| u64::from(t.0))
}

/// A judge signal's calls and model, and the tokens of one call when it declares them.
/// Input and output tokens.
type InOut = (u64, u64);

fn judge_use(obj: &PObj) -> ((u64, Option<String>), Option<InOut>) {
    let (short, s) = inputs::signal(obj);
    let tokens = s.tokens_per_call.map(|t| (t.input.0, t.output.0));
    let model = |m: &Option<JudgeModel>| match m {
        Some(JudgeModel::Name(name)) => name.clone(),
        Some(JudgeModel::Model(node)) => node.id().to_string(),
        None => "unknown".to_string(),
    };
    // Judge calls one evaluation of a signal makes: `judge` 1, `webjudge` 2 (key points, then
    // the verdict), `vlm_progress` 1 (one per step whose branch reaches it: OpAgent's RDT),
    // `answer_match(mode: judge)` 1, a reward endpoint 1 (counted by its URL, as
    // `endpoint URL`), rules 0.
    let calls = match short {
        "judge" | "vlm_progress" => (1, Some(model(&s.model))),
        "endpoint" => (1, Some(format!("endpoint {}", s.url.as_deref().unwrap_or("unknown")))),
        "webjudge" => (2, Some(model(&s.model))),
        "answer_match" if s.mode.as_ref().is_some_and(|m| m.0 == "judge") => {
            (1, Some(model(&s.judge_model)))
        }
        _ => (0, None),
    };
    (calls, tokens)
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
            // `tokens` is one call's: `n` calls of it.
            merge(out, m, Asks { calls: 1, tokens }, n);
        }
        // `eval_types { fallback_per = check }` evaluates its fallback anew for each of the
        // three programmatic checks that may score 0: its judges are asked up to three times.
        let per_check = s.ctor.ends_with("eval_types")
            && matches!(s.fields.get("fallback_per"), Some(PVal::Enum { value }) if value == "check");
        for (k, v) in &s.fields {
            if per_check && k == "fallback" {
                let mut once = BTreeMap::new();
                field_judges(plan, v, &mut once, &mut Vec::new(), depth + 1);
                for (m, a) in once {
                    let asks = Asks { calls: a.calls, tokens: a.tokens };
                    merge(out, m, asks, PROGRAMMATIC_CHECKS);
                }
                continue;
            }
            field_judges(plan, v, out, seen, depth + 1);
        }
    }
    for r in e.reward_refs() {
        node_judges(plan, r, out, seen, depth + 1);
    }
}

/// The programmatic checks a WebArena task may name (`string_match`, `url_match`,
/// `program_html`): how often a per-check fallback may be evaluated in one episode.
const PROGRAMMATIC_CHECKS: u64 = 3;

/// The judges of a signal's field that names rewards.
fn field_judges(
    plan: &Plan,
    v: &PVal,
    out: &mut BTreeMap<String, Asks>,
    seen: &mut Vec<PObj>,
    depth: usize,
) {
    match v {
        PVal::Ref { node } => node_judges(plan, node, out, seen, depth),
        PVal::Reward { expr } => expr_judges(plan, expr, out, seen, depth),
        _ => {}
    }
}

/// Adds `times` × a judge model's asks to `out`.
fn merge(out: &mut BTreeMap<String, Asks>, m: String, a: Asks, times: u64) {
    let fresh = !out.contains_key(&m);
    let slot = out.entry(m).or_default();
    slot.calls += a.calls * times;
    slot.tokens = match (fresh, slot.tokens, a.tokens) {
        (true, _, Some((i, o))) => Some((i * times, o * times)),
        (false, Some((si, so)), Some((i, o))) => Some((si + i * times, so + o * times)),
        _ => None,
    };
}

fn node_judges(
    plan: &Plan,
    node: &str,
    out: &mut BTreeMap<String, Asks>,
    seen: &mut Vec<PObj>,
    depth: usize,
) {
    if let Some(expr) = plan.node(node).and_then(reward_expr) {
        expr_judges(plan, expr, out, seen, depth);
    }
}

pub(super) fn reward_judges(plan: &Plan, reward: Option<&Node>) -> BTreeMap<String, Asks> {
    let mut out = BTreeMap::new();
    if let Some(expr) = reward.and_then(reward_expr) {
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
pub(super) fn refilled(p: &PhaseIn, trained: Count) -> Count {
    let (kept, max_batches, extra_batches) = match (&p.dynamic_sampling, &p.refill, p.drop) {
        (Some(d), _, _) => (d.kept, d.max_batches.map(u64::from), false),
        (None, Some(r), Some(crate::params::Drop::UniformGroups)) => {
            let m = match r.max_batches {
                Some(OrUnlimited::Value(m)) => Some(u64::from(m)),
                Some(OrUnlimited::Unlimited) | None => None,
            };
            (r.kept, m, true)
        }
        _ => return Some(0),
    };
    if let Some(k) = kept.map(|k| k.0).filter(|k| *k > 0.0 && *k <= 1.0) {
        let t = trained?;
        let drawn = (t as f64 / k).round() as u64;
        return Some(drawn.saturating_sub(t));
    }
    match max_batches {
        Some(0) if extra_batches => Some(0),
        // DAPO counts the first batch in `max_batches`; a GRPO refill counts extra batches.
        Some(m) => mul(trained, Some(if extra_batches { m } else { m.saturating_sub(1) })),
        None => None,
    }
}

/// The turns an episode of phase `p` runs: its horizon cut at the agent's `max_turns` (the
/// runtime's one rule).
pub(super) fn phase_turns(plan: &Plan, n: &Node, p: &PhaseIn) -> Count {
    let turns = agent_turns(input(plan, &n.id, "agent"));
    wrl_check::turns::turns_run(p.horizon.map(|h| u64::from(h.0)), turns)
}

pub(super) fn rl_phase(plan: &Plan, n: &Node) -> StageEstimate {
    let mut e = empty(n);
    let p: PhaseIn = inputs::read(n);
    let iters = p.iters.map(|i| i.0);
    let group = p.group.map(u64::from);
    let per_iter = mul(p.prompts.map(u64::from), group);
    let horizon = phase_turns(plan, n, &p);
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
    let turn_level = p.level != Some(Level::Trajectory);
    let (samples, mini) = match p.mini_batch {
        Some(BatchSize::Prompts(m)) => (per_iter, mul(Some(u64::from(m)), group)),
        Some(BatchSize::Trajectories(m)) => (per_iter, Some(u64::from(m))),
        Some(BatchSize::Turns(m) | BatchSize::Samples(m)) if turn_level => {
            (mul(per_iter, horizon), Some(u64::from(m)))
        }
        Some(BatchSize::Turns(m) | BatchSize::Samples(m)) => (per_iter, Some(u64::from(m))),
        None if turn_level => (mul(per_iter, horizon), None),
        None => (per_iter, None),
    };
    // The rest past the last whole mini-batch trains as a shorter one, or is dropped.
    let updates = match p.mini_batch_rest {
        Some(crate::params::MiniBatchRest::Drop) => {
            samples.zip(mini).and_then(|(s, m)| s.checked_div(m))
        }
        Some(crate::params::MiniBatchRest::Train) => ceil_div(samples, mini),
        None => None,
    };
    let per_iter_steps = mul(updates, p.ppo_epochs.map(u64::from));
    // PPO's critic takes the policy's steps every iteration; during its warm-up (counted
    // from the stage's first iteration) the policy takes none.
    match &p.critic {
        Some(OrNone::Value(c)) => {
            let warm = c.body.warmup.map(|w| w.0);
            let before = iters_before(plan, &p);
            let here = match (warm, before, iters) {
                (Some(w), Some(b), Some(i)) => Some(w.saturating_sub(b).min(i)),
                _ => None,
            };
            e.critic_steps = mul(per_iter_steps, iters);
            e.optimizer_steps = mul(per_iter_steps, iters.and_then(|i| Some(i - here?)));
        }
        Some(OrNone::Nothing) | None => e.optimizer_steps = mul(per_iter_steps, iters),
    }
    // Generation from failures: at most `per_task` new tasks for every task of every batch
    // (each scored once by the critic under `critic_score`); they replace fresh tasks, so the
    // trajectories stay as counted.
    if let Some(OrOff::Value(g)) = &p.generate {
        let per_task = g.body.per_task.map(u64::from);
        e.generated_tasks = mul(mul(iters, p.prompts.map(u64::from)), per_task);
    }
    // Branching: every prompt still trains `group` trajectories (a tree that ends early is
    // filled with full samples), of which all but the `initial` may be branches; a branch
    // replays its parent's turns, so the steps and generated tokens above are upper bounds.
    if let Some(OrOff::Value(b)) = &p.branching {
        let spare = group.zip(b.body.initial.map(u64::from)).map(|(g, i)| g.saturating_sub(i));
        e.branches = mul(mul(iters, p.prompts.map(u64::from)), spare);
    }
    e
}

/// The iterations of a stage before phase `p` (its earlier phases'), so that `every` counts
/// across phases as the stage does (a critic's warm-up counts the same way).
pub(super) fn iters_before(plan: &Plan, p: &PhaseIn) -> Count {
    let phase = p.phase?;
    let mut sum = Some(0);
    for other in plan.nodes.iter().filter(|o| o.kind == NodeKind::RlPhase) {
        let o: PhaseIn = inputs::read(other);
        if o.stage == p.stage && o.phase.is_some_and(|q| q < phase) {
            sum = super::add(sum, o.iters.map(|i| i.0));
        }
    }
    sum
}

pub(super) fn eval(plan: &Plan, n: &Node) -> StageEstimate {
    let mut e = empty(n);
    let EvalIn { count, k, max_steps, max_response, trajectory_tokens } = inputs::read(n);
    let tasks = match count {
        Some(c) => Some(c),
        None => input(plan, &n.id, "tasks").and_then(|d| dataset_count(plan, d, 0)),
    };
    e.trajectories = mul(tasks, k.map(u64::from));
    // An episode ends at the eval's step budget or the agent's turn limit, whichever is first.
    let agent = input(plan, &n.id, "agent");
    let steps = wrl_check::turns::turns_run(max_steps.map(|s| u64::from(s.0)), agent_turns(agent));
    e.max_env_steps = mul(e.trajectories, steps);
    // The eval's own reply length, for a ReAct agent (a graph's modules keep theirs).
    let per_step = match (max_response, agent) {
        (Some(OrAgent::Value(t)), Some(a)) if a.ctor == "react" => Some(t.0),
        _ => tokens_per_step(agent),
    };
    // The eval's own episode budget, or the agent's.
    let budget = match trajectory_tokens {
        Some(OrAgent::Value(t)) => Some(t.0),
        Some(OrAgent::Agent) | None => trajectory_budget(agent),
    };
    e.max_generated_tokens = mul(e.trajectories, capped(steps, per_step, budget));
    let traj = e.trajectories;
    add_judges(&mut e, reward_judges(plan, input(plan, &n.id, "judge")), traj);
    e
}
