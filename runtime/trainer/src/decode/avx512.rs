//! The decoding kernels whose sums are one chain per output (dense panels, attention scores,
//! weighted sums) on sixteen-lane AVX-512 registers, for CPUs that have them. Each lane runs
//! the same chain of fused multiply-adds as the AVX2 kernels' eight lanes and the portable
//! `f32::mul_add` chains, and a fused multiply-add rounds once whatever the register's width,
//! so these give the same bits: a run's figures do not depend on whether its CPU has AVX-512.
//! Whatever is narrower than sixteen lanes is left to the AVX2 kernels.
#![allow(unsafe_code)] // AVX-512 intrinsics: every load and store is inside the checked ranges

use std::arch::x86_64::*;

/// Lanes per register.
pub const LANES: usize = 16;

/// `out[r·os + oj + e] = Σᵢ x[r·k + i]·wt[i·n + j0 + e]` for r < R, e < 16C, i in order from
/// 0 (no bias). Safety: the CPU has AVX-512F (`kernels::avx512_available`); `x` holds R·k and
/// `wt` k·n values, j0 + 16C ≤ n, and (R − 1)·os + oj + 16C ≤ len(out).
#[target_feature(enable = "avx512f")]
pub unsafe fn panel<const R: usize, const C: usize>(
    wt: &[f32],
    n: usize,
    k: usize,
    x: &[f32],
    j0: usize,
    (out, os, oj): (&mut [f32], usize, usize),
) {
    let mut acc = [[_mm512_setzero_ps(); C]; R];
    for i in 0..k {
        // SAFETY: i·n + j0 + 16C ≤ (k − 1)·n + n = k·n; r·k + i < R·k.
        unsafe {
            let w: [__m512; C] =
                std::array::from_fn(|c| _mm512_loadu_ps(wt.as_ptr().add(i * n + j0 + c * LANES)));
            for (r, row) in acc.iter_mut().enumerate() {
                let xv = _mm512_set1_ps(*x.as_ptr().add(r * k + i));
                for (a, &wc) in row.iter_mut().zip(&w) {
                    *a = _mm512_fmadd_ps(xv, wc, *a);
                }
            }
        }
    }
    for (r, row) in acc.iter().enumerate() {
        for (c, a) in row.iter().enumerate() {
            // SAFETY: r·os + oj + 16c + 16 ≤ (R − 1)·os + oj + 16C ≤ len(out).
            unsafe { _mm512_storeu_ps(out.as_mut_ptr().add(r * os + oj + c * LANES), *a) };
        }
    }
}

/// `out[j] = Σᵢ q[i]·kt[i·stride + j]` for the first `16·⌊len/16⌋` positions, i in order from
/// 0; returns how many positions it wrote. Safety: as [`panel`]; (len(q) − 1)·stride +
/// len(out) ≤ len(kt) (asserted).
#[target_feature(enable = "avx512f")]
pub unsafe fn scores_t(q: &[f32], kt: &[f32], stride: usize, out: &mut [f32]) -> usize {
    let n = out.len();
    assert!(q.is_empty() || (q.len() - 1) * stride + n <= kt.len(), "scores_t: kt too short");
    let body = n - n % LANES;
    let mut j = 0;
    // Eight blocks of sixteen positions at a time: independent chains hide the FMA latency.
    while j + 8 * LANES <= body {
        // SAFETY: as this function's; j + 128 ≤ body.
        unsafe { scores_block::<8>(q, kt, stride, j, out) };
        j += 8 * LANES;
    }
    while j < body {
        // SAFETY: as this function's; j + 16 ≤ body.
        unsafe { scores_block::<1>(q, kt, stride, j, out) };
        j += LANES;
    }
    body
}

/// Positions `j0..j0 + 16B` of [`scores_t`]. Safety: as it, with j0 + 16B ≤ len(out).
#[target_feature(enable = "avx512f")]
unsafe fn scores_block<const B: usize>(
    q: &[f32],
    kt: &[f32],
    stride: usize,
    j0: usize,
    out: &mut [f32],
) {
    let mut acc = [_mm512_setzero_ps(); B];
    for (i, &qi) in q.iter().enumerate() {
        let qv = _mm512_set1_ps(qi);
        for (b, a) in acc.iter_mut().enumerate() {
            // SAFETY: i·stride + j0 + 16b + 16 ≤ (len(q) − 1)·stride + len(out) ≤ len(kt).
            unsafe {
                let k = _mm512_loadu_ps(kt.as_ptr().add(i * stride + j0 + b * LANES));
                *a = _mm512_fmadd_ps(qv, k, *a);
            }
        }
    }
    for (b, a) in acc.iter().enumerate() {
        // SAFETY: j0 + 16b + 16 ≤ len(out).
        unsafe { _mm512_storeu_ps(out.as_mut_ptr().add(j0 + b * LANES), *a) };
    }
}

