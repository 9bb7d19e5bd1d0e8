//! What a plan will cost before it runs, computed from the plan alone: trajectories, maximum
//! env steps, maximum generated tokens, judge calls (an upper bound), SFT examples and tokens,
//! optimiser steps, and money when prices are given. Unknown inputs give unknown figures
//! (`null` in JSON), never a guess.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::{Node, NodeKind, Plan};
use crate::value::{PExpr, PObj, PVal};

/// A count that may be unknown.
pub type Count = Option<u64>;

/// Prices for `wrlc estimate --prices FILE` (JSON; every field optional, USD or any currency).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    /// Price of one judge call, for judges not listed in `judge_call_by_model`.
    #[serde(default)]
    pub judge_call: Option<f64>,
    /// Price of one judge call by judge model (`"gpt-4.1": 0.01`).
    #[serde(default)]
    pub judge_call_by_model: BTreeMap<String, f64>,
    /// Price of 1M generated tokens (policy and modules), e.g. on a hosted endpoint.
    #[serde(default)]
    pub per_million_tokens: Option<f64>,
    /// Price of one GPU-hour.
    #[serde(default)]
    pub gpu_hour: Option<f64>,
    /// GPU-hours per 1M generated tokens (your measured rollout throughput), used with
    /// `gpu_hour` to price generation on your own GPUs.
    #[serde(default)]
    pub gpu_hours_per_million_tokens: Option<f64>,
}

/// Money for one stage or the whole recipe.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    pub judge: Option<f64>,
    pub tokens: Option<f64>,
    pub gpu: Option<f64>,
    pub total: Option<f64>,
}

/// The figures of one node (an SFT stage, an RL phase, an eval).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageEstimate {
    pub id: String,
    pub kind: String,
    pub trajectories: Count,
    pub max_env_steps: Count,
    pub max_generated_tokens: Count,
    pub judge_calls_max: Count,
    /// Judge calls by judge model (`unknown` when the recipe does not name it).
    pub judge_calls_by_model: BTreeMap<String, Count>,
    pub sft_examples: Count,
    pub sft_max_tokens: Count,
    pub optimizer_steps: Count,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
}

/// Sums of figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    pub trajectories: Count,
    pub max_env_steps: Count,
    pub max_generated_tokens: Count,
    pub judge_calls_max: Count,
    pub sft_examples: Count,
    pub sft_max_tokens: Count,
    pub optimizer_steps: Count,
}

/// The estimate of a plan. Top-level figures are the training totals (SFT stages and RL
/// phases); `evaluation` sums the eval nodes; `stages` lists every node with figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub version: u32,
    pub recipe: String,
    pub profile: Option<String>,
    pub trajectories: Count,
    pub max_env_steps: Count,
    pub max_generated_tokens: Count,
    pub judge_calls_max: Count,
    pub sft_examples: Count,
    pub sft_max_tokens: Count,
    pub optimizer_steps: Count,
    pub evaluation: Totals,
    pub stages: Vec<StageEstimate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
}

fn mul(a: Count, b: Count) -> Count {
    a?.checked_mul(b?)
}

fn add(a: Count, b: Count) -> Count {
    a?.checked_add(b?)
}

/// A whole, non-negative number from a parameter.
fn count(v: Option<&PVal>) -> Count {
    let x = v?.num()?;
    (x >= 0.0 && x.fract() == 0.0 && x < 1e18).then_some(x as u64)
}

fn ceil_div(a: Count, b: Count) -> Count {
    let (a, b) = (a?, b?);
    (b > 0).then(|| a.div_ceil(b))
}

