//! What a training node's parameters mean to the trainer. An RL phase arrives by role
//! (`run`, `rollout`, `update`, `algo`: `wrl_plan::params::RlPhase`); each section is
//! destructured here once, without `..`, and either mapped (to the trainer's `RlConfig`,
//! `OptimConfig` or the executor's loop) or named as read elsewhere or refused by the preflight
//! — so a field added to a section does not compile until someone says what it does. What an
//! algorithm without a knob runs with (DAPO's KL estimator, PPO's loss aggregation) is the
//! plan's `Algo` accessors, which the verl lowering reads too.

use wrl_plan::params::{
    self, Algo, BatchSize, Dapo, FailureClass, Grpo, KlEstimator, KlIn, Level, LossAgg,
    MiniBatchSplit, Optimizer, PhaseRun, PolicyLoss, Ppo, Refills, RewardRef, RlPhase, Rollout,
    Schedule as PSchedule, Update,
};
use wrl_trainer::LoraStart;
use wrl_trainer::{
    Advantage, KlConfig, LossAggregation, MiniBatchUnit, OptimConfig, OverlongShaping, RlConfig,
    SampleLevel, Schedule, ScheduleKind,
};

/// What the executor runs an RL phase with, whatever its algorithm.
#[derive(Clone, Debug)]
pub struct PhaseSettings<'p> {
    /// What the phase runs and where it sits in its stage, as the plan has it.
    pub run: &'p PhaseRun,
    pub iters: u64,
    pub horizon: u32,
    pub prompts: usize,
    pub group: usize,
    /// Tasks drawn shuffled on each pass by the stage's seed (`executor/draw.rs`).
    pub shuffle: bool,
    pub reward: &'p RewardRef,
    pub process_reward: Option<&'p RewardRef>,
    pub top_p: f32,
    /// Failure classes whose episodes leave the loss.
    pub exclude: Vec<FailureClass>,
    /// The fraction of an iteration's episodes left out above which the run warns.
    pub warn_excluded: f64,
    /// The fraction of an iteration's episodes left out at which the run stops (E0509);
    /// `None`: never.
    pub stop_excluded: Option<f64>,
    pub schedule: PSchedule,
    pub optimizer: Optimizer,
    /// The graph roles the stage trains; empty = every `trainable` module.
    pub trainable: &'p [String],
    /// Extra batches dynamic sampling may roll out to replace uninformative groups.
    pub refills: Refills,
    /// In-training validation (`executor::validate`).
    pub validate: Option<&'p params::Validation>,
    /// The update.
    pub rl: RlConfig,
    /// The parts of the policy this phase freezes (`frozen`).
    pub frozen: Vec<wrl_trainer::models::Frozen>,
    /// The stage's LoRA adapters (`lora`), set on the trainer when the stage starts.
    pub lora: Option<&'p params::Lora>,
    /// PPO's learned value function, built from its `init` when the stage starts.
    pub critic: Option<&'p params::Critic>,
    /// How a turn's state is keyed for GiGPO's step groups (`advantage = gigpo(…)` only).
    pub anchor: Option<params::AnchorKey>,
    /// Whose weights the KL's reference is.
    pub reference: params::Reference,
    /// Earlier tasks seen again.
    pub replay: Option<&'p params::Replay>,
    /// New tasks made from the tasks the stage fails.
    pub generate: Option<&'p params::Generation>,
    /// ARPO's entropy-guided branching of each prompt's `group` samples.
    pub branching: Option<params::Branching>,
}

/// A stage's `frozen` as the trainer's parts: `vision_tower` and `projector` are parts a text
/// model does not have (nothing to freeze), and a Qwen3-VL policy's tower and merger hold no
/// variables (no gradient, no optimiser state; the preflight refuses a VL stage that would
/// train them, `preflight::vision`).
pub fn frozen_parts(parts: &[params::FrozenPart]) -> Vec<wrl_trainer::models::Frozen> {
    use wrl_trainer::models::Frozen;
    parts
        .iter()
        .filter_map(|p| match p {
            params::FrozenPart::Embeddings => Some(Frozen::Embeddings),
            params::FrozenPart::LmHead => Some(Frozen::LmHead),
            params::FrozenPart::VisionTower | params::FrozenPart::Projector => None,
        })
        .collect()
}

/// The trainer's `KlEstimator` for the stdlib's.
fn estimator(k: KlEstimator) -> wrl_trainer::KlEstimator {
    match k {
        KlEstimator::K1 => wrl_trainer::KlEstimator::K1,
        KlEstimator::K2 => wrl_trainer::KlEstimator::K2,
        KlEstimator::K3 => wrl_trainer::KlEstimator::K3,
    }
}

