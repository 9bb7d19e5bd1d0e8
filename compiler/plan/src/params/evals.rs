//! `evaluate(agent, tasks) { … }`: a held-out evaluation, once after each stage it names (or
//! once, on the declared models, when it names none).

use serde::Deserialize;

use super::or::{OrAgent, OrNone};
use super::rewards::RewardRef;
use super::units::{NodeRef, Ratio, Steps, Tokens};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    Success,
    PassAtK,
    /// k attempts; solved when the most common answer is a solved attempt's (Cons@k).
    ConsAtK,
    MeanReward,
}

/// Which episodes the success rate divides by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Denominator {
    All,
    NonAborted,
}

/// An eval node: the constructor's fields except `after`, and the stage it follows.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Evaluate {
    pub agent: NodeRef,
    pub tasks: NodeRef,
    pub metric: Metric,
    pub k: u32,
    pub temperature: f64,
    pub top_p: f64,
    pub top_k: u32,
    pub max_response: OrAgent<Tokens>,
    /// The replies of one episode together (`agent`: the agent's `trajectory_tokens`).
    pub trajectory_tokens: OrAgent<Tokens>,
    pub repetition_penalty: f64,
    pub max_steps: Steps,
    /// The environment the episodes run in (`agent`: the agent's own).
    pub env: OrAgent<NodeRef>,
    #[serde(deserialize_with = "super::opt")]
    pub judge: Option<RewardRef>,
    #[serde(deserialize_with = "super::opt")]
    pub count: Option<u64>,
    /// The column each task's subset is read from, for a result per subset.
    pub by: OrNone<String>,
    pub denominator: Denominator,
    /// The figures the paper reports for this run (the eval's `published` entries whose
    /// `after` is this node's stage, or `start`).
    pub published: Vec<Published>,
    /// The stage the eval runs after; absent when it runs on the declared models.
    #[serde(default)]
    pub after: Option<String>,
    /// That stage's checkpoint node; absent with `after`.
    #[serde(default)]
    pub checkpoint: Option<NodeRef>,
    /// The agent slots the checkpoint's weights replace (empty without a checkpoint).
    pub binds: Vec<String>,
}

/// A published figure an evaluation run reproduces: the paper's model, its value in the eval's
/// metric, and where it is published.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Published {
    pub model: String,
    pub value: Ratio,
    pub source: String,
}
