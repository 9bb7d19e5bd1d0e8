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
    /// The transposed matrix over the same data.
    fn t(self) -> Self {
        View { rows: self.cols, cols: self.rows, rs: self.cs, cs: self.rs, ..self }
    }

    fn fits(&self) -> bool {
        self.rows == 0
            || self.cols == 0
            || (self.rows - 1) * self.rs + (self.cols - 1) * self.cs < self.data.len()
    }
}

/// Which of gemm's kernel sets runs a product.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernels {
    /// gemm's choice for this CPU: AVX-512 where it has it and the shape allows the same bits,
    /// AVX2+FMA otherwise (vendor/gemm-common).
    Dispatched,
    /// The AVX2+FMA kernels whatever the CPU has: what the dispatched ones must match bit for
    /// bit (`tests/all/cpu_independent.rs`). An error on a CPU without AVX2 and FMA.
    Avx2,
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
    matmul_on(Kernels::Dispatched, dst, lhs, rhs, accumulate, parallel)
}

/// [`matmul`] on a chosen kernel set.
pub fn matmul_on(
    kernels: Kernels,
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
    let (kernel, transpose): (GemmFn, bool) = match kernels {
        Kernels::Dispatched => (gemm::gemm::<f32>, false),
        // `gemm::gemm`'s own preamble for a row-major dst: it transposes the product (dstᵀ =
        // rhsᵀ·lhsᵀ) when n > 1, as the kernels prefer a column-major dst.
        Kernels::Avx2 => (avx2()?, n > 1),
    };
    let (lhs, rhs, (m, n), (dst_cs, dst_rs)) = match transpose {
        false => (lhs, rhs, (m, n), (1, n as isize)),
        true => (rhs.t(), lhs.t(), (n, m), (n as isize, 1)),
    };
    // SAFETY: dst is m×n contiguous (checked above; transposing swaps its strides with m and
    // n), and `fits` proves every lhs/rhs element addressed by the strides is inside its slice
    // (a transposed view addresses the same elements). gemm reads lhs/rhs and writes dst only;
    // the AVX2 kernels are only handed out on a CPU that has AVX2 and FMA.
    unsafe {
        kernel(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            dst_cs,
            dst_rs,
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

/// gemm's entry point, as `gemm::gemm::<f32>` and the kernel sets of gemm-f32 share it.
type GemmFn = unsafe fn(
    usize,
    usize,
    usize,
    *mut f32,
    isize,
    isize,
    bool,
    *const f32,
    isize,
    isize,
    *const f32,
    isize,
    isize,
    f32,
    f32,
    bool,
    bool,
    bool,
    Parallelism,
);

#[cfg(target_arch = "x86_64")]
fn avx2() -> candle_core::Result<GemmFn> {
    if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
        Ok(gemm_f32::gemm::f32::gemm_basic_avx2)
    } else {
        Err(candle_core::Error::Msg("fused matmul: this CPU has no AVX2 and FMA".into()))
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn avx2() -> candle_core::Result<GemmFn> {
    Err(candle_core::Error::Msg("fused matmul: AVX2 kernels exist on x86-64 only".into()))
}
