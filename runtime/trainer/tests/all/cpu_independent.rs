//! The trainer computes the same numbers on every x86-64 CPU with AVX2+FMA and at every thread
//! count (docs/trainer.md, "Same figures on every CPU"). gemm must give its AVX2 kernels' bits
//! (its AVX-512 kernels run only where they do, vendor/gemm-common) and split k into the same
//! blocks everywhere (vendor/gemm-common pins them); every other reduction is split into fixed
//! chunks. A failure here on some machine means the quickstart's figures would differ there.

use rand::{Rng, SeedableRng};
use wrl_trainer::ops::fused::matmul::{Kernels, View, matmul, matmul_on};
use wrl_trainer::{OpsMode, Role, Segment, Trajectory, render};

use crate::common::{snapshot, tiny_copy, trainer};

fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

/// The k blocks gemm sums separately: at most 512 deep, equal in size, when m or n exceeds
/// 64 (`kernel_params`, as on a 32 KiB 8-way L1d); 512 deep from the start otherwise.
fn blocks(m: usize, n: usize, k: usize) -> Vec<(usize, usize)> {
    let depth = if m <= 64 && n <= 64 { k.min(512) } else { k.div_ceil(k.div_ceil(512)) };
    (0..k).step_by(depth).map(|s| (s, depth.min(k - s))).collect()
}

/// Each element as gemm's microkernels compute it, written out on scalars: per block, a sum
/// from zero with one fused multiply-add per term in k order, then added to the element.
fn formula(lhs: View, rhs: View, blocks: &[(usize, usize)], init: Option<&[f32]>) -> Vec<f32> {
    let (m, n) = (lhs.rows, rhs.cols);
    let mut out = init.map_or_else(|| vec![0f32; m * n], <[f32]>::to_vec);
    for i in 0..m {
        for j in 0..n {
            let mut e = out[i * n + j];
            for (b, &(start, len)) in blocks.iter().enumerate() {
                let mut acc = 0f32;
                for p in start..start + len {
                    let a = lhs.data[i * lhs.rs + p * lhs.cs];
                    let x = rhs.data[p * rhs.rs + j * rhs.cs];
                    acc = a.mul_add(x, acc);
                }
                e = if b == 0 && init.is_none() { acc } else { e + acc };
            }
            out[i * n + j] = e;
        }
    }
    out
}

/// A rows × cols matrix over `data`, stored row-major or (`transposed`) column-major.
fn view(data: &[f32], rows: usize, cols: usize, transposed: bool) -> View<'_> {
    match transposed {
        true => View { data, rows, cols, rs: 1, cs: rows },
        false => View { data, rows, cols, rs: cols, cs: 1 },
    }
}

fn differing(a: &[f32], b: &[f32]) -> usize {
    a.iter().zip(b).filter(|(x, y)| x.to_bits() != y.to_bits()).count()
}

/// Every layout the fused ops pass to gemm, at depths below, at and past one block: the
/// result is bit for bit the scalar formula, which no CPU property enters.
#[test]
fn cpu_independent_gemm_sums_follow_one_formula() {
    // (m, n, k, lhs transposed, rhs transposed, accumulate): Linear forward (x · wᵀ, with
    // bias), its dW = gᵀ·x and dx = g·w, attention's P·V and dSᵀ·Q, and a small product.
    let cases = [
        (300, 96, 700, false, true, true),
        (128, 128, 1500, true, false, false),
        (1500, 128, 384, false, false, false),
        (200, 32, 1000, false, false, false),
        (200, 32, 513, true, false, true),
        (96, 200, 2100, false, false, false),
        (80, 70, 300, false, true, false),
        (40, 40, 1300, false, false, false),
    ];
    for (c, &(m, n, k, lt, rt, acc)) in cases.iter().enumerate() {
        let (a, b) = (random(m * k, 2 * c as u64), random(k * n, 2 * c as u64 + 1));
        let (lhs, rhs) = (view(&a, m, k, lt), view(&b, k, n, rt));
        let init = acc.then(|| random(m * n, 99));
        let want = formula(lhs, rhs, &blocks(m, n, k), init.as_deref());
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let mut got = init.clone().unwrap_or_else(|| vec![0f32; m * n]);
            pool.install(|| matmul(&mut got, lhs, rhs, acc, true)).unwrap();
            let bad = differing(&got, &want);
            assert_eq!(bad, 0, "{m}x{k}·{k}x{n} on {threads} threads: {bad} elements differ");
        }
        // The check has teeth: the same sums in one block (what an unpatched gemm does on a
        // 48 KiB 12-way L1d up to k = 1024) round differently.
        if k > 512 {
            let one = formula(lhs, rhs, &[(0, k)], init.as_deref());
            assert!(differing(&one, &want) > 0, "{m}x{k}·{k}x{n}: blocks made no difference");
        }
    }
}

