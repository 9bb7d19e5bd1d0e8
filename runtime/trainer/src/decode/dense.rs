//! Row-stable dense layers for decoding: `x · wᵀ + b` with every output element one chain of
//! fused multiply-adds over the inputs in order (from zero, the bias added last), whatever the
//! rows around it, the block it falls in, the thread count or the CPU. So a prompt's prefill,
//! a batch of one-token steps and a row alone all give the same bits, and a cached prefix is
//! exactly what recomputing it would give.
//!
//! The weights are kept transposed and packed in strips of [`STRIP`] outputs: strip s holds
//! `w[j][i]` for its outputs j at `i·width + (j − s·STRIP)`, so a kernel reads its strip as one
//! contiguous stream (the hardware prefetcher follows it; rows of a plain (k, n) transpose are
//! n apart). A register holds neighbouring outputs of one row: the kernel broadcasts an input
//! and multiply-adds it into R rows × C registers, like gemm's micro-kernels but without
//! splitting any sum (gemm's sums depend on the matrix shape).

use std::ops::Range;

use rayon::prelude::*;

/// Outputs per AVX2 register.
const LANES: usize = 8;

/// Outputs per AVX-512 register.
#[cfg(target_arch = "x86_64")]
const WIDE: usize = super::avx512::LANES;
#[cfg(not(target_arch = "x86_64"))]
const WIDE: usize = 16;

/// Outputs per packed strip: eight AVX-512 registers (a single row's panel), two panels of
/// three and one of two for blocks of rows.
const STRIP: usize = 8 * WIDE;

/// Weights up to which a product goes block of rows by block rather than strip by strip.
const CACHED_WEIGHTS: usize = 512 << 10;

/// Multiply-adds below which a product runs on the calling thread.
const PARALLEL_WORK: usize = 1 << 17;

/// Weights from which a product of few rows shares its strips among the threads (each
/// streams its share of the weights once) rather than its rows (each streams them all).
const SPLIT_COLUMNS_BYTES: usize = 2 << 20;
/// Rows up to which a product over large weights splits its columns.
const SPLIT_COLUMNS_ROWS: usize = 64;

/// Where a product writes: output column `j` of row `r` at `data[r·stride + j − first]`.
struct Out<'a> {
    data: &'a mut [f32],
    stride: usize,
    first: usize,
}

/// A dense layer's weights, transposed and packed in strips for the kernel.
#[derive(Debug, Clone)]
pub struct Dense {
    packed: Vec<f32>,
    k: usize,
    n: usize,
    bias: Option<Vec<f32>>,
}

impl Dense {
    /// From `w` (n, k) row-major, as the parameter store holds it, and an optional bias (n).
    pub fn new(w: &[f32], k: usize, bias: Option<Vec<f32>>) -> Dense {
        let n = w.len() / k.max(1);
        let mut packed = vec![0f32; k * n];
        for (j, row) in w.chunks_exact(k.max(1)).enumerate() {
            let (base, width, o) = strip_of(j, k, n);
            for (i, &v) in row.iter().enumerate() {
                packed[base + i * width + o] = v;
            }
        }
        Dense { packed, k, n, bias }
    }

    /// `x (rows, k) · wᵀ + b` → (rows, n). Rows, or for few rows over large weights strips of
    /// outputs, are shared out among rayon's threads where there is enough work; a row's sums
    /// never depend on the split.
    pub fn apply(&self, x: &[f32]) -> Vec<f32> {
        let (k, n) = (self.k, self.n);
        let rows = x.len() / k.max(1);
        let mut out = vec![0f32; rows * n];
        let threads = rayon::current_num_threads().max(1);
        if rows * n * k < PARALLEL_WORK || threads == 1 {
            self.rows(x, &mut Out { data: &mut out, stride: n, first: 0 }, 0..n);
            return out;
        }
        if rows <= SPLIT_COLUMNS_ROWS && 4 * k * n >= SPLIT_COLUMNS_BYTES {
            // Whole strips per thread.
            let per = n.div_ceil(threads).next_multiple_of(STRIP);
            let starts: Vec<usize> = (0..n).step_by(per).collect();
            let parts: Vec<(usize, Vec<f32>)> = starts
                .into_par_iter()
                .map(|c0| {
                    let c1 = (c0 + per).min(n);
                    let mut part = vec![0f32; rows * (c1 - c0)];
                    self.rows(x, &mut Out { data: &mut part, stride: c1 - c0, first: c0 }, c0..c1);
                    (c0, part)
                })
                .collect();
            for (c0, part) in parts {
                let w = part.len() / rows.max(1);
                for (o, p) in out.chunks_exact_mut(n).zip(part.chunks_exact(w.max(1))) {
                    o[c0..c0 + w].copy_from_slice(p);
                }
            }
            return out;
        }
        if rows < 2 {
            self.rows(x, &mut Out { data: &mut out, stride: n, first: 0 }, 0..n);
            return out;
        }
        // Whole blocks of eight rows per thread where there are enough.
        let per = rows.div_ceil(threads).next_multiple_of(8).min(rows).max(1);
        out.par_chunks_mut(per * n).enumerate().for_each(|(c, chunk)| {
            let r0 = c * per;
            let nr = chunk.len() / n;
            let x = &x[r0 * k..(r0 + nr) * k];
            self.rows(x, &mut Out { data: chunk, stride: n, first: 0 }, 0..n);
        });
        out
    }

