//! Trainable Qwen2 / Qwen3 text decoders loaded from local safetensors + config.json +
//! tokenizer.json. Built from differentiable ops only (RMSNorm slow path, rotate-half RoPE as
//! tensor ops), unlike candle-transformers' inference code.

use std::path::{Path, PathBuf};

use candle_core::{D, DType, Device, Tensor};
use serde::{Deserialize, Serialize};

use crate::error::{Result, TrainerError, config_err};
use crate::models::KvCache;
use crate::ops::{Ops, OpsMode, reference};
use crate::params::ParamStore;
use crate::tokenizer::Tokenizer;

fn d_eps() -> f64 {
    1e-6
}
fn d_theta() -> f64 {
    1_000_000.0
}
fn d_ctx() -> usize {
    32768
}

/// The fields of a Hugging Face Qwen2/Qwen3 `config.json` that the model uses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QwenConfig {
    /// `qwen2` or `qwen3`.
    pub model_type: String,
    /// Vocabulary size.
    pub vocab_size: usize,
    /// Residual width.
    pub hidden_size: usize,
    /// MLP width.
    pub intermediate_size: usize,
    /// Number of decoder layers.
    pub num_hidden_layers: usize,
    /// Query heads.
    pub num_attention_heads: usize,
    /// Key/value heads (grouped-query attention).
    pub num_key_value_heads: usize,
    /// Per-head width; defaults to hidden_size / num_attention_heads.
    #[serde(default)]
    pub head_dim: Option<usize>,
    /// RMSNorm epsilon.
    #[serde(default = "d_eps")]
    pub rms_norm_eps: f64,
    /// RoPE base.
    #[serde(default = "d_theta")]
    pub rope_theta: f64,
    /// Maximum positions.
    #[serde(default = "d_ctx")]
    pub max_position_embeddings: usize,
    /// Whether lm_head shares the embedding matrix.
    #[serde(default)]
    pub tie_word_embeddings: bool,
    /// Qwen3: whether q/k/v/o projections have biases (Qwen2 always has q/k/v biases).
    #[serde(default)]
    pub attention_bias: bool,
}

impl QwenConfig {
    /// Per-head width.
    pub fn head_dim(&self) -> usize {
        self.head_dim.unwrap_or(self.hidden_size / self.num_attention_heads.max(1))
    }
    /// Qwen3 has per-head q/k RMSNorm.
    pub fn is_qwen3(&self) -> bool {
        self.model_type == "qwen3"
    }
    /// Whether q/k/v projections carry a bias.
    pub fn qkv_bias(&self) -> bool {
        !self.is_qwen3() || self.attention_bias
    }
    /// Whether the output projection carries a bias (Qwen3 with `attention_bias` only).
    pub fn o_bias(&self) -> bool {
        self.is_qwen3() && self.attention_bias
    }
}

/// A Qwen2/Qwen3 decoder with trainable parameters under their Hugging Face names.
#[derive(Debug, Clone)]
pub struct QwenModel {
    /// Parsed config.json.
    pub config: QwenConfig,
    /// Parameters, keyed by Hugging Face tensor names.
    pub params: ParamStore,
    /// Directory it was loaded from.
    pub path: PathBuf,
    ops_mode: OpsMode,
    ops: Ops,
}

/// Every `*.safetensors` file in `dir`, sorted by name.
fn safetensor_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "safetensors"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(TrainerError::Checkpoint(format!("no *.safetensors in {}", dir.display())));
    }
    Ok(files)
}

impl QwenModel {
    /// Load config.json, the weights (converted to f32) and tokenizer.json from `dir`.
    pub fn load(dir: &Path, ops: OpsMode, device: &Device) -> Result<(QwenModel, Tokenizer)> {
        let config: QwenConfig =
            serde_json::from_str(&std::fs::read_to_string(dir.join("config.json"))?)?;
        if config.model_type != "qwen2" && config.model_type != "qwen3" {
            return Err(config_err(format!(
                "{}: model_type `{}` is not qwen2 or qwen3",
                dir.display(),
                config.model_type
            )));
        }
        if !config.num_attention_heads.is_multiple_of(config.num_key_value_heads.max(1)) {
            return Err(config_err(
                "num_attention_heads must be a multiple of num_key_value_heads",
            ));
        }
        let mut params = ParamStore::new();
        for f in safetensor_files(dir)? {
            for (name, t) in candle_core::safetensors::load(&f, device)? {
                if config.tie_word_embeddings && name == "lm_head.weight" {
                    continue;
                }
                params.insert(&name, &t.to_dtype(DType::F32)?)?;
            }
        }
        let model = QwenModel {
            config,
            params,
            path: dir.to_path_buf(),
            ops_mode: ops,
            ops: Ops::new(ops, device),
        };
        model.check_params()?;
        let tok = Tokenizer::from_file(&dir.join("tokenizer.json"))?;
        Ok((model, tok))
    }

