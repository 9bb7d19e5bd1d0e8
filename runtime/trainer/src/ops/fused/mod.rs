//! Fused CPU kernels (f32, contiguous) with hand-written backward passes. Each one replaces a
//! chain of candle ops whose autograd graph dominated CPU training time (trainer-speed notes).
//! They implement `cpu_fwd` only: [`crate::ops::Ops`] routes CUDA tensors to the reference ops.
//! All parallel work is split into fixed chunks and partial sums are added in a fixed order, so
//! results are bit-reproducible run to run (exact resume depends on it).

pub mod attention;
pub mod gelu;
pub mod layer_norm;
pub mod linear;
pub mod logprobs;
pub mod matmul;

use candle_core::{CpuStorage, Layout, Storage, Tensor};

/// The contiguous f32 data a layout points at.
pub(crate) fn slice<'a>(s: &'a CpuStorage, l: &Layout) -> candle_core::Result<&'a [f32]> {
    let data = s.as_slice::<f32>()?;
    match l.contiguous_offsets() {
        Some((a, b)) => Ok(&data[a..b]),
        None => Err(candle_core::Error::Msg("fused op: input is not contiguous".into())),
    }
}

/// Run `f` on the contiguous f32 CPU data of `t` (made contiguous first if needed).
pub(crate) fn with_data<R>(
    t: &Tensor,
    f: impl FnOnce(&[f32]) -> candle_core::Result<R>,
) -> candle_core::Result<R> {
    let t = t.contiguous()?;
    let (storage, layout) = t.storage_and_layout();
    match &*storage {
        Storage::Cpu(cs) => f(slice(cs, layout)?),
        Storage::Cuda(_) | Storage::Metal(_) => {
            Err(candle_core::Error::Msg("fused op: tensor is not on the CPU".into()))
        }
    }
}

/// Dot product with 8 independent accumulators so the loop vectorises.
#[inline]
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let ca = a.chunks_exact(8);
    let cb = b.chunks_exact(8);
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for l in 0..8 {
            acc[l] += x[l] * y[l];
        }
    }
    let mut s = (acc[0] + acc[4]) + (acc[1] + acc[5]) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (x, y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}

/// y += a·x.
#[inline]
pub(crate) fn axpy(a: f32, x: &[f32], y: &mut [f32]) {
    for (y, x) in y.iter_mut().zip(x) {
        *y += a * x;
    }
}