    /// Outputs `cols` (whole strips) of `x`'s rows into `out` on this thread. Weights larger
    /// than a core's cache go strip by strip (every row's panels of a strip while its weights
    /// are in cache, then the next strip); smaller ones block of eight rows by block (the
    /// block's inputs stay in the first-level cache while every strip uses them).
    fn rows(&self, x: &[f32], out: &mut Out<'_>, cols: Range<usize>) {
        let k = self.k.max(1);
        let rows = x.len() / k;
        let block = if 4 * self.k * self.n <= CACHED_WEIGHTS { 8 } else { rows.max(1) };
        for r0 in (0..rows).step_by(block) {
            let xs = &x[r0 * k..(r0 + block).min(rows) * k];
            let (stride, first) = (out.stride, out.first);
            let mut view = Out { data: &mut out.data[r0 * stride..], stride, first };
            let mut c = cols.start;
            while c < cols.end {
                let end = (c - c % STRIP + STRIP).min(cols.end);
                self.strip(xs, &mut view, c..end);
                c = end;
            }
        }
    }

    /// Outputs `cols` (within one strip) of every row: sixteen-lane registers where the CPU has
    /// them, then eight-lane ones, the rest element by element.
    fn strip(&self, x: &[f32], out: &mut Out<'_>, cols: Range<usize>) {
        let (from, width) = (cols.start, cols.len());
        let mut j = from;
        if super::kernels::avx512_available() {
            j = self.columns(x, out, j, from + width - width % WIDE, WIDE);
        }
        let j = self.columns(x, out, j, from + width - width % LANES, LANES);
        let (k, rows) = (self.k, x.len() / self.k.max(1));
        for r in 0..rows {
            for j in j..cols.end {
                out.data[r * out.stride + j - out.first] = self.element(&x[r * k..(r + 1) * k], j);
            }
        }
    }

    /// Outputs `from..to` (within one strip, `lanes` to a register) of every row; returns `to`.
    /// Blocks of eight rows where the registers are sixteen lanes wide (and so thirty-two: 24
    /// accumulators), of four on AVX2's sixteen registers, then single rows.
    fn columns(&self, x: &[f32], out: &mut Out<'_>, from: usize, to: usize, lanes: usize) -> usize {
        let rows = x.len() / self.k.max(1);
        let mut r = 0;
        if lanes == WIDE {
            while r + 8 <= rows {
                self.panels::<8, 3>(x, out, r, from..to, lanes);
                r += 8;
            }
        }
        while r + 4 <= rows {
            self.panels::<4, 3>(x, out, r, from..to, lanes);
            r += 4;
        }
        for r in r..rows {
            self.panels::<1, 8>(x, out, r, from..to, lanes);
        }
        to
    }

    /// Rows `r..r + R` × outputs `cols`: panels of C registers, then of two, then of one.
    fn panels<const R: usize, const C: usize>(
        &self,
        x: &[f32],
        out: &mut Out<'_>,
        r: usize,
        cols: Range<usize>,
        lanes: usize,
    ) {
        let x = &x[r * self.k..];
        let mut j = cols.start;
        while j + C * lanes <= cols.end {
            self.panel::<R, C>(x, r, j, lanes, out);
            j += C * lanes;
        }
        if C > 2 && j + 2 * lanes <= cols.end {
            self.panel::<R, 2>(x, r, j, lanes, out);
            j += 2 * lanes;
        }
        while j < cols.end {
            self.panel::<R, 1>(x, r, j, lanes, out);
            j += lanes;
        }
    }

    /// Output `j` of the row `x`: the chain every kernel computes.
    fn element(&self, x: &[f32], j: usize) -> f32 {
        let (base, width, o) = strip_of(j, self.k, self.n);
        let w = &self.packed[base..];
        let s = x.iter().enumerate().fold(0f32, |s, (i, &xi)| xi.mul_add(w[i * width + o], s));
        s + self.bias.as_ref().map_or(0.0, |b| b[j])
    }

