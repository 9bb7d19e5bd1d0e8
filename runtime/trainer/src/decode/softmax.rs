//! Softmax for decoding, eight lanes at a time with the same bits on every CPU: libm's `expf`
//! is scalar (a tenth of a decoding step went to it), so `exp` here is a fixed sequence of
//! IEEE operations (Cephes' polynomial: a rounding, two FMAs for the reduction, six for the
//! polynomial, an exponent built from bits) that the AVX2 kernel and the portable one both
//! run, and sums keep the fixed eight-lane order of `kernels.rs`.

use super::wide::widest;

/// Lanes of the fixed summation order.
const LANES: usize = 8;

/// Below this, `exp` is 0 (2ⁿ would leave the normal range).
const LOW: f32 = -87.0;
/// Above this, `exp` is clamped (softmax's arguments are never positive).
const HIGH: f32 = 88.0;
const LOG2E: f32 = std::f32::consts::LOG2_E;
/// ln 2 in two parts, the first exact in few bits.
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;
/// The polynomial's coefficients, highest first.
const P: [f32; 6] =
    [1.987_569_1e-4, 1.398_199_9e-3, 8.333_452e-3, 4.166_579_6e-2, 0.166_666_65, 0.5];

/// `eˣ` within 2 ulp, by the same operations as the AVX2 kernel.
#[inline]
pub fn exp(x: f32) -> f32 {
    if x < LOW {
        return 0.0;
    }
    let x = x.min(HIGH);
    let n = (x * LOG2E).round_ties_even();
    let r = n.mul_add(-LN2_LO, n.mul_add(-LN2_HI, x));
    let mut y = P[0];
    for &p in &P[1..] {
        y = y.mul_add(r, p);
    }
    let y = y.mul_add(r * r, r) + 1.0;
    y * f32::from_bits((((n as i32) + 127) << 23) as u32)
}

widest! {
    /// Softmax of attention scores in place: `x[j]·scale − slope·(pos − j)` first (ALiBi's
    /// distance penalty, none with a zero slope), then max-subtracted exponentials normalised.
    /// An all-`-inf` row stays as it is.
    pub fn attention(x: &mut [f32], scale: f32, slope: f32, pos: usize) {
        for (j, v) in x.iter_mut().enumerate() {
            *v = *v * scale - slope * (pos - j) as f32;
        }
        softmax_in(x);
    }
}

widest! {
    /// Softmax of `x` in place (max-subtracted; an all-`-inf` row stays as it is).
    pub fn softmax(x: &mut [f32]) {
        softmax_in(x);
    }
}

/// [`softmax`]'s body, inlined into each widened copy.
#[inline(always)]
#[allow(unsafe_code)] // the AVX2 kernel, after its feature check
fn softmax_in(x: &mut [f32]) {
    let max = max(x);
    if max == f32::NEG_INFINITY {
        return;
    }
    let body = x.len() - x.len() % LANES;
    let mut acc = [0f32; LANES];
    #[cfg(target_arch = "x86_64")]
    let done = if super::kernels::avx2_available() {
        // SAFETY: the CPU has AVX2 and FMA.
        acc = unsafe { avx2::exp_sub(&mut x[..body], max) };
        true
    } else {
        false
    };
    #[cfg(not(target_arch = "x86_64"))]
    let done = false;
    if !done {
        for c in x[..body].chunks_exact_mut(LANES) {
            for (l, v) in c.iter_mut().enumerate() {
                *v = exp(*v - max);
                acc[l] += *v;
            }
        }
    }
    let mut sum = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
    let tail = &mut x[body..];
    #[cfg(target_arch = "x86_64")]
    if done {
        // SAFETY: the CPU has AVX2 and FMA; the tail is shorter than eight.
        unsafe { avx2::exp_sub_tail(tail, max) };
    }
    for v in tail {
        if !done {
            *v = exp(*v - max);
        }
        sum += *v;
    }
    let inv = 1.0 / sum;
    for v in x.iter_mut() {
        *v *= inv;
    }
}

/// The largest of `x` (−∞ if empty), sixteen running maxima side by side: a maximum is the
/// same whatever the order it is taken in.
#[inline(always)]
fn max(x: &[f32]) -> f32 {
    let mut m = [f32::NEG_INFINITY; 16];
    let mut chunks = x.chunks_exact(16);
    for c in &mut chunks {
        for (a, &v) in m.iter_mut().zip(c) {
            *a = a.max(v);
        }
    }
    chunks.remainder().iter().chain(&m).copied().fold(f32::NEG_INFINITY, f32::max)
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)] // AVX2 intrinsics: loads and stores stay inside the slice
mod avx2 {
    //! `exp` on eight lanes.
    use std::arch::x86_64::*;

