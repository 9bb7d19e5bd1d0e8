//! What a plan will cost before it runs, computed from the plan alone: trajectories, maximum
//! env steps, maximum generated tokens, judge calls (an upper bound), SFT examples and tokens,
//! optimiser steps, and money when prices are given. Unknown inputs give unknown figures
//! (`null` in JSON), never a guess. The figures of each node kind are in `figures.rs`, the
//! refilled groups and in-training validation of RL phases in `extra.rs`, money in `prices.rs`,
//! the renderings in `render.rs`. Totals come in parts: training (what is trained on), refill,
//! validation and evaluation.

mod engine;
mod extra;
mod figures;
mod inputs;
mod prices;
mod published;
mod render;
mod served;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::{Node, NodeKind, Plan};

pub use prices::{Cost, Prices, TokenPrice};
pub use published::Published;
pub use render::{group_digits, render_json, render_text};

/// A count that may be unknown.
pub type Count = Option<u64>;

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
    /// Judge tokens by judge model, from the judges' `tokens_per_call` (unknown without it).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub judge_tokens_by_model: BTreeMap<String, JudgeTokens>,
    pub sft_examples: Count,
    pub sft_max_tokens: Count,
    pub optimizer_steps: Count,
    /// PPO's critic: its own optimiser steps (the policy's during its warm-up are none).
    #[serde(default = "zero", skip_serializing_if = "is_zero")]
    pub critic_steps: Count,
    /// Tasks generated from failures (`generate`), at most: every task of every batch failed.
    #[serde(default = "zero", skip_serializing_if = "is_zero")]
    pub generated_tasks: Count,
    /// Trajectories that may be branches (`branching`), at most: each prompt's `group` less
    /// its `initial` full samples. They replay their parent's turns before the branch point, so
    /// `max_generated_tokens` and `max_env_steps`, counted as if every sample ran whole, are
    /// upper bounds.
    #[serde(default = "zero", skip_serializing_if = "is_zero")]
    pub branches: Count,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
}

fn zero() -> Count {
    Some(0)
}

/// Figures that only some recipes have are left out of the JSON where they are 0.
fn is_zero(c: &Count) -> bool {
    *c == Some(0)
}

/// Tokens judges read and write.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct JudgeTokens {
    pub input: Count,
    pub output: Count,
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
    #[serde(default = "zero", skip_serializing_if = "is_zero")]
    pub critic_steps: Count,
    /// Tasks generated from failures (`generate`), at most: every task of every batch failed.
    #[serde(default = "zero", skip_serializing_if = "is_zero")]
    pub generated_tasks: Count,
    /// Trajectories that may be branches (`branching`), at most: each prompt's `group` less
    /// its `initial` full samples. They replay their parent's turns before the branch point, so
    /// `max_generated_tokens` and `max_env_steps`, counted as if every sample ran whole, are
    /// upper bounds.
    #[serde(default = "zero", skip_serializing_if = "is_zero")]
    pub branches: Count,
}

