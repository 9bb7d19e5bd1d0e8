//! The training stages the runtime runs: `sft` (one node), the parts an RL phase is made of
//! (its schedules, optimiser, KL, critic, validation, replay and generation; the phase itself,
//! one node per phase, is `rl.rs`), and the checkpoint node that ends each stage.

use serde::Deserialize;

use super::models::FrozenPart;
use super::or::{OrAgent, OrHorizon, OrNone, OrOff, OrTraining, OrUnlimited};
use super::rewards::RewardRef;
use super::units::{Epochs, Iters, NodeRef, Quantity, Range, Ratio, Steps, Tokens};

/// A learning-rate schedule.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Schedule {
    /// Constant after an optional linear warm-up over `warmup` of the steps.
    #[serde(rename = "constant")]
    Constant { warmup: Ratio },
    /// Cosine decay to `floor` × peak after the warm-up.
    #[serde(rename = "cosine")]
    Cosine { warmup: Ratio, floor: f64 },
}

/// AdamW's settings.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Optimizer {
    pub beta1: f64,
    pub beta2: f64,
    pub weight_decay: f64,
    pub grad_clip: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossOn {
    CurrentTurn,
    AllTurns,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Images {
    Current,
    All,
}

/// Spans of a demonstration (or, in RL, of a trajectory) that carry no loss.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MaskPart {
    Observations,
    ToolOutput,
    History,
    System,
}

impl MaskPart {
    /// Every span that is not the policy's own reply.
    pub const ALL: [MaskPart; 4] =
        [MaskPart::Observations, MaskPart::ToolOutput, MaskPart::History, MaskPart::System];

    /// The spans `mask` leaves out (trains), as a recipe writes them, in canonical order.
    pub fn left_out(mask: &[MaskPart]) -> Vec<&'static str> {
        MaskPart::ALL.iter().filter(|m| !mask.contains(m)).map(|m| m.word()).collect()
    }

    /// As a recipe writes it.
    pub fn word(self) -> &'static str {
        match self {
            MaskPart::Observations => "observations",
            MaskPart::ToolOutput => "tool_output",
            MaskPart::History => "history",
            MaskPart::System => "system",
        }
    }
}

/// `sft(model, data) { … }`, plus the stage's name.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sft {
    pub model: NodeRef,
    pub data: NodeRef,
    pub epochs: Epochs,
    pub lr: f64,
    pub batch: u32,
    pub micro_batch: u32,
    pub schedule: Schedule,
    pub loss_on: LossOn,
    pub images: Images,
    pub mask: Vec<MaskPart>,
    pub max_length: Tokens,
    /// The model's parts this stage does not train.
    pub frozen: Vec<FrozenPart>,
    /// LoRA adapters, the only parameters the stage trains.
    pub lora: OrOff<LoraObj>,
    pub optimizer: Optimizer,
    pub checkpoint_every: Epochs,
    /// Optimiser steps between the checkpoints the stage saves as it trains (0: at its end only).
    pub checkpoint_steps: u32,
    pub seed: u64,
    pub stage: String,
}

/// Where an RL stage's KL to the reference model acts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KlIn {
    Loss,
    Reward,
}

/// Where an RL phase starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Resume {
    /// From its `init` (phase 1).
    Fresh,
    /// From the previous phase's weights and optimiser state, with this phase's `lr`.
    WeightsAndOptimizer,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KlEstimator {
    K1,
    K2,
    K3,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Drop {
    None,
    UniformGroups,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossAgg {
    TokenMean,
    SeqMeanTokenMean,
    SeqMeanTokenSum,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyLoss {
    Clip,
    KlCov,
}

/// What one RL sample is: a turn, or a whole trajectory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Turn,
    Trajectory,
}

/// A failure class whose samples can leave the loss.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    EnvError,
    JudgeTimeout,
    JudgeError,
    InfraTimeout,
    Truncated,
    Aborted,
}

impl FailureClass {
    /// The class as episodes and rewards name it.
    pub fn word(self) -> &'static str {
        match self {
            FailureClass::EnvError => "env_error",
            FailureClass::JudgeTimeout => "judge_timeout",
            FailureClass::JudgeError => "judge_error",
            FailureClass::InfraTimeout => "infra_timeout",
            FailureClass::Truncated => "truncated",
            FailureClass::Aborted => "aborted",
        }
    }
}

