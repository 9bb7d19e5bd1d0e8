//! Fused causal self-attention for training: q, k, v (B, H, T, D) → softmax(q·kᵀ·scale + causal)·v.
//! One (batch, head) per rayon task; the masked upper triangle is never computed; the backward
//! recomputes the probabilities row by row instead of storing them.

use candle_core::{CpuStorage, CustomOp3, Layout, Shape, Tensor};
use rayon::prelude::*;

use super::{axpy, dot, slice, with_data};

/// The fused op.
#[derive(Debug, Clone, Copy)]
pub struct CausalAttention {
    /// Score scale, usually 1/√D.
    pub scale: f32,
}

/// Row i of the probabilities (length i + 1) into `p`.
fn probs(q: &[f32], k: &[f32], d: usize, i: usize, scale: f32, p: &mut [f32]) {
    let qi = &q[i * d..(i + 1) * d];
    let mut m = f32::NEG_INFINITY;
    for j in 0..=i {
        let s = dot(qi, &k[j * d..(j + 1) * d]) * scale;
        p[j] = s;
        m = m.max(s);
    }
    let mut z = 0f32;
    for pj in p[..=i].iter_mut() {
        *pj = (*pj - m).exp();
        z += *pj;
    }
    let inv = 1.0 / z;
    for pj in p[..=i].iter_mut() {
        *pj *= inv;
    }
}

fn dims(l: &Layout) -> candle_core::Result<(usize, usize, usize, usize)> {
    l.shape().dims4()
}

impl CustomOp3 for CausalAttention {
    fn name(&self) -> &'static str {
        "fused-causal-attention"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (q, k, v) = (slice(s1, l1)?, slice(s2, l2)?, slice(s3, l3)?);
        let (_, _, t, d) = dims(l1)?;
        if l2.shape() != l1.shape() || l3.shape() != l1.shape() {
            return Err(candle_core::Error::Msg("fused attention: q, k, v shapes differ".into()));
        }
        let mut out = vec![0f32; q.len()];
        let td = t * d;
        out.par_chunks_mut(td).enumerate().for_each(|(bh, o)| {
            let (q, k, v) = (
                &q[bh * td..(bh + 1) * td],
                &k[bh * td..(bh + 1) * td],
                &v[bh * td..(bh + 1) * td],
            );
            let mut p = vec![0f32; t];
            for i in 0..t {
                probs(q, k, d, i, self.scale, &mut p);
                let oi = &mut o[i * d..(i + 1) * d];
                for j in 0..=i {
                    axpy(p[j], &v[j * d..(j + 1) * d], oi);
                }
            }
        });
        Ok((CpuStorage::F32(out), l1.shape().clone()))
    }

    fn bwd(
        &self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let (_, _, t, d) = q.dims4()?;
        let td = t * d;
        let scale = self.scale;
        let n = q.elem_count();
        let (dq, dk, dv) = with_data(q, |q| {
            with_data(k, |k| {
                with_data(v, |v| {
                    with_data(grad, |g| {
                        let mut dq = vec![0f32; n];
                        let mut dk = vec![0f32; n];
                        let mut dv = vec![0f32; n];
                        dq.par_chunks_mut(td)
                            .zip(dk.par_chunks_mut(td).zip(dv.par_chunks_mut(td)))
                            .enumerate()
                            .for_each(|(bh, (dq, (dk, dv)))| {
                                let r = bh * td..(bh + 1) * td;
                                let (q, k, v, g) =
                                    (&q[r.clone()], &k[r.clone()], &v[r.clone()], &g[r]);
                                let mut p = vec![0f32; t];
                                let mut dp = vec![0f32; t];
                                for i in 0..t {
                                    probs(q, k, d, i, scale, &mut p);
                                    let gi = &g[i * d..(i + 1) * d];
                                    let mut sum = 0f32;
                                    for j in 0..=i {
                                        dp[j] = dot(gi, &v[j * d..(j + 1) * d]);
                                        sum += p[j] * dp[j];
                                    }
                                    let qi = &q[i * d..(i + 1) * d];
                                    for j in 0..=i {
                                        let ds = p[j] * (dp[j] - sum) * scale;
                                        axpy(
                                            ds,
                                            &k[j * d..(j + 1) * d],
                                            &mut dq[i * d..(i + 1) * d],
                                        );
                                        axpy(ds, qi, &mut dk[j * d..(j + 1) * d]);
                                        axpy(p[j], gi, &mut dv[j * d..(j + 1) * d]);
                                    }
                                }
                            });
                        Ok((dq, dk, dv))
                    })
                })
            })
        })?;
        let dev = q.device();
        Ok((
            Some(Tensor::from_vec(dq, q.shape(), dev)?),
            Some(Tensor::from_vec(dk, q.shape(), dev)?),
            Some(Tensor::from_vec(dv, q.shape(), dev)?),
        ))
    }
}
