//! The vision tower's attention and activations on the CPU, on the decoder's vector kernels
//! (`decode::kernels`, `decode::softmax`) and rayon's threads, where candle's path spent most of
//! a screenshot's time outside its matrix products: a bidirectional attention over each image's
//! patches that never materialises a head's score matrix (each query row scored, normalised and
//! summed in one pass, rows shared among the threads), and GELU (tanh) and SiLU through the
//! decoder's `exp` in parallel, where candle runs libm's `tanhf` on one thread. The same maths as
//! transformers' (`sdpa` attention, `gelu_pytorch_tanh`, `silu`), to within float rounding
//! (bench/vision-parity.sh tower holds them to 1e-4).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use candle_core::{DType, Tensor, TensorId};
use rayon::prelude::*;

use crate::decode::dense::Dense;
use crate::decode::softmax::{attention as scaled_softmax, exp};
use crate::error::Result;

/// Whether `t` is an f32 tensor on the CPU (this module's path); else candle's.
pub(super) fn applies(t: &Tensor) -> bool {
    t.device().is_cpu() && t.dtype() == DType::F32
}

/// Attention of q, k, v (n, heads, hd) with each segment `seg[i]..seg[i + 1]` attending to
/// itself only, scores scaled by `scale`: (n, heads · hd).
pub(super) fn attend(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    seg: &[usize],
    scale: f32,
) -> Result<Tensor> {
    let (n, heads, hd) = q.dims3()?;
    let width = heads * hd;
    let flat = |t: &Tensor| -> Result<Vec<f32>> { Ok(t.flatten_all()?.to_vec1::<f32>()?) };
    let (q, k, v) = (flat(q)?, flat(k)?, flat(v)?);
    let mut out = vec![0f32; n * width];
    for w in seg.windows(2) {
        let (start, len) = (w[0], w[1].saturating_sub(w[0]));
        if len == 0 {
            continue;
        }
        // Head by head (a head's keys and values stay in the core's cache while its rows are
        // scored), heads shared among the threads.
        let heads_out: Vec<Vec<f32>> = (0..heads)
            .into_par_iter()
            .map(|h| {
                let at =
                    |j: usize| (start + j) * width + h * hd..(start + j) * width + (h + 1) * hd;
                // The head's queries and keys row by row, its values transposed.
                let mut qh = Vec::with_capacity(len * hd);
                let mut kh = Vec::with_capacity(len * hd);
                let mut vt = vec![0f32; hd * len];
                for j in 0..len {
                    qh.extend_from_slice(&q[at(j)]);
                    kh.extend_from_slice(&k[at(j)]);
                    for (i, &x) in v[at(j)].iter().enumerate() {
                        vt[i * len + j] = x;
                    }
                }
                // Scores (len, len) = q·kᵀ, each row scaled and normalised, then · v.
                let mut scores = Dense::new(&kh, hd, None).apply(&qh);
                for row in scores.chunks_exact_mut(len) {
                    scaled_softmax(row, scale, 0.0, len - 1);
                }
                Dense::new(&vt, len, None).apply(&scores)
            })
            .collect();
        for (h, o) in heads_out.iter().enumerate() {
            for (r, row) in o.chunks_exact(hd).enumerate() {
                let at = (start + r) * width + h * hd;
                out[at..at + hd].copy_from_slice(row);
            }
        }
    }
    Ok(Tensor::from_vec(out, (n, width), cpu())?)
}

/// Where this module's tensors are made.
fn cpu() -> &'static candle_core::Device {
    &candle_core::Device::Cpu
}

/// The tower's linear layers packed for the decoder's product, each on first use (the tower
/// never trains, so a packing stays true): shared by every clone of the tower.
#[derive(Debug, Clone, Default)]
pub(crate) struct Linears(Arc<Mutex<HashMap<TensorId, Arc<Dense>>>>);

impl Linears {
    /// `x (rows, k) · wᵀ + b`: on the packed product where this module applies, else candle's.
    pub(crate) fn apply(&self, x: &Tensor, w: &Tensor, b: Option<&Tensor>) -> Result<Tensor> {
        if !applies(x) || !applies(w) || x.rank() != 2 {
            return crate::ops::reference::linear(x, w, b);
        }
        let (rows, k) = x.dims2()?;
        let n = w.dim(0)?;
        let held = self.0.lock().unwrap_or_else(PoisonError::into_inner).get(&w.id()).cloned();
        let dense = match held {
            Some(d) => d,
            None => {
                let flat =
                    |t: &Tensor| -> Result<Vec<f32>> { Ok(t.flatten_all()?.to_vec1::<f32>()?) };
                let bias = b.map(flat).transpose()?;
                let d = Arc::new(Dense::new(&flat(w)?, k, bias));
                self.0.lock().unwrap_or_else(PoisonError::into_inner).insert(w.id(), d.clone());
                d
            }
        };
        let out = dense.apply(&x.flatten_all()?.to_vec1::<f32>()?);
        Ok(Tensor::from_vec(out, (rows, n), cpu())?)
    }
}

/// An activation computed here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Act {
    /// `gelu_pytorch_tanh`: ½x(1 + tanh(√(2/π)(x + 0.044715x³))) = x / (1 + e^(−2z)).
    GeluTanh,
    /// x / (1 + e^(−x)).
    Silu,
}

/// `act` of every element of `t`, in parallel.
pub(super) fn activate(t: &Tensor, act: Act) -> Result<Tensor> {
    let shape = t.shape().clone();
    let mut x = t.flatten_all()?.to_vec1::<f32>()?;
    x.par_chunks_mut(16 * 1024).for_each(|part| apply(part, act));
    Ok(Tensor::from_vec(x, shape, cpu())?)
}

crate::decode::wide::widest! {
    fn apply(x: &mut [f32], act: Act) {
        const C: f32 = 0.797_884_6; // √(2/π)
        match act {
            Act::GeluTanh => {
                for v in x.iter_mut() {
                    let z = C * (*v + 0.044_715 * *v * *v * *v);
                    *v /= 1.0 + exp(-2.0 * z);
                }
            }
            Act::Silu => {
                for v in x.iter_mut() {
                    *v /= 1.0 + exp(-*v);
                }
            }
        }
    }
}
