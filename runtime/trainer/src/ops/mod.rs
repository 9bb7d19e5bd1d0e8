//! Training-safe tensor operations, chosen by device: fused CPU kernels with hand-written
//! backward passes on the CPU, candle's differentiable slow-op compositions elsewhere.
//!
//! Never use candle's fast `softmax_last_dim`, `layer_norm`, `rms_norm`, `rope` or `sdpa` here:
//! they silently drop gradients (see docs/trainer.md).

pub mod fused;
pub mod reference;

use candle_core::{DType, Device, Tensor};
use serde::{Deserialize, Serialize};

use crate::error::Result;

/// Which implementation of the hot operations a model uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpsMode {
    /// Fused CPU kernels when the tensors live on the CPU, reference ops otherwise.
    #[default]
    Auto,
    /// Always candle's differentiable slow-op compositions (the reference implementation).
    Reference,
}

/// The operation set a model calls; resolves [`OpsMode`] against the device once.
#[derive(Debug, Clone, Copy)]
pub struct Ops {
    fused: bool,
}

impl Ops {
    /// Pick the implementation for `device`.
    pub fn new(mode: OpsMode, device: &Device) -> Self {
        let fused = match mode {
            OpsMode::Auto => device.is_cpu(),
            OpsMode::Reference => false,
        };
        Ops { fused }
    }

    /// Whether the fused CPU kernels are in use.
    pub fn is_fused(&self) -> bool {
        self.fused
    }

    /// `x · wᵀ + b` over the last dimension. `x`: (..., in), `w`: (out, in), `b`: (out).
    pub fn linear(&self, x: &Tensor, w: &Tensor, b: Option<&Tensor>) -> Result<Tensor> {
        if self.fused && x.dtype() == DType::F32 {
            let (x, w) = (x.contiguous()?, w.contiguous()?);
            return Ok(match b {
                Some(b) => x.apply_op3(&w, &b.contiguous()?, fused::linear::Linear)?,
                None => x.apply_op2(&w, fused::linear::LinearNoBias)?,
            });
        }
        reference::linear(x, w, b)
    }

    /// LayerNorm over the last dimension with weight and bias.
    pub fn layer_norm(&self, x: &Tensor, w: &Tensor, b: &Tensor, eps: f32) -> Result<Tensor> {
        if self.fused && x.dtype() == DType::F32 {
            let op = fused::layer_norm::LayerNorm { eps };
            return Ok(x.contiguous()?.apply_op3(&w.contiguous()?, &b.contiguous()?, op)?);
        }
        reference::layer_norm(x, w, b, eps)
    }

    /// RMSNorm over the last dimension.
    pub fn rms_norm(&self, x: &Tensor, w: &Tensor, eps: f32) -> Result<Tensor> {
        reference::rms_norm(x, w, eps)
    }

    /// GELU, tanh approximation.
    pub fn gelu(&self, x: &Tensor) -> Result<Tensor> {
        if self.fused && x.dtype() == DType::F32 {
            return Ok(x.contiguous()?.apply_op1(fused::gelu::Gelu)?);
        }
        reference::gelu(x)
    }

    /// Causal self-attention for training: q, k, v are (B, H, T, D), all with the same T;
    /// with a `window`, each query sees only the last `window` positions (itself included).
    pub fn causal_attention(
        &self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        scale: f64,
        window: Option<usize>,
    ) -> Result<Tensor> {
        reference::attention_window(q, k, v, scale, 0, window)
    }

    /// Causal self-attention from a packed projection: qkv (B, T, 3·H·D) laid out as
    /// [q heads | k heads | v heads] → (B, T, H·D). The fused path reads it in place.
    /// `alibi` adds ALiBi's per-head distance penalty to the scores.
    pub fn causal_attention_qkv(
        &self,
        qkv: &Tensor,
        heads: usize,
        scale: f64,
        alibi: bool,
    ) -> Result<Tensor> {
        if self.fused && qkv.dtype() == DType::F32 {
            let op = fused::attention::CausalAttentionQkv::new(heads, scale as f32, alibi);
            return Ok(qkv.contiguous()?.apply_op1(op)?);
        }
        let (b, t, w) = qkv.dims3()?;
        let d = w / (3 * heads).max(1);
        let qkv = qkv.reshape((b, t, 3, heads, d))?;
        let part = |j: usize| -> Result<Tensor> {
            Ok(qkv.narrow(2, j, 1)?.squeeze(2)?.transpose(1, 2)?.contiguous()?)
        };
        let y = if alibi {
            reference::attention_alibi(&part(0)?, &part(1)?, &part(2)?, scale, 0)?
        } else {
            reference::attention(&part(0)?, &part(1)?, &part(2)?, scale, 0)?
        };
        Ok(y.transpose(1, 2)?.reshape((b, t, heads * d))?)
    }

    /// Entropy of each row of softmax(logits) (N, V), as a metric (no gradient).
    pub fn entropy_metric(&self, logits: &Tensor) -> Result<Vec<f32>> {
        if self.fused && logits.dtype() == DType::F32 {
            return Ok(fused::logprobs::entropy_rows(&logits.detach())?);
        }
        Ok(reference::entropy(&logits.detach())?.to_vec1()?)
    }

    /// Log-probability of `targets` (N, u32) under `logits` (N, V): returns (N).
    pub fn token_logprobs(&self, logits: &Tensor, targets: &Tensor) -> Result<Tensor> {
        if self.fused && logits.dtype() == DType::F32 {
            let t = targets.to_dtype(DType::U32)?.contiguous()?;
            return Ok(logits.contiguous()?.apply_op2(&t, fused::logprobs::TokenLogprobs)?);
        }
        reference::token_logprobs(logits, targets)
    }
}