/// Estimates a plan; `prices` adds money.
pub fn estimate(plan: &Plan, prices: Option<&Prices>) -> Estimate {
    let mut stages = Vec::new();
    for n in &plan.nodes {
        let e = match n.kind {
            NodeKind::Sft => sft(plan, n),
            NodeKind::RlPhase => rl_phase(plan, n),
            NodeKind::Eval => eval(plan, n),
            NodeKind::LoadModel
            | NodeKind::LoadDataset
            | NodeKind::Env
            | NodeKind::Agent
            | NodeKind::Reward
            | NodeKind::Checkpoint => continue,
        };
        let e = match prices {
            Some(p) => StageEstimate { cost: Some(price(&e, p)), ..e },
            None => e,
        };
        stages.push(e);
    }
    let train = totals(stages.iter().filter(|s| s.kind != "eval"));
    let evaluation = totals(stages.iter().filter(|s| s.kind == "eval"));
    let cost = prices.map(|_| {
        let mut c = Cost { judge: Some(0.0), tokens: Some(0.0), gpu: Some(0.0), total: Some(0.0) };
        for s in &stages {
            let sc = s.cost.clone().unwrap_or_default();
            c.judge = fadd(c.judge, sc.judge);
            c.tokens = fadd(c.tokens, sc.tokens);
            c.gpu = fadd(c.gpu, sc.gpu);
            c.total = fadd(c.total, sc.total);
        }
        c
    });
    Estimate {
        version: crate::model::PLAN_VERSION,
        recipe: plan.recipe.clone(),
        profile: plan.profile.clone(),
        trajectories: train.trajectories,
        max_env_steps: train.max_env_steps,
        max_generated_tokens: train.max_generated_tokens,
        judge_calls_max: train.judge_calls_max,
        sft_examples: train.sft_examples,
        sft_max_tokens: train.sft_max_tokens,
        optimizer_steps: train.optimizer_steps,
        evaluation,
        stages,
        cost,
    }
}

fn fadd(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(a? + b?)
}

fn totals<'a>(it: impl Iterator<Item = &'a StageEstimate>) -> Totals {
    let mut t = Totals {
        trajectories: Some(0),
        max_env_steps: Some(0),
        max_generated_tokens: Some(0),
        judge_calls_max: Some(0),
        sft_examples: Some(0),
        sft_max_tokens: Some(0),
        optimizer_steps: Some(0),
    };
    for s in it {
        t.trajectories = add(t.trajectories, s.trajectories);
        t.max_env_steps = add(t.max_env_steps, s.max_env_steps);
        t.max_generated_tokens = add(t.max_generated_tokens, s.max_generated_tokens);
        t.judge_calls_max = add(t.judge_calls_max, s.judge_calls_max);
        t.sft_examples = add(t.sft_examples, s.sft_examples);
        t.sft_max_tokens = add(t.sft_max_tokens, s.sft_max_tokens);
        t.optimizer_steps = add(t.optimizer_steps, s.optimizer_steps);
    }
    t
}

fn empty(n: &Node) -> StageEstimate {
    StageEstimate {
        id: n.id.clone(),
        kind: n.kind.word().to_string(),
        trajectories: Some(0),
        max_env_steps: Some(0),
        max_generated_tokens: Some(0),
        judge_calls_max: Some(0),
        judge_calls_by_model: BTreeMap::new(),
        sft_examples: Some(0),
        sft_max_tokens: Some(0),
        optimizer_steps: Some(0),
        cost: None,
    }
}

/// The node feeding a port.
fn input<'a>(plan: &'a Plan, node: &str, port: &str) -> Option<&'a Node> {
    let e = plan.edges.iter().find(|e| e.to == node && e.port == port)?;
    plan.node(&e.from)
}

/// How many examples a dataset holds: its `count`, or the sum of a mixture's parts.
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
    count(d.params.get("count"))
}