/// `grpo`'s `async`: fully asynchronous rollouts (verl's `async_training`).
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Async {
    pub staleness: Ratio,
    /// Iterations (trainer steps) between weight syncs to the rollout workers.
    pub sync_every: u32,
    /// An episode interrupted by a sync goes on with the new weights.
    pub partial_rollout: bool,
}

/// `dapo`'s `dynamic_sampling`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DynamicSampling {
    /// `reward` (the stage's) or a reward declaration the stage's reward uses.
    pub metric: String,
    pub max_batches: u32,
    /// Expected fraction of drawn groups that pass the filter (the estimate's assumption).
    #[serde(deserialize_with = "super::opt")]
    pub kept: Option<Ratio>,
}

/// `grpo`'s `refill`: what replaces the groups `drop` removed.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Refill {
    /// Extra batches of groups one iteration may draw.
    pub max_batches: OrUnlimited<u32>,
    /// Expected fraction of drawn groups that survive `drop` (the estimate's assumption).
    #[serde(deserialize_with = "super::opt")]
    pub kept: Option<Ratio>,
}

/// How a process reward joins the outcome reward.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProcessMix {
    /// Added to the turns of its own step.
    PerStep,
    /// Summed over the episode and added to every turn.
    Summed,
}

/// What a validation pass counts as solved by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ValidationMetric {
    Success,
    PassAtK,
}

/// `validation(tasks) { … }`: passes over held-out tasks inside an RL stage.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Validation {
    pub tasks: NodeRef,
    /// After every `every`-th iteration of the stage, counted across its phases.
    pub every: Iters,
    /// And once before the stage's first iteration.
    pub before_training: bool,
    pub metric: ValidationMetric,
    pub k: u32,
    pub temperature: f64,
    pub top_p: f64,
    pub top_k: u32,
    pub max_response: OrAgent<Tokens>,
    pub repetition_penalty: f64,
    pub max_steps: OrHorizon<Steps>,
    pub judge: OrTraining<RewardRef>,
    pub env: OrAgent<NodeRef>,
    /// The column each task's subset is read from, for a result per subset each pass.
    pub by: OrNone<String>,
}

/// A stage's `validate` object.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum ValidationObj {
    #[serde(rename = "validation")]
    Validation(Validation),
}

impl ValidationObj {
    pub fn get(&self) -> &Validation {
        match self {
            ValidationObj::Validation(v) => v,
        }
    }
}

/// `gae(gamma, lambda)`: generalised advantage estimation from the stage's critic.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gae {
    pub gamma: f64,
    pub lambda: f64,
}

/// `gigpo(gamma, step_weight) { norm, key }`: GiGPO's step-level credit beside the episode's
/// group-relative advantage (verl-agent's `core_gigpo.py`).
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gigpo {
    /// Discount of a step's return to the episode's end.
    pub gamma: f64,
    /// The step advantage's weight (verl-agent's `step_advantage_w`).
    pub step_weight: f64,
    pub norm: GigpoNorm,
    pub key: AnchorKey,
}

/// How GiGPO normalises within a group (verl-agent's `mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GigpoNorm {
    /// The group's mean subtracted.
    MeanNorm,
    /// The mean subtracted, then divided by the standard deviation + 1e-6.
    MeanStdNorm,
}

/// Which turns of a group saw the same state (GiGPO's anchor).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnchorKey {
    /// The text observation, whitespace runs made one space, the ends trimmed.
    Observation,
    /// The page's URL before the turn.
    Url,
}

/// An RL stage's `advantage` object.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum AdvantageObj {
    #[serde(rename = "gae")]
    Gae(Gae),
    #[serde(rename = "gigpo")]
    Gigpo(Gigpo),
}

/// `critic(init) { … }`: PPO's learned value function.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Critic {
    /// The weights it starts from.
    pub init: NodeRef,
    pub lr: f64,
    /// Its learning rate over each RL phase's iterations.
    pub schedule: Schedule,
    pub value_clip: OrOff<f64>,
    /// Iterations that train the critic alone.
    pub warmup: Iters,
    pub optimizer: Optimizer,
}

/// A `ppo` stage's `critic` object.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum CriticObj {
    #[serde(rename = "critic")]
    Critic(Critic),
}