    /// Fail early with the first missing tensor name. The attention biases config.json
    /// promises are required too: without them the model would run as another model.
    fn check_params(&self) -> Result<()> {
        let c = &self.config;
        let mut need = vec!["model.embed_tokens.weight".to_string(), "model.norm.weight".into()];
        if !c.tie_word_embeddings {
            need.push("lm_head.weight".into());
        }
        for i in 0..c.num_hidden_layers {
            for s in ["q_proj", "k_proj", "v_proj", "o_proj"] {
                need.push(format!("model.layers.{i}.self_attn.{s}.weight"));
                let biased = if s == "o_proj" { c.o_bias() } else { c.qkv_bias() };
                if biased {
                    need.push(format!("model.layers.{i}.self_attn.{s}.bias"));
                }
            }
            for s in ["gate_proj", "up_proj", "down_proj"] {
                need.push(format!("model.layers.{i}.mlp.{s}.weight"));
            }
            need.push(format!("model.layers.{i}.input_layernorm.weight"));
            need.push(format!("model.layers.{i}.post_attention_layernorm.weight"));
            if c.is_qwen3() {
                need.push(format!("model.layers.{i}.self_attn.q_norm.weight"));
                need.push(format!("model.layers.{i}.self_attn.k_norm.weight"));
            }
        }
        for n in need {
            if !self.params.contains(&n) {
                return Err(TrainerError::Checkpoint(format!(
                    "{}: missing tensor `{n}`",
                    self.path.display()
                )));
            }
        }
        Ok(())
    }

    /// The op implementation in use.
    pub fn ops(&self) -> Ops {
        self.ops
    }

    /// The same architecture over another parameter store.
    pub fn with_params(&self, params: ParamStore) -> Result<Self> {
        let ops = Ops::new(self.ops_mode, &params.device());
        Ok(QwenModel {
            config: self.config.clone(),
            params,
            path: self.path.clone(),
            ops_mode: self.ops_mode,
            ops,
        })
    }

    fn bias(&self, name: &str) -> Result<Option<Tensor>> {
        if self.params.contains(name) { Ok(Some(self.params.get(name)?)) } else { Ok(None) }
    }

    /// cos/sin tables (t, head_dim) for absolute positions offset..offset+t.
    fn rope_tables(&self, offset: usize, t: usize, device: &Device) -> Result<(Tensor, Tensor)> {
        let hd = self.config.head_dim();
        let half = hd / 2;
        let mut cos = Vec::with_capacity(t * hd);
        let mut sin = Vec::with_capacity(t * hd);
        for p in offset..offset + t {
            let row: Vec<f64> = (0..half)
                .map(|i| p as f64 / self.config.rope_theta.powf((2 * i) as f64 / hd as f64))
                .collect();
            for _ in 0..2 {
                cos.extend(row.iter().map(|a| a.cos() as f32));
                sin.extend(row.iter().map(|a| a.sin() as f32));
            }
        }
        Ok((Tensor::from_vec(cos, (t, hd), device)?, Tensor::from_vec(sin, (t, hd), device)?))
    }

    /// Rotate-half RoPE on x (B, H, T, D), as tensor ops (differentiable).
    fn rope(x: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
        let hd = x.dim(D::Minus1)?;
        let half = hd / 2;
        let x1 = x.narrow(D::Minus1, 0, half)?;
        let x2 = x.narrow(D::Minus1, half, half)?;
        let rot = Tensor::cat(&[&x2.neg()?, &x1], D::Minus1)?;
        Ok((x.broadcast_mul(cos)? + rot.broadcast_mul(sin)?)?)
    }

    /// Repeat each key/value head `n` times (head j of the queries uses kv head j / n).
    fn repeat_kv(x: Tensor, n: usize) -> Result<Tensor> {
        if n == 1 {
            return Ok(x);
        }
        let (b, h, t, d) = x.dims4()?;
        Ok(Tensor::cat(&vec![&x; n], 2)?.reshape((b, h * n, t, d))?)
    }

