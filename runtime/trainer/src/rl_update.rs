//! `Trainer::rl_update`: one RL update (PPO epochs × mini-batches of optimiser steps) over a
//! batch of scored samples, with the per-token maths of [`crate::rl`]. Its steps: the batch
//! settled (rewards shaped, groups dropped), its samples prepared, the log-probs the loss
//! compares with, the advantages (and the critic's own steps), then the policy's steps.

use candle_core::{Device, Tensor};

use crate::error::{Result, config_err};
use crate::gae::Advantage;
use crate::grads::{accumulate, backward};
use crate::metrics::Metrics;
use crate::models::Model;
use crate::ops::{Ops, reference};
use crate::optim::Grads;
use crate::prepared::{Passes, Prepared, batch_of, forward_batches, loss_units, prepare};
use crate::rl::{
    KlEstimator, PolicyLoss, RlConfig, Sample, constant_groups, is_active, kl_cov_selection,
    kl_cov_token_loss, shaped_rewards, token_loss,
};
use crate::rl_advantage::{self, kl_penalties};
use crate::trainer::Trainer;

pub use crate::prepared::TOKENS_PER_FORWARD;

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
        let batch = batch_of(prepared, &chunk, pad, &device)?;
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

/// The update's samples once the batch is settled: each one's shaped reward, with the
/// samples of every group dynamic sampling dropped excluded.
struct Settled {
    rewards: Vec<f64>,
    view: Vec<Sample>,
    /// Groups dynamic sampling dropped.
    dropped: usize,
    /// Samples excluded before the update (not counting the dropped groups').
    excluded: usize,
}

/// Rewards shaped (overlong) and groups whose rewards are all equal dropped (dynamic sampling).
fn settle(samples: &[Sample], cfg: &RlConfig) -> Settled {
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
    Settled { rewards, view, dropped: dropped.len(), excluded }
}

/// The samples that take part, prepared for the loss (those with loss tokens), and the sum of
/// their rewards.
fn prepare_active(
    settled: &Settled,
    cfg: &RlConfig,
    context: usize,
) -> Result<(Vec<Prepared>, f64)> {
    let mut prepared = Vec::new();
    let mut reward_sum = 0.0;
    for (i, s) in settled.view.iter().enumerate() {
        if !is_active(s, cfg) {
            continue;
        }
        let p = prepare(s, i, settled.rewards[i], context)?;
        if !p.positions.is_empty() {
            reward_sum += settled.rewards[i];
            prepared.push(p);
        }
    }
    Ok((prepared, reward_sum))
}

/// The log-probs of every loss token the loss compares the policy's with.
struct Baselines {
    /// Under the reference model, where there is a KL to it.
    reference: Option<Vec<Vec<f32>>>,
    /// One no-grad pass with the weights before the update (verl's `old_log_prob`), unless
    /// the rollout's are used.
    pre: Option<Vec<Vec<f32>>>,
    /// The ratio's denominator: `pre`, or the rollout's log-probs.
    old: Vec<Vec<f32>>,
}

/// Each mini-batch as the indices of its samples (once for every epoch, and the critic), and
/// each sample's loss unit.
fn layout(prepared: &[Prepared], cfg: &RlConfig) -> (Vec<Vec<usize>>, Vec<usize>) {
    let (units, unit_of) = loss_units(prepared, cfg.level);
    let key = |u: usize| {
        let p = &prepared[units[u][0]];
        (p.trajectory, p.group)
    };
    let batches: Vec<Vec<usize>> = crate::minibatch::split(
        units.len(),
        key,
        (cfg.mini_batch, cfg.mini_batch_unit),
        cfg.minibatches,
        cfg.drop_rest,
    )
    .iter()
    .map(|b| b.iter().flat_map(|&u| &units[u]).copied().collect())
    .collect();
    (batches, unit_of)
}

/// What every forward batch of the policy's steps reads.
struct PolicyPass<'a> {
    prepared: &'a [Prepared],
    base: &'a Baselines,
    /// The KL to the reference as a loss term (not a reward penalty).
    loss_kl: Option<(f64, KlEstimator)>,
    passes: Passes<'a>,
    cfg: &'a RlConfig,
    ops: Ops,
    device: Device,
}