fn aggregation(a: LossAgg) -> LossAggregation {
    match a {
        LossAgg::TokenMean => LossAggregation::TokenMean,
        LossAgg::SeqMeanTokenMean => LossAggregation::SeqMeanTokenMean,
        LossAgg::SeqMeanTokenSum => LossAggregation::SeqMeanTokenSum,
    }
}

fn level(l: Level) -> SampleLevel {
    match l {
        Level::Turn => SampleLevel::Turn,
        Level::Trajectory => SampleLevel::Trajectory,
    }
}

/// A mini-batch as the trainer counts it at `level`: loss samples, or every turn of whole
/// trajectories or prompt groups. Turns at level trajectory never get here: the checker (E0440)
/// and the preflight refuse them.
fn mini_batch_split(b: BatchSize, level: SampleLevel) -> (usize, MiniBatchUnit) {
    let turn = match level {
        SampleLevel::Turn => true,
        SampleLevel::Trajectory => false,
    };
    match b.split(turn) {
        Some(MiniBatchSplit::Samples(n)) => (n as usize, MiniBatchUnit::Samples),
        Some(MiniBatchSplit::Trajectories(n)) => (n as usize, MiniBatchUnit::Trajectories),
        Some(MiniBatchSplit::Groups(n)) => (n as usize, MiniBatchUnit::Groups),
        None => (0, MiniBatchUnit::Samples),
    }
}

/// The settings of an RL phase; `max_response` is its agent's completion limit (DAPO's
/// overlong shaping counts back from it). The checker holds `iters`, `horizon`, `prompts` and
/// `group` to at least 1; a plan written by other means that breaks this runs one.
pub fn phase_settings(phase: &RlPhase, max_response: usize) -> PhaseSettings<'_> {
    let RlPhase { run, rollout, update, algo } = phase;
    let Rollout {
        prompts,
        group,
        // The update's (`RlConfig::temperature`): the rollout samples with it too.
        temperature: _,
        top_p,
        reward,
        exclude,
        warn_excluded,
        stop_excluded,
        replay,
        generate,
        shuffle,
    } = rollout;
    let Update {
        // The update's own knobs (`rl_config`); GiGPO's key is the rollout's.
        advantage,
        clip: _,
        kl: _,
        kl_in: _,
        ppo_epochs: _,
        mini_batch: _,
        // Refused by the preflight when `drop` (limits.rs): the rest trains.
        mini_batch_rest: _,
        frozen,
        lora,
        // The preflight refuses a mask that trains text the policy did not write.
        mask: _,
        reference,
        schedule,
        optimizer,
    } = update;
    PhaseSettings {
        run,
        iters: run.iters.0.max(1),
        horizon: run.horizon.0.max(1),
        prompts: (*prompts).max(1) as usize,
        group: (*group).max(1) as usize,
        shuffle: *shuffle,
        reward,
        process_reward: algo.process_reward(),
        top_p: *top_p as f32,
        exclude: exclude.clone(),
        warn_excluded: *warn_excluded,
        stop_excluded: stop_excluded.value().copied(),
        schedule: *schedule,
        optimizer: *optimizer,
        trainable: algo.trainable(),
        refills: algo.refills(),
        validate: algo.validate(),
        rl: rl_config(rollout, update, algo, max_response),
        frozen: frozen_parts(frozen),
        lora: lora.value().map(params::LoraObj::get),
        critic: algo.critic(),
        anchor: match advantage {
            params::OrGrpo::Value(params::AdvantageObj::Gigpo(g)) => Some(g.key),
            params::OrGrpo::Value(params::AdvantageObj::Gae(_)) | params::OrGrpo::Grpo => None,
        },
        reference: *reference,
        replay: replay.value().map(params::ReplayObj::get),
        generate: generate.value().map(params::GenerationObj::get),
        branching: algo.branching().copied(),
    }
}

