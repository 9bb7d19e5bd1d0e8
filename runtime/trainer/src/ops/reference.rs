//! Reference implementations built only from differentiable candle ops. They run on any device
//! and serve as the ground truth for the fused kernels' gradient checks.

use candle_core::{D, DType, Device, Tensor};

use crate::error::Result;

/// `x · wᵀ + b` over the last dimension, as one 2-D matmul (avoids candle's broadcast matmul
/// whose backward reduces over the batch slowly).
pub fn linear(x: &Tensor, w: &Tensor, b: Option<&Tensor>) -> Result<Tensor> {
    let dims = x.dims().to_vec();
    let k = *dims.last().unwrap_or(&1);
    let n: usize = dims.iter().product::<usize>() / k.max(1);
    let out = w.dim(0)?;
    let x2 = x.reshape((n, k))?;
    let mut y = x2.matmul(&w.t()?)?;
    if let Some(b) = b {
        y = y.broadcast_add(b)?;
    }
    let mut out_dims = dims;
    if let Some(last) = out_dims.last_mut() {
        *last = out;
    }
    Ok(y.reshape(out_dims)?)
}

/// LayerNorm via `candle_nn::ops::layer_norm_slow` (differentiable).
pub fn layer_norm(x: &Tensor, w: &Tensor, b: &Tensor, eps: f32) -> Result<Tensor> {
    Ok(candle_nn::ops::layer_norm_slow(x, w, b, eps)?)
}

/// RMSNorm via `candle_nn::ops::rms_norm_slow` (differentiable).
pub fn rms_norm(x: &Tensor, w: &Tensor, eps: f32) -> Result<Tensor> {
    Ok(candle_nn::ops::rms_norm_slow(x, w, eps)?)
}

/// GELU with the tanh approximation (candle's op has a backward).
pub fn gelu(x: &Tensor) -> Result<Tensor> {
    Ok(x.gelu()?)
}

/// An additive mask (tq, tk): query i (at absolute position `offset + i`) sees keys 0..=offset+i.
pub fn causal_mask(tq: usize, tk: usize, offset: usize, device: &Device) -> Result<Tensor> {
    let mut m = vec![0f32; tq * tk];
    for i in 0..tq {
        for j in 0..tk {
            if j > offset + i {
                m[i * tk + j] = f32::NEG_INFINITY;
            }
        }
    }
    Ok(Tensor::from_vec(m, (tq, tk), device)?)
}

/// The additive ALiBi bias and causal mask (H, tq, tk): query i at absolute position
/// `offset + i` scores key j with −slope_h·(offset + i − j), and −∞ for j > offset + i.
pub fn alibi_bias(
    heads: usize,
    tq: usize,
    tk: usize,
    offset: usize,
    device: &Device,
) -> Result<Tensor> {
    let mut m = vec![0f32; heads * tq * tk];
    for h in 0..heads {
        let slope = super::fused::attention::alibi_slope(h, heads);
        for i in 0..tq {
            for j in 0..tk {
                m[(h * tq + i) * tk + j] = if j > offset + i {
                    f32::NEG_INFINITY
                } else {
                    -slope * (offset + i - j) as f32
                };
            }
        }
    }
    Ok(Tensor::from_vec(m, (heads, tq, tk), device)?)
}

/// Causal attention with ALiBi (q: (B, H, tq, D); k, v: (B, H, tk, D)), as
/// [`attention`] otherwise.
pub fn attention_alibi(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    scale: f64,
    offset: usize,
) -> Result<Tensor> {
    let (heads, tq, tk) = (q.dim(1)?, q.dim(2)?, k.dim(2)?);
    let scores = (q.matmul(&k.t()?)? * scale)?;
    let bias = alibi_bias(heads, tq, tk, offset, q.device())?.to_dtype(scores.dtype())?;
    let p = candle_nn::ops::softmax(&scores.broadcast_add(&bias)?, D::Minus1)?;
    Ok(p.matmul(v)?)
}

/// Attention with a causal mask. q: (B, H, tq, D); k, v: (B, H, tk, D); query i sits at
/// absolute position `offset + i` and the keys at 0..tk.
pub fn attention(q: &Tensor, k: &Tensor, v: &Tensor, scale: f64, offset: usize) -> Result<Tensor> {
    let tq = q.dim(2)?;
    let tk = k.dim(2)?;
    let scores = (q.matmul(&k.t()?)? * scale)?;
    let scores = if tq > 1 || offset + 1 < tk {
        let mask = causal_mask(tq, tk, offset, q.device())?.to_dtype(scores.dtype())?;
        scores.broadcast_add(&mask)?
    } else {
        scores
    };
    Ok(softmax_f32(&scores)?.matmul(v)?)
}

/// [`attention`] where query i (at `offset + i`) sees only keys j with
/// `j > offset + i − window` (transformers' sliding window); `None`: all earlier keys.
pub fn attention_window(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    scale: f64,
    offset: usize,
    window: Option<usize>,
) -> Result<Tensor> {
    let Some(w) = window else { return attention(q, k, v, scale, offset) };
    let (tq, tk) = (q.dim(2)?, k.dim(2)?);
    let mut m = vec![0f32; tq * tk];
    for i in 0..tq {
        for j in 0..tk {
            if j > offset + i || j + w <= offset + i {
                m[i * tk + j] = f32::NEG_INFINITY;
            }
        }
    }
    let mask = Tensor::from_vec(m, (tq, tk), q.device())?;
    let scores = (q.matmul(&k.t()?)? * scale)?;
    let scores = scores.broadcast_add(&mask.to_dtype(scores.dtype())?)?;
    Ok(softmax_f32(&scores)?.matmul(v)?)
}

/// Softmax over the last dimension computed in f32 and returned in the input's dtype, as
/// transformers' eager attention does for bf16 and f16 scores.
fn softmax_f32(scores: &Tensor) -> Result<Tensor> {
    let dt = scores.dtype();
    let p = candle_nn::ops::softmax(&scores.to_dtype(DType::F32)?, D::Minus1)?;
    Ok(p.to_dtype(dt)?)
}

/// Log-probability of each target under the logits: `log_softmax(logits)[i, targets[i]]`.
pub fn token_logprobs(logits: &Tensor, targets: &Tensor) -> Result<Tensor> {
    let lsm = candle_nn::ops::log_softmax(&logits.to_dtype(DType::F32)?, D::Minus1)?;
    let idx = targets.to_dtype(DType::U32)?.unsqueeze(1)?;
    Ok(lsm.gather(&idx, 1)?.squeeze(1)?)
}

/// Per-row entropy of the softmax of `logits` (N, V): `-Σ p log p`, differentiable.
pub fn entropy(logits: &Tensor) -> Result<Tensor> {
    let lsm = candle_nn::ops::log_softmax(&logits.to_dtype(DType::F32)?, D::Minus1)?;
    let p = lsm.exp()?;
    Ok((p * lsm)?.sum(D::Minus1)?.neg()?)
}
