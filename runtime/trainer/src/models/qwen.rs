//! Trainable Qwen2 / Qwen2.5 / Qwen3 dense text decoders from a Hugging Face directory, computed
//! as transformers computes them (RoPE tables in f32 with its `default`, `linear` and `yarn`
//! scalings, sliding-window layers, grouped-query attention, tied embeddings) and built from
//! differentiable ops only (RMSNorm slow path, rotate-half RoPE as tensor ops), unlike
//! candle-transformers' inference code. Frozen parts are read detached: no gradient reaches them.
//! The weights are f32; the forward computes in the source's `dtype` (`precision.rs`).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use candle_core::{D, DType, Device, Tensor};

use crate::error::{Result, config_err};
use crate::hf::{ModelFiles, QwenConfig, RopeKind};
use crate::lora::LoraSpec;
use crate::models::{Frozen, KvCache, PretrainedSource};
use crate::ops::{Ops, OpsMode, reference};
use crate::optim::Grads;
use crate::params::ParamStore;
use crate::tokenizer::Tokenizer;

/// A Qwen2/Qwen3 decoder with trainable parameters under their Hugging Face names.
#[derive(Debug, Clone)]
pub struct QwenModel {
    /// Parsed config.json.
    pub config: QwenConfig,
    /// Parameters, keyed by Hugging Face tensor names.
    pub params: ParamStore,
    /// Directory it was loaded from (its config and tokenizer files go into checkpoints).
    pub path: PathBuf,
    /// The longest sequence it runs (the recipe's `context`).
    pub context: usize,
    ops_mode: OpsMode,
    ops: Ops,
    /// `inv_freq` (head_dim / 2) and the factor on cos/sin, as transformers computes them.
    rope: (Vec<f32>, f32),
    /// The dtype the forward computes in; the parameters stay f32 (`precision.rs`).
    compute: DType,
    /// Recompute each layer in the backward pass instead of keeping its activations.
    pub(crate) checkpointing: bool,
    /// The gradients recomputed layers produced, until the trainer collects them.
    pub(crate) recomputed: Arc<Mutex<Grads>>,
    /// The LoRA adapters its parameters hold (`lora.rs`), if any.
    pub lora: Option<LoraSpec>,
    /// The draw of the adapters' dropout while a training forward (and its backward, which may
    /// recompute layers) runs: set by the trainer around each of its loss batches, `None`
    /// otherwise (sampling, no-grad passes, a reference model: no dropout).
    pub(crate) dropout: Option<u64>,
    /// The tower, processor and whole config of the Qwen3-VL checkpoint this decoder is the
    /// text half of (`vision::policy`); `None` for a text model.
    pub vision: Option<Arc<crate::vision::VisionSide>>,
}

/// The parameter names a frozen part covers.
pub fn frozen_names(c: &QwenConfig, parts: &[Frozen]) -> Result<Vec<String>> {
    let emb = parts.contains(&Frozen::Embeddings);
    let head = parts.contains(&Frozen::LmHead);
    if c.tie_word_embeddings && emb != head {
        return Err(config_err(
            "the model ties `lm_head` to the embeddings: freeze both `embeddings` and `lm_head`, or neither",
        ));
    }
    let mut out = Vec::new();
    if emb {
        out.push("model.embed_tokens.weight".to_string());
    }
    if head && !c.tie_word_embeddings {
        out.push("lm_head.weight".to_string());
    }
    Ok(out)
}

/// `inv_freq` and the cos/sin factor of `c`'s RoPE, in f32 as transformers computes them.
pub fn rope_frequencies(c: &QwenConfig) -> (Vec<f32>, f32) {
    let dim = c.head_dim;
    let base = c.rope_theta as f32;
    let pos_freqs: Vec<f32> =
        (0..dim / 2).map(|i| base.powf((2 * i) as f32 / dim as f32)).collect();
    let default: Vec<f32> = pos_freqs.iter().map(|p| 1.0 / p).collect();
    match &c.rope {
        RopeKind::Default => (default, 1.0),
        RopeKind::Linear { factor } => (default.iter().map(|f| f / *factor as f32).collect(), 1.0),
        RopeKind::Yarn {
            factor,
            original_max,
            attention_factor,
            beta_fast,
            beta_slow,
            mscale,
            mscale_all_dim,
            truncate,
        } => {
            let get_mscale =
                |scale: f64, m: f64| if scale <= 1.0 { 1.0 } else { 0.1 * m * scale.ln() + 1.0 };
            let att = match (attention_factor, mscale, mscale_all_dim) {
                (Some(a), _, _) => *a,
                (None, Some(m), Some(all)) if *m != 0.0 && *all != 0.0 => {
                    get_mscale(*factor, *m) / get_mscale(*factor, *all)
                }
                _ => get_mscale(*factor, 1.0),
            };
            let (d, b) = (dim as f64, c.rope_theta);
            let corr = |rot: f64| {
                (d * (*original_max as f64 / (rot * 2.0 * std::f64::consts::PI)).ln())
                    / (2.0 * b.ln())
            };
            let (mut low, mut high) = (corr(*beta_fast), corr(*beta_slow));
            if *truncate {
                low = low.floor();
                high = high.ceil();
            }
            let (low, mut high) = (low.max(0.0), high.min(d - 1.0));
            if low == high {
                high += 0.001;
            }
            let f = *factor as f32;
            let inv: Vec<f32> = pos_freqs
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let ramp = ((i as f32 - low as f32) / ((high - low) as f32)).clamp(0.0, 1.0);
                    let extra = 1.0 - ramp;
                    let interp = 1.0 / (f * p);
                    interp * (1.0 - extra) + (1.0 / p) * extra
                })
                .collect();
            (inv, att as f32)
        }
    }
}

