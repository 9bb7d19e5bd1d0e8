//! Batched decoding on the CPU, of the tiny model (`tiny.rs`) and of Qwen models in f32
//! (`qwen.rs`): concurrent requests' sequences advance together, one forward per step
//! (`step.rs`), each request drawing from its own seeded RNG. The kernels are row-stable
//! (`dense.rs`, `kernels.rs`, `softmax.rs`), so what a request decodes never depends on what
//! shares its steps, nor on whether its prompt's prefix came from the prefix cache
//! (`prefix.rs`): runs stay reproducible however episodes interleave.
//!
//! `Sampler::sample` goes through the [`Batcher`] its trainer shares among all samplers of one
//! set of weights; `sample::sample_observed` (one caller, a callback per token) runs the same
//! steps alone. Models off the CPU, the tiny model with `ops = reference` and Qwen models
//! computing in bf16 or f16 keep candle's path (`sample.rs`).

mod attention;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod batcher;
mod block;
mod cache;
pub(crate) mod cpu;
pub mod dense;
pub mod kernels;
mod pass;
mod prefix;
pub mod qwen;
pub mod softmax;
mod step;
pub mod tiny;
pub mod vl;
pub(crate) mod wide;

use rand_chacha::ChaCha8Rng;

pub use batcher::Batcher;
pub use prefix::PrefixCache;
pub use qwen::QwenWeights;
pub use tiny::{Seq, TinyWeights};
pub use vl::{FeatureCache, ImageFeatures, ImageKey, SeqVision};

use crate::draw::{Completion, SampleParams, TokenEvent};
use crate::error::Result;
use crate::models::Model;
use crate::tokenizer::Tokenizer;

/// A model's weights as a row-stable decoder reads them.
pub trait Decoder: std::fmt::Debug + Send + Sync {
    /// One sequence's tokens and cache.
    type Seq: Sequence;

    /// The longest sequence it decodes.
    fn context(&self) -> usize;

    /// An empty sequence with room for `capacity` tokens (it grows past them if it must).
    fn new_seq(&self, capacity: usize) -> Self::Seq;

    /// Feeds `feeds[s]` (at least one token, within the context) to `seqs[s]` and returns each
    /// sequence's next-token scores after its last new token. Every position's numbers depend
    /// on its sequence's tokens up to it only: not on the other sequences, nor on how the
    /// sequence's tokens were split between calls.
    fn forward(&self, seqs: &mut [&mut Self::Seq], feeds: &[&[u32]]) -> Result<Vec<Vec<f32>>>;
}

/// A sequence being decoded: its tokens, and a cache that can be cut back to a prefix.
pub trait Sequence: std::fmt::Debug + Clone + Default + Send + Sync {
    /// The tokens fed so far.
    fn ids(&self) -> &[u32];

    /// Forgets every position from `len` on (a cached prefix reused for another prompt).
    fn truncate(&mut self, len: usize);

    /// How many of the first `n` positions, whose tokens this sequence and `fresh` (an unfed
    /// sequence prepared for another prompt) share, also agree beyond their tokens: a VL
    /// prompt's images standing there (`vl.rs`). Text sequences agree on all `n`.
    fn agree(&self, n: usize, fresh: &Self) -> usize {
        let _ = fresh;
        n
    }

    /// Takes on `fresh`'s plan for its prompt (a cached prefix cut back to serve it).
    fn adopt(&mut self, fresh: Self) {
        let _ = fresh;
    }

    /// Number of tokens fed.
    fn len(&self) -> usize {
        self.ids().len()
    }

    /// Whether nothing has been fed.
    fn is_empty(&self) -> bool {
        self.ids().is_empty()
    }
}

/// The weights of a model the batch decodes.
#[derive(Debug, Clone)]
pub enum Weights {
    /// The tiny model (`std::models::tiny`).
    Tiny(Box<TinyWeights>),
    /// A Qwen model computing in f32.
    Qwen(Box<QwenWeights>),
}

impl From<TinyWeights> for Weights {
    fn from(w: TinyWeights) -> Weights {
        Weights::Tiny(Box::new(w))
    }
}

impl From<QwenWeights> for Weights {
    fn from(w: QwenWeights) -> Weights {
        Weights::Qwen(Box::new(w))
    }
}

/// The weights to decode `model` with here: the tiny model with the default (fused) ops, or a
/// Qwen model computing in f32, on the CPU; `None`: candle's path.
pub fn weights_for(model: &Model) -> Result<Option<Weights>> {
    if !model.device().is_cpu() {
        return Ok(None);
    }
    match model {
        Model::Tiny(m) if m.ops().is_fused() => Ok(Some(TinyWeights::new(m)?.into())),
        Model::Qwen(m) if m.computes_in_f32() => Ok(Some(QwenWeights::new(m)?.into())),
        Model::Tiny(_) | Model::Qwen(_) => Ok(None),
    }
}

/// Decodes `prompts` one after another with `rng` (as `sample::sample_observed`), alone.
pub(crate) fn sample_alone(
    weights: &Weights,
    tokenizer: &Tokenizer,
    prompts: &[Vec<u32>],
    params: &SampleParams,
    rng: &mut ChaCha8Rng,
    on_token: &mut dyn FnMut(TokenEvent<'_>),
) -> Result<Vec<Completion>> {
    match weights {
        Weights::Tiny(w) => step::sample_alone(&**w, tokenizer, prompts, params, rng, on_token),
        Weights::Qwen(w) => step::sample_alone(&**w, tokenizer, prompts, params, rng, on_token),
    }
}

/// `params.n` completions of one vision-language `prompt` whose images `plan` places, decoded
/// alone on `weights` with `rng` (advanced past every draw), `on_token` called for every draw.
pub(crate) fn sample_vl_alone(
    weights: &QwenWeights,
    tokenizer: &Tokenizer,
    (prompt, plan): (&[u32], SeqVision),
    params: &SampleParams,
    rng: &mut ChaCha8Rng,
    on_token: &mut dyn FnMut(TokenEvent<'_>),
) -> Result<Vec<Completion>> {
    let mut job = step::Job::new(weights, 0, prompt, params, rng.clone())?;
    if let Some(seq) = job.first() {
        seq.set_vision(plan);
    }
    let (out, advanced) = step::alone(weights, tokenizer, job, on_token)?;
    *rng = advanced;
    Ok(out)
}
