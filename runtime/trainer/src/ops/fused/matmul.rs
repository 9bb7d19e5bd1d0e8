//! A bounds-checked safe wrapper around `gemm::gemm` for row-major f32 matrices with arbitrary
//! strides, used by the fused Linear op to fuse the bias into the product and to compute
//! transposed products without copies.

// `gemm::gemm` is an `unsafe fn` taking raw pointers and strides. This module is the only
// place that calls it: `matmul` checks that every element the strides can reach lies inside
// the given slices before the call, which is the whole safety contract.
#![allow(unsafe_code)]

use gemm::Parallelism;

/// A read-only matrix view: `data[r·rs + c·cs]` for r < rows, c < cols.
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    /// Backing data.
    pub data: &'a [f32],
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// Row stride.
    pub rs: usize,
    /// Column stride.
    pub cs: usize,
}

impl View<'_> {
    fn fits(&self) -> bool {
        self.rows == 0
            || self.cols == 0
            || (self.rows - 1) * self.rs + (self.cols - 1) * self.cs < self.data.len()
    }
}

/// `dst (m × n, row-major, contiguous) = [dst +] lhs (m × k) · rhs (k × n)`.
/// `parallel` lets gemm use the rayon pool (false inside rayon tasks).
/// Panics-free: returns an error when shapes or strides do not fit the slices.
pub fn matmul(
    dst: &mut [f32],
    lhs: View<'_>,
    rhs: View<'_>,
    accumulate: bool,
    parallel: bool,
) -> candle_core::Result<()> {
    let (m, k, n) = (lhs.rows, lhs.cols, rhs.cols);
    if rhs.rows != k || dst.len() != m * n || !lhs.fits() || !rhs.fits() {
        return Err(candle_core::Error::Msg(format!(
            "fused matmul: bad shapes ({m}x{k}) · ({}x{n}) into {}",
            rhs.rows,
            dst.len()
        )));
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    if k == 0 {
        if !accumulate {
            dst.fill(0.0);
        }
        return Ok(());
    }
    let par = if parallel && m * n * k >= 48 * 48 * 48 {
        Parallelism::Rayon(rayon::current_num_threads())
    } else {
        Parallelism::None
    };
    // SAFETY: dst is m×n contiguous (checked above), and `fits` proves every lhs/rhs element
    // addressed by the strides is inside its slice. gemm reads lhs/rhs and writes dst only.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            n as isize,
            accumulate,
            lhs.data.as_ptr(),
            lhs.cs as isize,
            lhs.rs as isize,
            rhs.data.as_ptr(),
            rhs.cs as isize,
            rhs.rs as isize,
            1.0,
            1.0,
            false,
            false,
            false,
            par,
        );
    }
    Ok(())
}
