//! Fused Linear `y = x·wᵀ (+ b)` over the last dimension of an N-D input (no reshape nodes), calling gemm directly: the bias is added by
//! the product itself, `dx = g·w`, `dw = gᵀ·x` use strided views (no transposed copies) and the
//! bias gradient is a column sum in fixed row order.

use candle_core::{CpuStorage, CustomOp2, CustomOp3, Layout, Shape, Tensor};

use super::matmul::{View, matmul};
use super::{slice, with_data};

/// Linear with bias: (x (..., K), w (O, K), b (O)) → (..., O).
#[derive(Debug, Clone, Copy)]
pub struct Linear;

/// Linear without bias: (x (..., K), w (O, K)) → (..., O).
#[derive(Debug, Clone, Copy)]
pub struct LinearNoBias;

fn forward(
    x: &[f32],
    xl: &Layout,
    w: &[f32],
    wl: &Layout,
    b: Option<&[f32]>,
) -> candle_core::Result<(CpuStorage, Shape)> {
    let (n, k) = rows_cols(xl.shape())?;
    let (o, k2) = wl.shape().dims2()?;
    if k != k2 {
        return Err(candle_core::Error::Msg(format!(
            "fused linear: x has {k} columns, w has {k2}"
        )));
    }
    let mut y = vec![0f32; n * o];
    if let Some(b) = b {
        for row in y.chunks_mut(o) {
            row.copy_from_slice(b);
        }
    }
    let lhs = View { data: x, rows: n, cols: k, rs: k, cs: 1 };
    let rhs = View { data: w, rows: k, cols: o, rs: 1, cs: k };
    matmul(&mut y, lhs, rhs, b.is_some(), true)?;
    let mut dims = xl.dims().to_vec();
    if let Some(last) = dims.last_mut() {
        *last = o;
    }
    Ok((CpuStorage::F32(y), Shape::from(dims)))
}

/// (rows, last dimension) of an N-D shape.
fn rows_cols(shape: &Shape) -> candle_core::Result<(usize, usize)> {
    let k = *shape
        .dims()
        .last()
        .ok_or_else(|| candle_core::Error::Msg("fused linear: scalar input".into()))?;
    Ok((shape.elem_count() / k.max(1), k))
}

/// (dx, dw, db) for y = x·wᵀ + b.
fn backward(
    x: &Tensor,
    w: &Tensor,
    grad: &Tensor,
    bias: bool,
) -> candle_core::Result<(Tensor, Tensor, Option<Tensor>)> {
    let (n, k) = rows_cols(x.shape())?;
    let (o, _) = w.dims2()?;
    let (dx, dw, db) = with_data(x, |xs| {
        with_data(w, |ws| {
            with_data(grad, |g| {
                let mut dx = vec![0f32; n * k];
                matmul(
                    &mut dx,
                    View { data: g, rows: n, cols: o, rs: o, cs: 1 },
                    View { data: ws, rows: o, cols: k, rs: k, cs: 1 },
                    false,
                    true,
                )?;
                let mut dw = vec![0f32; o * k];
                matmul(
                    &mut dw,
                    View { data: g, rows: o, cols: n, rs: 1, cs: o },
                    View { data: xs, rows: n, cols: k, rs: k, cs: 1 },
                    false,
                    true,
                )?;
                let db = bias.then(|| {
                    let mut db = vec![0f32; o];
                    for row in g.chunks(o) {
                        for (d, &v) in db.iter_mut().zip(row) {
                            *d += v;
                        }
                    }
                    db
                });
                Ok((dx, dw, db))
            })
        })
    })?;
    let dev = x.device();
    let db = match db {
        Some(db) => Some(Tensor::from_vec(db, o, dev)?),
        None => None,
    };
    Ok((Tensor::from_vec(dx, x.shape(), dev)?, Tensor::from_vec(dw, (o, k), dev)?, db))
}

impl CustomOp3 for Linear {
    fn name(&self) -> &'static str {
        "fused-linear"
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
        forward(slice(s1, l1)?, l1, slice(s2, l2)?, l2, Some(slice(s3, l3)?))
    }

    fn bwd(
        &self,
        x: &Tensor,
        w: &Tensor,
        _b: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let (dx, dw, db) = backward(x, w, grad, true)?;
        Ok((Some(dx), Some(dw), db))
    }
}

impl CustomOp2 for LinearNoBias {
    fn name(&self) -> &'static str {
        "fused-linear-no-bias"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        forward(slice(s1, l1)?, l1, slice(s2, l2)?, l2, None)
    }

    fn bwd(
        &self,
        x: &Tensor,
        w: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
        let (dx, dw, _) = backward(x, w, grad, false)?;
        Ok((Some(dx), Some(dw)))
    }
}
