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