/// Products on the kernels gemm picks for this CPU (AVX-512 where it has it) are bit for bit
/// those of the AVX2+FMA kernels, at every shape class gemm treats apart: the register-blocked
/// path with whole and partial tiles, the lane-reducing paths (m or n of 1, k ≤ 2, m·n ≤ 256
/// with contiguous lhs rows and rhs columns), one and several k blocks, every layout.
#[test]
fn cpu_independent_dispatched_products_match_avx2() {
    let avx512 = std::arch::is_x86_feature_detected!("avx512f");
    eprintln!("this CPU runs gemm's AVX-512 kernels: {avx512}");
    let sizes = [1, 2, 3, 7, 16, 17, 31, 64, 65, 97, 130];
    let depths = [1, 2, 3, 8, 32, 100, 512, 513, 1100];
    let mut case = 0u64;
    for (i, &m) in sizes.iter().enumerate() {
        for (j, &n) in sizes.iter().enumerate() {
            // Every pair of sizes, at three depths chosen to cycle through all of them.
            for &k in depths.iter().cycle().skip(i * 3 + j).take(3) {
                case += 1;
                let (a, b) = (random(m * k, 2 * case), random(k * n, 2 * case + 1));
                let (lt, rt, acc) =
                    (case.is_multiple_of(2), !case.is_multiple_of(3), case.is_multiple_of(5));
                let (lhs, rhs) = (view(&a, m, k, lt), view(&b, k, n, rt));
                let init = if acc { random(m * n, 99) } else { vec![0f32; m * n] };
                let (mut got, mut want) = (init.clone(), init);
                matmul_on(Kernels::Dispatched, &mut got, lhs, rhs, acc, true).unwrap();
                matmul_on(Kernels::Avx2, &mut want, lhs, rhs, acc, true).unwrap();
                let bad = differing(&got, &want);
                assert_eq!(bad, 0, "{m}x{k}·{k}x{n} (lhs T {lt}, rhs T {rt}): {bad} differ");
            }
        }
    }
}

/// Training steps of the copy model give the same parameters on 1, 2, 3 and 8 threads.
#[test]
fn cpu_independent_training_ignores_the_thread_count() {
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let mut t = trainer(tiny_copy(2, 64, OpsMode::Auto), 3e-3, 0.01, 7);
            let examples: Vec<_> = (0..6)
                .map(|i| {
                    let tr = Trajectory {
                        segments: vec![
                            Segment::new(Role::User, format!("find item {i} in the shop")),
                            Segment::new(Role::Observation, "[1] link Blue mug  [2] button Buy"),
                            Segment::new(Role::Assistant, format!("click(id: {})", i % 3)),
                        ],
                        tools: Vec::new(),
                    };
                    render(t.tokenizer(), &tr, 64).unwrap()
                })
                .collect();
            let batch: Vec<_> = examples.iter().map(|e| (e, 1.0)).collect();
            for _ in 0..2 {
                t.sft_step_on(&batch, 3).unwrap();
            }
            snapshot(&t)
        })
    };
    let one = run(1);
    for threads in [2, 3, 8] {
        let other = run(threads);
        let moved: Vec<_> = one.iter().filter(|(n, v)| other[*n] != **v).map(|(n, _)| n).collect();
        assert!(moved.is_empty(), "{threads} threads differ from 1 in {moved:?}");
    }
}
