//! Row-stable dense layers for decoding: `x · wᵀ + b` with every output element one chain of
//! fused multiply-adds over the inputs in order (from zero, the bias added last), whatever the
//! rows around it, the block it falls in, the thread count or the CPU. So a prompt's prefill,
//! a batch of one-token steps and a row alone all give the same bits, and a cached prefix is
//! exactly what recomputing it would give.
//!
//! The weights are kept transposed, (k, n), so a register holds eight neighbouring outputs of
//! one row: the kernel broadcasts an input and multiply-adds it into R rows × C registers, like
//! gemm's micro-kernels but without splitting any sum (gemm's sums depend on the matrix shape).

use rayon::prelude::*;

/// Outputs per AVX2 register.
const LANES: usize = 8;

/// Outputs per AVX-512 register.
#[cfg(target_arch = "x86_64")]
const WIDE: usize = super::avx512::LANES;
#[cfg(not(target_arch = "x86_64"))]
const WIDE: usize = 16;

/// Weights of one column tile at most (half a core's L2 on current x86 server parts).
const TILE_BYTES: usize = 512 << 10;

/// Multiply-adds below which a product runs on the calling thread.
const PARALLEL_WORK: usize = 1 << 17;

/// A dense layer's weights, transposed for the kernel: `wt[i·n + j]` is `w[j][i]`.
#[derive(Debug, Clone)]
pub struct Dense {
    wt: Vec<f32>,
    k: usize,
    n: usize,
    bias: Option<Vec<f32>>,
}

impl Dense {
    /// From `w` (n, k) row-major, as the parameter store holds it, and an optional bias (n).
    pub fn new(w: &[f32], k: usize, bias: Option<Vec<f32>>) -> Dense {
        let n = w.len() / k.max(1);
        let mut wt = vec![0f32; k * n];
        for (j, row) in w.chunks_exact(k.max(1)).enumerate() {
            for (i, &v) in row.iter().enumerate() {
                wt[i * n + j] = v;
            }
        }
        Dense { wt, k, n, bias }
    }

    /// `x (rows, k) · wᵀ + b` → (rows, n). Rows are shared out among rayon's threads where
    /// there is enough work; a row's sums never depend on the split.
    pub fn apply(&self, x: &[f32]) -> Vec<f32> {
        let (k, n) = (self.k, self.n);
        let rows = x.len() / k.max(1);
        let mut out = vec![0f32; rows * n];
        let threads = rayon::current_num_threads().max(1);
        if rows * n * k < PARALLEL_WORK || threads == 1 || rows < 2 {
            self.rows(x, &mut out);
            return out;
        }
        // Whole blocks of eight rows per thread where there are enough.
        let per = rows.div_ceil(threads).next_multiple_of(8).min(rows).max(1);
        out.par_chunks_mut(per * n).enumerate().for_each(|(c, chunk)| {
            let r0 = c * per;
            let nr = chunk.len() / n;
            self.rows(&x[r0 * k..(r0 + nr) * k], chunk);
        });
        out
    }

    /// The product of `x`'s rows into `out` on this thread: blocks of rows × 3 registers of
    /// outputs, then single rows × 8 registers, on sixteen-lane registers where the CPU has
    /// them, then eight-lane ones, the rest element by element.
    fn rows(&self, x: &[f32], out: &mut [f32]) {
        let n = self.n;
        let wide = super::kernels::avx512_available();
        let mut j = 0;
        if wide {
            j = self.columns(x, out, 0, n - n % WIDE, WIDE);
        }
        let j = self.columns(x, out, j, n - n % LANES, LANES);
        let (k, rows) = (self.k, out.len() / n.max(1));
        for r in 0..rows {
            for j in j..n {
                out[r * n + j] = self.element(&x[r * k..(r + 1) * k], j);
            }
        }
    }