/// Appends position `p`'s RoPE cos and sin (head_dim each: the half-table twice) to `cos` and
/// `sin`: the angle `inv_freq · p` in f32, its cos and sin in f64 rounded to f32, times
/// `factor`, as transformers computes them.
pub(crate) fn rope_row(inv: &[f32], factor: f32, p: usize, cos: &mut Vec<f32>, sin: &mut Vec<f32>) {
    let angles: Vec<f32> = inv.iter().map(|f| f * p as f32).collect();
    for _ in 0..2 {
        cos.extend(angles.iter().map(|a| ((*a as f64).cos() as f32) * factor));
        sin.extend(angles.iter().map(|a| ((*a as f64).sin() as f32) * factor));
    }
}

impl QwenModel {
    /// Loads `files` (checked by `hf::inspect`): weights converted to f32, the tokenizer with
    /// its chat template, the parts `src` freezes, and `src`'s adapters (drawn from `rng`).
    pub fn load(
        src: &PretrainedSource,
        files: &ModelFiles,
        device: &Device,
        rng: &mut rand_chacha::ChaCha8Rng,
    ) -> Result<(QwenModel, Tokenizer)> {
        let config = files.config.clone();
        let frozen = frozen_names(&config, &src.frozen)?;
        let mut params = ParamStore::new();
        for f in &files.weights {
            for (name, t) in candle_core::safetensors::load(f, device)? {
                if crate::hf::files::ignored_tensor(&config, &name) {
                    continue;
                }
                params.insert(&name, &t.to_dtype(DType::F32)?)?;
            }
        }
        params.freeze(&frozen)?;
        if let Some(spec) = &src.lora {
            crate::lora::attach(&mut params, &config, spec, rng)?;
        }
        let tok = Tokenizer::from_model(files, src.thinking)?;
        Ok((QwenModel::from_params(src, config, params, &files.dir, device), tok))
    }

    /// A model over `params` (already under the text families' names, frozen parts and adapters
    /// in place) with `src`'s settings: the text half of a vision-language model (`vision::vl`).
    pub fn from_params(
        src: &PretrainedSource,
        config: QwenConfig,
        params: ParamStore,
        dir: &Path,
        device: &Device,
    ) -> QwenModel {
        let context = src.context.unwrap_or(config.max_position_embeddings);
        let rope = rope_frequencies(&config);
        QwenModel {
            config,
            params,
            path: dir.to_path_buf(),
            context,
            ops_mode: src.ops,
            ops: Ops::new(src.ops, device),
            rope,
            compute: src.dtype.dtype(),
            checkpointing: src.gradient_checkpointing,
            recomputed: Arc::default(),
            lora: src.lora.clone(),
            dropout: None,
            vision: None,
        }
    }

    /// The dtype the forward computes in.
    pub fn compute_dtype(&self) -> DType {
        self.compute
    }

    /// `inv_freq` and the cos/sin factor of the model's RoPE.
    pub fn rope_frequencies(&self) -> (&[f32], f32) {
        (&self.rope.0, self.rope.1)
    }

    /// Loads the model directory `dir` (see [`QwenModel::load`]).
    pub fn load_dir(
        src: &PretrainedSource,
        dir: &Path,
        device: &Device,
    ) -> Result<(QwenModel, Tokenizer)> {
        let mut rng = crate::rng::rng_from_seed(0);
        QwenModel::load(src, &crate::hf::inspect(dir)?, device, &mut rng)
    }

    /// Whether the forward computes in f32 (the row-stable decoder's dtype, `decode::qwen`).
    pub fn computes_in_f32(&self) -> bool {
        self.compute == DType::F32
    }

    /// The op implementation in use.
    pub fn ops(&self) -> Ops {
        self.ops
    }

