//! Row-stable kernels for batched decoding: every output element is summed in one fixed order
//! whatever the batch around it, the thread count or the CPU, so a sequence decodes the same
//! tokens alone or among fifteen others. (gemm's sums depend on the matrix shape: a row alone
//! and the same row in a batch differ in their last bits.)
//!
//! The order: eight lanes, lane `l` accumulating the products at `i ≡ l (mod 8)` by fused
//! multiply-add, the lanes then summed `((0+4)+(2+6))+((1+5)+(3+7))`, the tail after. The AVX2
//! kernel and the portable one (`f32::mul_add`, correctly rounded like the hardware's FMA) give
//! the same bits.

use rayon::prelude::*;

/// Lanes of the fixed summation order.
const LANES: usize = 8;

/// Sums eight lane accumulators in the fixed order, then adds the tail products in order.
#[inline]
fn reduce(acc: &[f32; LANES], a_tail: &[f32], b_tail: &[f32]) -> f32 {
    let mut s = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
    for (&x, &y) in a_tail.iter().zip(b_tail) {
        s = x.mul_add(y, s);
    }
    s
}

/// `a · b` in the fixed order, portable.
fn dot_portable(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let body = n - n % LANES;
    let mut acc = [0f32; LANES];
    for (ca, cb) in a[..body].chunks_exact(LANES).zip(b[..body].chunks_exact(LANES)) {
        for l in 0..LANES {
            acc[l] = ca[l].mul_add(cb[l], acc[l]);
        }
    }
    reduce(&acc, &a[body..n], &b[body..n])
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)] // AVX2 intrinsics: loads stay inside the slices (checked bounds), features checked at run time
mod avx2 {
    //! The same order on AVX2 + FMA registers.
    use std::arch::x86_64::*;

    use super::{LANES, reduce};