/// The trainer's update: the `update` section with the algorithm's knobs (or what an algorithm
/// without one runs with).
fn rl_config(rollout: &Rollout, update: &Update, algo: &Algo, max_response: usize) -> RlConfig {
    let level = level(algo.level());
    let (mini_batch, mini_batch_unit) = mini_batch_split(update.mini_batch, level);
    let (policy_loss, overlong) = algo_own(algo, max_response);
    let advantage = advantage(&update.advantage, algo.critic());
    RlConfig {
        clip_low: update.clip.lo,
        clip_high: update.clip.hi,
        dual_clip: algo.dual_clip(),
        kl: (update.kl > 0.0).then_some(KlConfig {
            coef: update.kl,
            estimator: estimator(algo.kl_estimator(update.kl_in)),
        }),
        kl_in_reward: update.kl_in == KlIn::Reward,
        advantage,
        entropy_coef: algo.entropy(),
        ppo_epochs: update.ppo_epochs.max(1) as usize,
        mini_batch,
        mini_batch_unit,
        drop_rest: update.mini_batch_rest == params::MiniBatchRest::Drop,
        temperature: rollout.temperature as f32,
        dynamic_sampling: algo.drops_uniform_groups(),
        normalize_std: algo.std_normalize(),
        aggregation: aggregation(algo.loss_agg()),
        policy_loss,
        level,
        overlong,
        ..RlConfig::default()
    }
}

/// What only one algorithm has, each variant destructured without `..`: the policy loss
/// (`grpo`'s KL-Cov), DAPO's overlong shaping and PPO's advantage estimator; the fields read
/// through `Algo`'s accessors or elsewhere are named.
fn algo_own(
    algo: &Algo,
    max_response: usize,
) -> (wrl_trainer::PolicyLoss, Option<OverlongShaping>) {
    match algo {
        Algo::Grpo(Grpo {
            policy_loss,
            kl_cov_ratio,
            ppo_kl_coef,
            // `Algo` accessors (`phase_settings`, `rl_config`).
            process_reward: _,
            dual_clip: _,
            kl_estimator: _,
            entropy: _,
            drop: _,
            refill: _,
            std_normalize: _,
            loss_agg: _,
            level: _,
            trainable: _,
            validate: _,
            // `per_step` is what `rollout::samples` does; the preflight refuses `summed`.
            process_mix: _,
            // Refused by the preflight unless synchronous.
            asynchronous: _,
            // The rollout's (`Algo::branching`, `phase_settings`).
            branching: _,
        }) => {
            let loss = match policy_loss {
                PolicyLoss::Clip => wrl_trainer::PolicyLoss::Clip,
                PolicyLoss::KlCov => {
                    wrl_trainer::PolicyLoss::KlCov { ratio: *kl_cov_ratio, coef: *ppo_kl_coef }
                }
            };
            (loss, None)
        }
        Algo::Dapo(Dapo {
            overlong,
            // `Algo` accessors; `dynamic_sampling.metric` is refused by the preflight unless
            // `reward`.
            entropy: _,
            dynamic_sampling: _,
            loss_agg: _,
            level: _,
            validate: _,
            // The rollout's (`Algo::branching`, `phase_settings`).
            branching: _,
        }) => {
            let shaping = (overlong.buffer.0 > 0).then_some(OverlongShaping {
                max_len: max_response,
                cache_len: overlong.buffer.0 as usize,
                penalty: overlong.penalty,
            });
            (wrl_trainer::PolicyLoss::Clip, shaping)
        }
        // The critic is built by the executor (`Algo::critic`).
        // `entropy` is read through `Algo::entropy`.
        // `critic` is read through `Algo::critic`, `entropy` through `Algo::entropy`.
        Algo::Ppo(Ppo { critic: _, entropy: _ }) => (wrl_trainer::PolicyLoss::Clip, None),
    }
}

/// The stage's `advantage` as the trainer's: group-relative, GiGPO's, or GAE from `critic`
/// (the checker and the preflight refuse GAE without one).
fn advantage(
    advantage: &params::OrGrpo<params::AdvantageObj>,
    critic: Option<&params::Critic>,
) -> Advantage {
    match advantage {
        params::OrGrpo::Grpo => Advantage::Group,
        params::OrGrpo::Value(params::AdvantageObj::Gae(params::Gae { gamma, lambda })) => {
            Advantage::Gae {
                gamma: *gamma,
                lambda: *lambda,
                value_clip: critic.and_then(|c| c.value_clip.value().copied()),
                warmup: critic.map_or(0, |c| c.warmup.0),
            }
        }
        params::OrGrpo::Value(params::AdvantageObj::Gigpo(g)) => {
            let params::Gigpo { gamma, step_weight, norm, key: _ } = *g;
            Advantage::Gigpo(wrl_trainer::gigpo::GigpoParams {
                gamma,
                step_weight,
                std_normalize: match norm {
                    params::GigpoNorm::MeanNorm => false,
                    params::GigpoNorm::MeanStdNorm => true,
                },
            })
        }
    }
}