    /// The same architecture over another parameter store.
    pub fn with_params(&self, params: ParamStore) -> Result<Self> {
        let ops = Ops::new(self.ops_mode, &params.device());
        // Its own gradients: a critic or a reference never hands its layers' to the policy.
        Ok(QwenModel { params, ops, recomputed: Arc::default(), dropout: None, ..self.clone() })
    }

    /// Parameter `name` in the compute dtype (a differentiable cast of the f32 master).
    fn weight(&self, name: &str) -> Result<Tensor> {
        Ok(self.params.get(name)?.to_dtype(self.compute)?)
    }

    /// Parameter `name` as the adapted model has it (an adapted layer's weight merged with its
    /// adapter, detached): what the decoder and the exported model read.
    pub fn merged_weight(&self, name: &str) -> Result<Tensor> {
        crate::lora::merged(&self.params, self.lora.as_ref(), name)
    }

    /// Linear layer `module` (`model.layers.3.mlp.up_proj`) on x, its adapter's low-rank path
    /// added when it has one: W·x + b + (alpha / rank)·B·A·dropout(x), the dropout drawn only
    /// in a training forward (`dropout`), per module, as PEFT's `lora_dropout`.
    fn linear_at(&self, x: &Tensor, module: &str, bias: Option<&Tensor>) -> Result<Tensor> {
        let y = self.ops.linear(x, &self.weight(&format!("{module}.weight"))?, bias)?;
        let a = format!("{module}.lora_A.weight");
        match &self.lora {
            Some(spec) if self.params.contains(&a) => {
                let x = match self.dropout {
                    Some(key) if spec.dropout > 0.0 => {
                        crate::lora::dropped(x, spec.dropout, crate::lora::module_key(key, module))?
                    }
                    _ => x.clone(),
                };
                let low = self.ops.linear(&x, &self.weight(&a)?, None)?;
                let b = self.weight(&format!("{module}.lora_B.weight"))?;
                let d = self.ops.linear(&low, &b, None)?;
                Ok((y + d.affine(spec.scale(), 0.0)?)?)
            }
            _ => Ok(y),
        }
    }

    fn bias(&self, name: &str) -> Result<Option<Tensor>> {
        if self.params.contains(name) { Ok(Some(self.weight(name)?)) } else { Ok(None) }
    }