    /// Whether this CPU runs the AVX2 kernels (checked once).
    pub fn available() -> bool {
        static OK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *OK.get_or_init(|| is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"))
    }

    #[inline]
    unsafe fn lanes(v: __m256) -> [f32; LANES] {
        let mut out = [0f32; LANES];
        // SAFETY: `out` holds eight f32s; the store is unaligned.
        unsafe { _mm256_storeu_ps(out.as_mut_ptr(), v) };
        out
    }

    /// `a · b`. Safety: the CPU has AVX2 and FMA ([`available`]).
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn dot(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len().min(b.len());
        let body = n - n % LANES;
        let mut acc = _mm256_setzero_ps();
        let mut i = 0;
        while i < body {
            // SAFETY: i + 8 ≤ body ≤ both lengths.
            unsafe {
                let x = _mm256_loadu_ps(a.as_ptr().add(i));
                let y = _mm256_loadu_ps(b.as_ptr().add(i));
                acc = _mm256_fmadd_ps(x, y, acc);
            }
            i += LANES;
        }
        // SAFETY: AVX is enabled on this function.
        reduce(&unsafe { lanes(acc) }, &a[body..n], &b[body..n])
    }

    /// `out[j] = Σᵢ q[i]·kt[i·stride + j]` for j < out.len(), i in order from 0 (one FMA
    /// chain per position, eight positions per register). Safety: as [`dot`].
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn scores_t(q: &[f32], kt: &[f32], stride: usize, out: &mut [f32]) {
        let n = out.len();
        assert!(q.is_empty() || (q.len() - 1) * stride + n <= kt.len(), "scores_t: kt too short");
        let body = n - n % LANES;
        let mut j = 0;
        // Four blocks of eight positions at a time: four independent chains hide the FMA
        // latency (each position's chain is the same).
        while j + 4 * LANES <= body {
            let mut acc = [_mm256_setzero_ps(); 4];
            for (i, &qi) in q.iter().enumerate() {
                let qv = _mm256_set1_ps(qi);
                for (b, a) in acc.iter_mut().enumerate() {
                    // SAFETY: i·stride + j + 8b + 8 ≤ (len(q) − 1)·stride + n ≤ len(kt).
                    unsafe {
                        let k = _mm256_loadu_ps(kt.as_ptr().add(i * stride + j + b * LANES));
                        *a = _mm256_fmadd_ps(qv, k, *a);
                    }
                }
            }
            for (b, a) in acc.iter().enumerate() {
                // SAFETY: j + 8b + 8 ≤ n.
                unsafe { _mm256_storeu_ps(out.as_mut_ptr().add(j + b * LANES), *a) };
            }
            j += 4 * LANES;
        }
        while j < body {
            let mut acc = _mm256_setzero_ps();
            for (i, &qi) in q.iter().enumerate() {
                // SAFETY: i·stride + j + 8 ≤ (len(q) − 1)·stride + n ≤ len(kt) (asserted).
                unsafe {
                    let k = _mm256_loadu_ps(kt.as_ptr().add(i * stride + j));
                    acc = _mm256_fmadd_ps(_mm256_set1_ps(qi), k, acc);
                }
            }
            // SAFETY: j + 8 ≤ n.
            unsafe { _mm256_storeu_ps(out.as_mut_ptr().add(j), acc) };
            j += LANES;
        }
        for (jj, o) in out.iter_mut().enumerate().skip(body) {
            *o = q.iter().enumerate().fold(0f32, |s, (i, &qi)| qi.mul_add(kt[i * stride + jj], s));
        }
    }

    /// `out[e] = Σⱼ p[j]·v[j·stride + e]`, j in order from 0, for `out.len()` a multiple of 8.
    /// Safety: as [`dot`].
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn weighted_sum(p: &[f32], v: &[f32], stride: usize, out: &mut [f32]) {
        let n = out.len();
        assert!(n.is_multiple_of(LANES), "weighted_sum: width not a multiple of 8");
        assert!(p.is_empty() || (p.len() - 1) * stride + n <= v.len(), "weighted_sum: v too short");
        let mut e = 0;
        while e < n {
            let mut acc = [_mm256_setzero_ps(); 4];
            let chunks = ((n - e) / LANES).min(4);
            for (j, &pj) in p.iter().enumerate() {
                let pv = _mm256_set1_ps(pj);
                for (c, a) in acc.iter_mut().enumerate().take(chunks) {
                    // SAFETY: j·stride + e + 8c + 8 ≤ (len(p) − 1)·stride + n ≤ len(v).
                    unsafe {
                        let x = _mm256_loadu_ps(v.as_ptr().add(j * stride + e + c * LANES));
                        *a = _mm256_fmadd_ps(pv, x, *a);
                    }
                }
            }
            for (c, a) in acc.iter().enumerate().take(chunks) {
                // SAFETY: e + 8c + 8 ≤ n.
                unsafe { _mm256_storeu_ps(out.as_mut_ptr().add(e + c * LANES), *a) };
            }
            e += chunks * LANES;
        }
    }

    /// The R × C dot products of `xs` and `ws` (every slice at least `k` long), each in the
    /// fixed order: R·C independent accumulators, so FMA latency overlaps. Safety: as [`dot`].
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn block<const R: usize, const C: usize>(
        xs: [&[f32]; R],
        ws: [&[f32]; C],
        k: usize,
    ) -> [[f32; C]; R] {
        assert!(xs.iter().chain(ws.iter()).all(|s| s.len() >= k), "block: slices shorter than k");
        let body = k - k % LANES;
        let mut acc = [[_mm256_setzero_ps(); C]; R];
        let mut i = 0;
        while i < body {
            // SAFETY: i + 8 ≤ body ≤ k, and every slice is at least k long (asserted above).
            unsafe {
                let w: [__m256; C] =
                    std::array::from_fn(|c| _mm256_loadu_ps(ws[c].as_ptr().add(i)));
                for r in 0..R {
                    let x = _mm256_loadu_ps(xs[r].as_ptr().add(i));
                    for c in 0..C {
                        acc[r][c] = _mm256_fmadd_ps(x, w[c], acc[r][c]);
                    }
                }
            }
            i += LANES;
        }
        let mut out = [[0f32; C]; R];
        for r in 0..R {
            for c in 0..C {
                // SAFETY: AVX is enabled on this function.
                out[r][c] = reduce(&unsafe { lanes(acc[r][c]) }, &xs[r][body..k], &ws[c][body..k]);
            }
        }
        out
    }
}

/// The R × C dot products of `xs` and `ws` in the fixed order (the AVX2 kernel where it runs).
#[allow(unsafe_code)] // the AVX2 kernel, after its feature check
pub fn block<const R: usize, const C: usize>(
    xs: [&[f32]; R],
    ws: [&[f32]; C],
    k: usize,
) -> [[f32; C]; R] {
    #[cfg(target_arch = "x86_64")]
    if avx2::available() {
        // SAFETY: the CPU has AVX2 and FMA.
        return unsafe { avx2::block(xs, ws, k) };
    }
    std::array::from_fn(|r| std::array::from_fn(|c| dot_portable(&xs[r][..k], &ws[c][..k])))
}

/// `a · b` in the fixed order.
#[allow(unsafe_code)] // the AVX2 kernel, after its feature check
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if avx2::available() {
        // SAFETY: the CPU has AVX2 and FMA.
        return unsafe { avx2::dot(a, b) };
    }
    dot_portable(a, b)
}

