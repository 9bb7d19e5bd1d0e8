//! `Trainer::rl_update`: one RL update (PPO epochs × mini-batches of optimiser steps) over a
//! batch of scored samples, with the per-token maths of [`crate::rl`].

use candle_core::Tensor;

use crate::batch::TokenBatch;
use crate::error::{Result, config_err};
use crate::metrics::Metrics;
use crate::models::Model;
use crate::ops::reference;
use crate::optim::Grads;
use crate::rl::{
    RlConfig, Sample, aggregation_coefficients, constant_groups, grpo_advantages, is_active,
    shaped_rewards, token_loss,
};
use crate::trainer::{Trainer, accumulate};

/// A sample prepared for the loss: full sequence and the positions of its loss tokens.
struct Prepared {
    seq: Vec<u32>,
    /// Positions j in `seq` of loss tokens.
    positions: Vec<usize>,
    /// Rollout log-prob per loss token.
    rollout_lp: Vec<f32>,
    advantage: f64,
}

fn prepare(s: &Sample, adv: f64, context: usize) -> Result<Prepared> {
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
    Ok(Prepared { seq, positions, rollout_lp, advantage: adv })
}

/// Log-probs (no gradient) of every loss token of `items`, in micro-batches, under `model`.
fn logprobs_no_grad(
    model: &Model,
    items: &[&Prepared],
    micro: usize,
    pad: u32,
    temperature: f32,
) -> Result<Vec<Vec<f32>>> {
    let ops = model.ops();
    let device = model.device();
    let mut out = Vec::with_capacity(items.len());
    for chunk in items.chunks(micro.max(1)) {
        let seqs: Vec<&[u32]> = chunk.iter().map(|p| p.seq.as_slice()).collect();
        let sel: Vec<Vec<usize>> = chunk.iter().map(|p| p.positions.clone()).collect();
        let batch = TokenBatch::new(&seqs, &sel, pad, &device)?;
        let (lp, _) = batch.logprobs(model, &ops, temperature)?;
        let lp: Vec<f32> = lp.detach().to_vec1()?;
        let mut k = 0;
        for p in chunk {
            out.push(lp[k..k + p.positions.len()].to_vec());
            k += p.positions.len();
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
    tokens: usize,
    clip_low: usize,
    clip_high: usize,
    kl: f64,
    entropy: f64,
}

impl Trainer {
    /// One RL update over `samples`: rewards shaped (overlong), groups filtered (dynamic
    /// sampling), GRPO advantages (per trajectory, broadcast to its turns), then `ppo_epochs`
    /// passes of `minibatches` optimiser steps over the clipped surrogate (+ KL, − entropy).
    /// Samples flagged `excluded` (or truncated with overlong filtering) take no part.
    pub fn rl_update(&mut self, samples: &[Sample], cfg: &RlConfig) -> Result<Metrics> {
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
        let adv = grpo_advantages(&view, &rewards, cfg);
        let context = self.model.context();
        let mut prepared = Vec::new();
        let mut reward_sum = 0.0;
        for (i, s) in view.iter().enumerate() {
            if !is_active(s, cfg) {
                continue;
            }
            let p = prepare(s, adv[i], context)?;
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
        metrics.advantage_abs_mean =
            Some(prepared.iter().map(|p| p.advantage.abs()).sum::<f64>() / prepared.len() as f64);

        let kl = cfg.kl_coef();
        if kl.is_some() && self.reference.is_none() {
            self.set_reference_to_current()?;
        }
        let pad = self.tokenizer.pad_id();
        let all: Vec<&Prepared> = prepared.iter().collect();
        let micro = if cfg.micro_batch == 0 { all.len() } else { cfg.micro_batch };
        let ref_lp = match (&self.reference, kl) {
            (Some(r), Some(_)) => Some(logprobs_no_grad(r, &all, micro, pad, cfg.temperature)?),
            _ => None,
        };
        let multi = cfg.ppo_epochs * cfg.minibatches > 1;
        let pre = if multi || !cfg.use_rollout_logprobs {
            Some(logprobs_no_grad(&self.model, &all, micro, pad, cfg.temperature)?)
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

        let ops = self.model.ops();
        let device = self.device();
        let mut acc = Acc::default();
        let n = prepared.len();
        let per_mb = n.div_ceil(cfg.minibatches);
        for _epoch in 0..cfg.ppo_epochs {
            for mb_start in (0..n).step_by(per_mb.max(1)) {
                let mb: Vec<usize> = (mb_start..(mb_start + per_mb).min(n)).collect();
                let counts: Vec<usize> = mb.iter().map(|&i| prepared[i].positions.len()).collect();
                let coefs = aggregation_coefficients(&counts, cfg.aggregation);
                let mut grads = Grads::new();
                let mut step_loss = 0.0;
                let mut step_pg = 0.0;
                for (ci, chunk) in mb.chunks(micro.max(1)).enumerate() {
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
                    let mut k = 0;
                    for (local, &i) in chunk.iter().enumerate() {
                        let p = &prepared[i];
                        let coef = &coefs[ci * micro.max(1) + local];
                        for t in 0..p.positions.len() {
                            let refr = match (&ref_lp, kl) {
                                (Some(r), Some((beta, est))) => Some((r[i][t] as f64, beta, est)),
                                _ => None,
                            };
                            let tl = token_loss(
                                lp_vals[k] as f64,
                                old[i][t] as f64,
                                p.advantage,
                                refr,
                                cfg,
                            );
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
                        for &i in chunk {
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
                    let store = surrogate.backward()?;
                    accumulate(&self.model, &store, &mut grads)?;
                }
                let info = self.optimizer.step(self.model.params(), &grads, self.step)?;
                self.step += 1;
                acc.loss += step_loss;
                acc.pg += step_pg;
                acc.grad_norm += info.grad_norm;
                acc.lr = info.lr;
                acc.steps += 1;
            }
        }
        let steps = acc.steps.max(1) as f64;
        let toks = acc.tokens.max(1) as f64;
        metrics.step = self.step;
        metrics.loss = acc.loss / steps;
        metrics.pg_loss = Some(acc.pg / steps);
        metrics.grad_norm = acc.grad_norm / steps;
        metrics.lr = acc.lr;
        metrics.tokens = prepared.iter().map(|p| p.positions.len()).sum();
        metrics.clip_frac = Some((acc.clip_low + acc.clip_high) as f64 / toks);
        metrics.clip_frac_low = Some(acc.clip_low as f64 / toks);
        metrics.clip_frac_high = Some(acc.clip_high as f64 / toks);
        metrics.kl = Some(acc.kl / toks);
        metrics.entropy = Some(acc.entropy / toks);
        metrics.optimizer_steps = Some(acc.steps);
        tracing::debug!(step = self.step, loss = metrics.loss, "rl update");
        Ok(metrics)
    }
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
