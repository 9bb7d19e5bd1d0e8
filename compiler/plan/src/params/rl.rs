//! An RL phase by role, as verl groups its config: what the phase runs (`run`), how it samples
//! and scores episodes (`rollout`), how it updates the policy (`update`), and only what really
//! differs between `grpo`, `dapo` and `ppo` (`algo`). The language is unchanged: a phase node
//! holds the constructor's flat stdlib fields, and [`RlPhase::decode`] splits them among the
//! sections, each decoded with unknown fields refused (serde's `flatten` cannot be combined with
//! `deny_unknown_fields`). Knobs an algorithm does not have (DAPO's KL estimator, PPO's loss
//! aggregation) are written once, here, in [`Algo`]'s accessors, so every consumer — the
//! executor, the preflight, the verl lowering, the estimate — reads the same fixed behaviour.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

use super::de;
use super::error::{DecodeError, Problem};
use super::models::FrozenPart;
use super::or::{OrGrpo, OrNone, OrOff, OrUnlimited};
use super::rewards::RewardRef;
use super::shape::{self, Shape};
use super::stages::{
    AdvantageObj, Async, Branching, BranchingObj, Critic, CriticObj, Drop, DynamicSampling,
    FailureClass, GenerationObj, KlEstimator, KlIn, Level, LoraObj, LossAgg, MaskPart, Optimizer,
    Overlong, PolicyLoss, ProcessMix, Reference, Refill, ReplayObj, Resume, Schedule, Validation,
    ValidationObj,
};
use super::units::{BatchSize, Epochs, Iters, NodeRef, Range, Steps};
use crate::model::Node;
use crate::value::PVal;

/// A phase of `grpo`, `dapo` or `ppo(init, tasks, agent) { … }`, one node each.
#[derive(Clone, Debug, PartialEq)]
pub struct RlPhase {
    pub run: PhaseRun,
    pub rollout: Rollout,
    pub update: Update,
    pub algo: Algo,
}

/// What the phase runs and where it sits in its stage.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseRun {
    /// The weights the stage starts from.
    pub init: NodeRef,
    pub tasks: NodeRef,
    pub agent: NodeRef,
    pub iters: Iters,
    /// The epochs over the task set `iters` was written as (`iters = 2 epochs`); the planner
    /// adds the field only then.
    #[serde(default)]
    pub epochs: Option<Epochs>,
    /// A pass's last partial batch: completed from the next pass, or left out (verl).
    pub last_batch: LastBatch,
    /// The phase's step budget per episode (capped by the agent's `max_turns`).
    pub horizon: Steps,
    pub lr: f64,
    pub seed: u64,
    pub checkpoint_every: Iters,
    /// The stage's name.
    pub stage: String,
    /// 1-based.
    pub phase: u32,
    pub phases: u32,
    pub resume: Resume,
    /// The agent slots the phase's weights replace during rollouts.
    pub binds: Vec<String>,
    /// What the source reports the stage cost; read only by `wrlc estimate`.
    pub published_cost: Vec<PublishedCost>,
}

/// A cost figure a source reports for a stage, with where it says so.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublishedCost {
    pub figure: CostFigure,
    pub value: f64,
    pub source: String,
}

/// What a published cost figure counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CostFigure {
    GpuHours,
    JudgeCalls,
    JudgeCost,
}

impl CostFigure {
    pub fn word(self) -> &'static str {
        match self {
            CostFigure::GpuHours => "gpu_hours",
            CostFigure::JudgeCalls => "judge_calls",
            CostFigure::JudgeCost => "judge_cost",
        }
    }
}

/// How the phase samples and scores its episodes.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rollout {
    /// Tasks per iteration.
    pub prompts: u32,
    /// Episodes per task.
    pub group: u32,
    pub temperature: f64,
    pub top_p: f64,
    pub reward: RewardRef,
    /// Failure classes whose episodes leave the loss.
    pub exclude: Vec<FailureClass>,
    /// The share of an iteration's episodes left out above which the run warns.
    pub warn_excluded: f64,
    /// The share of an iteration's episodes left out at which the run stops (E0509).
    pub stop_excluded: OrOff<f64>,
    /// Earlier tasks seen again.
    pub replay: OrOff<ReplayObj>,
    /// New tasks made from the tasks the stage fails.
    pub generate: OrOff<GenerationObj>,
    /// Tasks drawn shuffled (each pass, by the stage's seed) rather than in order.
    pub shuffle: bool,
}