/// `x (rows, k) · wᵀ + bias` into `out` (rows, n), `w` being (n, k) row-major: blocks of 4
/// rows × 2 columns, then 1 × 4, each element in the fixed order.
fn matmul_rows(x: &[f32], k: usize, w: &[f32], n: usize, bias: Option<&[f32]>, out: &mut [f32]) {
    let rows = out.len() / n.max(1);
    let xr = |r: usize| &x[r * k..(r + 1) * k];
    let wr = |j: usize| &w[j * k..(j + 1) * k];
    let b = |j: usize| bias.map_or(0.0, |b| b[j]);
    let mut r = 0;
    while r + 4 <= rows {
        let xs: [&[f32]; 4] = std::array::from_fn(|i| xr(r + i));
        let mut j = 0;
        while j + 2 <= n {
            let d = block(xs, [wr(j), wr(j + 1)], k);
            for (i, row) in d.iter().enumerate() {
                out[(r + i) * n + j] = row[0] + b(j);
                out[(r + i) * n + j + 1] = row[1] + b(j + 1);
            }
            j += 2;
        }
        for j in j..n {
            let d = block(xs, [wr(j)], k);
            for (i, row) in d.iter().enumerate() {
                out[(r + i) * n + j] = row[0] + b(j);
            }
        }
        r += 4;
    }
    for r in r..rows {
        let mut j = 0;
        while j + 4 <= n {
            let [d] = block([xr(r)], [wr(j), wr(j + 1), wr(j + 2), wr(j + 3)], k);
            for (c, v) in d.into_iter().enumerate() {
                out[r * n + j + c] = v + b(j + c);
            }
            j += 4;
        }
        for j in j..n {
            out[r * n + j] = dot(xr(r), wr(j)) + b(j);
        }
    }
}

/// Multiply-adds below which a product runs on the calling thread.
const PARALLEL_WORK: usize = 1 << 17;

/// `x (rows, k) · wᵀ (+ bias)` → (rows, n), `w` (n, k) row-major: the trainer's `linear`. Rows
/// are shared out among rayon's threads; a row's sums never depend on the split.
pub fn linear(x: &[f32], k: usize, w: &[f32], bias: Option<&[f32]>) -> Vec<f32> {
    let rows = x.len() / k.max(1);
    let n = w.len() / k.max(1);
    let mut out = vec![0f32; rows * n];
    let threads = rayon::current_num_threads().max(1);
    if rows * n * k < PARALLEL_WORK || threads == 1 || rows < 2 {
        matmul_rows(x, k, w, n, bias, &mut out);
        return out;
    }
    // Blocks of whole groups of four rows where there are enough, so the AVX2 kernel runs.
    let per = rows.div_ceil(threads).next_multiple_of(4).min(rows).max(1);
    out.par_chunks_mut(per * n).enumerate().for_each(|(c, chunk)| {
        let r0 = c * per;
        let nr = chunk.len() / n;
        matmul_rows(&x[r0 * k..(r0 + nr) * k], k, w, n, bias, chunk);
    });
    out
}

/// LayerNorm of each `d`-long row in place: `(x − mean) / √(var + eps) · w + b`.
pub fn layer_norm(x: &mut [f32], d: usize, w: &[f32], b: &[f32], eps: f32) {
    for row in x.chunks_exact_mut(d) {
        let n = d as f32;
        let mean = row.iter().sum::<f32>() / n;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
        let inv = 1.0 / (var + eps).sqrt();
        for ((v, &g), &c) in row.iter_mut().zip(w).zip(b) {
            *v = (*v - mean) * inv * g + c;
        }
    }
}

/// Softmax of `x` in place (max-subtracted; an all-`-inf` row stays as it is).
pub fn softmax(x: &mut [f32]) {
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if max == f32::NEG_INFINITY {
        return;
    }
    let mut sum = 0f32;
    for v in x.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    let inv = 1.0 / sum;
    for v in x.iter_mut() {
        *v *= inv;
    }
}

