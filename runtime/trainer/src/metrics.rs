//! Metrics reported after each SFT step or RL update (serde, so the executor can log them).

use serde::{Deserialize, Serialize};

use crate::memory::StepMemory;

/// What one SFT step or one RL update did. RL-only fields are `None` after SFT.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Optimiser steps taken so far (after this call).
    pub step: u64,
    /// Loss value (mean over the optimiser steps of this call).
    pub loss: f64,
    /// Global gradient norm before clipping (mean over the optimiser steps of this call).
    pub grad_norm: f64,
    /// Learning rate of the last optimiser step.
    pub lr: f64,
    /// Tokens that carried loss.
    pub tokens: usize,
    /// Examples / samples used.
    pub samples: usize,
    /// SFT: epoch of the data cursor after this step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch: Option<u64>,
    /// RL: policy-gradient part of the loss.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pg_loss: Option<f64>,
    /// RL: fraction of tokens whose gradient the clip removed (either side).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clip_frac: Option<f64>,
    /// RL: fraction clipped at 1 − ε_low (negative advantages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clip_frac_low: Option<f64>,
    /// RL: fraction clipped at 1 + ε_high (positive advantages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clip_frac_high: Option<f64>,
    /// RL: mean KL estimate to the reference (0 when no KL term).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kl: Option<f64>,
    /// RL: mean token entropy of the policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entropy: Option<f64>,
    /// RL: mean |training log-prob − rollout log-prob| before any update in this call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprob_gap: Option<f64>,
    /// RL: max of that gap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprob_gap_max: Option<f64>,
    /// RL: mean (shaped) reward of the samples that entered the loss.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward_mean: Option<f64>,
    /// RL: mean |advantage|.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advantage_abs_mean: Option<f64>,
    /// RL: samples excluded by their failure flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded: Option<usize>,
    /// RL: groups dropped by dynamic sampling (all rewards equal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped_groups: Option<usize>,
    /// RL, `mini_batch_rest = drop`: samples past the last whole mini-batch, not trained.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trimmed: Option<usize>,
    /// RL: optimiser steps taken in this call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optimizer_steps: Option<usize>,
    /// GiGPO: the mean |step-level advantage| of the update's samples (0 when no two turns of a
    /// group saw the same state with different returns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_advantage: Option<f64>,
    /// PPO with a critic: the clipped value loss (mean over the critic's steps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_loss: Option<f64>,
    /// PPO with a critic: the critic's learning rate in this update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critic_lr: Option<f64>,
    /// PPO with a critic: fraction of tokens whose value loss took the clipped branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_clip_frac: Option<f64>,
    /// PPO with a critic: the critic's gradient norm before clipping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_grad_norm: Option<f64>,
    /// PPO with a critic: mean value before the update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_mean: Option<f64>,
    /// PPO with a critic: mean return (the critic's target).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub return_mean: Option<f64>,
    /// f16: optimiser steps skipped because the scaled gradients overflowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped_steps: Option<usize>,
    /// f16: the loss scale after this call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_scale: Option<f64>,
    /// What this call held, measured (`memory.rs`).
    #[serde(default, skip_serializing_if = "StepMemory::is_empty")]
    pub memory: StepMemory,
}
