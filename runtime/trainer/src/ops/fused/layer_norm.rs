//! Fused LayerNorm over the last dimension (x, weight, bias); the backward recomputes mean and
//! 1/std per row and reduces dw/db over fixed row blocks, added in order.

use candle_core::{CpuStorage, CustomOp3, Layout, Shape, Tensor};
use rayon::prelude::*;

use super::{slice, with_data};

const ROWS: usize = 64;

/// The fused LayerNorm op.
#[derive(Debug, Clone, Copy)]
pub struct LayerNorm {
    /// Variance epsilon.
    pub eps: f32,
}

fn stats(x: &[f32], eps: f32) -> (f32, f32) {
    let n = x.len() as f32;
    let mean = x.iter().sum::<f32>() / n;
    let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
    (mean, 1.0 / (var + eps).sqrt())
}

impl CustomOp3 for LayerNorm {
    fn name(&self) -> &'static str {
        "fused-layer-norm"
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
        let (x, w, b) = (slice(s1, l1)?, slice(s2, l2)?, slice(s3, l3)?);
        let d = w.len();
        let mut y = vec![0f32; x.len()];
        y.par_chunks_mut(d * ROWS).zip(x.par_chunks(d * ROWS)).for_each(|(y, x)| {
            for (y, x) in y.chunks_mut(d).zip(x.chunks(d)) {
                let (mean, rstd) = stats(x, self.eps);
                for i in 0..d {
                    y[i] = (x[i] - mean) * rstd * w[i] + b[i];
                }
            }
        });
        Ok((CpuStorage::F32(y), l1.shape().clone()))
    }

    fn bwd(
        &self,
        x: &Tensor,
        w: &Tensor,
        _b: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let d = w.elem_count();
        let (dx, dw, db) = with_data(x, |x| {
            with_data(w, |w| {
                with_data(grad, |g| {
                    let mut dx = vec![0f32; x.len()];
                    let partials: Vec<(Vec<f32>, Vec<f32>)> = dx
                        .par_chunks_mut(d * ROWS)
                        .zip(x.par_chunks(d * ROWS).zip(g.par_chunks(d * ROWS)))
                        .map(|(dx, (x, g))| {
                            let mut dw = vec![0f32; d];
                            let mut db = vec![0f32; d];
                            for ((dx, x), g) in dx.chunks_mut(d).zip(x.chunks(d)).zip(g.chunks(d)) {
                                let (mean, rstd) = stats(x, self.eps);
                                let mut m1 = 0f32;
                                let mut m2 = 0f32;
                                for i in 0..d {
                                    let xh = (x[i] - mean) * rstd;
                                    let gw = g[i] * w[i];
                                    m1 += gw;
                                    m2 += gw * xh;
                                    dw[i] += g[i] * xh;
                                    db[i] += g[i];
                                }
                                m1 /= d as f32;
                                m2 /= d as f32;
                                for i in 0..d {
                                    let xh = (x[i] - mean) * rstd;
                                    dx[i] = rstd * (g[i] * w[i] - m1 - xh * m2);
                                }
                            }
                            (dw, db)
                        })
                        .collect();
                    let mut dw = vec![0f32; d];
                    let mut db = vec![0f32; d];
                    for (pw, pb) in &partials {
                        for i in 0..d {
                            dw[i] += pw[i];
                            db[i] += pb[i];
                        }
                    }
                    Ok((dx, dw, db))
                })
            })
        })?;
        let dev = x.device();
        Ok((
            Some(Tensor::from_vec(dx, x.shape(), dev)?),
            Some(Tensor::from_vec(dw, w.shape(), dev)?),
            Some(Tensor::from_vec(db, w.shape(), dev)?),
        ))
    }
}
