//! What the estimate reads of each node, typed: the fields of its constructor's type that a
//! figure needs, each an `Option` because a recipe may leave any value `unknown` (the figure is
//! then `?`, never a guess), read by the plan's decoder as a partial read
//! (`params::partial`). A test holds every field named here to its constructor's type, so a
//! renamed stdlib field cannot silently read as unknown.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::model::Node;
use crate::params::partial::{self, AnyObj};
use crate::params::{
    BatchSize, CallTokens, Drop, Epochs, Iters, JudgeModel, Level, LossOn, NodeRef, OrAgent,
    OrHorizon, OrNone, OrOff, OrTraining, OrUnlimited, Ratio, RewardRef, Steps, Tokens, Turns,
    Word,
};
use crate::value::PObj;

/// What the estimate reads of node `n` as `T` (everything unknown when it does not decode).
pub(super) fn read<'a, T: Deserialize<'a> + Default>(n: &'a Node) -> T {
    partial::read(n).unwrap_or_default()
}

/// An RL phase.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct PhaseIn {
    pub stage: Option<String>,
    pub phase: Option<u32>,
    pub iters: Option<Iters>,
    pub horizon: Option<Steps>,
    pub prompts: Option<u32>,
    pub group: Option<u32>,
    pub ppo_epochs: Option<u32>,
    pub mini_batch: Option<BatchSize>,
    pub mini_batch_rest: Option<crate::params::MiniBatchRest>,
    /// `ppo` has no `level`: a turn each sample.
    pub level: Option<Level>,
    pub drop: Option<Drop>,
    pub refill: Option<RefillIn>,
    pub dynamic_sampling: Option<DynamicIn>,
    pub critic: Option<OrNone<AnyObj<CriticIn>>>,
    pub generate: Option<OrOff<AnyObj<GenerateIn>>>,
    pub branching: Option<OrOff<AnyObj<BranchingIn>>>,
    pub validate: Option<OrOff<AnyObj<ValidateIn>>>,
    pub published_cost: Option<Vec<PublishedIn>>,
}

/// One of a stage's `published_cost` figures.
#[derive(Debug, Deserialize)]
pub(super) struct PublishedIn {
    pub figure: crate::params::CostFigure,
    pub value: f64,
    pub source: String,
}

/// `grpo`'s `refill`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct RefillIn {
    pub kept: Option<Ratio>,
    pub max_batches: Option<OrUnlimited<u32>>,
}

/// `dapo`'s `dynamic_sampling`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct DynamicIn {
    pub kept: Option<Ratio>,
    pub max_batches: Option<u32>,
}

/// `critic(init) { … }`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct CriticIn {
    pub warmup: Option<Iters>,
}

/// `from_failures(per_task) { … }`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct GenerateIn {
    pub per_task: Option<u32>,
}

/// `entropy(initial, …)`: branching rollouts.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct BranchingIn {
    pub initial: Option<u32>,
}

/// `validation(tasks) { … }`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct ValidateIn {
    pub every: Option<Iters>,
    pub before_training: Option<bool>,
    pub k: Option<u32>,
    pub max_steps: Option<OrHorizon<Steps>>,
    pub max_response: Option<OrAgent<Tokens>>,
    pub judge: Option<OrTraining<RewardRef>>,
}

/// An agent: a ReAct agent's reply cap, or a graph's modules'.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct AgentIn {
    pub max_turns: Option<Turns>,
    pub max_response: Option<Tokens>,
    pub trajectory_tokens: Option<OrUnlimited<Tokens>>,
    pub modules: Option<BTreeMap<String, AnyObj<ModuleIn>>>,
}

/// A graph's module, whatever its constructor.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct ModuleIn {
    pub max_response: Option<Tokens>,
}

/// A dataset: its declared size, rewritten copies (sandbox demonstrations), or a mixture's
/// parts.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct DatasetIn {
    pub count: Option<u64>,
    /// Absent: no copies; `Some(None)`: `unknown`.
    #[serde(deserialize_with = "partial::present")]
    pub augment: Option<Option<u32>>,
    pub parts: Option<Vec<NodeRef>>,
}