    use super::{HIGH, LANES, LN2_HI, LN2_LO, LOG2E, LOW, P};

    /// Eight `exp`s, each with the portable function's bits.
    #[target_feature(enable = "avx2,fma")]
    fn exp8(x: __m256) -> __m256 {
        let zero = _mm256_cmp_ps::<_CMP_LT_OQ>(x, _mm256_set1_ps(LOW));
        let x = _mm256_min_ps(x, _mm256_set1_ps(HIGH));
        let n = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(
            _mm256_mul_ps(x, _mm256_set1_ps(LOG2E)),
        );
        let r = _mm256_fmadd_ps(n, _mm256_set1_ps(-LN2_HI), x);
        let r = _mm256_fmadd_ps(n, _mm256_set1_ps(-LN2_LO), r);
        let mut y = _mm256_set1_ps(P[0]);
        for &p in &P[1..] {
            y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(p));
        }
        let y = _mm256_add_ps(_mm256_fmadd_ps(y, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0));
        let bits = _mm256_slli_epi32::<23>(_mm256_add_epi32(
            _mm256_cvtps_epi32(n),
            _mm256_set1_epi32(127),
        ));
        let e = _mm256_mul_ps(y, _mm256_castsi256_ps(bits));
        _mm256_andnot_ps(zero, e)
    }

    /// `x[j] = exp(x[j] − max)` for `x` a whole number of eight-lane chunks; returns the lane
    /// sums (lane `l` summing the chunks' element `l` in order). Safety: AVX2 and FMA present.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn exp_sub(x: &mut [f32], max: f32) -> [f32; LANES] {
        let m = _mm256_set1_ps(max);
        let mut acc = _mm256_setzero_ps();
        for c in x.chunks_exact_mut(LANES) {
            // SAFETY: `c` holds eight f32s.
            unsafe {
                let v = exp8(_mm256_sub_ps(_mm256_loadu_ps(c.as_ptr()), m));
                _mm256_storeu_ps(c.as_mut_ptr(), v);
                acc = _mm256_add_ps(acc, v);
            }
        }
        let mut out = [0f32; LANES];
        // SAFETY: `out` holds eight f32s.
        unsafe { _mm256_storeu_ps(out.as_mut_ptr(), acc) };
        out
    }

    /// `x[j] = exp(x[j] − max)` for fewer than eight `x`, in one register (the lanes past
    /// them computed and dropped). Safety: AVX2 and FMA present.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn exp_sub_tail(x: &mut [f32], max: f32) {
        let mut lanes = [0f32; LANES];
        let n = x.len().min(LANES);
        lanes[..n].copy_from_slice(&x[..n]);
        // SAFETY: `lanes` holds eight f32s.
        unsafe {
            let v = exp8(_mm256_sub_ps(_mm256_loadu_ps(lanes.as_ptr()), _mm256_set1_ps(max)));
            _mm256_storeu_ps(lanes.as_mut_ptr(), v);
        }
        x[..n].copy_from_slice(&lanes[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Within 2 ulp of libm's over softmax's range, 0 below it.
    #[test]
    fn exp_is_close_to_libms() {
        let mut x = -87.0f32;
        while x <= 1.0 {
            let (got, want) = (exp(x), x.exp());
            assert!(
                (got - want).abs() <= 2.5 * f32::EPSILON * want,
                "exp({x}) = {got}, not {want}"
            );
            x += 0.013;
        }
        assert_eq!(exp(-100.0), 0.0);
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
    }

    /// The vector softmax gives the portable one's bits.
    #[test]
    fn the_vector_softmax_is_the_portable_one() {
        let mut x: Vec<f32> = (0..77).map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0).collect();
        x[5] = f32::NEG_INFINITY;
        let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let mut acc = [0f32; LANES];
        let mut want: Vec<f32> = x.iter().map(|&v| exp(v - max)).collect();
        for c in want[..72].chunks_exact(LANES) {
            for (a, v) in acc.iter_mut().zip(c) {
                *a += v;
            }
        }
        let mut sum =
            ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
        for v in &want[72..] {
            sum += v;
        }
        let inv = 1.0 / sum;
        want.iter_mut().for_each(|v| *v *= inv);
        softmax(&mut x);
        assert_eq!(x, want);
        assert_eq!(x[5], 0.0);
        assert!((x.iter().sum::<f32>() - 1.0).abs() < 1e-6);
    }
}