    /// ids (B, T) → logits (B, T, V); with a cache, continue the cached positions.
    pub fn forward(&self, ids: &Tensor, cache: Option<&mut KvCache>) -> Result<Tensor> {
        self.head(&self.hidden(ids, cache)?)
    }

    /// The vocabulary projection of final hidden states (..., hidden) → (..., V).
    pub fn head(&self, h: &Tensor) -> Result<Tensor> {
        let w = if self.config.tie_word_embeddings {
            self.params.get("model.embed_tokens.weight")?
        } else {
            self.params.get("lm_head.weight")?
        };
        self.ops.linear(h, &w, None)
    }

    /// ids (B, T) → final hidden states (B, T, hidden), after the last RMSNorm.
    pub fn hidden(&self, ids: &Tensor, mut cache: Option<&mut KvCache>) -> Result<Tensor> {
        let (b, t) = ids.dims2()?;
        let c = &self.config;
        let (nh, nkv, hd) = (c.num_attention_heads, c.num_key_value_heads, c.head_dim());
        let eps = c.rms_norm_eps as f32;
        let offset = cache.as_ref().map(|k| k.pos).unwrap_or(0);
        let p = &self.params;
        let emb = p.get("model.embed_tokens.weight")?;
        let mut x = emb.index_select(&ids.flatten_all()?, 0)?.reshape((b, t, c.hidden_size))?;
        let (cos, sin) = self.rope_tables(offset, t, ids.device())?;
        let scale = 1.0 / (hd as f64).sqrt();
        for i in 0..c.num_hidden_layers {
            let n = |s: &str| format!("model.layers.{i}.{s}");
            let g = |s: &str| p.get(&n(s));
            let h = self.ops.rms_norm(&x, &g("input_layernorm.weight")?, eps)?;
            let proj = |s: &str, heads: usize| -> Result<Tensor> {
                let w = g(&format!("self_attn.{s}.weight"))?;
                let bias = self.bias(&n(&format!("self_attn.{s}.bias")))?;
                let y = self.ops.linear(&h, &w, bias.as_ref())?;
                Ok(y.reshape((b, t, heads, hd))?.transpose(1, 2)?.contiguous()?)
            };
            let mut q = proj("q_proj", nh)?;
            let mut k = proj("k_proj", nkv)?;
            let v = proj("v_proj", nkv)?;
            if c.is_qwen3() {
                q = self.ops.rms_norm(&q, &g("self_attn.q_norm.weight")?, eps)?;
                k = self.ops.rms_norm(&k, &g("self_attn.k_norm.weight")?, eps)?;
            }
            let q = Self::rope(&q, &cos, &sin)?.contiguous()?;
            let k = Self::rope(&k, &cos, &sin)?.contiguous()?;
            let y = match cache.as_deref_mut() {
                None => {
                    let k = Self::repeat_kv(k, nh / nkv)?;
                    let v = Self::repeat_kv(v, nh / nkv)?;
                    self.ops.causal_attention(&q, &k, &v, scale)?
                }
                Some(kv) => {
                    let (k, v) = kv.append(i, k, v)?;
                    let k = Self::repeat_kv(k, nh / nkv)?;
                    let v = Self::repeat_kv(v, nh / nkv)?;
                    reference::attention(&q, &k, &v, scale, offset)?
                }
            };
            let y = y.transpose(1, 2)?.reshape((b, t, nh * hd))?;
            let o_bias = self.bias(&n("self_attn.o_proj.bias"))?;
            let y = self.ops.linear(&y, &g("self_attn.o_proj.weight")?, o_bias.as_ref())?;
            x = (x + y)?;
            let h = self.ops.rms_norm(&x, &g("post_attention_layernorm.weight")?, eps)?;
            let gate = self.ops.linear(&h, &g("mlp.gate_proj.weight")?, None)?;
            let up = self.ops.linear(&h, &g("mlp.up_proj.weight")?, None)?;
            let h = (gate.silu()? * up)?;
            let h = self.ops.linear(&h, &g("mlp.down_proj.weight")?, None)?;
            x = (x + h)?;
        }
        if let Some(kv) = cache {
            kv.pos += t;
        }
        self.ops.rms_norm(&x, &p.get("model.norm.weight")?, eps)
    }
}
