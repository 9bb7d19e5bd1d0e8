//! `std::models::tiny`: a byte-level pre-LN GPT decoder with a tanh-GELU MLP and either learned
//! absolute positions or ALiBi, small enough to train on two CPU cores in minutes.

use candle_core::{D, Device, Tensor};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::error::{Result, config_err};
use crate::models::KvCache;
use crate::ops::{Ops, OpsMode, reference};
use crate::params::{Init, ParamStore};
use crate::tokenizer::byte_specials;

fn d_layers() -> usize {
    2
}
fn d_model() -> usize {
    128
}
fn d_heads() -> usize {
    4
}
fn d_context() -> usize {
    256
}
fn d_mlp() -> usize {
    4
}

/// How the tiny model knows where a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Positions {
    /// A learned embedding per absolute position (GPT-2).
    #[default]
    Learned,
    /// No position embedding; attention scores fall linearly with distance, per head (ALiBi).
    /// What the policy learns at one place of a prompt holds at every other: better for small
    /// data whose prompts vary in length.
    Alibi,
}

/// Sizes of the tiny model. Every field has a default, so `{ "family": "tiny" }` is valid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TinyConfig {
    /// Number of transformer blocks.
    #[serde(default = "d_layers")]
    pub layers: usize,
    /// Residual width.
    #[serde(default = "d_model")]
    pub d_model: usize,
    /// Attention heads (must divide `d_model`).
    #[serde(default = "d_heads")]
    pub heads: usize,
    /// Maximum sequence length (number of learned positions).
    #[serde(default = "d_context")]
    pub context: usize,
    /// MLP hidden width as a multiple of `d_model`.
    #[serde(default = "d_mlp")]
    pub mlp_ratio: usize,
    /// Position scheme (default: learned, as in checkpoints written before ALiBi existed).
    #[serde(default)]
    pub positions: Positions,
    /// Mix a copy distribution over the tokens seen so far into the next-token distribution
    /// (see `copy.rs`): names and numbers from the task and the page are copied, not recalled.
    #[serde(default)]
    pub copy: bool,
    /// Operation implementation (default: fused kernels on CPU).
    #[serde(default)]
    pub ops: OpsMode,
}

impl Default for TinyConfig {
    fn default() -> Self {
        TinyConfig {
            layers: d_layers(),
            d_model: d_model(),
            heads: d_heads(),
            context: d_context(),
            mlp_ratio: d_mlp(),
            positions: Positions::Learned,
            copy: false,
            ops: OpsMode::Auto,
        }
    }
}

impl TinyConfig {
    /// Whether a model of these sizes can be built, without building it (`wrlc run`'s preflight
    /// asks before any work starts).
    pub fn validate(&self) -> Result<()> {
        if self.layers == 0 || self.d_model == 0 || self.heads == 0 || self.context == 0 {
            return Err(config_err("tiny: layers, d_model, heads and context must be > 0"));
        }
        if !self.d_model.is_multiple_of(self.heads) {
            return Err(config_err(format!(
                "tiny: d_model {} is not divisible by heads {}",
                self.d_model, self.heads
            )));
        }
        Ok(())
    }
}

const LN_EPS: f32 = 1e-5;

/// The tiny model: config, parameters and the chosen op implementation.
#[derive(Debug, Clone)]
pub struct TinyModel {
    /// Its sizes.
    pub config: TinyConfig,
    /// Its parameters (names listed in docs/trainer.md).
    pub params: ParamStore,
    ops: Ops,
}

impl TinyModel {
    /// Randomly initialise (GPT-2 style: N(0, 0.02), residual projections scaled by 1/√(2L)).
    pub fn new(config: &TinyConfig, device: &Device, rng: &mut ChaCha8Rng) -> Result<Self> {
        config.validate()?;
        let d = config.d_model;
        let h = d * config.mlp_ratio;
        let v = byte_specials::VOCAB;
        let std = 0.02f32;
        let proj_std = std / ((2 * config.layers) as f32).sqrt();
        let mut p = ParamStore::new();
        p.create("tok_emb.weight", &[v, d], Init::Normal(std), rng, device)?;
        if config.positions == Positions::Learned {
            p.create("pos_emb.weight", &[config.context, d], Init::Normal(std), rng, device)?;
        }
        for i in 0..config.layers {
            let n = |s: &str| format!("layers.{i}.{s}");
            p.create(&n("ln1.weight"), &[d], Init::Ones, rng, device)?;
            p.create(&n("ln1.bias"), &[d], Init::Zeros, rng, device)?;
            p.create(&n("attn.qkv.weight"), &[3 * d, d], Init::Normal(std), rng, device)?;
            p.create(&n("attn.qkv.bias"), &[3 * d], Init::Zeros, rng, device)?;
            p.create(&n("attn.proj.weight"), &[d, d], Init::Normal(proj_std), rng, device)?;
            p.create(&n("attn.proj.bias"), &[d], Init::Zeros, rng, device)?;
            p.create(&n("ln2.weight"), &[d], Init::Ones, rng, device)?;
            p.create(&n("ln2.bias"), &[d], Init::Zeros, rng, device)?;
            p.create(&n("mlp.fc.weight"), &[h, d], Init::Normal(std), rng, device)?;
            p.create(&n("mlp.fc.bias"), &[h], Init::Zeros, rng, device)?;
            p.create(&n("mlp.proj.weight"), &[d, h], Init::Normal(proj_std), rng, device)?;
            p.create(&n("mlp.proj.bias"), &[d], Init::Zeros, rng, device)?;
        }
        p.create("ln_f.weight", &[d], Init::Ones, rng, device)?;
        p.create("ln_f.bias", &[d], Init::Zeros, rng, device)?;
        p.create("lm_head.weight", &[v, d], Init::Normal(std), rng, device)?;
        if config.copy {
            super::copy::create(&mut p, d, v, std, rng, device)?;
        }
        Ok(TinyModel { config: config.clone(), params: p, ops: Ops::new(config.ops, device) })
    }

