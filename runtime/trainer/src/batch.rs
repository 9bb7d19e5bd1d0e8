//! Padded token batches and the log-probs of selected target positions — the shared core of the
//! SFT and RL losses.

use candle_core::{Device, Tensor};

use std::sync::Arc;

use crate::error::{Result, config_err};
use crate::models::Model;
use crate::ops::Ops;
use crate::vision::Pixels;

/// A right-padded batch of sequences with the target positions that carry loss.
#[derive(Debug, Clone)]
pub struct TokenBatch {
    /// Model input: (B, L − 1), every sequence without its last token, padded.
    pub inputs: Tensor,
    /// Flat row index `b·(L−1) + (j−1)` of each selected target `seq_b[j]`.
    pub rows: Vec<u32>,
    /// The selected target ids, in the order of `rows`.
    pub targets: Vec<u32>,
    /// (sequence index, position j) of each selected target.
    pub origin: Vec<(usize, usize)>,
    /// Each sequence's images (a vision-language policy's prompts; empty for text), in the order
    /// their `<|image_pad|>` runs stand.
    pub images: Vec<Vec<Arc<Pixels>>>,
    /// Whether the targets were drawn by the policy (an RL update's samples): a vision-language
    /// policy's log-probs then leave out its image tokens, which it never draws
    /// (`vision::policy`). SFT's targets are the data's: their loss is over the whole vocabulary,
    /// as transformers computes it.
    pub sampled: bool,
}

impl TokenBatch {
    /// Build from sequences and, per sequence, the positions j ≥ 1 whose token `seq[j]` is a
    /// target. Right padding with `pad` cannot influence earlier positions (causal attention).
    pub fn new(
        seqs: &[&[u32]],
        selected: &[Vec<usize>],
        pad: u32,
        device: &Device,
    ) -> Result<Self> {
        let l = seqs.iter().map(|s| s.len()).max().unwrap_or(0).max(2);
        let w = l - 1;
        let mut inputs = vec![pad; seqs.len() * w];
        let mut rows = Vec::new();
        let mut targets = Vec::new();
        let mut origin = Vec::new();
        for (b, (seq, sel)) in seqs.iter().zip(selected).enumerate() {
            let n = seq.len().saturating_sub(1);
            inputs[b * w..b * w + n].copy_from_slice(&seq[..n]);
            for &j in sel {
                if j == 0 || j >= seq.len() {
                    continue;
                }
                rows.push((b * w + j - 1) as u32);
                targets.push(seq[j]);
                origin.push((b, j));
            }
        }
        let inputs = Tensor::from_vec(inputs, (seqs.len(), w), device)?;
        Ok(TokenBatch { inputs, rows, targets, origin, images: Vec::new(), sampled: false })
    }

    /// The batch with each sequence's images: its forward runs through the whole
    /// vision-language model (the tower and merger take no gradient), as the rollout did.
    pub fn with_images(self, images: Vec<Vec<Arc<Pixels>>>) -> TokenBatch {
        TokenBatch { images, ..self }
    }

    /// The batch of the policy's own samples (see `sampled`).
    pub fn of_samples(self) -> TokenBatch {
        TokenBatch { sampled: true, ..self }
    }

    /// Final hidden states (B, L − 1, d): through the vision-language model when the batch
    /// holds images (refused for a model without a tower), else the text decoder's.
    pub fn hidden(&self, model: &Model) -> Result<Tensor> {
        if self.images.iter().all(Vec::is_empty) {
            return model.hidden(&self.inputs);
        }
        let (Model::Qwen(m), Some(side)) = (model, model.vision()) else {
            return Err(config_err("a batch with images needs a vision-language policy"));
        };
        let vl = side.model(m);
        let ids: Vec<Vec<u32>> = self.inputs.to_vec2()?;
        let images: Vec<Vec<Pixels>> =
            self.images.iter().map(|px| px.iter().map(|p| (**p).clone()).collect()).collect();
        let rows: Vec<(&[u32], &[Pixels])> =
            ids.iter().zip(&images).map(|(i, p)| (i.as_slice(), p.as_slice())).collect();
        Ok(vl.hidden(&rows, None)?.0)
    }

    /// Run the model and return (log-probs of the selected targets (M), their logits (M, V)).
    /// Logits are divided by `temperature` first when it is not 1.
    pub fn logprobs(&self, model: &Model, ops: &Ops, temperature: f32) -> Result<(Tensor, Tensor)> {
        // A vision-language policy never draws its image tokens (`vision::policy`): its
        // samples' log-probs are those of the distribution without them.
        let masked = self.sampled && model.vision().is_some();
        let text = self.images.iter().all(Vec::is_empty) && !masked;
        if text && self.all_rows() {
            let (lp, sel, _) = self.logprobs_full(model, ops, temperature)?;
            return Ok((lp, sel));
        }
        if text && !model.projects_rows() {
            return self.logprobs_tail(model, ops, temperature);
        }
        // Project only the selected positions onto the vocabulary: with long prompts and large
        // vocabularies the full (B, T, V) logits would dominate memory.
        let h = self.hidden(model)?;
        let (b, t, d) = h.dims3()?;
        let device = h.device().clone();
        let rows = Tensor::from_vec(self.rows.clone(), self.rows.len(), &device)?;
        let sel = model.head(&h.reshape((b * t, d))?.index_select(&rows, 0)?)?;
        let sel = match model.vision().filter(|_| masked) {
            Some(side) => without_vision_tokens(&sel, side)?,
            None => sel,
        };
        self.score(sel, ops, temperature)
    }