/// How the phase updates the policy from its samples.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Update {
    /// Group-relative, GiGPO or GAE advantages (GAE: `ppo` with a critic, the checker's rule).
    pub advantage: OrGrpo<AdvantageObj>,
    pub clip: Range<f64>,
    /// The KL coefficient to the reference (0 = none).
    pub kl: f64,
    pub kl_in: KlIn,
    pub ppo_epochs: u32,
    pub mini_batch: BatchSize,
    /// What happens to the samples past an iteration's last whole mini-batch.
    pub mini_batch_rest: MiniBatchRest,
    /// The model's parts this phase does not train.
    pub frozen: Vec<FrozenPart>,
    /// LoRA adapters, the only parameters the stage trains.
    pub lora: OrOff<LoraObj>,
    /// Spans that carry no loss.
    pub mask: Vec<MaskPart>,
    /// Whose weights the KL's reference is.
    pub reference: Reference,
    pub schedule: Schedule,
    pub optimizer: Optimizer,
}

/// The last batch of a pass through the tasks when fewer than `prompts` tasks are left
/// (`wrl_check::epochs::iters_for`, `batch_start`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LastBatch {
    /// Completed from the next pass (the task set cycled through).
    Keep,
    /// Left out: every pass is whole batches (verl's `drop_last=True`).
    Drop,
}

impl LastBatch {
    /// Whether the partial batch is dropped.
    pub fn drops(self) -> bool {
        match self {
            LastBatch::Keep => false,
            LastBatch::Drop => true,
        }
    }
}

/// The samples of an iteration past its last whole mini-batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MiniBatchRest {
    /// Trained as a shorter last mini-batch.
    Train,
    /// Left out of the update (slime's trimming to the global batch).
    Drop,
}

/// What only one algorithm has.
// One per phase node, decoded once: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum Algo {
    Grpo(Grpo),
    Dapo(Dapo),
    Ppo(Ppo),
}

/// `grpo`'s own fields.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grpo {
    #[serde(deserialize_with = "super::opt")]
    pub process_reward: Option<RewardRef>,
    pub process_mix: ProcessMix,
    #[serde(deserialize_with = "super::opt")]
    pub dual_clip: Option<f64>,
    pub kl_estimator: KlEstimator,
    pub entropy: f64,
    pub drop: Drop,
    pub refill: Refill,
    pub std_normalize: bool,
    pub loss_agg: LossAgg,
    pub policy_loss: PolicyLoss,
    pub kl_cov_ratio: f64,
    pub ppo_kl_coef: f64,
    pub level: Level,
    /// The graph roles the stage trains; empty = every `trainable` module.
    pub trainable: Vec<String>,
    #[serde(rename = "async")]
    pub asynchronous: Async,
    pub validate: OrOff<ValidationObj>,
    /// Rollouts that branch where the policy's entropy rises after a tool result.
    pub branching: OrOff<BranchingObj>,
}

/// `dapo`'s own fields.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dapo {
    pub entropy: f64,
    pub dynamic_sampling: DynamicSampling,
    pub overlong: Overlong,
    pub loss_agg: LossAgg,
    pub level: Level,
    pub validate: OrOff<ValidationObj>,
    /// Rollouts that branch where the policy's entropy rises after a tool result.
    pub branching: OrOff<BranchingObj>,
}

/// `ppo`'s own fields.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ppo {
    pub critic: OrNone<CriticObj>,
    pub entropy: f64,
}

/// How many extra batches of groups one iteration may roll out to replace the uninformative.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refills {
    /// Until the batch is whole (at most once through the task set).
    Unlimited,
    AtMost(u32),
}