fn sft(plan: &Plan, n: &Node) -> StageEstimate {
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

fn rl_phase(plan: &Plan, n: &Node) -> StageEstimate {
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

fn eval(plan: &Plan, n: &Node) -> StageEstimate {
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

fn price(e: &StageEstimate, p: &Prices) -> Cost {
    let mut judge = Some(0.0);
    for (m, n) in &e.judge_calls_by_model {
        let unit = p.judge_call_by_model.get(m).copied().or(p.judge_call);
        judge = fadd(
            judge,
            n.and_then(|n| Some(n as f64 * unit?)).or(if *n == Some(0) { Some(0.0) } else { None }),
        );
    }
    let mtok = e.max_generated_tokens.map(|t| t as f64 / 1e6);
    let tokens = match p.per_million_tokens {
        Some(pp) => mtok.map(|m| m * pp),
        None => Some(0.0),
    };
    let gpu = match (p.gpu_hour, p.gpu_hours_per_million_tokens) {
        (Some(h), Some(r)) => mtok.map(|m| m * r * h),
        _ => Some(0.0),
    };
    let total = fadd(fadd(judge, tokens), gpu);
    Cost { judge, tokens, gpu, total }
}

/// The estimate as text: one line per figure, then one block per stage.
pub fn render_text(e: &Estimate) -> String {
    use std::fmt::Write as _;
    let show = |c: Count| c.map_or_else(|| "unknown".to_string(), group_digits);
    let money = |c: Option<f64>| c.map_or_else(|| "unknown".to_string(), |x| format!("{x:.2}"));
    let mut s = String::new();
    let _ =
        writeln!(s, "estimate {} (profile {})", e.recipe, e.profile.as_deref().unwrap_or("(none)"));
    let _ = writeln!(s, "\ntraining");
    let figures = |s: &mut String, t: &Totals| {
        let _ = writeln!(s, "  trajectories          {}", show(t.trajectories));
        let _ = writeln!(s, "  max env steps         {}", show(t.max_env_steps));
        let _ = writeln!(s, "  max generated tokens  {}", show(t.max_generated_tokens));
        let _ = writeln!(s, "  judge calls (max)     {}", show(t.judge_calls_max));
        let _ = writeln!(s, "  sft examples          {}", show(t.sft_examples));
        let _ = writeln!(s, "  sft tokens (max)      {}", show(t.sft_max_tokens));
        let _ = writeln!(s, "  optimizer steps (max) {}", show(t.optimizer_steps));
    };
    let train = Totals {
        trajectories: e.trajectories,
        max_env_steps: e.max_env_steps,
        max_generated_tokens: e.max_generated_tokens,
        judge_calls_max: e.judge_calls_max,
        sft_examples: e.sft_examples,
        sft_max_tokens: e.sft_max_tokens,
        optimizer_steps: e.optimizer_steps,
    };
    figures(&mut s, &train);
    let _ = writeln!(s, "\nevaluation");
    figures(&mut s, &e.evaluation);
    if let Some(c) = &e.cost {
        let _ = writeln!(
            s,
            "\ncost  judge {}  tokens {}  gpu {}  total {}",
            money(c.judge),
            money(c.tokens),
            money(c.gpu),
            money(c.total)
        );
    }
    for st in &e.stages {
        let _ = writeln!(s, "\n{} ({})", st.id, st.kind);
        let t = Totals {
            trajectories: st.trajectories,
            max_env_steps: st.max_env_steps,
            max_generated_tokens: st.max_generated_tokens,
            judge_calls_max: st.judge_calls_max,
            sft_examples: st.sft_examples,
            sft_max_tokens: st.sft_max_tokens,
            optimizer_steps: st.optimizer_steps,
        };
        figures(&mut s, &t);
        for (m, n) in &st.judge_calls_by_model {
            let _ = writeln!(s, "    judge {m}: {}", show(*n));
        }
        if let Some(c) = &st.cost {
            let _ = writeln!(s, "  cost                  {}", money(c.total));
        }
    }
    s
}

/// `684000` → `684,000`.
fn group_digits(n: u64) -> String {
    let d = n.to_string();
    let mut out = String::new();
    for (i, ch) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// The estimate as pretty JSON, newline-terminated.
pub fn render_json(e: &Estimate) -> String {
    let mut s = serde_json::to_string_pretty(e).unwrap_or_else(|_| "{}".into());
    s.push('\n');
    s
}
