//! The `Trainer`: one policy with its optimiser, RNG, step counter and data cursor, exposing
//! sampling, SFT steps, RL updates and checkpointing to the executor.

use candle_core::{Device, Tensor};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::batch::TokenBatch;
use crate::data::{Example, Mixture};
use crate::device::DeviceChoice;
use crate::error::{Result, config_err};
use crate::grads::{accumulate, backward};
use crate::metrics::Metrics;
use crate::models::{Model, PolicyConfig};
use crate::optim::{AdamW, Grads, OptimConfig};
use crate::rng::rng_from_seed;
use crate::sample::{Completion, SampleParams, Sampler};
use crate::tokenizer::Tokenizer;

/// Everything needed to build a trainer; stored in checkpoints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainerConfig {
    /// The policy.
    pub policy: PolicyConfig,
    /// The optimiser.
    #[serde(default)]
    pub optim: OptimConfig,
    /// Seed of every random choice (initialisation, data order, sampling).
    #[serde(default)]
    pub seed: u64,
    /// Device.
    #[serde(default)]
    pub device: DeviceChoice,
}

/// Position of the SFT data cursor.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataCursor {
    /// Current epoch (0-based).
    pub epoch: u64,
    /// Next entry of that epoch's plan.
    pub position: usize,
}

fn d_one() -> usize {
    1
}

/// SFT batching.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SftConfig {
    /// Examples per forward pass.
    #[serde(default = "d_one")]
    pub micro_batch: usize,
    /// Micro-batches per optimiser step.
    #[serde(default = "d_one")]
    pub grad_accum: usize,
    /// Number of epochs [`Trainer::sft_epochs`] runs.
    #[serde(default = "d_one")]
    pub epochs: usize,
    /// The seed of the data order (each epoch's shuffle); `None`: the trainer's `seed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

impl Default for SftConfig {
    fn default() -> Self {
        SftConfig { micro_batch: 1, grad_accum: 1, epochs: 1, seed: None }
    }
}

impl SftConfig {
    /// Optimiser steps per epoch for a mixture of `n` examples.
    pub fn steps_per_epoch(&self, n: usize) -> usize {
        n.div_ceil((self.micro_batch * self.grad_accum).max(1))
    }
}

/// A policy under training.
#[derive(Debug)]
pub struct Trainer {
    /// Its configuration.
    pub config: TrainerConfig,
    pub(crate) model: Model,
    pub(crate) tokenizer: Tokenizer,
    pub(crate) optimizer: AdamW,
    pub(crate) rng: ChaCha8Rng,
    pub(crate) step: u64,
    pub(crate) cursor: DataCursor,
    pub(crate) reference: Option<Model>,
    /// PPO's value function (`advantage = gae(…)`).
    pub(crate) critic: Option<crate::critic::Critic>,
    /// The decoding batch its samplers share, with the step whose weights it holds (every
    /// change of the weights is an optimiser step).
    pub(crate) decode: DecodeSlot,
}

/// The trainer's shared decoding batch, made again when the weights move (`decode.rs`).
pub(crate) type DecodeSlot =
    std::sync::Mutex<Option<(u64, std::sync::Arc<crate::decode::Batcher>)>>;

impl Trainer {
    /// Build the policy (random init for `tiny`, local weights for Qwen) and a fresh optimiser.
    pub fn new(config: TrainerConfig) -> Result<Trainer> {
        Trainer::new_at(config, None)
    }

    /// [`Trainer::new`], a pretrained policy read from `dir` (a checkpoint that is a model
    /// directory) instead of its source.
    pub fn new_at(config: TrainerConfig, dir: Option<&std::path::Path>) -> Result<Trainer> {
        let device = config.device.device()?;
        let mut init_rng = rng_from_seed(config.seed ^ 0x1417_u64);
        let (model, tokenizer) = Model::build_at(&config.policy, dir, &device, &mut init_rng)?;
        Ok(Trainer {
            optimizer: AdamW::for_precision(config.optim.clone(), config.policy.precision()),
            rng: rng_from_seed(config.seed),
            config,
            model,
            tokenizer,
            step: 0,
            cursor: DataCursor::default(),
            reference: None,
            critic: None,
            decode: DecodeSlot::default(),
        })
    }

