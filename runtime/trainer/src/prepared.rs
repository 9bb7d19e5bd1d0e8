//! The samples of an RL update as its losses see them (each sequence with the positions of its
//! loss tokens), and how an update walks them: mini-batches of loss units, each cut into
//! forward batches, each token's loss weighted by the stage's aggregation. The policy's update
//! (`rl_update.rs`), its advantages (`rl_advantage.rs`) and the critic's update share them.

use std::collections::BTreeMap;

use candle_core::Device;

use crate::batch::TokenBatch;
use crate::error::{Result, config_err};
use crate::rl::{LossAggregation, Sample, SampleLevel, grouped_aggregation_coefficients};

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
    /// The images of its prompt (a vision-language policy's), in order.
    pub images: Vec<std::sync::Arc<crate::vision::Pixels>>,
}

/// `s` as the loss sees it (`sample` its index in the update, `reward` its shaped reward),
/// refused where its parts disagree or it does not fit the model's `context`.
pub(crate) fn prepare(s: &Sample, sample: usize, reward: f64, context: usize) -> Result<Prepared> {
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
        images: s.images.clone(),
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

/// The forward batch of `chunk` (indices into `prepared`): their sequences, each selecting its
/// loss tokens.
pub(crate) fn batch_of(
    prepared: &[Prepared],
    chunk: &[usize],
    pad: u32,
    device: &Device,
) -> Result<TokenBatch> {
    let seqs: Vec<&[u32]> = chunk.iter().map(|&i| prepared[i].seq.as_slice()).collect();
    let sel: Vec<Vec<usize>> = chunk.iter().map(|&i| prepared[i].positions.clone()).collect();
    let images = chunk.iter().map(|&i| prepared[i].images.clone()).collect();
    Ok(TokenBatch::new(&seqs, &sel, pad, device)?.with_images(images).of_samples())
}

/// The loss's units in batch order, each a list of indices into `prepared` (one sample per unit
/// at turn level; a trajectory's turns at trajectory level), and each sample's unit.
pub(crate) fn loss_units(
    prepared: &[Prepared],
    level: SampleLevel,
) -> (Vec<Vec<usize>>, Vec<usize>) {
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

/// How an update walks its prepared samples: `epochs` passes over `batches` (each mini-batch
/// the indices of its samples, one optimiser step each), forward batches of `micro` samples
/// (0: as many as fit) padded with `pad`, and each step's token losses weighted by
/// `aggregation` over the samples' loss units (`unit_of`).
#[derive(Clone, Copy)]
pub(crate) struct Passes<'a> {
    pub epochs: usize,
    pub batches: &'a [Vec<usize>],
    pub unit_of: &'a [usize],
    pub micro: usize,
    pub pad: u32,
    pub aggregation: LossAggregation,
}

impl Passes<'_> {
    /// The weight of every loss token of mini-batch `mb`, by sample index.
    pub fn coefficients(&self, prepared: &[Prepared], mb: &[usize]) -> BTreeMap<usize, Vec<f64>> {
        let counts: Vec<usize> = mb.iter().map(|&i| prepared[i].positions.len()).collect();
        let mb_unit: Vec<usize> = mb.iter().map(|&i| self.unit_of[i]).collect();
        let coefs = grouped_aggregation_coefficients(&counts, &mb_unit, self.aggregation);
        mb.iter().copied().zip(coefs).collect()
    }
}