impl Algo {
    /// The constructor's name.
    pub fn ctor(&self) -> &'static str {
        match self {
            Algo::Grpo(_) => "grpo",
            Algo::Dapo(_) => "dapo",
            Algo::Ppo(_) => "ppo",
        }
    }

    /// The entropy bonus.
    pub fn entropy(&self) -> f64 {
        match self {
            Algo::Grpo(g) => g.entropy,
            Algo::Dapo(d) => d.entropy,
            Algo::Ppo(p) => p.entropy,
        }
    }

    /// How token losses are averaged (`ppo`: over every token of the mini-batch).
    pub fn loss_agg(&self) -> LossAgg {
        match self {
            Algo::Grpo(g) => g.loss_agg,
            Algo::Dapo(d) => d.loss_agg,
            Algo::Ppo(_) => LossAgg::TokenMean,
        }
    }

    /// What one sample is (`ppo`: a turn).
    pub fn level(&self) -> Level {
        match self {
            Algo::Grpo(g) => g.level,
            Algo::Dapo(d) => d.level,
            Algo::Ppo(_) => Level::Turn,
        }
    }

    /// In-training validation (`ppo` has none).
    pub fn validate(&self) -> Option<&Validation> {
        match self {
            Algo::Grpo(Grpo { validate, .. }) | Algo::Dapo(Dapo { validate, .. }) => {
                validate.value().map(ValidationObj::get)
            }
            Algo::Ppo(_) => None,
        }
    }

    /// The KL estimator. A stage without the knob (`dapo`, `ppo`) uses k3 (low-variance,
    /// non-negative) for a loss term and k1 (log π − log π_ref, PPO's) for a reward penalty, so
    /// that `wrlc run` and the verl job (`kl_loss_type: low_var_kl`, `kl_penalty: kl`) agree.
    pub fn kl_estimator(&self, kl_in: KlIn) -> KlEstimator {
        match (self, kl_in) {
            (Algo::Grpo(g), _) => g.kl_estimator,
            (Algo::Dapo(_) | Algo::Ppo(_), KlIn::Loss) => KlEstimator::K3,
            (Algo::Dapo(_) | Algo::Ppo(_), KlIn::Reward) => KlEstimator::K1,
        }
    }

    /// The dual clip's bound (`grpo` only).
    pub fn dual_clip(&self) -> Option<f64> {
        match self {
            Algo::Grpo(g) => g.dual_clip,
            Algo::Dapo(_) | Algo::Ppo(_) => None,
        }
    }

    /// Whether group advantages are divided by the group's standard deviation.
    pub fn std_normalize(&self) -> bool {
        match self {
            Algo::Grpo(g) => g.std_normalize,
            Algo::Dapo(_) | Algo::Ppo(_) => true,
        }
    }

    /// Whether groups whose rewards are all equal leave the batch: `grpo`'s `drop`, what
    /// `dapo` is, never in `ppo` (several epochs over old log-probs).
    pub fn drops_uniform_groups(&self) -> bool {
        match self {
            Algo::Grpo(g) => match g.drop {
                Drop::None => false,
                Drop::UniformGroups => true,
            },
            Algo::Dapo(_) => true,
            Algo::Ppo(_) => false,
        }
    }

    /// The extra batches an iteration may roll out in place of dropped groups.
    pub fn refills(&self) -> Refills {
        match self {
            Algo::Grpo(g) => match g.refill.max_batches {
                OrUnlimited::Unlimited => Refills::Unlimited,
                OrUnlimited::Value(n) => Refills::AtMost(n),
            },
            Algo::Dapo(d) => Refills::AtMost(d.dynamic_sampling.max_batches),
            Algo::Ppo(_) => Refills::AtMost(0),
        }
    }

    /// The policy loss (`grpo`'s knob; the clipped surrogate elsewhere).
    pub fn policy_loss(&self) -> PolicyLoss {
        match self {
            Algo::Grpo(g) => g.policy_loss,
            Algo::Dapo(_) | Algo::Ppo(_) => PolicyLoss::Clip,
        }
    }

    /// A process reward added to each step's turns (`grpo` only).
    pub fn process_reward(&self) -> Option<&RewardRef> {
        match self {
            Algo::Grpo(g) => g.process_reward.as_ref(),
            Algo::Dapo(_) | Algo::Ppo(_) => None,
        }
    }

    /// The graph roles the stage trains; empty = every `trainable` module.
    pub fn trainable(&self) -> &[String] {
        match self {
            Algo::Grpo(g) => &g.trainable,
            Algo::Dapo(_) | Algo::Ppo(_) => &[],
        }
    }

    /// ARPO's entropy-guided branching of the rollouts (`ppo`: none; every sample is full).
    pub fn branching(&self) -> Option<&Branching> {
        match self {
            Algo::Grpo(Grpo { branching, .. }) | Algo::Dapo(Dapo { branching, .. }) => {
                branching.value().map(BranchingObj::get)
            }
            Algo::Ppo(_) => None,
        }
    }

    /// PPO's learned value function.
    pub fn critic(&self) -> Option<&Critic> {
        match self {
            Algo::Ppo(p) => p.critic.value().map(CriticObj::get),
            Algo::Grpo(_) | Algo::Dapo(_) => None,
        }
    }
}

