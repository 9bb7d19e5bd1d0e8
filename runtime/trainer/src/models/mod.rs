//! Policy model families behind one enum: the byte-level `tiny` transformer and Qwen2/Qwen3.

pub mod qwen;
mod recompute;
pub mod tiny;

use std::path::PathBuf;

use candle_core::{Device, Tensor};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::ops::OpsMode;
use crate::params::ParamStore;
use crate::precision::Precision;
use crate::tokenizer::Tokenizer;

pub use crate::hf::QwenConfig;
pub use qwen::QwenModel;

mod copy;
pub use tiny::{Positions, TinyConfig, TinyModel};

/// Which policy to build. Deserialises from the plan JSON, e.g.
/// `{ "family": "tiny", "layers": 2, "d_model": 128, "heads": 4, "context": 256 }` or
/// `{ "family": "qwen3", "path": "/models/qwen3-0.6b" }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "family", rename_all = "snake_case")]
pub enum PolicyConfig {
    /// `std::models::tiny`: byte-level decoder transformer, randomly initialised from the seed.
    Tiny(TinyConfig),
    /// A Qwen2 / Qwen2.5 text checkpoint directory (config.json, *.safetensors, tokenizer.json).
    Qwen2(PretrainedSource),
    /// A Qwen3 text checkpoint directory (config.json, *.safetensors, tokenizer.json).
    Qwen3(PretrainedSource),
    /// A Qwen-VL checkpoint directory, Qwen3-VL or Qwen2.5-VL as its `config.json` says (the
    /// name is Qwen3-VL's, the first this runtime ran): its text decoder trains as a Qwen3's (or
    /// a Qwen2's), its vision tower and merger are read apart and take no gradient
    /// (`vision::policy`).
    Qwen3Vl(PretrainedSource),
}

impl PolicyConfig {
    /// The dtype the policy computes in (the tiny model: always f32).
    pub fn precision(&self) -> Precision {
        match self {
            PolicyConfig::Tiny(_) => Precision::F32,
            PolicyConfig::Qwen2(src) | PolicyConfig::Qwen3(src) | PolicyConfig::Qwen3Vl(src) => {
                src.dtype
            }
        }
    }

    /// The pretrained source, `None` for the tiny model.
    pub fn source_mut(&mut self) -> Option<&mut PretrainedSource> {
        match self {
            PolicyConfig::Tiny(_) => None,
            PolicyConfig::Qwen2(src) | PolicyConfig::Qwen3(src) | PolicyConfig::Qwen3Vl(src) => {
                Some(src)
            }
        }
    }
}

/// Where a pretrained checkpoint lives, and how the recipe uses it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PretrainedSource {
    /// A Hugging Face model directory (`config.json`, `*.safetensors`, `tokenizer.json`, the
    /// chat template).
    pub path: PathBuf,
    /// Operation implementation (default: fused on CPU).
    #[serde(default)]
    pub ops: OpsMode,
    /// Parts that get no gradient (and so no optimiser state).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frozen: Vec<Frozen>,
    /// Whether the model thinks before it answers (the template's `enable_thinking`).
    #[serde(default)]
    pub thinking: bool,
    /// The longest sequence, prompt and completion; `None`: `max_position_embeddings`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<usize>,
    /// The dtype the forward computes in, over f32 master weights (`precision.rs`).
    #[serde(default)]
    pub dtype: Precision,
    /// Keep only each decoder layer's input in a training forward and recompute the layer in
    /// the backward pass (activation checkpointing, `recompute.rs`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gradient_checkpointing: bool,
    /// LoRA adapters on its linear layers (`lora.rs`): only they train.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lora: Option<crate::lora::LoraSpec>,
    /// A vision-language model's pixel budget per image (the recipe's `image_max_pixels`),
    /// replacing its processor's `max_pixels`; `None`: the processor's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_max_pixels: Option<usize>,
}

impl PretrainedSource {
    /// A model directory used as it is: nothing frozen, no thinking, its own context.
    pub fn new(path: impl Into<PathBuf>) -> PretrainedSource {
        PretrainedSource {
            path: path.into(),
            ops: OpsMode::Auto,
            frozen: Vec::new(),
            thinking: false,
            context: None,
            dtype: Precision::F32,
            gradient_checkpointing: false,
            lora: None,
            image_max_pixels: None,
        }
    }
}

/// A part of a pretrained model that can be frozen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Frozen {
    /// `model.embed_tokens.weight`.
    Embeddings,
    /// `lm_head.weight`.
    LmHead,
}

/// Per-layer key/value cache for incremental decoding.
#[derive(Debug, Clone, Default)]
pub struct KvCache {
    /// (k, v) per layer, each (B, H_kv, T, D).
    pub layers: Vec<Option<(Tensor, Tensor)>>,
    /// Number of positions already in the cache.
    pub pos: usize,
    /// The copy head's keys (B, T, d) and input ids (B, T) so far (tiny model with `copy`).
    pub copy: Option<(Tensor, Tensor)>,
}