    /// Outputs `from..to` of every row, `lanes` to a register (`to − from` a multiple of it);
    /// returns `to`. Blocks of eight rows where the registers are sixteen lanes wide (and so
    /// thirty-two: 24 accumulators), of four on AVX2's sixteen registers, then single rows.
    fn columns(&self, x: &[f32], out: &mut [f32], from: usize, to: usize, lanes: usize) -> usize {
        let rows = out.len() / self.n.max(1);
        // Many rows over large weights: column tiles whose weights stay in the core's cache
        // while every row uses them, instead of streaming the whole matrix per block of rows.
        let tile = (TILE_BYTES / (4 * self.k.max(1))) / (3 * lanes) * (3 * lanes);
        if rows > 8 && tile > 0 && tile < to - from {
            let mut c = from;
            while c < to {
                let end = (c + tile).min(to);
                self.columns_all(x, out, c, end, lanes);
                c = end;
            }
            return to;
        }
        self.columns_all(x, out, from, to, lanes);
        to
    }

    /// [`Dense::columns`] for all of `from..to` at once.
    fn columns_all(&self, x: &[f32], out: &mut [f32], from: usize, to: usize, lanes: usize) {
        let rows = out.len() / self.n.max(1);
        let mut r = 0;
        if lanes == WIDE {
            while r + 8 <= rows {
                self.strip::<8, 3>(x, out, r, from..to, lanes);
                r += 8;
            }
        }
        while r + 4 <= rows {
            self.strip::<4, 3>(x, out, r, from..to, lanes);
            r += 4;
        }
        for r in r..rows {
            self.strip::<1, 8>(x, out, r, from..to, lanes);
        }
    }

    /// Rows `r..r + R` × outputs `cols`: panels of C registers, then of one.
    fn strip<const R: usize, const C: usize>(
        &self,
        x: &[f32],
        out: &mut [f32],
        r: usize,
        cols: std::ops::Range<usize>,
        lanes: usize,
    ) {
        let x = &x[r * self.k..];
        let mut j = cols.start;
        while j + C * lanes <= cols.end {
            self.panel::<R, C>(x, r, j, lanes, out);
            j += C * lanes;
        }
        while j < cols.end {
            self.panel::<R, 1>(x, r, j, lanes, out);
            j += lanes;
        }
    }

    /// Output `j` of the row `x`: the chain every kernel computes.
    fn element(&self, x: &[f32], j: usize) -> f32 {
        let s =
            x.iter().enumerate().fold(0f32, |s, (i, &xi)| xi.mul_add(self.wt[i * self.n + j], s));
        s + self.bias.as_ref().map_or(0.0, |b| b[j])
    }

