//! The 95 % intervals of a study over seeds: Wilson's score interval for a success rate over
//! the pooled episodes of every seed, and a seeded two-level bootstrap (seeds, then the tasks
//! within each seed) for the other metrics (pass@k, cons@k, mean reward). Tasks that share a
//! goal count as the independent tasks they are worth ([`worth`]), not one each.

use rand::{Rng, SeedableRng};

/// The normal quantile of a two-sided 95 % interval.
pub const Z95: f64 = 1.959_963_984_540_054;

/// Resamples of the bootstrap.
pub const RESAMPLES: usize = 2000;

/// The bootstrap's own seed: the same study always gets the same interval.
const BOOTSTRAP_SEED: u64 = 0x5eed_b007;

/// Wilson's score interval for `successes` of `n` at the normal quantile `z`; `(0, 1)` when
/// there are no trials.
pub fn wilson(successes: u64, n: u64, z: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let n = n as f64;
    let p = successes as f64 / n;
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denom;
    let half = z / denom * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// A percentile bootstrap of the mean over seeds of a per-task rate: each resample draws the
/// seeds with replacement, then each drawn seed's tasks with replacement (a task solved with
/// its seed's rate), and takes the mean of the drawn seeds' rates. `seeds` holds each seed's
/// (solved, tasks). `(0, 1)` when there is nothing to resample.
pub fn bootstrap(seeds: &[(u64, u64)], resamples: usize) -> (f64, f64) {
    if seeds.is_empty() || resamples == 0 || seeds.iter().all(|&(_, n)| n == 0) {
        return (0.0, 1.0);
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(BOOTSTRAP_SEED);
    let mut means: Vec<f64> = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        let mut sum = 0.0;
        for _ in 0..seeds.len() {
            let (solved, n) = seeds[rng.random_range(0..seeds.len())];
            if n == 0 {
                continue;
            }
            let p = solved as f64 / n as f64;
            let hits = (0..n).filter(|_| rng.random::<f64>() < p).count();
            sum += hits as f64 / n as f64;
        }
        means.push(sum / seeds.len() as f64);
    }
    means.sort_by(f64::total_cmp);
    (quantile(&means, 0.025), quantile(&means, 0.975))
}

/// Newcombe's hybrid score interval (his method 10) for the difference of two rates `a` − `b`,
/// each (successes, n), from their Wilson intervals: it keeps its width where a rate is 0 or
/// 1, where a bootstrap has none. `(-1, 1)` when either side has no trials.
pub fn newcombe(a: (u64, u64), b: (u64, u64), z: f64) -> (f64, f64) {
    if a.1 == 0 || b.1 == 0 {
        return (-1.0, 1.0);
    }
    let (p1, p2) = (a.0 as f64 / a.1 as f64, b.0 as f64 / b.1 as f64);
    let ((l1, u1), (l2, u2)) = (wilson(a.0, a.1, z), wilson(b.0, b.1, z));
    let d = p1 - p2;
    let low = d - ((p1 - l1).powi(2) + (u2 - p2).powi(2)).sqrt();
    let high = d + ((u1 - p1).powi(2) + (p2 - l2).powi(2)).sqrt();
    (low.max(-1.0), high.min(1.0))
}

/// A rate's (successes, trials).
pub type Counts = (u64, u64);

/// One seed's counts of the two sides of a difference.
pub type PairedCounts = (Counts, Counts);

/// A percentile bootstrap of the mean over seeds of the difference of two per-task rates,
/// paired by seed: each resample draws the seeds with replacement, then within each drawn seed
/// each side's tasks with replacement (as [`bootstrap`]), and takes the mean of the drawn
/// seeds' differences. `seeds` holds each seed's ((solved, tasks), (solved, tasks)).
/// `(-1, 1)` when there is nothing to resample.
pub fn bootstrap_diff(seeds: &[PairedCounts], resamples: usize) -> (f64, f64) {
    diff_interval(seeds, resamples, |rng| seeds[rng.random_range(0..seeds.len())])
}

/// The 95 % percentile interval of the mean difference over `seeds.len()` draws a resample,
/// each draw's two sides picked by `pick` and their tasks drawn again.
fn diff_interval(
    seeds: &[PairedCounts],
    resamples: usize,
    mut pick: impl FnMut(&mut rand_chacha::ChaCha8Rng) -> PairedCounts,
) -> (f64, f64) {
    if seeds.is_empty() || resamples == 0 {
        return (-1.0, 1.0);
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(BOOTSTRAP_SEED);
    let mut means: Vec<f64> = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        let mut sum = 0.0;
        for _ in 0..seeds.len() {
            let (a, b) = pick(&mut rng);
            sum += resampled_rate(&mut rng, a) - resampled_rate(&mut rng, b);
        }
        means.push(sum / seeds.len() as f64);
    }
    means.sort_by(f64::total_cmp);
    (quantile(&means, 0.025), quantile(&means, 0.975))
}

/// One side's rate with its `n` tasks drawn again with replacement from its observed rate.
fn resampled_rate(rng: &mut rand_chacha::ChaCha8Rng, (solved, n): (u64, u64)) -> f64 {
    if n == 0 {
        return 0.0;
    }
    let p = solved as f64 / n as f64;
    (0..n).filter(|_| rng.random::<f64>() < p).count() as f64 / n as f64
}

/// [`bootstrap_diff`] for two sides whose seeds do not pair (their evaluations' tasks differ):
/// each resample draws each side's seeds with replacement on its own.
pub fn bootstrap_diff_unpaired(seeds: &[PairedCounts], resamples: usize) -> (f64, f64) {
    diff_interval(seeds, resamples, |rng| {
        let a = seeds[rng.random_range(0..seeds.len())].0;
        let b = seeds[rng.random_range(0..seeds.len())].1;
        (a, b)
    })
}

/// How many independent tasks an evaluation's tasks are worth for the interval of their pooled
/// rate, from each goal's (solved, tried) grouped by stratum (the task's template: a generated
/// set cycles through its templates, so their shares are fixed, not drawn): `p(1 - p) / V`,
/// with `V` the variance of the pooled rate with goals as clusters within strata,
/// `Σ_h Σ_g (s_g - p_h m_g)² / n²` (the ratio estimator's), between 1 and the tasks tried.
/// Tasks whose goals are all distinct are worth exactly their number. Where `V` cannot be
/// estimated (one goal, every task solved or none, or every goal at its stratum's rate) the
/// goals count as if each repeat had its goal's outcome: Kish's `n² / Σ m_g²`.
pub fn worth(strata: &[Vec<(u64, u64)>]) -> u64 {
    let goals = || strata.iter().flatten();
    let n: u64 = goals().map(|g| g.1).sum();
    let g = goals().filter(|g| g.1 > 0).count() as u64;
    if g == n {
        return n;
    }
    let s: u64 = goals().map(|g| g.0).sum();
    let (nf, p) = (n as f64, s as f64 / n as f64);
    let kish = nf * nf / goals().map(|g| (g.1 * g.1) as f64).sum::<f64>();
    let within: f64 = strata
        .iter()
        .map(|h| {
            let (s_h, n_h) = h.iter().fold((0, 0), |(s, n), g| (s + g.0, n + g.1));
            let p_h = if n_h == 0 { 0.0 } else { s_h as f64 / n_h as f64 };
            h.iter().map(|&(s_g, m_g)| (s_g as f64 - p_h * m_g as f64).powi(2)).sum::<f64>()
        })
        .sum();
    let v = within / (nf * nf);
    let eff = if g < 2 || s == 0 || s == n || v <= 0.0 { kish } else { p * (1.0 - p) / v };
    (eff.round() as u64).clamp(1, n)
}

/// The (solved, tried) an interval counts: the counts as they are, or where the tasks repeat
/// goals, scaled to the `worth` [`worth`] gives them (at most the tasks tried).
pub fn counted(solved: u64, tried: u64, worth: Option<u64>) -> (u64, u64) {
    match worth {
        Some(w) if w < tried => ((solved as f64 * w as f64 / tried as f64).round() as u64, w),
        _ => (solved, tried),
    }
}

/// The `q` quantile of sorted values (linear between neighbours, as numpy's default).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let Some(&last) = sorted.last() else {
        return 0.0;
    };
    let at = q * (sorted.len() - 1) as f64;
    let (lo, frac) = (at.floor() as usize, at - at.floor());
    match sorted.get(lo + 1) {
        Some(&next) => sorted[lo] + frac * (next - sorted[lo]),
        None => last,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: (f64, f64), b: (f64, f64), tol: f64) {
        assert!((a.0 - b.0).abs() < tol && (a.1 - b.1).abs() < tol, "{a:?} vs {b:?}");
    }

    #[test]
    fn repeated_goals_are_worth_fewer_tasks() {
        let one = |goals: &[(u64, u64)]| worth(&[goals.to_vec()]);
        // Distinct goals: every task counts.
        assert_eq!(one(&[(1, 1), (0, 1), (1, 1)]), 3);
        // Each goal tried 4 times with one outcome each time: worth the 4 goals (Kish's count
        // agrees with the cluster variance when the repeats are copies).
        assert_eq!(one(&[(4, 4), (0, 4), (4, 4), (0, 4)]), 4);
        // Every task solved: Kish's count of 2 goals, one tried 9 times and one once (1.2).
        assert_eq!(one(&[(9, 9), (1, 1)]), 1);
        assert_eq!(one(&[(3, 3), (3, 3)]), 2);
        // Goals that differ, but whose repeats disagree too: between the goals and the tasks
        // (0.25 / (10 / 16²) = 6.4).
        assert_eq!(one(&[(4, 4), (3, 4), (1, 4), (0, 4)]), 6);
        // Repeats that disagree as much as independent tasks would: worth every task.
        let mixed: Vec<(u64, u64)> = (0..10).map(|i| (if i % 2 == 0 { 3 } else { 1 }, 4)).collect();
        assert_eq!(one(&mixed), 40);
        // No goal differs from its stratum: nothing to estimate from, Kish's count.
        assert_eq!(one(&[(1, 2), (1, 2), (1, 2)]), 3);
        assert_eq!(worth(&[]), 0);
    }

    /// A template whose goals all fail (the quickstart's "cheapest X", 3 goals dealt 14 times
    /// each) says nothing about the variance of the others: within its stratum it adds none,
    /// where pooled with them its big clusters would dominate.
    #[test]
    fn strata_keep_a_uniform_template_from_swamping_the_others() {
        let cheapest = vec![(0, 14), (0, 14), (0, 14)];
        let price: Vec<(u64, u64)> =
            (0..36).map(|i| (u64::from(i % 3 != 0), 1)).chain([(1, 6)]).collect();
        let pooled: Vec<(u64, u64)> = cheapest.iter().chain(&price).copied().collect();
        let (apart, together) = (worth(&[cheapest, price]), worth(&[pooled]));
        assert!(apart > 2 * together, "{apart} against {together}");
        assert!(apart <= 84, "{apart}");
    }

    #[test]
    fn wilson_matches_known_values() {
        // References from python3 (Wilson's closed form at z = 1.959964).
        close(wilson(7, 20, Z95), (0.181192, 0.567146), 1e-6);
        close(wilson(0, 10, Z95), (0.0, 0.277533), 1e-6);
        close(wilson(10, 10, Z95), (0.722467, 1.0), 1e-6);
        close(wilson(31, 64, Z95), (0.366336, 0.604184), 1e-6);
        assert_eq!(wilson(0, 0, Z95), (0.0, 1.0));
    }

    #[test]
    fn bootstrap_of_one_seed_is_the_binomial_quantiles() {
        // One seed of 50/100: the resampled rate is Binomial(100, 0.5)/100, whose 2.5 % and
        // 97.5 % quantiles are 0.40 and 0.60 (python3, from the binomial's cumulative sums).
        close(bootstrap(&[(50, 100)], RESAMPLES), (0.40, 0.60), 0.015);
        // Nothing varies: every resample is the same.
        assert_eq!(bootstrap(&[(0, 30), (0, 30)], RESAMPLES), (0.0, 0.0));
        assert_eq!(bootstrap(&[(30, 30), (30, 30)], RESAMPLES), (1.0, 1.0));
    }

    #[test]
    fn newcombe_matches_known_values() {
        // Newcombe (1998), table II, example (a): 56/70 − 48/80 gives [0.0524, 0.3339].
        close(newcombe((56, 70), (48, 80), Z95), (0.0524, 0.3339), 1e-4);
        // Example (d): 5/56 − 0/29 gives [−0.0381, 0.1926]: it keeps width at 0 %.
        close(newcombe((5, 56), (0, 29), Z95), (-0.0381, 0.1926), 1e-4);
        let (lo, hi) = newcombe((0, 12), (0, 12), Z95);
        assert!(lo < -0.2 && hi > 0.2, "{lo} {hi}");
        assert_eq!(newcombe((1, 0), (0, 5), Z95), (-1.0, 1.0));
    }

    #[test]
    fn bootstrap_diff_is_the_difference_of_binomials() {
        // One seed, 60/100 against 40/100: the resampled difference has mean 0.2 and standard
        // deviation √(2·0.24/100) ≈ 0.069, so its 95 % interval is about 0.2 ± 0.136.
        let (lo, hi) = bootstrap_diff(&[((60, 100), (40, 100))], RESAMPLES);
        close((lo, hi), (0.064, 0.336), 0.02);
        // Nothing varies: the difference is exact.
        assert_eq!(bootstrap_diff(&[((30, 30), (0, 30))], RESAMPLES), (1.0, 1.0));
        assert_eq!(bootstrap_diff(&[], RESAMPLES), (-1.0, 1.0));
        // Seeds that disagree widen it past either seed's own interval.
        let (l2, h2) = bootstrap_diff(&[((60, 100), (40, 100)), ((40, 100), (60, 100))], RESAMPLES);
        assert!(l2 < -0.1 && h2 > 0.1, "{l2} {h2}");
    }

    #[test]
    fn bootstrap_spreads_over_seeds_and_is_seeded() {
        // Two seeds far apart: the interval covers both seeds' mean and reaches toward each.
        let two = [(10, 100), (90, 100)];
        let (lo, hi) = bootstrap(&two, RESAMPLES);
        assert!(lo < 0.2 && hi > 0.8 && lo < 0.5 && hi > 0.5, "{lo} {hi}");
        assert_eq!(bootstrap(&two, RESAMPLES), (lo, hi));
    }
}