    /// cos/sin tables (t, head_dim) for absolute positions offset..offset+t: the angle
    /// `inv_freq · p` in f32, its cos and sin times the scaling factor.
    fn rope_tables(&self, offset: usize, t: usize, device: &Device) -> Result<(Tensor, Tensor)> {
        let (inv, factor) = &self.rope;
        let hd = self.config.head_dim();
        let mut cos = Vec::with_capacity(t * hd);
        let mut sin = Vec::with_capacity(t * hd);
        for p in offset..offset + t {
            rope_row(inv, *factor, p, &mut cos, &mut sin);
        }
        let table = |v: Vec<f32>| -> Result<Tensor> {
            Ok(Tensor::from_vec(v, (t, hd), device)?.to_dtype(self.compute)?)
        };
        Ok((table(cos)?, table(sin)?))
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
            self.weight("model.embed_tokens.weight")?
        } else {
            self.weight("lm_head.weight")?
        };
        self.ops.linear(h, &w, None)
    }

    /// ids (B, T) → final hidden states (B, T, hidden), after the last RMSNorm. A training
    /// forward (no cache) with `gradient_checkpointing` keeps only each layer's input and
    /// recomputes the layer in the backward pass (`recompute.rs`).
    pub fn hidden(&self, ids: &Tensor, cache: Option<&mut KvCache>) -> Result<Tensor> {
        let (b, t) = ids.dims2()?;
        let offset = cache.as_ref().map(|k| k.pos).unwrap_or(0);
        let x = self.embed(ids)?.reshape((b, t, self.config.hidden_size))?;
        let rope = self.rope_tables(offset, t, ids.device())?;
        self.hidden_from(x, cache, &rope, &[])
    }

    /// ids (any shape) → their embedding rows in the compute dtype, (n, hidden) flattened.
    pub fn embed(&self, ids: &Tensor) -> Result<Tensor> {
        let emb = self.params.get("model.embed_tokens.weight")?;
        Ok(emb.index_select(&ids.flatten_all()?, 0)?.to_dtype(self.compute)?)
    }

    /// Input embeddings x (B, T, hidden) → final hidden states, with RoPE tables `rope` for the
    /// T positions ((T, head_dim) or (B, 1, T, head_dim), the multimodal RoPE's), continuing
    /// `cache`'s positions. `inject[i]` = (rows of the flattened B·T tokens, values (rows,
    /// hidden)) is added to the stream after layer i (Qwen3-VL's DeepStack features).
    pub fn hidden_from(
        &self,
        mut x: Tensor,
        mut cache: Option<&mut KvCache>,
        rope: &(Tensor, Tensor),
        inject: &[(Tensor, Tensor)],
    ) -> Result<Tensor> {
        let (b, t, hidden) = x.dims3()?;
        let c = &self.config;
        let offset = cache.as_ref().map(|k| k.pos).unwrap_or(0);
        if offset + t > self.context {
            return Err(config_err(format!(
                "a sequence of {} tokens exceeds the model's context of {}",
                offset + t,
                self.context
            )));
        }
        for i in 0..c.num_hidden_layers {
            x = match cache.as_deref_mut() {
                None if self.checkpointing => super::recompute::layer(self, i, &x, rope)?,
                kv => self.layer(i, &x, kv, rope, offset)?,
            };
            if let Some((rows, values)) = inject.get(i) {
                let flat = x.reshape((b * t, hidden))?;
                let values = values.to_dtype(flat.dtype())?;
                x = flat.index_add(rows, &values, 0)?.reshape((b, t, hidden))?;
            }
        }
        if let Some(kv) = cache {
            kv.pos += t;
        }
        let eps = c.rms_norm_eps as f32;
        self.ops.rms_norm(&x, &self.weight("model.norm.weight")?, eps)
    }

    /// Decoder layer `i` on x (B, T, hidden) at absolute positions `offset`.. (the cache's),
    /// with RoPE tables `rope` (cos, sin) for those positions.
    pub(crate) fn layer(
        &self,
        i: usize,
        x: &Tensor,
        cache: Option<&mut KvCache>,
        rope: &(Tensor, Tensor),
        offset: usize,
    ) -> Result<Tensor> {
        let (b, t, _) = x.dims3()?;
        let c = &self.config;
        let (nh, nkv, hd) = (c.num_attention_heads, c.num_key_value_heads, c.head_dim());
        let eps = c.rms_norm_eps as f32;
        let (cos, sin) = rope;
        let scale = 1.0 / (hd as f64).sqrt();
        let n = |s: &str| format!("model.layers.{i}.{s}");
        let g = |s: &str| self.weight(&n(s));
        let h = self.ops.rms_norm(x, &g("input_layernorm.weight")?, eps)?;
        let proj = |s: &str, heads: usize| -> Result<Tensor> {
            let bias = self.bias(&n(&format!("self_attn.{s}.bias")))?;
            let y = self.linear_at(&h, &n(&format!("self_attn.{s}")), bias.as_ref())?;
            Ok(y.reshape((b, t, heads, hd))?.transpose(1, 2)?.contiguous()?)
        };
        let mut q = proj("q_proj", nh)?;
        let mut k = proj("k_proj", nkv)?;
        let v = proj("v_proj", nkv)?;
        if c.is_qwen3() {
            q = self.ops.rms_norm(&q, &g("self_attn.q_norm.weight")?, eps)?;
            k = self.ops.rms_norm(&k, &g("self_attn.k_norm.weight")?, eps)?;
        }
        let q = Self::rope(&q, cos, sin)?.contiguous()?;
        let k = Self::rope(&k, cos, sin)?.contiguous()?;
        let window = c.windows.get(i).copied().flatten();
        let y = match cache {
            None => {
                let k = Self::repeat_kv(k, nh / nkv)?;
                let v = Self::repeat_kv(v, nh / nkv)?;
                self.ops.causal_attention(&q, &k, &v, scale, window)?
            }
            Some(kv) => {
                let (k, v) = kv.append(i, k, v)?;
                let k = Self::repeat_kv(k, nh / nkv)?;
                let v = Self::repeat_kv(v, nh / nkv)?;
                reference::attention_window(&q, &k, &v, scale, offset, window)?
            }
        };
        let y = y.transpose(1, 2)?.reshape((b, t, nh * hd))?;
        let o_bias = self.bias(&n("self_attn.o_proj.bias"))?;
        let y = self.linear_at(&y, &n("self_attn.o_proj"), o_bias.as_ref())?;
        let x = (x + y)?;
        let h = self.ops.rms_norm(&x, &g("post_attention_layernorm.weight")?, eps)?;
        let gate = self.linear_at(&h, &n("mlp.gate_proj"), None)?;
        let up = self.linear_at(&h, &n("mlp.up_proj"), None)?;
        let h = (gate.silu()? * up)?;
        let h = self.linear_at(&h, &n("mlp.down_proj"), None)?;
        Ok((x + h)?)
    }
}

impl super::recompute::Layers for QwenModel {
    fn layer_forward(&self, i: usize, x: &Tensor, rope: &(Tensor, Tensor)) -> Result<Tensor> {
        self.layer(i, x, None, rope, 0)
    }

    fn layer_params(&self) -> &ParamStore {
        &self.params
    }

    fn recomputed(&self) -> &Mutex<Grads> {
        &self.recomputed
    }
}