/// One optimiser step's loss and policy-gradient loss, summed token by token.
#[derive(Default)]
struct StepSums {
    loss: f64,
    pg: f64,
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
        let settled = settle(samples, cfg);
        let (mut prepared, reward_sum) = prepare_active(&settled, cfg, self.model.context())?;
        let mut metrics = Metrics {
            step: self.step,
            samples: prepared.len(),
            excluded: Some(settled.excluded),
            dropped_groups: Some(settled.dropped),
            optimizer_steps: Some(0),
            ..Metrics::default()
        };
        if prepared.is_empty() {
            return Ok(metrics);
        }
        metrics.reward_mean = Some(reward_sum / prepared.len() as f64);

        let kl = cfg.kl_coef();
        let pad = self.tokenizer.pad_id();
        let base = self.baselines(&prepared, cfg, kl, pad, &mut metrics)?;
        // The KL as a reward penalty (then not a loss term), and the advantages.
        let penalties = match (&base.reference, kl) {
            (Some(r), Some(k)) if cfg.kl_in_reward => Some(kl_penalties(&base.old, r, k)),
            _ => None,
        };
        let (batches, unit_of) = layout(&prepared, cfg);
        if cfg.drop_rest {
            let kept: usize = batches.iter().map(Vec::len).sum();
            metrics.trimmed = Some(prepared.len() - kept);
        }
        let passes = Passes {
            epochs: cfg.ppo_epochs,
            batches: &batches,
            unit_of: &unit_of,
            micro: cfg.micro_batch,
            pad,
            aggregation: cfg.aggregation,
        };
        let warming = self.advantages(
            &mut prepared,
            &settled,
            penalties.as_deref(),
            &passes,
            cfg,
            &mut metrics,
        )?;
        metrics.advantage_abs_mean = Some(abs_mean(&prepared));
        if warming {
            // The critic's warm-up: the policy does not move yet.
            return Ok(metrics);
        }

