//! The kernels of a prompt's prefill block: up to four consecutive queries of one sequence
//! whose attention scores and weighted sums share every key and value load (on AVX-512), each
//! query's numbers the same chains as [`scores_t`] and [`weighted_sum_heads`] give it alone.

use super::kernels::{scores_t, weighted_sum_heads};

/// Scores of a prefill block's `n` queries (`x`, n × k, row-major) against keys stored
/// transposed: `out[q·stride + j] = Σᵢ x[q·k + i]·kt[i·stride + j]` for j < `width` (a multiple
/// of 16, at most `stride`), each the chain [`scores_t`] computes for the query alone. On
/// AVX-512 a panel of up to four queries × four registers of positions shares each key load.
#[allow(unsafe_code)] // the AVX-512 panels, after their feature check
pub fn scores_rows(x: &[f32], n: usize, kt: &[f32], stride: usize, width: usize, out: &mut [f32]) {
    let k = x.len() / n.max(1);
    assert!(width <= stride && width.is_multiple_of(16), "scores_rows: width {width}");
    assert!(x.len() == n * k && out.len() >= n * stride, "scores_rows: x or out");
    assert!(k == 0 || kt.len() >= k * stride, "scores_rows: kt too short");
    #[cfg(target_arch = "x86_64")]
    if super::kernels::avx512_available() && (1..=4).contains(&n) {
        use super::avx512::{LANES as W, panel};
        let mut j = 0;
        // SAFETY (every call): the CPU has AVX-512F; x holds n·k, kt k·stride and out
        // n·stride values (asserted), and j + 16C ≤ width ≤ stride.
        while j + 4 * W <= width {
            // SAFETY: as above.
            unsafe {
                match n {
                    1 => panel::<1, 4>(kt, stride, k, x, j, (out, stride, j)),
                    2 => panel::<2, 4>(kt, stride, k, x, j, (out, stride, j)),
                    3 => panel::<3, 4>(kt, stride, k, x, j, (out, stride, j)),
                    _ => panel::<4, 4>(kt, stride, k, x, j, (out, stride, j)),
                }
            }
            j += 4 * W;
        }
        while j < width {
            // SAFETY: as above.
            unsafe {
                match n {
                    1 => panel::<1, 1>(kt, stride, k, x, j, (out, stride, j)),
                    2 => panel::<2, 1>(kt, stride, k, x, j, (out, stride, j)),
                    3 => panel::<3, 1>(kt, stride, k, x, j, (out, stride, j)),
                    _ => panel::<4, 1>(kt, stride, k, x, j, (out, stride, j)),
                }
            }
            j += W;
        }
        return;
    }
    for (q, o) in out.chunks_mut(stride).take(n).enumerate() {
        scores_t(&x[q * k..(q + 1) * k], kt, stride, &mut o[..width]);
    }
}

/// Weighted sums of a prefill block's `n` queries, at positions `len0 − 1 .. len0 − 1 + n` of
/// one sequence: `out[q·d + e] = Σⱼ p[(h·n + q)·ps + j]·v[j·stride + e]` over j < len0 + q,
/// h = e / hd, d = len(out) / n; each element the chain [`weighted_sum_heads`] computes for
/// the query alone. On AVX-512 every value load serves up to four queries.
#[allow(unsafe_code)] // the AVX-512 kernel, after its feature check
pub fn weighted_sums_rows(
    (p, ps): (&[f32], usize),
    n: usize,
    len0: usize,
    (v, stride): (&[f32], usize),
    hd: usize,
    out: &mut [f32],
) {
    let d = out.len() / n.max(1);
    let (heads, last) = (d / hd.max(1), len0 + n.max(1) - 1);
    assert!(len0 > 0 && hd > 0 && d.is_multiple_of(hd) && last <= ps, "weighted_sums_rows");
    assert!(p.len() >= heads * n * ps, "weighted_sums_rows: p too short");
    assert!((last - 1) * stride + d <= v.len(), "weighted_sums_rows: v too short");
    assert!(stride >= d, "weighted_sums_rows: stride");
    #[cfg(target_arch = "x86_64")]
    if super::kernels::avx512_available() && (2..=4).contains(&n) && hd.is_multiple_of(16) {
        use super::avx512::{LANES as W, weighted_rows};
        let mut e = 0;
        // SAFETY (every call): the CPU has AVX-512F; the last position read is last − 1, so
        // (last − 1)·stride + d ≤ len(v); p's rows and out as asserted.
        while e + 4 * W <= d {
            // SAFETY: as above.
            unsafe {
                match n {
                    2 => weighted_rows::<2, 4>((p, ps), len0, (v, stride), hd, e, d, out),
                    3 => weighted_rows::<3, 4>((p, ps), len0, (v, stride), hd, e, d, out),
                    _ => weighted_rows::<4, 4>((p, ps), len0, (v, stride), hd, e, d, out),
                }
            }
            e += 4 * W;
        }
        while e < d {
            // SAFETY: as above.
            unsafe {
                match n {
                    2 => weighted_rows::<2, 1>((p, ps), len0, (v, stride), hd, e, d, out),
                    3 => weighted_rows::<3, 1>((p, ps), len0, (v, stride), hd, e, d, out),
                    _ => weighted_rows::<4, 1>((p, ps), len0, (v, stride), hd, e, d, out),
                }
            }
            e += W;
        }
        return;
    }
    for (q, o) in out.chunks_mut(d).take(n).enumerate() {
        for (h, oh) in o.chunks_mut(hd).enumerate() {
            let ph = &p[(h * n + q) * ps..];
            weighted_sum_heads(ph, len0 + q, &v[h * hd..], stride, hd, oh);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::kernels::tests::data;

    /// A prefill block's scores and weighted sums give each query's own chains, bit for bit:
    /// the panels on AVX-512, the per-query kernels elsewhere.
    #[test]
    fn a_block_of_queries_gives_each_querys_own_bits() {
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        for (nh, hd) in [(4, 32), (2, 16), (3, 8), (1, 48)] {
            let d = nh * hd;
            for n in 1..=5 {
                for len0 in [1usize, 15, 16, 17, 70] {
                    let stride = (len0 + n + 9).next_multiple_of(16);
                    let width = (len0 - 1 + n).next_multiple_of(16);
                    let x = data(n * hd, 11);
                    let kt = data(hd * stride, 12);
                    let mut out = vec![0f32; n * stride];
                    scores_rows(&x, n, &kt, stride, width, &mut out);
                    for q in 0..n {
                        let mut alone = vec![0f32; width];
                        scores_t(&x[q * hd..(q + 1) * hd], &kt, stride, &mut alone);
                        let got = &out[q * stride..q * stride + width];
                        assert_eq!(bits(got), bits(&alone), "scores {n}×{hd}, query {q}");
                    }
                    let p = data(nh * n * stride, 13);
                    let v = data((len0 + n) * d, 14);
                    let mut y = vec![0f32; n * d];
                    weighted_sums_rows((&p, stride), n, len0, (&v, d), hd, &mut y);
                    for q in 0..n {
                        let len = len0 + q;
                        let want: Vec<f32> = (0..d)
                            .map(|e| {
                                let ph = &p[(e / hd * n + q) * stride..];
                                (0..len).fold(0f32, |s, j| ph[j].mul_add(v[j * d + e], s))
                            })
                            .collect();
                        let got = &y[q * d..(q + 1) * d];
                        assert_eq!(bits(got), bits(&want), "sums {nh}×{hd}, {n} from {len0}");
                    }
                }
            }
        }
    }
}