    /// Rows `r0..r0 + R` (their inputs from the start of `x`) × outputs `j0..j0 + lanes·C` into
    /// `out`, all in range; `lanes` is [`WIDE`] only where the CPU has AVX-512.
    #[allow(unsafe_code)] // the AVX2 and AVX-512 kernels, after their feature checks
    fn panel<const R: usize, const C: usize>(
        &self,
        x: &[f32],
        r0: usize,
        j0: usize,
        lanes: usize,
        out: &mut [f32],
    ) {
        let (k, n) = (self.k, self.n);
        assert!(x.len() >= R * k && j0 + C * lanes <= n, "dense: a panel out of range");
        assert!(out.len() >= (r0 + R) * n, "dense: output too short");
        #[cfg(target_arch = "x86_64")]
        if super::kernels::avx2_available() {
            let o = &mut out[r0 * n..];
            if lanes == WIDE && super::kernels::avx512_available() {
                // SAFETY: the CPU has AVX-512F; the ranges are checked above.
                unsafe { super::avx512::panel::<R, C>(&self.wt, n, k, x, j0, o) };
            } else {
                // SAFETY: the CPU has AVX2 and FMA; the ranges are checked above.
                unsafe { avx2::panel::<R, C>(&self.wt, n, k, x, j0, o) };
            }
            if let Some(b) = &self.bias {
                for r in 0..R {
                    for (o, &bj) in o[r * n + j0..][..C * lanes].iter_mut().zip(&b[j0..]) {
                        *o += bj;
                    }
                }
            }
            return;
        }
        for r in 0..R {
            for j in j0..j0 + C * lanes {
                out[(r0 + r) * n + j] = self.element(&x[r * k..(r + 1) * k], j);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)] // AVX2 intrinsics: every load and store is inside the checked ranges
mod avx2 {
    //! The panel on AVX2 + FMA registers.
    use std::arch::x86_64::*;

    use super::LANES;

    /// `out[r·n + j0 + e] = Σᵢ x[r·k + i]·wt[i·n + j0 + e]` for r < R, e < 8C, i in order
    /// from 0. Safety: AVX2 and FMA present; `x` holds R·k, `wt` k·n, `out` R·n values, and
    /// j0 + 8C ≤ n.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn panel<const R: usize, const C: usize>(
        wt: &[f32],
        n: usize,
        k: usize,
        x: &[f32],
        j0: usize,
        out: &mut [f32],
    ) {
        let mut acc = [[_mm256_setzero_ps(); C]; R];
        for i in 0..k {
            // SAFETY: i·n + j0 + 8C ≤ (k − 1)·n + n = k·n; r·k + i < R·k.
            unsafe {
                let w: [__m256; C] = std::array::from_fn(|c| {
                    _mm256_loadu_ps(wt.as_ptr().add(i * n + j0 + c * LANES))
                });
                for (r, row) in acc.iter_mut().enumerate() {
                    let xv = _mm256_broadcast_ss(&*x.as_ptr().add(r * k + i));
                    for (a, &wc) in row.iter_mut().zip(&w) {
                        *a = _mm256_fmadd_ps(xv, wc, *a);
                    }
                }
            }
        }
        for (r, row) in acc.iter().enumerate() {
            for (c, a) in row.iter().enumerate() {
                // SAFETY: r·n + j0 + 8c + 8 ≤ (R − 1)·n + n.
                unsafe { _mm256_storeu_ps(out.as_mut_ptr().add(r * n + j0 + c * LANES), *a) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::kernels::tests::data;
    use super::*;

    /// Every block shape, a row alone, the element chain and any thread count: the same bits.
    #[test]
    fn every_row_sums_the_same_whatever_the_batch() {
        for (k, n) in [(131, 37), (64, 96), (16, 200), (128, 264), (40, 56)] {
            let w = data(n * k, 7);
            let dense = Dense::new(&w, k, Some(data(n, 3)));
            let x = data(9 * k, 11);
            let all = dense.apply(&x);
            for r in 0..9 {
                let row = &x[r * k..(r + 1) * k];
                assert_eq!(dense.apply(row), all[r * n..(r + 1) * n], "row {r} alone");
                for j in 0..n {
                    let want = dense.element(row, j);
                    assert_eq!(want.to_bits(), all[r * n + j].to_bits(), "({r}, {j})");
                }
            }
            // Eight-lane registers only (what a CPU without AVX-512 runs): the same bits.
            let mut narrow = vec![0f32; 9 * n];
            let done = dense.columns(&x, &mut narrow, 0, n - n % LANES, LANES);
            for r in 0..9 {
                for j in done..n {
                    narrow[r * n + j] = dense.element(&x[r * k..(r + 1) * k], j);
                }
            }
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&narrow), bits(&all), "eight lanes against the widest");
            let big = data(64 * k, 5);
            let many = dense.apply(&big);
            let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
            assert_eq!(many, pool.install(|| dense.apply(&big)));
        }
    }

    /// The product is `x · wᵀ + b`.
    #[test]
    fn it_is_the_product() {
        let (k, n) = (5, 3);
        let w = data(n * k, 2);
        let x = data(2 * k, 4);
        let y = Dense::new(&w, k, Some(vec![1.0, 2.0, 3.0])).apply(&x);
        for r in 0..2 {
            for j in 0..n {
                let want: f32 =
                    (0..k).map(|i| x[r * k + i] * w[j * k + i]).sum::<f32>() + [1.0, 2.0, 3.0][j];
                assert!((y[r * n + j] - want).abs() < 1e-5);
            }
        }
    }
}