/// The optimiser a training node asks for: `lr`, its `optimizer` record and, when the number of
/// optimiser steps is known (SFT), its `schedule` over them.
pub fn optim(
    lr: f64,
    optimizer: &Optimizer,
    schedule: &PSchedule,
    total_steps: u64,
) -> OptimConfig {
    let Optimizer { beta1, beta2, weight_decay, grad_clip } = optimizer;
    OptimConfig {
        lr,
        betas: (*beta1, *beta2),
        weight_decay: *weight_decay,
        grad_clip: Some(*grad_clip).filter(|c| *c > 0.0),
        schedule: schedule_over(schedule, total_steps),
        ..OptimConfig::default()
    }
}

/// `schedule` over `total` steps (a constant one when `total` is 0).
pub fn schedule_over(schedule: &PSchedule, total: u64) -> Schedule {
    let (kind, warmup, floor) = match schedule {
        PSchedule::Constant { warmup } => (ScheduleKind::Constant, warmup.0, 0.0),
        PSchedule::Cosine { warmup, floor } => (ScheduleKind::Cosine, warmup.0, *floor),
    };
    if total == 0 {
        return Schedule::default();
    }
    Schedule {
        kind,
        warmup_steps: None,
        warmup_ratio: Some(warmup).filter(|w| *w > 0.0),
        total_steps: Some(total),
        min_lr_ratio: floor,
    }
}

/// The learning rate of RL iteration `iter` (1-based) of `iters`: an RL phase's schedule
/// advances once per iteration (the number of optimiser steps an iteration takes depends on
/// its samples).
pub fn lr_at(lr: f64, schedule: &PSchedule, iter: u64, iters: u64) -> f64 {
    let s = schedule_over(schedule, iters.max(1));
    match s.factor(iter.saturating_sub(1)) {
        Ok(f) => lr * f,
        Err(_) => lr,
    }
}

/// A stage's `lora` as the trainer's adapters and where they start (`Trainer::set_lora`).
pub fn lora(l: Option<&params::Lora>) -> (Option<wrl_trainer::lora::LoraSpec>, LoraStart) {
    let Some(l) = l else { return (None, LoraStart::Fresh) };
    let spec = wrl_trainer::lora::LoraSpec {
        rank: l.rank as usize,
        alpha: l.alpha,
        dropout: l.dropout,
        targets: l.targets.iter().map(|t| t.word().to_string()).collect(),
        // Set by the trainer when it attaches them.
        base_step: 0,
    };
    let start = match (l.start, l.adapter.value()) {
        (params::LoraStart::Init, _) => LoraStart::Init,
        (params::LoraStart::Fresh, Some(dir)) => LoraStart::Saved(dir.into()),
        (params::LoraStart::Fresh, None) => LoraStart::Fresh,
    };
    (Some(spec), start)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wrl_plan::params::Ratio;

    #[test]
    fn rl_schedules_advance_per_iteration() {
        let constant = PSchedule::Constant { warmup: Ratio(0.0) };
        assert_eq!(lr_at(1e-3, &constant, 1, 10), 1e-3);
        assert_eq!(lr_at(1e-3, &constant, 10, 10), 1e-3);
        let cosine = PSchedule::Cosine { warmup: Ratio(0.0), floor: 0.0 };
        assert_eq!(lr_at(1e-3, &cosine, 1, 10), 1e-3);
        assert!(lr_at(1e-3, &cosine, 10, 10) < 1e-4, "{}", lr_at(1e-3, &cosine, 10, 10));
        let warm = PSchedule::Cosine { warmup: Ratio(0.5), floor: 0.0 };
        assert!(lr_at(1e-3, &warm, 1, 10) < 1e-3);
    }

    #[test]
    fn mini_batches_reach_the_trainer_in_its_samples() {
        let (t, turn) = (SampleLevel::Trajectory, SampleLevel::Turn);
        let groups = (4, MiniBatchUnit::Groups);
        assert_eq!(mini_batch_split(BatchSize::Prompts(4), t), groups, "4 groups");
        assert_eq!(mini_batch_split(BatchSize::Prompts(4), turn), groups, "all their turns");
        let whole = (24, MiniBatchUnit::Trajectories);
        assert_eq!(mini_batch_split(BatchSize::Trajectories(24), turn), whole);
        let samples = (24, MiniBatchUnit::Samples);
        assert_eq!(mini_batch_split(BatchSize::Trajectories(24), t), samples);
        assert_eq!(mini_batch_split(BatchSize::Samples(24), t), samples);
        assert_eq!(mini_batch_split(BatchSize::Turns(24), turn), samples);
        assert_eq!(mini_batch_split(BatchSize::Samples(24), turn), samples);
    }
}