/// The estimate of a plan. Top-level figures are the training totals (SFT stages and RL
/// phases); `evaluation` sums the eval nodes; `stages` lists every node with figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub version: u32,
    pub recipe: String,
    pub profile: Option<String>,
    /// The variant applied, if any (`wrlc estimate --variant NAME`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    pub trajectories: Count,
    pub max_env_steps: Count,
    pub max_generated_tokens: Count,
    pub judge_calls_max: Count,
    pub sft_examples: Count,
    pub sft_max_tokens: Count,
    pub optimizer_steps: Count,
    #[serde(default = "zero", skip_serializing_if = "is_zero")]
    pub critic_steps: Count,
    /// Tasks generated from failures (`generate`), at most: every task of every batch failed.
    #[serde(default = "zero", skip_serializing_if = "is_zero")]
    pub generated_tasks: Count,
    /// Trajectories that may be branches (`branching`), at most: each prompt's `group` less
    /// its `initial` full samples. They replay their parent's turns before the branch point, so
    /// `max_generated_tokens` and `max_env_steps`, counted as if every sample ran whole, are
    /// upper bounds.
    #[serde(default = "zero", skip_serializing_if = "is_zero")]
    pub branches: Count,
    /// Groups drawn again for groups `drop` removed (`refill`, dynamic sampling).
    pub refill: Totals,
    /// In-training validation passes (`validate`).
    pub validation: Totals,
    pub evaluation: Totals,
    pub stages: Vec<StageEstimate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
    /// Money by part: `training`, `refill`, `validation`, `evaluation`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cost_by_part: BTreeMap<String, Cost>,
    /// Judge calls while training runs: training + refill + validation (the text's "judge
    /// calls during training"; OpenWebRL: 33,600 + 7,577 + 2,030 = 43,207).
    #[serde(default)]
    pub judge_calls_during_training: Count,
    /// Money while training runs (training + refill + validation), with prices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_during_training: Option<f64>,
    /// The cost figures sources publish for stages (`published_cost`), beside the estimate's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub published: Vec<Published>,
}

impl Estimate {
    /// The training totals (the top-level figures), as one [`Totals`].
    pub fn training(&self) -> Totals {
        Totals {
            trajectories: self.trajectories,
            max_env_steps: self.max_env_steps,
            max_generated_tokens: self.max_generated_tokens,
            judge_calls_max: self.judge_calls_max,
            sft_examples: self.sft_examples,
            sft_max_tokens: self.sft_max_tokens,
            optimizer_steps: self.optimizer_steps,
            critic_steps: self.critic_steps,
            generated_tasks: self.generated_tasks,
            branches: self.branches,
        }
    }
}

/// The part of the totals a node's figures belong to.
fn part(kind: &str) -> &'static str {
    match kind {
        "refill" => "refill",
        "validation" => "validation",
        "eval" => "evaluation",
        _ => "training",
    }
}

pub(crate) fn mul(a: Count, b: Count) -> Count {
    a?.checked_mul(b?)
}

pub(crate) fn add(a: Count, b: Count) -> Count {
    a?.checked_add(b?)
}

pub(crate) fn ceil_div(a: Count, b: Count) -> Count {
    let (a, b) = (a?, b?);
    (b > 0).then(|| a.div_ceil(b))
}

