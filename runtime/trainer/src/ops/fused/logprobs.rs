//! Fused token log-probabilities: logits (N, V) and u32 targets (N) → log p(target) (N), with
//! backward g·(onehot − softmax). Serves the SFT cross-entropy and every RL objective.

use candle_core::{CpuStorage, CustomOp2, Layout, Shape, Tensor};
use rayon::prelude::*;

use super::{slice, with_data};

const ROWS: usize = 16;

/// The fused op.
#[derive(Debug, Clone, Copy)]
pub struct TokenLogprobs;

fn lse(row: &[f32]) -> f32 {
    let m = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    m + row.iter().map(|&x| (x - m).exp()).sum::<f32>().ln()
}

fn targets_of(s: &CpuStorage, l: &Layout) -> candle_core::Result<Vec<usize>> {
    let t = s.as_slice::<u32>()?;
    let (a, b) = l
        .contiguous_offsets()
        .ok_or_else(|| candle_core::Error::Msg("fused logprobs: targets not contiguous".into()))?;
    Ok(t[a..b].iter().map(|&x| x as usize).collect())
}

impl CustomOp2 for TokenLogprobs {
    fn name(&self) -> &'static str {
        "fused-token-logprobs"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let x = slice(s1, l1)?;
        let t = targets_of(s2, l2)?;
        let n = t.len();
        if n == 0 {
            return Ok((CpuStorage::F32(Vec::new()), Shape::from(0)));
        }
        let v = x.len() / n;
        if t.iter().any(|&i| i >= v) {
            return Err(candle_core::Error::Msg("fused logprobs: target id out of range".into()));
        }
        let mut out = vec![0f32; n];
        out.par_chunks_mut(ROWS).zip(x.par_chunks(v * ROWS)).enumerate().for_each(|(c, (o, x))| {
            for (r, (o, row)) in o.iter_mut().zip(x.chunks(v)).enumerate() {
                *o = row[t[c * ROWS + r]] - lse(row);
            }
        });
        Ok((CpuStorage::F32(out), Shape::from(n)))
    }

    fn bwd(
        &self,
        logits: &Tensor,
        targets: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
        let t: Vec<u32> = targets.to_vec1()?;
        let n = t.len();
        let dx = with_data(logits, |x| {
            with_data(grad, |g| {
                let v = x.len() / n.max(1);
                let mut dx = vec![0f32; x.len()];
                dx.par_chunks_mut(v * ROWS).zip(x.par_chunks(v * ROWS)).enumerate().for_each(
                    |(c, (d, x))| {
                        for (r, (d, row)) in d.chunks_mut(v).zip(x.chunks(v)).enumerate() {
                            let i = c * ROWS + r;
                            let l = lse(row);
                            for (d, &x) in d.iter_mut().zip(row) {
                                *d = -g[i] * (x - l).exp();
                            }
                            d[t[i] as usize] += g[i];
                        }
                    },
                );
                Ok(dx)
            })
        })?;
        Ok((Some(Tensor::from_vec(dx, logits.shape(), logits.device())?), None))
    }
}

/// Per-row entropy of softmax(logits) (N, V) without building a graph or temporaries
/// (a metric; the differentiable version is `reference::entropy`).
pub fn entropy_rows(logits: &Tensor) -> candle_core::Result<Vec<f32>> {
    let (n, v) = logits.dims2()?;
    with_data(logits, |x| {
        let mut out = vec![0f32; n];
        out.par_iter_mut().zip(x.par_chunks(v.max(1))).for_each(|(o, row)| {
            let l = lse(row);
            *o = -row.iter().map(|&x| (x - l).exp() * (x - l)).sum::<f32>();
        });
        Ok(out)
    })
}