impl KvCache {
    /// An empty cache for `n_layers` layers.
    pub fn new(n_layers: usize) -> Self {
        KvCache { layers: vec![None; n_layers], pos: 0, copy: None }
    }

    /// Append new keys/values for layer `i` and return the full (k, v).
    pub fn append(&mut self, i: usize, k: Tensor, v: Tensor) -> Result<(Tensor, Tensor)> {
        let slot = self
            .layers
            .get_mut(i)
            .ok_or_else(|| crate::error::config_err(format!("kv cache has no layer {i}")))?;
        let (k, v) = match slot.take() {
            None => (k, v),
            Some((pk, pv)) => (Tensor::cat(&[&pk, &k], 2)?, Tensor::cat(&[&pv, &v], 2)?),
        };
        *slot = Some((k.detach(), v.detach()));
        Ok((k, v))
    }
}

/// A built policy network.
#[derive(Debug, Clone)]
pub enum Model {
    /// The byte-level tiny transformer.
    Tiny(TinyModel),
    /// A Qwen2/Qwen3 decoder.
    Qwen(Box<QwenModel>),
}

impl Model {
    /// Build the model and its tokenizer. `rng` initialises random weights (tiny only).
    pub fn build(
        config: &PolicyConfig,
        device: &Device,
        rng: &mut ChaCha8Rng,
    ) -> Result<(Model, Tokenizer)> {
        Model::build_at(config, None, device, rng)
    }

    /// [`Model::build`], a pretrained model read from `dir` instead of its source (a
    /// checkpoint holding its own config, weights and tokenizer).
    pub fn build_at(
        config: &PolicyConfig,
        dir: Option<&std::path::Path>,
        device: &Device,
        rng: &mut ChaCha8Rng,
    ) -> Result<(Model, Tokenizer)> {
        match config {
            PolicyConfig::Tiny(c) => {
                Ok((Model::Tiny(TinyModel::new(c, device, rng)?), Tokenizer::Bytes))
            }
            PolicyConfig::Qwen2(src) | PolicyConfig::Qwen3(src) => {
                let files = crate::hf::inspect(dir.unwrap_or(&src.path))?;
                let want = match config {
                    PolicyConfig::Qwen3(_) => crate::hf::Arch::Qwen3,
                    _ => crate::hf::Arch::Qwen2,
                };
                if files.config.arch != want {
                    return Err(crate::hf::HfError::Architecture {
                        message: format!(
                            "the policy is a `{}` model but `config.json` says `model_type` `{}`",
                            want.model_type(),
                            files.config.arch.model_type()
                        ),
                        backend: None,
                    }
                    .into());
                }
                let (m, tok) = QwenModel::load(src, &files, device, rng)?;
                Ok((Model::Qwen(Box::new(m)), tok))
            }
            PolicyConfig::Qwen3Vl(src) => {
                let at = dir.unwrap_or(&src.path);
                let files = crate::hf::inspect(at)?;
                let Some(config) = files.vision.clone() else {
                    return Err(crate::hf::HfError::Architecture {
                        message: format!(
                            "the policy is a vision-language model but `config.json` says \
                             `model_type` `{}`",
                            files.config.arch.model_type()
                        ),
                        backend: None,
                    }
                    .into());
                };
                let here = PretrainedSource { path: at.to_path_buf(), ..src.clone() };
                let vl = crate::vision::QwenVlModel::load(&here, device)?;
                let side =
                    crate::vision::VisionSide::new(at, config, vl.tower, src.image_max_pixels)?;
                let mut text = vl.text;
                text.vision = Some(std::sync::Arc::new(side));
                let tok = crate::tokenizer::Tokenizer::from_model(&files, src.thinking)?;
                Ok((Model::Qwen(Box::new(text)), tok))
            }
        }
    }

    /// Rebuild the same architecture over another parameter store (e.g. a frozen reference copy).
    pub fn with_params(&self, params: ParamStore) -> Result<Model> {
        match self {
            Model::Tiny(m) => Ok(Model::Tiny(m.with_params(params)?)),
            Model::Qwen(m) => Ok(Model::Qwen(Box::new(m.with_params(params)?))),
        }
    }

    /// Training forward: ids (B, T) u32 → logits (B, T, V).
    pub fn forward(&self, ids: &Tensor) -> Result<Tensor> {
        match self {
            Model::Tiny(m) => m.forward(ids, None),
            Model::Qwen(m) => m.forward(ids, None),
        }
    }

    /// Training forward scoring only the last `tq` positions: ids (B, T) → (B, tq, V).
    pub fn forward_tail(&self, ids: &Tensor, tq: usize) -> Result<Tensor> {
        match self {
            Model::Tiny(m) => m.forward_tail(ids, tq),
            Model::Qwen(m) => {
                let h = m.hidden(ids, None)?;
                let t = h.dim(1)?;
                m.head(&h.narrow(1, t - tq.min(t), tq.min(t))?)
            }
        }
    }