/// `out[j] = Σᵢ q[i]·kt[i·stride + j]`: attention scores against keys stored transposed (one
/// row per dimension, one column per position), each a chain of FMAs over i in order.
#[allow(unsafe_code)] // the AVX2 kernel, after its feature check
pub fn scores_t(q: &[f32], kt: &[f32], stride: usize, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if avx2::available() {
        // SAFETY: the CPU has AVX2 and FMA.
        return unsafe { avx2::scores_t(q, kt, stride, out) };
    }
    for (j, o) in out.iter_mut().enumerate() {
        *o = q.iter().enumerate().fold(0f32, |s, (i, &qi)| qi.mul_add(kt[i * stride + j], s));
    }
}

/// `out[e] = Σⱼ p[j]·v[j·stride + e]`: attention's weighted sum of values, each element a
/// chain of FMAs over positions in order.
#[allow(unsafe_code)] // the AVX2 kernel, after its feature check
pub fn weighted_sum(p: &[f32], v: &[f32], stride: usize, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if avx2::available() && out.len().is_multiple_of(LANES) {
        // SAFETY: the CPU has AVX2 and FMA.
        return unsafe { avx2::weighted_sum(p, v, stride, out) };
    }
    for (e, o) in out.iter_mut().enumerate() {
        *o = p.iter().enumerate().fold(0f32, |s, (j, &pj)| pj.mul_add(v[j * stride + e], s));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(n: usize, seed: u32) -> Vec<f32> {
        (0..n)
            .map(|i| (((i as u32).wrapping_mul(2_654_435_761) ^ seed) % 1000) as f32 / 997.0 - 0.5)
            .collect()
    }

    /// The AVX2 kernels, the portable one and every batch size give the same bits.
    #[test]
    fn every_row_sums_the_same_whatever_the_batch() {
        let (k, n) = (131, 37);
        let w = data(n * k, 7);
        let bias = data(n, 3);
        let x = data(9 * k, 11);
        let all = linear(&x, k, &w, Some(&bias));
        for r in 0..9 {
            let one = linear(&x[r * k..(r + 1) * k], k, &w, Some(&bias));
            assert_eq!(one, all[r * n..(r + 1) * n], "row {r} alone");
            for j in 0..n {
                let p = dot_portable(&x[r * k..(r + 1) * k], &w[j * k..(j + 1) * k]) + bias[j];
                assert_eq!(p.to_bits(), all[r * n + j].to_bits(), "portable ({r}, {j})");
            }
        }
        // Split among threads: the same bits again.
        let big = data(64 * k, 5);
        let many = linear(&big, k, &w, None);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let single = pool.install(|| linear(&big, k, &w, None));
        assert_eq!(many, single);
    }

    /// The attention kernels' vector paths give the portable chains' bits.
    #[test]
    fn attention_kernels_match_their_portable_chains() {
        let (hd, stride, n) = (16, 77, 75);
        let q = data(hd, 1);
        let kt = data(hd * stride, 2);
        let mut out = vec![0f32; n];
        scores_t(&q, &kt, stride, &mut out);
        for (j, &o) in out.iter().enumerate() {
            let want = (0..hd).fold(0f32, |s, i| q[i].mul_add(kt[i * stride + j], s));
            assert_eq!(o.to_bits(), want.to_bits(), "score {j}");
        }
        let p = data(n, 3);
        let v = data(n * 40, 4);
        let mut y = vec![0f32; 40];
        weighted_sum(&p, &v, 40, &mut y);
        for (e, &o) in y.iter().enumerate() {
            let want = (0..n).fold(0f32, |s, j| p[j].mul_add(v[j * 40 + e], s));
            assert_eq!(o.to_bits(), want.to_bits(), "element {e}");
        }
    }

    #[test]
    fn softmax_and_layer_norm_are_normalised() {
        let mut x = vec![1.0, 2.0, 3.0, f32::NEG_INFINITY];
        softmax(&mut x);
        assert!((x.iter().sum::<f32>() - 1.0).abs() < 1e-6 && x[3] == 0.0);
        let mut y = vec![1.0, 2.0, 3.0, 4.0];
        layer_norm(&mut y, 4, &[1.0; 4], &[0.0; 4], 1e-5);
        assert!(y.iter().sum::<f32>().abs() < 1e-5);
    }
}