/// Estimates a plan; `prices` adds money.
pub fn estimate(plan: &Plan, prices: Option<&Prices>) -> Estimate {
    let mut stages = Vec::new();
    for n in &plan.nodes {
        let found = match n.kind {
            NodeKind::Sft => vec![figures::sft(plan, n)],
            NodeKind::RlPhase => {
                let trained = engine::with_calls(plan, n, None, figures::rl_phase(plan, n));
                let refill = extra::refill(plan, n, &trained);
                let refill = refill.map(|r| engine::with_calls(plan, n, None, r));
                let validation = extra::validation(plan, n)
                    .map(|v| engine::with_calls(plan, n, Some("validate.env"), v));
                std::iter::once(trained).chain(refill).chain(validation).collect()
            }
            NodeKind::Eval => {
                let e = engine::with_calls(plan, n, Some("env"), figures::eval(plan, n));
                vec![served::with_policy_calls(plan, n, e)]
            }
            NodeKind::LoadModel
            | NodeKind::LoadDataset
            | NodeKind::Env
            | NodeKind::Agent
            | NodeKind::Reward
            | NodeKind::Checkpoint => continue,
        };
        for e in found {
            let e = match prices {
                Some(p) => StageEstimate { cost: Some(prices::price(&e, p)), ..e },
                None => e,
            };
            stages.push(e);
        }
    }
    let of = |which: &'static str| totals(stages.iter().filter(move |s| part(&s.kind) == which));
    let train = of("training");
    let sum_cost = |which: Option<&str>| {
        let mut c = Cost { judge: Some(0.0), tokens: Some(0.0), gpu: Some(0.0), total: Some(0.0) };
        for s in stages.iter().filter(|s| which.is_none_or(|w| part(&s.kind) == w)) {
            let sc = s.cost.clone().unwrap_or_default();
            c.judge = prices::fadd(c.judge, sc.judge);
            c.tokens = prices::fadd(c.tokens, sc.tokens);
            c.gpu = prices::fadd(c.gpu, sc.gpu);
            c.total = prices::fadd(c.total, sc.total);
        }
        c
    };
    let cost = prices.map(|_| sum_cost(None));
    let cost_by_part = match prices {
        Some(_) => ["training", "refill", "validation", "evaluation"]
            .into_iter()
            .map(|w| (w.to_string(), sum_cost(Some(w))))
            .collect(),
        None => BTreeMap::new(),
    };
    let published = published::published(plan, &stages, prices);
    let (refill, validation) = (of("refill"), of("validation"));
    let judge_calls_during_training = [train.judge_calls_max, refill.judge_calls_max]
        .into_iter()
        .chain([validation.judge_calls_max])
        .try_fold(0u64, |a, c| a.checked_add(c?));
    let cost_during_training = prices.and_then(|_| {
        ["training", "refill", "validation"]
            .iter()
            .try_fold(0.0, |a, p| Some(a + cost_by_part.get(*p)?.total?))
    });
    Estimate {
        version: crate::model::PLAN_VERSION,
        recipe: plan.recipe.clone(),
        profile: plan.profile.clone(),
        variant: plan.variant.clone(),
        trajectories: train.trajectories,
        max_env_steps: train.max_env_steps,
        max_generated_tokens: train.max_generated_tokens,
        judge_calls_max: train.judge_calls_max,
        sft_examples: train.sft_examples,
        sft_max_tokens: train.sft_max_tokens,
        optimizer_steps: train.optimizer_steps,
        critic_steps: train.critic_steps,
        generated_tasks: train.generated_tasks,
        branches: train.branches,
        refill,
        validation,
        evaluation: of("evaluation"),
        stages,
        cost,
        cost_by_part,
        judge_calls_during_training,
        cost_during_training,
        published,
    }
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
        critic_steps: Some(0),
        generated_tasks: Some(0),
        branches: Some(0),
    };
    for s in it {
        t.trajectories = add(t.trajectories, s.trajectories);
        t.max_env_steps = add(t.max_env_steps, s.max_env_steps);
        t.max_generated_tokens = add(t.max_generated_tokens, s.max_generated_tokens);
        t.judge_calls_max = add(t.judge_calls_max, s.judge_calls_max);
        t.sft_examples = add(t.sft_examples, s.sft_examples);
        t.sft_max_tokens = add(t.sft_max_tokens, s.sft_max_tokens);
        t.optimizer_steps = add(t.optimizer_steps, s.optimizer_steps);
        t.critic_steps = add(t.critic_steps, s.critic_steps);
        t.generated_tasks = add(t.generated_tasks, s.generated_tasks);
        t.branches = add(t.branches, s.branches);
    }
    t
}

pub(crate) fn empty(n: &Node) -> StageEstimate {
    StageEstimate {
        id: n.id.clone(),
        kind: n.kind.word().to_string(),
        trajectories: Some(0),
        max_env_steps: Some(0),
        max_generated_tokens: Some(0),
        judge_calls_max: Some(0),
        judge_calls_by_model: BTreeMap::new(),
        judge_tokens_by_model: BTreeMap::new(),
        sft_examples: Some(0),
        sft_max_tokens: Some(0),
        optimizer_steps: Some(0),
        critic_steps: Some(0),
        generated_tasks: Some(0),
        branches: Some(0),
        cost: None,
    }
}

/// The node feeding a port.
pub(crate) fn input<'a>(plan: &'a Plan, node: &str, port: &str) -> Option<&'a Node> {
    let e = plan.edges.iter().find(|e| e.to == node && e.port == port)?;
    plan.node(&e.from)
}