        let pass = PolicyPass {
            prepared: &prepared,
            base: &base,
            loss_kl: kl.filter(|_| !cfg.kl_in_reward),
            passes,
            cfg,
            ops: self.model.ops(),
            device: self.device(),
        };
        let acc = self.policy_steps(&pass, &mut metrics)?;
        self.record(&mut metrics, &acc, &prepared, penalties.as_deref(), kl);
        tracing::debug!(step = self.step, loss = metrics.loss, "rl update");
        Ok(metrics)
    }

    /// The log-probs the loss compares with (the reference model made the current weights
    /// when a KL needs one and there is none yet); with a no-grad pass, how far the rollout's
    /// log-probs were from it.
    fn baselines(
        &mut self,
        prepared: &[Prepared],
        cfg: &RlConfig,
        kl: Option<(f64, KlEstimator)>,
        pad: u32,
        metrics: &mut Metrics,
    ) -> Result<Baselines> {
        if kl.is_some() && self.reference.is_none() {
            self.set_reference_to_current()?;
        }
        let micro = cfg.micro_batch;
        let reference = match (&self.reference, kl) {
            (Some(r), Some(_)) => Some(logprobs_no_grad(r, prepared, micro, pad, cfg.temperature)?),
            _ => None,
        };
        // The ratio's denominator: the rollout's log-probs, or (verl's `old_log_prob`) one
        // no-grad pass with the weights before the update.
        let pre = if !cfg.use_rollout_logprobs {
            Some(logprobs_no_grad(&self.model, prepared, micro, pad, cfg.temperature)?)
        } else {
            None
        };
        let old: Vec<Vec<f32>> = match (&pre, cfg.use_rollout_logprobs) {
            (Some(pre), false) => pre.clone(),
            _ => prepared.iter().map(|p| p.rollout_lp.clone()).collect(),
        };
        if let Some(pre) = &pre {
            let (gap, gmax, n) = gap_stats(prepared, pre);
            metrics.logprob_gap = Some(gap / n.max(1) as f64);
            metrics.logprob_gap_max = Some(gmax);
        }
        Ok(Baselines { reference, pre, old })
    }

    /// Every loss token's advantage: group-relative, or GAE from the critic, which first takes
    /// its own steps on the returns. Returns whether the critic is still warming up (then the
    /// policy does not move).
    fn advantages(
        &mut self,
        prepared: &mut [Prepared],
        settled: &Settled,
        penalties: Option<&[Vec<f64>]>,
        passes: &Passes<'_>,
        cfg: &RlConfig,
        metrics: &mut Metrics,
    ) -> Result<bool> {
        let (gamma, lambda, value_clip, warmup) = match cfg.advantage {
            Advantage::Group => {
                rl_advantage::group(prepared, &settled.view, &settled.rewards, penalties, cfg);
                return Ok(false);
            }
            Advantage::Gigpo(p) => {
                let (view, rewards) = (&settled.view, &settled.rewards);
                let step = rl_advantage::step_level(prepared, (view, rewards), penalties, cfg, p)?;
                metrics.step_advantage = Some(step);
                return Ok(false);
            }
            Advantage::Gae { gamma, lambda, value_clip, warmup } => {
                (gamma, lambda, value_clip, warmup)
            }
        };
        let mut critic = self
            .critic
            .take()
            .ok_or_else(|| config_err("GAE advantages need a critic: this trainer has none"))?;
        let values = critic.values_no_grad(prepared, passes.micro, passes.pad)?;
        let returns = rl_advantage::generalised(prepared, &values, penalties, (gamma, lambda));
        let stats = critic.update(prepared, (&values, &returns), passes, value_clip);
        let warming = critic.updates <= warmup;
        self.critic = Some(critic);
        let stats = stats?;
        let tokens = values.iter().map(Vec::len).sum::<usize>().max(1) as f64;
        metrics.value_loss = Some(stats.loss);
        metrics.critic_lr = self.critic.as_ref().map(|c| c.optimizer.config.lr);
        metrics.value_clip_frac = Some(stats.clip_frac);
        metrics.value_grad_norm = Some(stats.grad_norm);
        metrics.value_mean =
            Some(values.iter().flatten().map(|&v| f64::from(v)).sum::<f64>() / tokens);
        metrics.return_mean = Some(returns.iter().flatten().sum::<f64>() / tokens);
        Ok(warming)
    }

    /// The policy's optimiser steps: one per mini-batch in each epoch, over the clipped
    /// surrogate of its forward batches.
    fn policy_steps(&mut self, pass: &PolicyPass<'_>, metrics: &mut Metrics) -> Result<Acc> {
        let mut acc = Acc::default();
        for _epoch in 0..pass.passes.epochs {
            for mb in pass.passes.batches {
                let coef_of = pass.passes.coefficients(pass.prepared, mb);
                let mut grads = Grads::new();
                let mut sums = StepSums::default();
                let chunks = forward_batches(pass.prepared, mb, pass.passes.micro);
                let run = || -> Result<()> {
                    for (c, chunk) in chunks.into_iter().enumerate() {
                        // LoRA dropout's masks: one draw per step and batch, kept through the
                        // backward (a recomputed layer draws its forward's mask again).
                        self.model.set_dropout(Some(self.dropout_key(c)));
                        let s =
                            self.surrogate(pass, &chunk, &coef_of, (&mut sums, &mut acc), metrics)?;
                        let store = backward(&s, &self.optimizer, &self.model)?;
                        accumulate(&self.model, &store, &mut grads)?;
                    }
                    Ok(())
                };
                let ran = run();
                // No dropout outside the step's batches, whether they ran or failed.
                self.model.set_dropout(None);
                ran?;
                let info = self.optimizer.step(self.model.params(), &grads, self.step)?;
                self.step += 1;
                acc.loss += sums.loss;
                acc.pg += sums.pg;
                acc.grad_norm += info.grad_norm;
                acc.skipped += usize::from(info.skipped);
                acc.lr = info.lr;
                acc.steps += 1;
            }
        }
        Ok(acc)
    }

    /// The surrogate of one forward batch (`chunk`): each token's loss gradient times its
    /// log-prob, less the weighted entropy; its losses are added to `sums` and `acc`. Without
    /// a no-grad pass, the first batch says how far the rollout's log-probs were.
    fn surrogate(
        &self,
        pass: &PolicyPass<'_>,
        chunk: &[usize],
        coef_of: &std::collections::BTreeMap<usize, Vec<f64>>,
        (sums, acc): (&mut StepSums, &mut Acc),
        metrics: &mut Metrics,
    ) -> Result<Tensor> {
        let (prepared, cfg, device) = (pass.prepared, pass.cfg, &pass.device);
        let batch = batch_of(prepared, chunk, pass.passes.pad, device)?;
        let (lp, logits) = batch.logprobs(&self.model, &pass.ops, cfg.temperature)?;
        let lp_vals: Vec<f32> = lp.to_vec1()?;
        let ent: Vec<f32> = pass.ops.entropy_metric(&logits)?;
        let (g, c_all) = token_grads(pass, chunk, coef_of, (&lp_vals, &ent), (sums, acc));
        if pass.base.pre.is_none() && metrics.logprob_gap.is_none() {
            let (gap, max) = rollout_gap(prepared, chunk, &lp_vals);
            metrics.logprob_gap = Some(gap);
            metrics.logprob_gap_max = Some(max);
        }
        let m = g.len();
        let mut surrogate = (lp * Tensor::from_vec(g, m, device)?)?.sum_all()?;
        if cfg.entropy_coef != 0.0 {
            let h = reference::entropy(&logits)?;
            let c = Tensor::from_vec(c_all, m, device)?;
            surrogate = (surrogate - ((h * c)?.sum_all()? * cfg.entropy_coef)?)?;
        }
        Ok(surrogate)
    }

    /// The update's metrics from what its steps summed (`penalties`: the KL on the reward).
    fn record(
        &self,
        metrics: &mut Metrics,
        acc: &Acc,
        prepared: &[Prepared],
        penalties: Option<&[Vec<f64>]>,
        kl: Option<(f64, KlEstimator)>,
    ) {
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
        metrics.kl = Some(match (penalties, kl) {
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
    }
}

/// Each loss token's loss of one forward batch (the clipped surrogate, or KL-Cov's, with the
/// KL in the loss), weighted by its coefficient: the gradient to put on each log-prob and the
/// coefficient of its entropy. Losses, KL, entropy and clips are added to `sums` and `acc`.
fn token_grads(
    pass: &PolicyPass<'_>,
    chunk: &[usize],
    coef_of: &std::collections::BTreeMap<usize, Vec<f64>>,
    (lp_vals, ent): (&[f32], &[f32]),
    (sums, acc): (&mut StepSums, &mut Acc),
) -> (Vec<f32>, Vec<f32>) {
    let (prepared, cfg) = (pass.prepared, pass.cfg);
    let mut g = Vec::with_capacity(lp_vals.len());
    let mut c_all = Vec::with_capacity(lp_vals.len());
    let selected = match cfg.policy_loss {
        PolicyLoss::Clip => Vec::new(),
        PolicyLoss::KlCov { ratio, .. } => {
            let lps: Vec<f64> = lp_vals.iter().map(|&v| v as f64).collect();
            let advs: Vec<f64> =
                chunk.iter().flat_map(|&i| prepared[i].advantages.iter().copied()).collect();
            kl_cov_selection(&lps, &advs, ratio)
        }
    };
    let mut k = 0;
    for &i in chunk {
        let p = &prepared[i];
        let coef = &coef_of[&i];
        for t in 0..p.positions.len() {
            let refr = match (&pass.base.reference, pass.loss_kl) {
                (Some(r), Some((beta, est))) => Some((r[i][t] as f64, beta, est)),
                _ => None,
            };
            let (lp, o) = (lp_vals[k] as f64, pass.base.old[i][t] as f64);
            let a = p.advantages[t];
            let tl = match cfg.policy_loss {
                PolicyLoss::Clip => token_loss(lp, o, a, refr, cfg),
                PolicyLoss::KlCov { coef, .. } => {
                    let sel = selected.get(k).copied().unwrap_or(false);
                    kl_cov_token_loss(lp, o, a, refr, sel.then_some(coef))
                }
            };
            let c = coef[t];
            sums.loss += c * (tl.value - cfg.entropy_coef * ent[k] as f64);
            sums.pg += c * tl.pg;
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
    (g, c_all)
}

/// The mean and largest |log-prob − rollout log-prob| over one forward batch's loss tokens.
fn rollout_gap(prepared: &[Prepared], chunk: &[usize], lp_vals: &[f32]) -> (f64, f64) {
    let mut sum = 0.0;
    let mut max = 0f64;
    let mut k = 0;
    for &i in chunk {
        for &r in &prepared[i].rollout_lp {
            let d = (lp_vals[k] - r).abs() as f64;
            sum += d;
            max = max.max(d);
            k += 1;
        }
    }
    (sum / k.max(1) as f64, max)
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