    /// Final hidden states (B, T, d) of a training forward (before the vocabulary projection).
    pub fn hidden(&self, ids: &Tensor) -> Result<Tensor> {
        match self {
            Model::Tiny(m) => m.hidden(ids, None),
            Model::Qwen(m) => m.hidden(ids, None),
        }
    }

    /// The vocabulary projection of hidden states (..., d) → (..., V).
    pub fn head(&self, h: &Tensor) -> Result<Tensor> {
        match self {
            Model::Tiny(m) => m.head(h),
            Model::Qwen(m) => m.head(h),
        }
    }

    /// Incremental forward: ids (B, t) continue the cached positions → logits (B, t, V).
    pub fn forward_cached(&self, ids: &Tensor, cache: &mut KvCache) -> Result<Tensor> {
        match self {
            Model::Tiny(m) => m.forward(ids, Some(cache)),
            Model::Qwen(m) => m.forward(ids, Some(cache)),
        }
    }

    /// The draw of LoRA dropout for the training forward (and backward) about to run, or
    /// `None` once it has: only a model with adapters of `dropout` > 0 draws a mask.
    pub(crate) fn set_dropout(&mut self, key: Option<u64>) {
        match self {
            Model::Tiny(_) => {}
            Model::Qwen(m) => m.dropout = key,
        }
    }

    /// The op implementation the model uses (the losses use the same one).
    pub fn ops(&self) -> crate::ops::Ops {
        match self {
            Model::Tiny(m) => m.ops(),
            Model::Qwen(m) => m.ops(),
        }
    }

    /// Incremental forward returning only the last position's logits (B, V): the prefill of a
    /// long prompt never materialises (B, T, V).
    pub fn forward_cached_last(&self, ids: &Tensor, cache: &mut KvCache) -> Result<Tensor> {
        match self {
            Model::Tiny(m) => m.forward_last(ids, cache),
            Model::Qwen(m) => {
                let h = m.hidden(ids, Some(cache))?;
                let t = h.dim(1)?;
                m.head(&h.narrow(1, t - 1, 1)?.squeeze(1)?)
            }
        }
    }

    /// Whether [`Model::head`] over some positions' hidden states gives their next-token
    /// distribution on its own (not so for a head that attends over the whole sequence).
    pub fn projects_rows(&self) -> bool {
        match self {
            Model::Tiny(m) => !m.config.copy,
            Model::Qwen(_) => true,
        }
    }

    /// The gradients of the layers recomputed in the last backward passes (activation
    /// checkpointing), taken: the trainer adds them to the graph's own.
    pub(crate) fn take_recomputed(&self) -> crate::optim::Grads {
        match self {
            Model::Tiny(_) => crate::optim::Grads::new(),
            Model::Qwen(m) => std::mem::take(
                &mut *m.recomputed.lock().unwrap_or_else(std::sync::PoisonError::into_inner),
            ),
        }
    }

    /// A fresh cache sized for this model.
    pub fn new_cache(&self) -> KvCache {
        KvCache::new(self.num_layers())
    }

    /// Number of transformer layers.
    pub fn num_layers(&self) -> usize {
        match self {
            Model::Tiny(m) => m.config.layers,
            Model::Qwen(m) => m.config.num_hidden_layers,
        }
    }

    /// The parameter names the parts `parts` cover: the token embeddings and the LM head
    /// (tied ones together, see `qwen::frozen_names`).
    pub fn frozen_names(&self, parts: &[Frozen]) -> Result<Vec<String>> {
        match self {
            Model::Tiny(_) => Ok(parts
                .iter()
                .map(|p| match p {
                    Frozen::Embeddings => "tok_emb.weight".to_string(),
                    Frozen::LmHead => "lm_head.weight".to_string(),
                })
                .collect()),
            Model::Qwen(m) => qwen::frozen_names(&m.config, parts),
        }
    }

    /// The parameter store, to freeze parts of it.
    pub(crate) fn params_mut(&mut self) -> &mut ParamStore {
        match self {
            Model::Tiny(m) => &mut m.params,
            Model::Qwen(m) => &mut m.params,
        }
    }

    /// The trainable parameters.
    pub fn params(&self) -> &ParamStore {
        match self {
            Model::Tiny(m) => &m.params,
            Model::Qwen(m) => &m.params,
        }
    }

    /// Maximum sequence length.
    pub fn context(&self) -> usize {
        match self {
            Model::Tiny(m) => m.config.context,
            Model::Qwen(m) => m.context,
        }
    }

    /// Vocabulary size (number of logits).
    pub fn vocab(&self) -> usize {
        match self {
            Model::Tiny(_) => crate::tokenizer::byte_specials::VOCAB,
            Model::Qwen(m) => m.config.vocab_size,
        }
    }

    /// The device the parameters live on.
    pub fn device(&self) -> Device {
        self.params().device()
    }

    /// The vision side of a Qwen3-VL policy; `None` for a text model.
    pub fn vision(&self) -> Option<&crate::vision::VisionSide> {
        match self {
            Model::Qwen(m) => m.vision.as_deref(),
            Model::Tiny(_) => None,
        }
    }
}
