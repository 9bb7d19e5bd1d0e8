//! Sampling completions with a KV cache: temperature, top-k, top-p, a repetition penalty, stop
//! strings, max tokens, per-token log-probs, all driven by the trainer's seeded RNG.

use candle_core::{DType, Tensor};
use rand_chacha::ChaCha8Rng;

use std::sync::Arc;

use crate::decode::Batcher;
use crate::draw::Group;
pub use crate::draw::{Completion, FinishReason, SampleParams, TokenEvent, penalise, sample_token};
use crate::error::Result;
use crate::models::Model;
use crate::tokenizer::Tokenizer;

/// Sample `params.n` completions for every prompt, prompt after prompt, the group's rows
/// sharing the prefill: the tiny model and f32 Qwen models on the CPU through the row-stable
/// decoder (`decode`), others on candle's ops ([`sample_candle`]).
pub fn sample(
    model: &Model,
    tokenizer: &Tokenizer,
    prompts: &[Vec<u32>],
    params: &SampleParams,
    rng: &mut ChaCha8Rng,
) -> Result<Vec<Completion>> {
    sample_observed(model, tokenizer, prompts, params, rng, &mut |_| {})
}

/// As [`sample`], calling `on_token` for every token as soon as it is drawn, in order.
pub fn sample_observed(
    model: &Model,
    tokenizer: &Tokenizer,
    prompts: &[Vec<u32>],
    params: &SampleParams,
    rng: &mut ChaCha8Rng,
    on_token: &mut dyn FnMut(TokenEvent<'_>),
) -> Result<Vec<Completion>> {
    match crate::decode::weights_for(model)? {
        Some(weights) => {
            crate::decode::sample_alone(&weights, tokenizer, prompts, params, rng, on_token)
        }
        None => sample_candle(model, tokenizer, prompts, params, rng, on_token),
    }
}

/// As [`sample_observed`] on candle's ops whatever the model: a group is one batch of `n` rows
/// over a [`crate::models::KvCache`], rows that finished fed padding. The path of Qwen models,
/// and the one the tiny model's batched decoder is measured against (`bench/rollout.sh`).
pub fn sample_candle(
    model: &Model,
    tokenizer: &Tokenizer,
    prompts: &[Vec<u32>],
    params: &SampleParams,
    rng: &mut ChaCha8Rng,
    on_token: &mut dyn FnMut(TokenEvent<'_>),
) -> Result<Vec<Completion>> {
    let device = model.device();
    let mut out = Vec::new();
    for (pi, prompt) in prompts.iter().enumerate() {
        let mut group = Group::new(pi, prompt, params, model.context())?;
        let n = params.n;
        let mut cache = model.new_cache();
        let ids: Vec<u32> = (0..n).flat_map(|_| prompt.iter().copied()).collect();
        let ids = Tensor::from_vec(ids, (n, prompt.len()), &device)?;
        let mut last = model.forward_cached_last(&ids, &mut cache)?.detach();
        while !group.finished() {
            let mut rows_logits: Vec<Vec<f32>> = last.to_dtype(DType::F32)?.to_vec2()?;
            let next = group.draw(&mut rows_logits, params, tokenizer, rng, on_token)?;
            if group.finished() {
                break;
            }
            // Rows that finished are fed padding and ignored.
            let next: Vec<u32> = next.iter().map(|t| t.unwrap_or(tokenizer.pad_id())).collect();
            let ids = Tensor::from_vec(next, (n, 1), &device)?;
            last = model.forward_cached_last(&ids, &mut cache)?.detach();
        }
        out.extend(group.complete(tokenizer)?);
    }
    Ok(out)
}

/// The current weights, tokenizer and a forked RNG, to sample without holding the trainer: the
/// executor's concurrent episodes decode through their own samplers instead of queueing for the
/// trainer's lock. For the tiny model and f32 Qwen models on the CPU they all decode in the trainer's one shared
/// batch of these weights (`decode::Batcher`, read once per optimiser step); otherwise the
/// weights are shared, not copied, so a sampler must not be used while the trainer updates
/// them (rollouts finish before an update starts).
#[derive(Debug, Clone)]
pub struct Sampler {
    model: Model,
    tokenizer: Tokenizer,
    rng: ChaCha8Rng,
    /// Where the tiny model or an f32 Qwen model on the CPU decodes: one batch shared by every sampler forked from
    /// the same weights (`decode::Batcher`).
    batcher: Option<Arc<Batcher>>,
}

impl Sampler {
    pub(crate) fn new(
        model: Model,
        tokenizer: Tokenizer,
        rng: ChaCha8Rng,
        batcher: Option<Arc<Batcher>>,
    ) -> Sampler {
        Sampler { model, tokenizer, rng, batcher }
    }

    /// The policy's tokenizer.
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// As [`crate::Trainer::sample`], with this sampler's RNG.
    pub fn sample(
        &mut self,
        prompts: &[Vec<u32>],
        params: &SampleParams,
    ) -> Result<Vec<Completion>> {
        match &self.batcher {
            Some(b) => b.sample(prompts, params, &mut self.rng),
            None => sample(&self.model, &self.tokenizer, prompts, params, &mut self.rng),
        }
    }

    /// The vision side of a Qwen3-VL policy (its processor, its image pads); `None` for a text
    /// policy.
    pub fn vision(&self) -> Option<&crate::vision::VisionSide> {
        self.model.vision()
    }

    /// As [`Sampler::sample`] for one `prompt` (its image pads expanded) holding `images`,
    /// through the whole vision-language model: in the shared batch where the text decoder
    /// decodes there (`decode::vl`), else alone on candle's ops (`vision::sample_vl`); `Err`
    /// for a text policy.
    pub fn sample_images(
        &mut self,
        prompt: &[u32],
        images: &[crate::vision::Pixels],
        params: &SampleParams,
    ) -> Result<Vec<Completion>> {
        // The row-stable decoder's shared batch, with every other episode's turns.
        if let (Some(b), Some(side)) = (&self.batcher, self.model.vision()) {
            let plan = side.plan(prompt, images)?;
            return b.sample_vl(prompt, plan, params, &mut self.rng, None);
        }
        sample_images_observed(
            &self.model,
            &self.tokenizer,
            prompt,
            images,
            params,
            &mut self.rng,
            &mut |_| {},
        )
    }
}

/// `params.n` completions of one `prompt` (its image pads expanded) holding `images`, drawn from
/// `rng` through the whole vision-language model of `model` (the row-stable decoder's, as a
/// rollout's turn, on the CPU in f32; else `vision::sample_vl_observed`),
/// `on_token` called for every token as it is drawn; `Err` for a text policy. The one path of
/// an agent's turn on screenshots and of `wrlc serve`'s chat with images.
pub fn sample_images_observed(
    model: &Model,
    tokenizer: &Tokenizer,
    prompt: &[u32],
    images: &[crate::vision::Pixels],
    params: &SampleParams,
    rng: &mut ChaCha8Rng,
    on_token: &mut dyn FnMut(TokenEvent<'_>),
) -> Result<Vec<Completion>> {
    let side = match model {
        Model::Qwen(m) => m.vision.as_deref().map(|side| (m, side)),
        Model::Tiny(_) => None,
    };
    let Some((m, side)) = side else {
        return Err(crate::error::config_err("images are shown to a vision-language policy only"));
    };
    // The row-stable decoder where the text decoder decodes there: a rollout's turns do.
    if let Some(crate::decode::Weights::Qwen(w)) = crate::decode::weights_for(model)? {
        let plan = side.plan(prompt, images)?;
        return crate::decode::sample_vl_alone(
            &w,
            tokenizer,
            (prompt, plan),
            params,
            rng,
            on_token,
        );
    }
    let vl = side.model(m);
    crate::vision::sample_vl_observed(&vl, tokenizer, prompt, images, params, rng, on_token)
}
