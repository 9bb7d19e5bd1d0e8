//! `Trainer::rl_update`: one RL update (PPO epochs × mini-batches of optimiser steps) over a
//! batch of scored samples, with the per-token maths of [`crate::rl`].

use candle_core::Tensor;

use crate::batch::TokenBatch;
use crate::error::{Result, config_err};
use crate::gae::Advantage;
use crate::metrics::Metrics;
use crate::models::Model;
use crate::ops::reference;
use crate::optim::Grads;
use crate::rl::{
    PolicyLoss, RlConfig, Sample, SampleLevel, constant_groups, grouped_aggregation_coefficients,
    is_active, kl_cov_selection, kl_cov_token_loss, shaped_rewards, token_loss,
};
use crate::rl_advantage::{self, kl_penalties};
use crate::trainer::{Trainer, accumulate, backward};

/// A sample prepared for the loss: full sequence and the positions of its loss tokens.
pub(crate) struct Prepared {
    pub seq: Vec<u32>,
    /// Positions j in `seq` of loss tokens.
    pub positions: Vec<usize>,
    /// Rollout log-prob per loss token.
    pub rollout_lp: Vec<f32>,
    /// Advantage per loss token.
    pub advantages: Vec<f64>,
    pub trajectory: u64,
    pub group: u64,
    /// Its index in the update's samples.
    pub sample: usize,
    /// Its (shaped) reward.
    pub reward: f64,
}

fn prepare(s: &Sample, sample: usize, reward: f64, context: usize) -> Result<Prepared> {
    let c = s.completion_tokens.len();
    if s.old_logprobs.len() != c {
        return Err(config_err(format!(
            "sample has {c} completion tokens but {} old log-probs",
            s.old_logprobs.len()
        )));
    }
    if let Some(m) = &s.completion_mask
        && m.len() != c
    {
        return Err(config_err("completion_mask length differs from completion_tokens"));
    }
    if s.prompt_tokens.is_empty() {
        return Err(config_err("sample with an empty prompt"));
    }
    let p = s.prompt_tokens.len();
    if p + c > context + 1 {
        return Err(config_err(format!(
            "sample of {} tokens exceeds the context {context}",
            p + c
        )));
    }
    let mut seq = s.prompt_tokens.clone();
    seq.extend_from_slice(&s.completion_tokens);
    let mut positions = Vec::new();
    let mut rollout_lp = Vec::new();
    for i in 0..c {
        if s.completion_mask.as_ref().is_none_or(|m| m[i]) {
            positions.push(p + i);
            rollout_lp.push(s.old_logprobs[i]);
        }
    }
    Ok(Prepared {
        seq,
        positions,
        rollout_lp,
        advantages: Vec::new(),
        trajectory: s.trajectory_id,
        group: s.group_id,
        sample,
        reward,
    })
}

/// Padded tokens one forward pass may hold when `micro_batch` is 0 ("as large as fits").
pub const TOKENS_PER_FORWARD: usize = 32 * 1024;