    /// The policy network.
    pub fn model(&self) -> &Model {
        &self.model
    }
    /// The tokenizer (and chat format) of the policy.
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }
    /// Optimiser steps taken.
    pub fn step(&self) -> u64 {
        self.step
    }
    /// The SFT data cursor.
    pub fn cursor(&self) -> DataCursor {
        self.cursor
    }
    /// The device of the policy.
    pub fn device(&self) -> Device {
        self.model.device()
    }
    /// Whether a frozen reference model is held (only when a KL term was used).
    pub fn has_reference(&self) -> bool {
        self.reference.is_some()
    }

    /// Sample `params.n` completions per prompt (token ids, e.g. from [`crate::render_prompt`]).
    pub fn sample(
        &mut self,
        prompts: &[Vec<u32>],
        params: &SampleParams,
    ) -> Result<Vec<Completion>> {
        self.sample_observed(prompts, params, &mut |_| {})
    }

    /// As [`Trainer::sample`], calling `on_token` for every token as soon as it is drawn.
    pub fn sample_observed(
        &mut self,
        prompts: &[Vec<u32>],
        params: &SampleParams,
        on_token: &mut dyn FnMut(crate::sample::TokenEvent<'_>),
    ) -> Result<Vec<Completion>> {
        let mut rng = self.rng.clone();
        let out = self.sample_observed_with(prompts, params, &mut rng, on_token);
        self.rng = rng;
        out
    }

    /// As [`Trainer::sample_observed`] drawing from `rng` instead of the trainer's own (a
    /// request's seed in `wrlc serve`).
    pub fn sample_observed_with(
        &self,
        prompts: &[Vec<u32>],
        params: &SampleParams,
        rng: &mut rand_chacha::ChaCha8Rng,
        on_token: &mut dyn FnMut(crate::sample::TokenEvent<'_>),
    ) -> Result<Vec<Completion>> {
        // A row-stable decoder (the tiny model, an f32 Qwen, on the CPU): the weights its
        // samplers' batch already read.
        if let Some(b) = self.batcher() {
            return b.sample_observed(prompts, params, rng, on_token);
        }
        crate::sample::sample_observed(&self.model, &self.tokenizer, prompts, params, rng, on_token)
    }

    /// As [`Trainer::sample_observed`] for one `prompt` (its image pads expanded) holding
    /// `images`, through the whole vision-language model (`sample::sample_images_observed`);
    /// `Err` for a text policy.
    pub fn sample_images_observed(
        &mut self,
        prompt: &[u32],
        images: &[crate::vision::Pixels],
        params: &SampleParams,
        on_token: &mut dyn FnMut(crate::sample::TokenEvent<'_>),
    ) -> Result<Vec<Completion>> {
        let mut rng = self.rng.clone();
        let out = self.sample_images_observed_with(prompt, images, params, &mut rng, on_token);
        self.rng = rng;
        out
    }

    /// As [`Trainer::sample_images_observed`] drawing from `rng` instead of the trainer's own.
    pub fn sample_images_observed_with(
        &self,
        prompt: &[u32],
        images: &[crate::vision::Pixels],
        params: &SampleParams,
        rng: &mut rand_chacha::ChaCha8Rng,
        on_token: &mut dyn FnMut(crate::sample::TokenEvent<'_>),
    ) -> Result<Vec<Completion>> {
        // The row-stable decoder, alone on the weights its samplers' batch already read: the
        // same tokens as a rollout's turn.
        if let (Some(b), Some(side)) = (self.batcher(), self.model.vision()) {
            let plan = side.plan(prompt, images)?;
            return b.sample_vl(prompt, plan, params, rng, Some(on_token));
        }
        crate::sample::sample_images_observed(
            &self.model,
            &self.tokenizer,
            prompt,
            images,
            params,
            rng,
            on_token,
        )
    }

    /// A [`Sampler`] over the current weights with an RNG seeded by one draw from the
    /// trainer's, so that several episodes can decode at once.
    pub fn sampler(&mut self) -> Sampler {
        let seed = self.rng.random::<u64>();
        Sampler::new(
            self.model.clone(),
            self.tokenizer.clone(),
            rng_from_seed(seed),
            self.batcher(),
        )
    }

    /// The decoding batch of the current weights (the tiny model or an f32 Qwen on the CPU; `None`: samplers
    /// decode alone on candle's ops), made on first use after each optimiser step.
    fn batcher(&self) -> Option<std::sync::Arc<crate::decode::Batcher>> {
        let mut slot = self.decode.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, b)) = slot.as_ref().filter(|(step, _)| *step == self.step) {
            return Some(b.clone());
        }
        let weights = match crate::decode::weights_for(&self.model) {
            Ok(w) => w?,
            Err(e) => {
                tracing::warn!("batched decoding is off: the weights did not read ({e})");
                return None;
            }
        };
        let b = std::sync::Arc::new(crate::decode::Batcher::new(weights, self.tokenizer.clone()));
        *slot = Some((self.step, b.clone()));
        Some(b)
    }

    /// A [`Sampler`] over the current weights whose RNG is stream `stream` of the model's seed:
    /// it does not advance the trainer's RNG, so concurrent episodes that each name their own
    /// stream decode the same tokens whatever order they run in.
    pub fn sampler_for(&self, stream: u64) -> Sampler {
        let seed = crate::rng::mix(self.config.seed, stream);
        Sampler::new(
            self.model.clone(),
            self.tokenizer.clone(),
            rng_from_seed(seed),
            self.batcher(),
        )
    }

    /// Freezes exactly `parts` from now on (a stage's `frozen`; others thaw): no gradient
    /// reaches them and the optimiser drops and keeps no state for them. A Qwen source records
    /// them, so a checkpoint resumes with the same parts frozen.
    pub fn set_frozen(&mut self, parts: &[crate::models::Frozen]) -> Result<()> {
        let names = self.model.frozen_names(parts)?;
        self.model.params_mut().set_frozen(&names)?;
        if self.lora().is_some() {
            // Under LoRA only the adapters train, whatever `frozen` says.
            crate::lora::freeze_base(self.model.params_mut())?;
        }
        self.optimizer.forget(&names);
        match &mut self.config.policy {
            PolicyConfig::Qwen2(src) | PolicyConfig::Qwen3(src) | PolicyConfig::Qwen3Vl(src) => {
                src.frozen = parts.to_vec()
            }
            PolicyConfig::Tiny(_) => {}
        }
        Ok(())
    }

    /// The draw of LoRA dropout's masks for loss batch `batch` of the step about to run: from
    /// the policy's seed and the step, so a resumed run draws the masks it would have.
    pub(crate) fn dropout_key(&self, batch: usize) -> u64 {
        crate::rng::mix(crate::rng::mix(self.config.seed, self.step), batch as u64)
    }

    /// Sets the learning-rate schedule from now on (a stage whose step count is known only once
    /// its examples are rendered: a chat template may train a conversation in several
    /// sequences).
    pub fn set_schedule(&mut self, schedule: crate::optim::Schedule) {
        self.optimizer.config.schedule = schedule.clone();
        self.config.optim.schedule = schedule;
    }

    /// Snapshot the current weights as the frozen KL reference.
    pub fn set_reference_to_current(&mut self) -> Result<()> {
        self.reference = Some(self.model.with_params(self.model.params().deep_copy()?)?);
        Ok(())
    }

    /// One optimiser step of SFT on explicit examples (none when they hold no trained token,
    /// reported as `tokens: 0`): micro-batches of `micro_batch`, gradients
    /// accumulated, loss = Σ w·(−log p) / (number of loss tokens in the whole step), so the
    /// split into micro-batches does not change the update. `weights` scales each example.
    /// The metrics say what memory the step held (`memory.rs`).
    pub fn sft_step_on(
        &mut self,
        examples: &[(&Example, f32)],
        micro_batch: usize,
    ) -> Result<Metrics> {
        let meter = crate::memory::Meter::start();
        let m = self.sft_step_unmetered(examples, micro_batch)?;
        Ok(Metrics { memory: meter.finish(&self.device()), ..m })
    }

    fn sft_step_unmetered(
        &mut self,
        examples: &[(&Example, f32)],
        micro_batch: usize,
    ) -> Result<Metrics> {
        let total_tokens: usize = examples.iter().map(|(e, _)| e.trained_tokens()).sum();
        if total_tokens == 0 {
            // Nothing to learn from (e.g. every assistant turn was cut off): no update.
            tracing::warn!(examples = examples.len(), "SFT step without trained tokens skipped");
            return Ok(Metrics { step: self.step, samples: examples.len(), ..Metrics::default() });
        }
        let sums = self.sft_batches(examples, micro_batch, total_tokens);
        // No dropout outside the step's batches, whether they ran or failed.
        self.model.set_dropout(None);
        let (grads, loss_sum) = sums?;
        let info = self.optimizer.step(self.model.params(), &grads, self.step)?;
        self.step += 1;
        tracing::debug!(step = self.step, loss = loss_sum, grad_norm = info.grad_norm, "sft step");
        Ok(Metrics {
            step: self.step,
            loss: loss_sum,
            grad_norm: info.grad_norm,
            lr: info.lr,
            tokens: total_tokens,
            samples: examples.len(),
            skipped_steps: self.optimizer.scaler.map(|_| usize::from(info.skipped)),
            loss_scale: self.optimizer.scaler.map(|s| s.scale),
            ..Metrics::default()
        })
    }

    /// The gradients and summed loss of one SFT step's batches of `micro_batch` examples
    /// (`total_tokens` trained tokens in all), each drawing LoRA dropout's masks for its forward
    /// and backward.
    fn sft_batches(
        &mut self,
        examples: &[(&Example, f32)],
        micro_batch: usize,
        total_tokens: usize,
    ) -> Result<(Grads, f64)> {
        let ops = self.model.ops();
        let device = self.device();
        let pad = self.tokenizer.pad_id();
        let mut grads = Grads::new();
        let mut loss_sum = 0f64;
        for (c, chunk) in examples.chunks(micro_batch.max(1)).enumerate() {
            let seqs: Vec<&[u32]> = chunk.iter().map(|(e, _)| e.tokens.as_slice()).collect();
            let selected: Vec<Vec<usize>> = chunk
                .iter()
                .map(|(e, _)| (1..e.tokens.len()).filter(|&j| e.weights[j] != 0.0).collect())
                .collect();
            if selected.iter().all(|s| s.is_empty()) {
                continue;
            }
            let images = chunk.iter().map(|(e, _)| e.images.clone()).collect();
            let batch = TokenBatch::new(&seqs, &selected, pad, &device)?.with_images(images);
            // LoRA dropout's masks: one draw per step and batch, kept through the backward.
            self.model.set_dropout(Some(self.dropout_key(c)));
            let (lp, _) = batch.logprobs(&self.model, &ops, 1.0)?;
            let w: Vec<f32> = batch
                .origin
                .iter()
                .map(|&(b, j)| chunk[b].0.weights[j] * chunk[b].1 / total_tokens as f32)
                .collect();
            let w = Tensor::from_vec(w, batch.rows.len(), &device)?;
            let loss = (lp * w)?.sum_all()?.neg()?;
            loss_sum += loss.to_scalar::<f32>()? as f64;
            let store = backward(&loss, &self.optimizer, &self.model)?;
            accumulate(&self.model, &store, &mut grads)?;
        }
        Ok((grads, loss_sum))
    }

    /// One optimiser step on the next `micro_batch · grad_accum` entries of the mixture's epoch
    /// plan (the cursor advances; an epoch's last step may be smaller).
    pub fn sft_step(&mut self, data: &Mixture, cfg: &SftConfig) -> Result<Metrics> {
        let plan = data.epoch_plan(cfg.seed.unwrap_or(self.config.seed), self.cursor.epoch)?;
        let take = (cfg.micro_batch * cfg.grad_accum).max(1);
        let end = (self.cursor.position + take).min(plan.len());
        let mut examples = Vec::with_capacity(end - self.cursor.position);
        for e in &plan[self.cursor.position..end] {
            let ds = data.datasets.get(e.dataset).ok_or_else(|| config_err("bad plan dataset"))?;
            let ex = ds.examples.get(e.example).ok_or_else(|| config_err("bad plan example"))?;
            examples.push((ex, e.weight));
        }
        let mut m = self.sft_step_on(&examples, cfg.micro_batch)?;
        // The epoch this step belongs to, before the cursor moves on to the next one.
        m.epoch = Some(self.cursor.epoch);
        self.cursor.position = end;
        if end >= plan.len() {
            self.cursor.epoch += 1;
            self.cursor.position = 0;
        }
        Ok(m)
    }

    /// Run SFT until the cursor has completed `cfg.epochs` epochs (counting from epoch 0, so a
    /// resumed run finishes the remaining steps only). Returns one metrics entry per step.
    pub fn sft_epochs(&mut self, data: &Mixture, cfg: &SftConfig) -> Result<Vec<Metrics>> {
        let mut out = Vec::new();
        while self.cursor.epoch < cfg.epochs as u64 {
            out.push(self.sft_step(data, cfg)?);
        }
        Ok(out)
    }

    /// The padded batch of `examples` with their loss positions.
    fn sft_batch(&self, examples: &[&Example]) -> Result<TokenBatch> {
        let seqs: Vec<&[u32]> = examples.iter().map(|e| e.tokens.as_slice()).collect();
        let selected: Vec<Vec<usize>> = examples
            .iter()
            .map(|e| (1..e.tokens.len()).filter(|&j| e.weights[j] != 0.0).collect())
            .collect();
        let images = examples.iter().map(|e| e.images.clone()).collect();
        Ok(TokenBatch::new(&seqs, &selected, self.tokenizer.pad_id(), &self.device())?
            .with_images(images))
    }

    /// The model's logits (B, L − 1, V) on the padded batch of `examples` (through the whole
    /// vision-language model when they hold images).
    pub fn sft_logits(&self, examples: &[&Example]) -> Result<Tensor> {
        let batch = self.sft_batch(examples)?;
        if batch.images.iter().all(Vec::is_empty) {
            return self.model.forward(&batch.inputs);
        }
        self.model.head(&batch.hidden(&self.model)?)
    }

    /// The SFT loss of `examples` computed from given logits (B, L − 1, V), e.g. from
    /// [`Trainer::sft_logits`]: loss = −Σ w·log p / (number of loss tokens).
    pub fn sft_loss_on_logits(&self, examples: &[&Example], logits: &Tensor) -> Result<Tensor> {
        let batch = self.sft_batch(examples)?;
        let total: usize = examples.iter().map(|e| e.trained_tokens()).sum();
        let (lp, _) = batch.logprobs_from_logits(logits, &self.model.ops(), 1.0)?;
        let w: Vec<f32> = batch
            .origin
            .iter()
            .map(|&(b, j)| examples[b].weights[j] / total.max(1) as f32)
            .collect();
        let w = Tensor::from_vec(w, batch.rows.len(), &self.device())?;
        Ok((lp * w)?.sum_all()?.neg()?)
    }

    /// The SFT loss of one micro-batch as a differentiable tensor, with the logits it came from.
    pub fn sft_loss(&self, examples: &[&Example]) -> Result<(Tensor, Tensor)> {
        let logits = self.sft_logits(examples)?;
        Ok((self.sft_loss_on_logits(examples, &logits)?, logits))
    }

    /// Mean SFT loss of examples under the current weights (no update).
    pub fn sft_eval(&self, examples: &[Example]) -> Result<f64> {
        let ops = self.model.ops();
        let device = self.device();
        let mut total = 0f64;
        let mut n = 0usize;
        for e in examples {
            let sel: Vec<usize> = (1..e.tokens.len()).filter(|&j| e.weights[j] != 0.0).collect();
            if sel.is_empty() {
                continue;
            }
            let batch =
                TokenBatch::new(&[e.tokens.as_slice()], &[sel], self.tokenizer.pad_id(), &device)?;
            let (lp, _) = batch.logprobs(&self.model, &ops, 1.0)?;
            let lp: Vec<f32> = lp.detach().to_vec1()?;
            total -= lp.iter().map(|&x| x as f64).sum::<f64>();
            n += lp.len();
        }
        Ok(if n == 0 { 0.0 } else { total / n as f64 })
    }
}