    /// The op implementation in use.
    pub fn ops(&self) -> Ops {
        self.ops
    }

    /// The same architecture over another parameter store.
    pub fn with_params(&self, params: ParamStore) -> Result<Self> {
        let ops = Ops::new(self.config.ops, &params.device());
        Ok(TinyModel { config: self.config.clone(), params, ops })
    }

    /// ids (B, T) → logits (B, T, V). With a cache, the ids continue the cached positions and
    /// attention runs over cache + new keys (inference only).
    pub fn forward(&self, ids: &Tensor, cache: Option<&mut KvCache>) -> Result<Tensor> {
        self.scores(ids, cache, None)
    }

    /// Training forward scoring only the last `tq` positions (B, tq, V); the copy head still
    /// attends over the whole sequence.
    pub fn forward_tail(&self, ids: &Tensor, tq: usize) -> Result<Tensor> {
        self.scores(ids, None, Some(tq))
    }

    /// Incremental forward returning only the last position's next-token scores (B, V).
    pub fn forward_last(&self, ids: &Tensor, cache: &mut KvCache) -> Result<Tensor> {
        Ok(self.scores(ids, Some(cache), Some(1))?.squeeze(1)?)
    }

    /// Next-token scores (B, tq, V) of the last `tq` positions (all when `None`): logits, or
    /// log-probabilities with the copy head.
    fn scores(
        &self,
        ids: &Tensor,
        mut cache: Option<&mut KvCache>,
        tq: Option<usize>,
    ) -> Result<Tensor> {
        let h = self.hidden(ids, cache.as_deref_mut())?;
        let t = h.dim(1)?;
        let tq = tq.unwrap_or(t).min(t);
        let logits = self.head(&h.narrow(1, t - tq, tq)?)?;
        if self.config.copy {
            super::copy::forward(&self.params, &h, ids, &logits, cache)
        } else {
            Ok(logits)
        }
    }

    /// The vocabulary projection of final hidden states (..., d) → (..., V).
    pub fn head(&self, h: &Tensor) -> Result<Tensor> {
        let logits = self.ops.linear(h, &self.params.get("lm_head.weight")?, None)?;
        debug_assert_eq!(logits.dim(D::Minus1)?, byte_specials::VOCAB);
        Ok(logits)
    }

    /// ids (B, T) → final hidden states (B, T, d), after the last LayerNorm.
    pub fn hidden(&self, ids: &Tensor, mut cache: Option<&mut KvCache>) -> Result<Tensor> {
        let (b, t) = ids.dims2()?;
        let c = &self.config;
        let d = c.d_model;
        let nh = c.heads;
        let hd = d / nh;
        let offset = cache.as_ref().map(|k| k.pos).unwrap_or(0);
        if offset + t > c.context {
            return Err(config_err(format!(
                "sequence of {} tokens exceeds the tiny model's context {}",
                offset + t,
                c.context
            )));
        }
        let p = &self.params;
        let tok = p.get("tok_emb.weight")?.index_select(&ids.flatten_all()?, 0)?;
        let tok = tok.reshape((b, t, d))?;
        let alibi = c.positions == Positions::Alibi;
        let mut x = match c.positions {
            Positions::Learned => {
                tok.broadcast_add(&p.get("pos_emb.weight")?.narrow(0, offset, t)?)?
            }
            Positions::Alibi => tok,
        };
        let scale = 1.0 / (hd as f64).sqrt();
        for i in 0..c.layers {
            let g = |s: &str| p.get(&format!("layers.{i}.{s}"));
            let h = self.ops.layer_norm(&x, &g("ln1.weight")?, &g("ln1.bias")?, LN_EPS)?;
            let qkv = self.ops.linear(&h, &g("attn.qkv.weight")?, Some(&g("attn.qkv.bias")?))?;
            let y = match cache.as_deref_mut() {
                None => self.ops.causal_attention_qkv(&qkv, nh, scale, alibi)?,
                Some(kv) => {
                    let qkv = qkv.reshape((b, t, 3, nh, hd))?;
                    let split = |j: usize| -> Result<Tensor> {
                        Ok(qkv.narrow(2, j, 1)?.squeeze(2)?.transpose(1, 2)?.contiguous()?)
                    };
                    let (q, k, v) = (split(0)?, split(1)?, split(2)?);
                    let (k, v) = kv.append(i, k, v)?;
                    let y = if alibi {
                        reference::attention_alibi(&q, &k, &v, scale, offset)?
                    } else {
                        reference::attention(&q, &k, &v, scale, offset)?
                    };
                    y.transpose(1, 2)?.reshape((b, t, d))?
                }
            };
            let y = self.ops.linear(&y, &g("attn.proj.weight")?, Some(&g("attn.proj.bias")?))?;
            x = (x + y)?;
            let h = self.ops.layer_norm(&x, &g("ln2.weight")?, &g("ln2.bias")?, LN_EPS)?;
            let h = self.ops.linear(&h, &g("mlp.fc.weight")?, Some(&g("mlp.fc.bias")?))?;
            let h = self.ops.gelu(&h)?;
            let h = self.ops.linear(&h, &g("mlp.proj.weight")?, Some(&g("mlp.proj.bias")?))?;
            x = (x + h)?;
        }
        if let Some(kv) = cache {
            kv.pos += t;
        }
        self.ops.layer_norm(&x, &p.get("ln_f.weight")?, &p.get("ln_f.bias")?, LN_EPS)
    }
}