/// An SFT stage.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct SftIn {
    pub epochs: Option<Epochs>,
    pub loss_on: Option<LossOn>,
    pub max_length: Option<Tokens>,
    pub batch: Option<u32>,
}

/// An evaluation.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct EvalIn {
    pub count: Option<u64>,
    pub k: Option<u32>,
    pub max_steps: Option<Steps>,
    pub max_response: Option<OrAgent<Tokens>>,
    pub trajectory_tokens: Option<OrAgent<Tokens>>,
}

/// The fields of a reward signal that say whom it asks: a judge's model, `answer_match`'s
/// judge, a reward endpoint's URL, and the tokens a call declares.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct SignalIn {
    pub model: Option<JudgeModel>,
    pub judge_model: Option<JudgeModel>,
    pub mode: Option<Word>,
    pub tokens_per_call: Option<CallTokens>,
    pub url: Option<String>,
}

/// A signal's constructor (its last path segment: `judge`, `webjudge`) and the fields the
/// estimate reads (all unknown when they do not decode).
pub(super) fn signal(obj: &PObj) -> (&str, SignalIn) {
    let short = obj.ctor.rsplit("::").next().unwrap_or(&obj.ctor);
    let read = partial::read_obj::<AnyObj<SignalIn>>(obj).map(|o| o.body);
    (short, read.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NodeKind;
    use crate::params::shape::{self, Shape};

    /// The fields of a partial read, as its shape lists them.
    fn fields<T: for<'de> Deserialize<'de>>() -> Vec<String> {
        shape::of::<T>().fields().iter().map(|(n, _)| n.clone()).collect()
    }

    /// Every field `T` reads is a field of the constructors it is read from (of one at least).
    fn held<T: for<'de> Deserialize<'de>>(what: &str, kind: NodeKind, ctors: &[&str]) {
        let shapes: Vec<Shape> =
            ctors.iter().map(|c| crate::params::shape_of(kind, c).expect(c)).collect();
        for f in fields::<T>() {
            assert!(
                shapes.iter().any(|s| s.field(&f).is_some()),
                "{what} reads `{f}`, which none of {ctors:?} has"
            );
        }
    }

    #[test]
    fn every_field_the_estimate_reads_is_a_field_of_its_constructor() {
        held::<PhaseIn>("an RL phase", NodeKind::RlPhase, &["grpo", "dapo", "ppo"]);
        held::<AgentIn>("an agent", NodeKind::Agent, &["react", "graph"]);
        let data = ["jsonl", "parquet", "hf_dataset", "mixture", "std::sandbox::demos"];
        held::<DatasetIn>("a dataset", NodeKind::LoadDataset, &data);
        held::<SftIn>("an SFT stage", NodeKind::Sft, &["sft"]);
        held::<EvalIn>("an evaluation", NodeKind::Eval, &["evaluate"]);
        let grpo = crate::params::shape_of(NodeKind::RlPhase, "grpo").expect("grpo");
        let inner = |f: &str| format!("{:?}", grpo.field(f));
        for f in fields::<RefillIn>() {
            assert!(inner("refill").contains(&format!("\"{f}\"")), "refill has no `{f}`");
        }
        for (field, names) in [
            ("validate", fields::<ValidateIn>()),
            ("generate", fields::<GenerateIn>()),
            ("branching", fields::<BranchingIn>()),
        ] {
            for f in names {
                assert!(inner(field).contains(&format!("\"{f}\"")), "{field} has no `{f}`");
            }
        }
        let dapo = crate::params::shape_of(NodeKind::RlPhase, "dapo").expect("dapo");
        for f in fields::<DynamicIn>() {
            let d = format!("{:?}", dapo.field("dynamic_sampling"));
            assert!(d.contains(&format!("\"{f}\"")), "dynamic_sampling has no `{f}`");
        }
        let ppo = crate::params::shape_of(NodeKind::RlPhase, "ppo").expect("ppo");
        for f in fields::<CriticIn>() {
            let c = format!("{:?}", ppo.field("critic"));
            assert!(c.contains(&format!("\"{f}\"")), "critic has no `{f}`");
        }
    }
}