/// The field names of each section, read off their types once.
struct Sections {
    run: Vec<String>,
    rollout: Vec<String>,
    update: Vec<String>,
    grpo: Vec<String>,
    dapo: Vec<String>,
    ppo: Vec<String>,
}

fn names(s: Shape) -> Vec<String> {
    s.fields().iter().map(|(n, _)| n.clone()).collect()
}

fn sections() -> &'static Sections {
    static SECTIONS: OnceLock<Sections> = OnceLock::new();
    SECTIONS.get_or_init(|| Sections {
        run: names(shape::of::<PhaseRun>()),
        rollout: names(shape::of::<Rollout>()),
        update: names(shape::of::<Update>()),
        grpo: names(shape::of::<Grpo>()),
        dapo: names(shape::of::<Dapo>()),
        ppo: names(shape::of::<Ppo>()),
    })
}

impl RlPhase {
    /// Splits a phase node's flat fields among the sections and decodes each; a field no
    /// section of its constructor has is refused as unknown.
    pub(crate) fn decode(node: &Node) -> Result<RlPhase, DecodeError> {
        type Decode = fn(&BTreeMap<String, PVal>, &[String]) -> Result<Algo, DecodeError>;
        let s = sections();
        let (own, algo): (&[String], Decode) = match node.ctor.as_str() {
            "grpo" => (&s.grpo, |p, f| de::from_params_in(p, f).map(Algo::Grpo)),
            "dapo" => (&s.dapo, |p, f| de::from_params_in(p, f).map(Algo::Dapo)),
            "ppo" => (&s.ppo, |p, f| de::from_params_in(p, f).map(Algo::Ppo)),
            other => {
                return Err(DecodeError::new(Problem::UnknownCtor {
                    kind: "rl phase".into(),
                    ctor: other.to_string(),
                }));
            }
        };
        let parts: [&[String]; 4] = [&s.run, &s.rollout, &s.update, own];
        if let Some(k) = node.params.keys().find(|k| !parts.iter().any(|p| p.contains(k))) {
            return Err(DecodeError::new(Problem::UnknownField(k.clone())));
        }
        let p = &node.params;
        Ok(RlPhase {
            run: de::from_params_in(p, &s.run)?,
            rollout: de::from_params_in(p, &s.rollout)?,
            update: de::from_params_in(p, &s.update)?,
            algo: algo(p, own)?,
        })
    }

    /// Each constructor and the union of its sections' shapes: the flat fields the stdlib
    /// declares (the contract test compares them).
    pub fn shapes() -> Vec<(&'static str, Shape)> {
        let common = [shape::of::<PhaseRun>(), shape::of::<Rollout>(), shape::of::<Update>()];
        let union = |own: Shape| {
            let fields = common.iter().chain([&own]).flat_map(|s| s.fields().to_vec()).collect();
            Shape::Struct(fields)
        };
        vec![
            ("grpo", union(shape::of::<Grpo>())),
            ("dapo", union(shape::of::<Dapo>())),
            ("ppo", union(shape::of::<Ppo>())),
        ]
    }
}