    /// (log-probs of the targets (M), tempered logits (M, V)) from the selected rows' logits.
    fn score(&self, sel: Tensor, ops: &Ops, temperature: f32) -> Result<(Tensor, Tensor)> {
        let sel = tempered(sel, temperature)?;
        let targets = Tensor::from_vec(self.targets.clone(), self.targets.len(), sel.device())?;
        let lp = ops.token_logprobs(&sel, &targets)?;
        Ok((lp, sel))
    }

    /// For heads that need the whole sequence (the copy head): scores only the positions from
    /// the earliest target on (a prompt's trained turn is at its end), not all of them.
    fn logprobs_tail(
        &self,
        model: &Model,
        ops: &Ops,
        temperature: f32,
    ) -> Result<(Tensor, Tensor)> {
        let w = self.inputs.dims().get(1).copied().unwrap_or(0).max(1);
        let from = self.rows.iter().map(|&r| r as usize % w).min().unwrap_or(0);
        let tq = w - from;
        let tail = model.forward_tail(&self.inputs, tq)?;
        let (b, _, v) = tail.dims3()?;
        let device = tail.device().clone();
        let rows: Vec<u32> = self
            .rows
            .iter()
            .map(|&r| ((r as usize / w) * tq + r as usize % w - from) as u32)
            .collect();
        let rows = Tensor::from_vec(rows, self.rows.len(), &device)?;
        self.score(tail.reshape((b * tq, v))?.index_select(&rows, 0)?, ops, temperature)
    }

    /// Whether every position of the batch is a target, in order.
    fn all_rows(&self) -> bool {
        let (b, w) = (
            self.inputs.dims().first().copied().unwrap_or(0),
            self.inputs.dims().get(1).copied().unwrap_or(0),
        );
        self.rows.len() == b * w && self.rows.iter().enumerate().all(|(i, &r)| r as usize == i)
    }

    /// Like [`TokenBatch::logprobs`], also returning the full logits (B, L − 1, V) so callers
    /// can inspect gradients at every position.
    pub fn logprobs_full(
        &self,
        model: &Model,
        ops: &Ops,
        temperature: f32,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        let full = model.forward(&self.inputs)?;
        let (lp, sel) = self.logprobs_from_logits(&full, ops, temperature)?;
        Ok((lp, sel, full))
    }

    /// Log-probs of the selected targets from given full logits (B, L − 1, V); returns
    /// (log-probs (M), selected logits (M, V)).
    pub fn logprobs_from_logits(
        &self,
        full: &Tensor,
        ops: &Ops,
        temperature: f32,
    ) -> Result<(Tensor, Tensor)> {
        let (b, t, v) = full.dims3()?;
        let device = full.device().clone();
        let all_rows = self.rows.len() == b * t && self.all_rows();
        if all_rows && ops.is_fused() && full.dtype() == candle_core::DType::F32 {
            // Every position is a target, in order: the fused op reads the rows of the 3-D
            // f32 logits directly, so the loss graph has no reshape/index-select nodes.
            let targets = Tensor::from_vec(self.targets.clone(), self.targets.len(), &device)?;
            let lp = ops.token_logprobs(&tempered(full.clone(), temperature)?, &targets)?;
            return Ok((lp, tempered(full.reshape((b * t, v))?, temperature)?));
        }
        let rows = Tensor::from_vec(self.rows.clone(), self.rows.len(), &device)?;
        self.score(full.reshape((b * t, v))?.index_select(&rows, 0)?, ops, temperature)
    }
}

/// Logits divided by `temperature` unless it is 1 or not positive (greedy).
fn tempered(x: Tensor, temperature: f32) -> Result<Tensor> {
    if temperature != 1.0 && temperature > 0.0 { Ok((x / temperature as f64)?) } else { Ok(x) }
}

/// Logits (M, V) with a vision-language policy's image tokens pushed to -1e9 (`exp` of them is
/// 0, as the sampler's −∞ gives; finite, so entropies stay numbers).
fn without_vision_tokens(sel: &Tensor, side: &crate::vision::VisionSide) -> Result<Tensor> {
    let v = sel.dim(1)?;
    let mut row = vec![0f32; v];
    for t in crate::vision::vision_tokens(&side.config) {
        if let Some(x) = row.get_mut(t as usize) {
            *x = -1e9;
        }
    }
    let row = Tensor::from_vec(row, (1, v), sel.device())?.to_dtype(sel.dtype())?;
    Ok(sel.broadcast_add(&row)?)
}