/// `out[e] = Σⱼ p[(e / hd)·len + j]·v[j·stride + e]` for the first `16·⌊len(out)/16⌋`
/// elements, j in order from 0: every head's weighted sum at once (head h's weights at
/// `p[h·len..]`), eight registers of chains in flight; returns how many elements it wrote.
/// Safety: as [`panel`]; `hd` a multiple of 16, p and v long enough (asserted).
#[target_feature(enable = "avx512f")]
pub unsafe fn weighted_sum_heads(
    p: &[f32],
    len: usize,
    v: &[f32],
    stride: usize,
    hd: usize,
    out: &mut [f32],
) -> usize {
    let n = out.len();
    let body = n - n % LANES;
    assert!(hd > 0 && hd.is_multiple_of(LANES), "weighted_sum_heads: head width");
    assert!(p.len() >= body.div_ceil(hd) * len, "weighted_sum_heads: p too short");
    assert!(len == 0 || (len - 1) * stride + body <= v.len(), "weighted_sum_heads: v too short");
    let mut e = 0;
    while e + 8 * LANES <= body {
        // SAFETY: as this function's; e + 128 ≤ body.
        unsafe { heads_block::<8>(p, len, v, stride, hd, e, out) };
        e += 8 * LANES;
    }
    while e < body {
        // SAFETY: as this function's; e + 16 ≤ body.
        unsafe { heads_block::<1>(p, len, v, stride, hd, e, out) };
        e += LANES;
    }
    body
}

/// Elements `e0..e0 + 16R` of [`weighted_sum_heads`]. Safety: as it, with e0 + 16R ≤ its body.
#[target_feature(enable = "avx512f")]
unsafe fn heads_block<const R: usize>(
    p: &[f32],
    len: usize,
    v: &[f32],
    stride: usize,
    hd: usize,
    e0: usize,
    out: &mut [f32],
) {
    let rows: [usize; R] = std::array::from_fn(|c| (e0 + c * LANES) / hd * len);
    let mut acc = [_mm512_setzero_ps(); R];
    for j in 0..len {
        for (c, a) in acc.iter_mut().enumerate() {
            // SAFETY: rows[c] + j < p.len() and j·stride + e0 + 16c + 16 ≤ len(v) (asserted
            // by the caller for every element of its body).
            unsafe {
                let pv = _mm512_set1_ps(*p.as_ptr().add(rows[c] + j));
                let x = _mm512_loadu_ps(v.as_ptr().add(j * stride + e0 + c * LANES));
                *a = _mm512_fmadd_ps(pv, x, *a);
            }
        }
    }
    for (c, a) in acc.iter().enumerate() {
        // SAFETY: e0 + 16c + 16 ≤ len(out).
        unsafe { _mm512_storeu_ps(out.as_mut_ptr().add(e0 + c * LANES), *a) };
    }
}

/// A prefill block of Q consecutive queries of one sequence, elements `e0..e0 + 16C` of each:
/// `out[q·d + e] = Σⱼ p[(h·Q + q)·ps + j]·v[j·stride + e]` over j < len0 + q in order from 0,
/// h = e / hd. Every value load serves the Q queries (each its own chain, the same one
/// [`weighted_sum_heads`] runs for the query alone). Safety: as [`panel`]; `hd` a multiple of
/// 16, e0 + 16C ≤ d, and p, v and out long enough (`kernels::weighted_sums_rows` asserts it).
#[target_feature(enable = "avx512f")]
pub unsafe fn weighted_rows<const Q: usize, const C: usize>(
    (p, ps): (&[f32], usize),
    len0: usize,
    (v, stride): (&[f32], usize),
    hd: usize,
    e0: usize,
    d: usize,
    out: &mut [f32],
) {
    let heads: [usize; C] = std::array::from_fn(|c| (e0 + c * LANES) / hd * Q * ps);
    let mut acc = [[_mm512_setzero_ps(); C]; Q];
    let at = Weighted { p, ps, v, stride, e0, heads };
    for j in 0..len0 {
        // SAFETY: j < len0 + Q − 1, as the caller asserted for every position.
        unsafe { at.step(&mut acc, j, 0) };
    }
    // The block's last positions: query q's chain stops before len0 + q.
    for j in len0..len0 + Q - 1 {
        // SAFETY: as above.
        unsafe { at.step(&mut acc, j, j + 1 - len0) };
    }
    for (q, row) in acc.iter().enumerate() {
        for (c, a) in row.iter().enumerate() {
            // SAFETY: q·d + e0 + 16c + 16 ≤ (Q − 1)·d + d ≤ len(out).
            unsafe { _mm512_storeu_ps(out.as_mut_ptr().add(q * d + e0 + c * LANES), *a) };
        }
    }
}

/// What [`weighted_rows`] reads: the queries' weights, the values, and where its elements are.
struct Weighted<'a, const C: usize> {
    p: &'a [f32],
    ps: usize,
    v: &'a [f32],
    stride: usize,
    e0: usize,
    /// Per register, where its head's weights start in `p`.
    heads: [usize; C],
}

impl<const C: usize> Weighted<'_, C> {
    /// Position j's term of queries `first..Q`. Safety: AVX-512F; heads[c] + q·ps + j <
    /// len(p) and j·stride + e0 + 16C ≤ len(v).
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn step<const Q: usize>(&self, acc: &mut [[__m512; C]; Q], j: usize, first: usize) {
        // SAFETY: the loads are inside p and v, as this function's safety says.
        unsafe {
            let x: [__m512; C] = std::array::from_fn(|c| {
                _mm512_loadu_ps(self.v.as_ptr().add(j * self.stride + self.e0 + c * LANES))
            });
            for (q, row) in acc.iter_mut().enumerate().skip(first) {
                for (c, a) in row.iter_mut().enumerate() {
                    let pv = _mm512_set1_ps(*self.p.as_ptr().add(self.heads[c] + q * self.ps + j));
                    *a = _mm512_fmadd_ps(pv, x[c], *a);
                }
            }
        }
    }
}