    /// Rows `r0..r0 + R` (their inputs from the start of `x`) × outputs `j0..j0 + lanes·C`
    /// (within one strip) into `out`, all in range; `lanes` is [`WIDE`] only where the CPU has
    /// AVX-512.
    #[allow(unsafe_code)] // the AVX2 and AVX-512 kernels, after their feature checks
    fn panel<const R: usize, const C: usize>(
        &self,
        x: &[f32],
        r0: usize,
        j0: usize,
        lanes: usize,
        out: &mut Out<'_>,
    ) {
        let (k, os) = (self.k, out.stride);
        let (base, width, o) = strip_of(j0, k, self.n);
        assert!(x.len() >= R * k && o + C * lanes <= width, "dense: a panel out of its strip");
        assert!(j0 >= out.first && j0 + C * lanes - out.first <= os, "dense: columns out of view");
        assert!(out.data.len() >= (r0 + R) * os, "dense: output too short");
        let oj = j0 - out.first;
        #[cfg(target_arch = "x86_64")]
        if super::kernels::avx2_available() {
            let w = &self.packed[base..base + k * width];
            let dst = &mut out.data[r0 * os..];
            if lanes == WIDE && super::kernels::avx512_available() {
                // SAFETY: the CPU has AVX-512F; the ranges are checked above.
                unsafe { super::avx512::panel::<R, C>(w, width, k, x, o, (dst, os, oj)) };
            } else {
                // SAFETY: the CPU has AVX2 and FMA; the ranges are checked above.
                unsafe { avx2::panel::<R, C>(w, width, k, x, o, (dst, os, oj)) };
            }
            if let Some(b) = &self.bias {
                for r in 0..R {
                    for (d, &bj) in dst[r * os + oj..][..C * lanes].iter_mut().zip(&b[j0..]) {
                        *d += bj;
                    }
                }
            }
            return;
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (base, o); // the vector kernels' strip coordinates
        for r in 0..R {
            for j in j0..j0 + C * lanes {
                out.data[(r0 + r) * os + j - out.first] = self.element(&x[r * k..(r + 1) * k], j);
            }
        }
    }
}

/// Where output `j` of a (k, n) layer lives in the packed weights: its strip's start, the
/// strip's width (STRIP, or what is left for the last) and `j`'s offset in it.
fn strip_of(j: usize, k: usize, n: usize) -> (usize, usize, usize) {
    let s = j / STRIP;
    (s * STRIP * k, STRIP.min(n - s * STRIP), j % STRIP)
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)] // AVX2 intrinsics: every load and store is inside the checked ranges
mod avx2 {
    //! The panel on AVX2 + FMA registers.
    use std::arch::x86_64::*;

    use super::LANES;

    /// `out[r·os + oj + e] = Σᵢ x[r·k + i]·wt[i·n + j0 + e]` for r < R, e < 8C, i in order
    /// from 0. Safety: AVX2 and FMA present; `x` holds R·k, `wt` k·n values, j0 + 8C ≤ n, and
    /// (R − 1)·os + oj + 8C ≤ len(out).
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn panel<const R: usize, const C: usize>(
        wt: &[f32],
        n: usize,
        k: usize,
        x: &[f32],
        j0: usize,
        (out, os, oj): (&mut [f32], usize, usize),
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
                // SAFETY: r·os + oj + 8c + 8 ≤ (R − 1)·os + oj + 8C ≤ len(out).
                unsafe { _mm256_storeu_ps(out.as_mut_ptr().add(r * os + oj + c * LANES), *a) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::kernels::tests::data;
    use super::*;

    /// Every block shape, a row alone, the element chain, any thread count and a split of rows
    /// or of columns: the same bits.
    #[test]
    fn every_row_sums_the_same_whatever_the_batch() {
        // The last shape's weights are large enough that few rows split their columns.
        for (k, n) in [(131, 37), (64, 96), (16, 200), (128, 264), (40, 56), (512, 1100), (9, 300)]
        {
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
            let mut view = Out { data: &mut narrow, stride: n, first: 0 };
            let mut c = 0;
            while c < n {
                let end = (c + STRIP).min(n);
                let done = dense.columns(&x, &mut view, c, end - (end - c) % LANES, LANES);
                for r in 0..9 {
                    for j in done..end {
                        view.data[r * n + j] = dense.element(&x[r * k..(r + 1) * k], j);
                    }
                }
                c = end;
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