impl CriticObj {
    pub fn get(&self) -> &Critic {
        match self {
            CriticObj::Critic(c) => c,
        }
    }
}

/// Whose weights the KL's reference is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reference {
    /// The weights the stage starts from.
    Init,
    /// The weights each phase starts from.
    Phase,
}

/// Which tasks a replay buffer keeps, by their group's success.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplayKeep {
    Unsolved,
    Informative,
    Solved,
}

/// `replay(fraction) { … }`: earlier tasks seen again inside an RL stage.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Replay {
    pub fraction: Ratio,
    pub keep: ReplayKeep,
    pub size: u32,
}

/// A stage's `replay` object.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum ReplayObj {
    #[serde(rename = "replay")]
    Replay(Replay),
}

impl ReplayObj {
    pub fn get(&self) -> &Replay {
        match self {
            ReplayObj::Replay(r) => r,
        }
    }
}

/// A linear layer of a decoder layer that LoRA adapts, by PEFT's module name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoraTarget {
    QProj,
    KProj,
    VProj,
    OProj,
    GateProj,
    UpProj,
    DownProj,
}

impl LoraTarget {
    /// PEFT's (and transformers') module name.
    pub fn word(self) -> &'static str {
        match self {
            LoraTarget::QProj => "q_proj",
            LoraTarget::KProj => "k_proj",
            LoraTarget::VProj => "v_proj",
            LoraTarget::OProj => "o_proj",
            LoraTarget::GateProj => "gate_proj",
            LoraTarget::UpProj => "up_proj",
            LoraTarget::DownProj => "down_proj",
        }
    }
}

/// Where a stage's adapters start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoraStart {
    /// New adapters (or the saved `adapter`) over the weights the stage starts from.
    Fresh,
    /// The adapters of the stage it starts from.
    Init,
}

/// `lora(rank) { … }`: low-rank adapters on the policy's linear layers.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lora {
    pub rank: u32,
    pub alpha: f64,
    pub dropout: f64,
    pub targets: Vec<LoraTarget>,
    pub start: LoraStart,
    /// A PEFT adapter directory to start from.
    pub adapter: OrNone<String>,
}

/// A stage's `lora` object.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum LoraObj {
    #[serde(rename = "lora")]
    Lora(Lora),
}

impl LoraObj {
    pub fn get(&self) -> &Lora {
        match self {
            LoraObj::Lora(l) => l,
        }
    }
}

/// What makes tasks from a stage's failures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Generator {
    /// The sandbox's own task generators: a failed task's template with new values.
    Sandbox,
}

/// `from_failures(per_task) { … }`: new tasks made from the tasks an RL stage fails.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Generation {
    pub per_task: u32,
    pub generator: Generator,
    /// The band of critic values a new task must score within to join the pool.
    pub critic_score: OrOff<Range<Ratio>>,
    pub fraction: Ratio,
    pub size: u32,
}

/// A stage's `generate` object.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum GenerationObj {
    #[serde(rename = "from_failures")]
    FromFailures(Generation),
}

impl GenerationObj {
    pub fn get(&self) -> &Generation {
        match self {
            GenerationObj::FromFailures(g) => g,
        }
    }
}

/// `entropy(initial, beam, threshold, weight, tokens)`: ARPO's entropy-guided branching of a
/// stage's rollouts, within its `group` samples per prompt.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Branching {
    /// Full samples started per prompt.
    pub initial: u32,
    /// Copies a branching sample makes.
    pub beam: u32,
    /// A sample branches when clip(U − `weight`·ΔH, 0, 1) is at most this.
    pub threshold: f64,
    /// How much a rise in entropy adds to the chance of branching.
    pub weight: f64,
    /// The tokens of a turn whose entropy is measured.
    pub tokens: Tokens,
}

/// A stage's `branching` object.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum BranchingObj {
    #[serde(rename = "entropy")]
    Entropy(Branching),
}

impl BranchingObj {
    pub fn get(&self) -> &Branching {
        match self {
            BranchingObj::Entropy(b) => b,
        }
    }
}

/// `dapo`'s `overlong`.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Overlong {
    pub buffer: Tokens,
    pub penalty: f64,
}

/// The node that holds a training stage's final weights.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    pub stage: String,
    /// The stage's `checkpoint_every` (epochs for SFT, iterations for RL).
    pub every: Quantity,
}