/// Splits a mini-batch (indices into `prepared`) into forward batches: shortest sequences
/// first, so each batch pads to a similar length; `micro` samples per batch when set, else as
/// many as fit [`TOKENS_PER_FORWARD`] padded tokens. Gradients add up over the batches, so the
/// split changes the cost, not the result.
pub(crate) fn forward_batches(
    prepared: &[Prepared],
    mb: &[usize],
    micro: usize,
) -> Vec<Vec<usize>> {
    let mut order = mb.to_vec();
    order.sort_by_key(|&i| prepared[i].seq.len());
    if micro > 0 {
        return order.chunks(micro).map(<[usize]>::to_vec).collect();
    }
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut cur: Vec<usize> = Vec::new();
    for i in order {
        // Sorted ascending, so this sequence is the longest of the batch if it joins.
        if !cur.is_empty() && (cur.len() + 1) * prepared[i].seq.len() > TOKENS_PER_FORWARD {
            out.push(std::mem::take(&mut cur));
        }
        cur.push(i);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Log-probs (no gradient) of every loss token of `prepared`, in forward batches, under `model`.
fn logprobs_no_grad(
    model: &Model,
    prepared: &[Prepared],
    micro: usize,
    pad: u32,
    temperature: f32,
) -> Result<Vec<Vec<f32>>> {
    let ops = model.ops();
    let device = model.device();
    let mut out = vec![Vec::new(); prepared.len()];
    let all: Vec<usize> = (0..prepared.len()).collect();
    for chunk in forward_batches(prepared, &all, micro) {
        let seqs: Vec<&[u32]> = chunk.iter().map(|&i| prepared[i].seq.as_slice()).collect();
        let sel: Vec<Vec<usize>> = chunk.iter().map(|&i| prepared[i].positions.clone()).collect();
        let batch = TokenBatch::new(&seqs, &sel, pad, &device)?;
        let (lp, _) = batch.logprobs(model, &ops, temperature)?;
        let lp: Vec<f32> = lp.detach().to_vec1()?;
        let mut k = 0;
        for &i in &chunk {
            let n = prepared[i].positions.len();
            out[i] = lp[k..k + n].to_vec();
            k += n;
        }
    }
    Ok(out)
}

#[derive(Default)]
struct Acc {
    loss: f64,
    pg: f64,
    grad_norm: f64,
    lr: f64,
    steps: usize,
    /// f16 steps skipped on overflow (their gradient norm is not in `grad_norm`).
    skipped: usize,
    tokens: usize,
    clip_low: usize,
    clip_high: usize,
    kl: f64,
    entropy: f64,
}

impl Trainer {
    /// One RL update over `samples`: rewards shaped (overlong), groups filtered (dynamic
    /// sampling), advantages per loss token (GRPO's per trajectory, broadcast to its turns; or
    /// GAE from the critic, which then takes its own `ppo_epochs` × mini-batches of value-loss
    /// steps first), then `ppo_epochs` passes of `minibatches` optimiser steps over the clipped
    /// surrogate (+ KL unless it is a reward penalty, − entropy).
    /// Samples flagged `excluded` (or truncated with overlong filtering) take no part.
    /// The metrics say what memory the update held (`memory.rs`).
    pub fn rl_update(&mut self, samples: &[Sample], cfg: &RlConfig) -> Result<Metrics> {
        let meter = crate::memory::Meter::start();
        let m = self.rl_update_unmetered(samples, cfg)?;
        Ok(Metrics { memory: meter.finish(&self.device()), ..m })
    }

    fn rl_update_unmetered(&mut self, samples: &[Sample], cfg: &RlConfig) -> Result<Metrics> {
        cfg.validate()?;
        let rewards = shaped_rewards(samples, cfg);
        let dropped = if cfg.dynamic_sampling {
            constant_groups(samples, &rewards, cfg)
        } else {
            Default::default()
        };
        let mut view: Vec<Sample> = samples.to_vec();
        let mut excluded = 0;
        for s in &mut view {
            if s.excluded {
                excluded += 1;
            }
            if dropped.contains(&s.group_id) {
                s.excluded = true;
            }
        }
        let context = self.model.context();
        let mut prepared = Vec::new();
        let mut reward_sum = 0.0;
        for (i, s) in view.iter().enumerate() {
            if !is_active(s, cfg) {
                continue;
            }
            let p = prepare(s, i, rewards[i], context)?;
            if !p.positions.is_empty() {
                reward_sum += rewards[i];
                prepared.push(p);
            }
        }
        let mut metrics = Metrics {
            step: self.step,
            samples: prepared.len(),
            excluded: Some(excluded),
            dropped_groups: Some(dropped.len()),
            optimizer_steps: Some(0),
            ..Metrics::default()
        };
        if prepared.is_empty() {
            return Ok(metrics);
        }
        metrics.reward_mean = Some(reward_sum / prepared.len() as f64);

        let kl = cfg.kl_coef();
        if kl.is_some() && self.reference.is_none() {
            self.set_reference_to_current()?;
        }
        let pad = self.tokenizer.pad_id();
        let micro = cfg.micro_batch;
        let ref_lp = match (&self.reference, kl) {
            (Some(r), Some(_)) => {
                Some(logprobs_no_grad(r, &prepared, micro, pad, cfg.temperature)?)
            }
            _ => None,
        };
        // The ratio's denominator: the rollout's log-probs, or (verl's `old_log_prob`) one
        // no-grad pass with the weights before the update.
        let pre = if !cfg.use_rollout_logprobs {
            Some(logprobs_no_grad(&self.model, &prepared, micro, pad, cfg.temperature)?)
        } else {
            None
        };
        let old: Vec<Vec<f32>> = match (&pre, cfg.use_rollout_logprobs) {
            (Some(pre), false) => pre.clone(),
            _ => prepared.iter().map(|p| p.rollout_lp.clone()).collect(),
        };
        if let Some(pre) = &pre {
            let (gap, gmax, n) = gap_stats(&prepared, pre);
            metrics.logprob_gap = Some(gap / n.max(1) as f64);
            metrics.logprob_gap_max = Some(gmax);
        }
        // The KL as a reward penalty (then not a loss term), and the advantages.
        let penalties = match (&ref_lp, kl) {
            (Some(r), Some(k)) if cfg.kl_in_reward => Some(kl_penalties(&old, r, k)),
            _ => None,
        };
        let loss_kl = kl.filter(|_| !cfg.kl_in_reward);
        let (units, unit_of) = loss_units(&prepared, cfg.level);
        let key = |u: usize| {
            let p = &prepared[units[u][0]];
            (p.trajectory, p.group)
        };
        // Each mini-batch as the indices of its samples, once for every epoch (and the critic).
        let batches: Vec<Vec<usize>> = crate::minibatch::split(
            units.len(),
            key,
            (cfg.mini_batch, cfg.mini_batch_unit),
            cfg.minibatches,
        )
        .iter()
        .map(|b| b.iter().flat_map(|&u| &units[u]).copied().collect())
        .collect();
        let warming = match cfg.advantage {
            Advantage::Group => {
                rl_advantage::group(&mut prepared, &view, &rewards, penalties.as_deref(), cfg);
                false
            }
            Advantage::Gae { gamma, lambda, value_clip, warmup } => {
                let mut critic = self.critic.take().ok_or_else(|| {
                    config_err("GAE advantages need a critic: this trainer has none")
                })?;
                let values = critic.values_no_grad(&prepared, micro, pad)?;
                let returns = rl_advantage::generalised(
                    &mut prepared,
                    &values,
                    penalties.as_deref(),
                    (gamma, lambda),
                );
                let stats = critic.update(
                    &prepared,
                    (&values, &returns),
                    (&unit_of, &batches),
                    cfg.ppo_epochs,
                    (micro, pad),
                    cfg.aggregation,
                    value_clip,
                );
                let warming = critic.updates <= warmup;
                self.critic = Some(critic);
                let stats = stats?;
                let tokens = values.iter().map(Vec::len).sum::<usize>().max(1) as f64;
                metrics.value_loss = Some(stats.loss);
                metrics.value_clip_frac = Some(stats.clip_frac);
                metrics.value_grad_norm = Some(stats.grad_norm);
                metrics.value_mean =
                    Some(values.iter().flatten().map(|&v| f64::from(v)).sum::<f64>() / tokens);
                metrics.return_mean = Some(returns.iter().flatten().sum::<f64>() / tokens);
                warming
            }
        };
        metrics.advantage_abs_mean = Some(abs_mean(&prepared));
        if warming {
            // The critic's warm-up: the policy does not move yet.
            return Ok(metrics);
        }

        let ops = self.model.ops();
        let device = self.device();
        let mut acc = Acc::default();
        for _epoch in 0..cfg.ppo_epochs {
            for mb in &batches {
                let counts: Vec<usize> = mb.iter().map(|&i| prepared[i].positions.len()).collect();
                let mb_unit: Vec<usize> = mb.iter().map(|&i| unit_of[i]).collect();
                let coefs = grouped_aggregation_coefficients(&counts, &mb_unit, cfg.aggregation);
                let coef_of: std::collections::BTreeMap<usize, &Vec<f64>> =
                    mb.iter().copied().zip(&coefs).collect();
                let mut grads = Grads::new();
                let mut step_loss = 0.0;
                let mut step_pg = 0.0;
                for chunk in forward_batches(&prepared, mb, micro) {
                    let seqs: Vec<&[u32]> =
                        chunk.iter().map(|&i| prepared[i].seq.as_slice()).collect();
                    let sel: Vec<Vec<usize>> =
                        chunk.iter().map(|&i| prepared[i].positions.clone()).collect();
                    let batch = TokenBatch::new(&seqs, &sel, pad, &device)?;
                    let (lp, logits) = batch.logprobs(&self.model, &ops, cfg.temperature)?;
                    let lp_vals: Vec<f32> = lp.to_vec1()?;
                    let ent: Vec<f32> = ops.entropy_metric(&logits)?;
                    let mut g = Vec::with_capacity(lp_vals.len());
                    let mut c_all = Vec::with_capacity(lp_vals.len());
                    let selected = match cfg.policy_loss {
                        PolicyLoss::Clip => Vec::new(),
                        PolicyLoss::KlCov { ratio, .. } => {
                            let lps: Vec<f64> = lp_vals.iter().map(|&v| v as f64).collect();
                            let advs: Vec<f64> = chunk
                                .iter()
                                .flat_map(|&i| prepared[i].advantages.iter().copied())
                                .collect();
                            kl_cov_selection(&lps, &advs, ratio)
                        }
                    };
                    let mut k = 0;
                    for &i in &chunk {
                        let p = &prepared[i];
                        let coef = coef_of[&i];
                        for t in 0..p.positions.len() {
                            let refr = match (&ref_lp, loss_kl) {
                                (Some(r), Some((beta, est))) => Some((r[i][t] as f64, beta, est)),
                                _ => None,
                            };
                            let (lp, o) = (lp_vals[k] as f64, old[i][t] as f64);
                            let a = p.advantages[t];
                            let tl = match cfg.policy_loss {
                                PolicyLoss::Clip => token_loss(lp, o, a, refr, cfg),
                                PolicyLoss::KlCov { coef, .. } => {
                                    let sel = selected.get(k).copied().unwrap_or(false);
                                    kl_cov_token_loss(lp, o, a, refr, sel.then_some(coef))
                                }
                            };
                            let c = coef[t];
                            step_loss += c * (tl.value - cfg.entropy_coef * ent[k] as f64);
                            step_pg += c * tl.pg;
                            acc.kl += tl.kl;
                            acc.entropy += ent[k] as f64;
                            acc.clip_low += usize::from(tl.clipped_low);
                            acc.clip_high += usize::from(tl.clipped_high);
                            acc.tokens += 1;
                            g.push((c * tl.dlogp) as f32);
                            c_all.push(c as f32);
                            k += 1;
                        }
                    }
                    if pre.is_none() && metrics.logprob_gap.is_none() {
                        let mut sum = 0.0;
                        let mut max = 0f64;
                        let mut k = 0;
                        for &i in &chunk {
                            for &r in &prepared[i].rollout_lp {
                                let d = (lp_vals[k] - r).abs() as f64;
                                sum += d;
                                max = max.max(d);
                                k += 1;
                            }
                        }
                        metrics.logprob_gap = Some(sum / k.max(1) as f64);
                        metrics.logprob_gap_max = Some(max);
                    }
                    let m = g.len();
                    let mut surrogate = (lp * Tensor::from_vec(g, m, &device)?)?.sum_all()?;
                    if cfg.entropy_coef != 0.0 {
                        let h = reference::entropy(&logits)?;
                        let c = Tensor::from_vec(c_all, m, &device)?;
                        surrogate = (surrogate - ((h * c)?.sum_all()? * cfg.entropy_coef)?)?;
                    }
                    let store = backward(&surrogate, &self.optimizer, &self.model)?;
                    accumulate(&self.model, &store, &mut grads)?;
                }
                let info = self.optimizer.step(self.model.params(), &grads, self.step)?;
                self.step += 1;
                acc.loss += step_loss;
                acc.pg += step_pg;
                acc.grad_norm += info.grad_norm;
                acc.skipped += usize::from(info.skipped);
                acc.lr = info.lr;
                acc.steps += 1;
            }
        }
        let steps = acc.steps.max(1) as f64;
        let toks = acc.tokens.max(1) as f64;
        metrics.step = self.step;
        metrics.loss = acc.loss / steps;
        metrics.pg_loss = Some(acc.pg / steps);
        metrics.grad_norm = acc.grad_norm / (acc.steps - acc.skipped).max(1) as f64;
        metrics.lr = acc.lr;
        metrics.tokens = prepared.iter().map(|p| p.positions.len()).sum();
        metrics.clip_frac = Some((acc.clip_low + acc.clip_high) as f64 / toks);
        metrics.clip_frac_low = Some(acc.clip_low as f64 / toks);
        metrics.clip_frac_high = Some(acc.clip_high as f64 / toks);
        metrics.kl = Some(match (&penalties, kl) {
            // On the reward: the mean KL(old, ref) the penalties were made of.
            (Some(p), Some((beta, _))) if beta != 0.0 => {
                p.iter().flatten().sum::<f64>()
                    / beta
                    / p.iter().map(Vec::len).sum::<usize>().max(1) as f64
            }
            _ => acc.kl / toks,
        });
        metrics.entropy = Some(acc.entropy / toks);
        metrics.optimizer_steps = Some(acc.steps);
        metrics.skipped_steps = self.optimizer.scaler.map(|_| acc.skipped);
        metrics.loss_scale = self.optimizer.scaler.map(|s| s.scale);
        tracing::debug!(step = self.step, loss = metrics.loss, "rl update");
        Ok(metrics)
    }
}

/// The loss's units in batch order, each a list of indices into `prepared` (one sample per unit
/// at turn level; a trajectory's turns at trajectory level), and each sample's unit.
fn loss_units(prepared: &[Prepared], level: SampleLevel) -> (Vec<Vec<usize>>, Vec<usize>) {
    let mut units: Vec<Vec<usize>> = Vec::new();
    let mut unit_of = Vec::with_capacity(prepared.len());
    let mut by_trajectory: std::collections::BTreeMap<u64, usize> = Default::default();
    for (i, p) in prepared.iter().enumerate() {
        let u = match level {
            SampleLevel::Turn => units.len(),
            SampleLevel::Trajectory => *by_trajectory.entry(p.trajectory).or_insert(units.len()),
        };
        if u == units.len() {
            units.push(Vec::new());
        }
        units[u].push(i);
        unit_of.push(u);
    }
    (units, unit_of)
}

/// Mean |advantage| over the loss tokens.
fn abs_mean(prepared: &[Prepared]) -> f64 {
    let n: usize = prepared.iter().map(|p| p.advantages.len()).sum();
    let sum: f64 = prepared.iter().flat_map(|p| p.advantages.iter()).map(|a| a.abs()).sum();
    sum / n.max(1) as f64
}

/// (sum of |pre − rollout|, max, count) over all loss tokens.
fn gap_stats(prepared: &[Prepared], pre: &[Vec<f32>]) -> (f64, f64, usize) {
    let mut sum = 0.0;
    let mut max = 0f64;
    let mut n = 0;
    for (p, lp) in prepared.iter().zip(pre) {
        for (a, b) in lp.iter().zip(&p.rollout_lp) {
            let d = (a - b).abs() as f64;
            sum += d;
            max = max.max(d);
            n += 1;
        }
    }
    (sum, max, n)
}
