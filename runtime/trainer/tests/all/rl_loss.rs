//! RL maths on tiny hand-computed cases: advantages, clipping on both sides, dual clip, KL
//! estimators, the KL-Cov loss, token- vs sequence- vs trajectory-level aggregation, overlong
//! shaping, dynamic sampling.

use wrl_trainer::rl::{
    aggregation_coefficients, grouped_aggregation_coefficients, grpo_advantages, kl_cov_selection,
    kl_cov_token_loss, overlong_penalty, shaped_rewards, token_loss,
};
use wrl_trainer::{
    GroupBuffer, KlEstimator, LossAggregation, OverlongShaping, PolicyLoss, RlConfig, Sample,
};

fn s(group: u64, traj: u64, reward: f32) -> Sample {
    Sample {
        prompt_tokens: vec![1],
        completion_tokens: vec![2, 3],
        old_logprobs: vec![-1.0, -1.0],
        completion_mask: None,
        reward,
        advantage: None,
        group_id: group,
        trajectory_id: traj,
        excluded: false,
        truncated: false,
        step: None,
        images: Vec::new(),
    }
}

fn close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-5, "{a} != {b}");
}

#[test]
fn grpo_advantages_by_hand() {
    let cfg = RlConfig::default();
    let v = vec![s(0, 0, 1.0), s(0, 1, 0.0), s(0, 2, 0.0), s(0, 3, 1.0), s(1, 4, 0.3)];
    let a = grpo_advantages(&v, &shaped_rewards(&v, &cfg), &cfg);
    let std = (1.0f64 / 3.0).sqrt(); // unbiased std of [1, 0, 0, 1]
    close(a[0], 0.5 / (std + 1e-6));
    close(a[1], -0.5 / (std + 1e-6));
    close(a[4], 0.0); // a one-sample group has no signal
    let no_std = RlConfig { normalize_std: false, ..RlConfig::default() };
    let a = grpo_advantages(&v, &shaped_rewards(&v, &no_std), &no_std);
    close(a[0], 0.5);
    close(a[2], -0.5);
}

#[test]
fn per_turn_advantages_count_each_trajectory_once() {
    let cfg = RlConfig { normalize_std: false, ..RlConfig::default() };
    // Trajectory 0 (reward 1) has three turns, trajectory 1 (reward 0) one.
    let mut v = vec![s(0, 0, 1.0), s(0, 0, 1.0), s(0, 0, 1.0), s(0, 1, 0.0)];
    // An excluded sample neither trains nor moves the group statistics.
    let mut bad = s(0, 2, 5.0);
    bad.excluded = true;
    v.push(bad);
    let a = grpo_advantages(&v, &shaped_rewards(&v, &cfg), &cfg);
    for x in &a[..3] {
        close(*x, 0.5);
    }
    close(a[3], -0.5);
    close(a[4], 0.0);
}

#[test]
fn clipping_on_both_sides() {
    let sym = RlConfig::default();
    let dapo = RlConfig { clip_high: 0.28, ..RlConfig::default() };
    let ln = |x: f64| x.ln();
    // A > 0, ratio 1.5: clipped at 1 + ε_high, no gradient.
    let t = token_loss(ln(1.5), 0.0, 1.0, None, &sym);
    close(t.pg, -1.2);
    close(t.dlogp, 0.0);
    assert!(t.clipped_high && !t.clipped_low);
    close(token_loss(ln(1.5), 0.0, 1.0, None, &dapo).pg, -1.28);
    // A > 0, ratio 1.1: inside, gradient −A·r.
    let t = token_loss(ln(1.1), 0.0, 1.0, None, &sym);
    close(t.pg, -1.1);
    close(t.dlogp, -1.1);
    // A > 0, ratio 0.5: the unclipped term is larger, gradient flows.
    let t = token_loss(ln(0.5), 0.0, 1.0, None, &sym);
    close(t.pg, -0.5);
    close(t.dlogp, -0.5);
    // A < 0, ratio 0.5: clipped at 1 − ε_low.
    let t = token_loss(ln(0.5), 0.0, -1.0, None, &sym);
    close(t.pg, 0.8);
    close(t.dlogp, 0.0);
    assert!(t.clipped_low && !t.clipped_high);
    // A < 0, ratio 1.5: not clipped (PPO only bounds the improving side).
    let t = token_loss(ln(1.5), 0.0, -1.0, None, &sym);
    close(t.pg, 1.5);
    close(t.dlogp, 1.5);
    // Dual clip caps the negative-advantage loss at −A·c.
    let dual = RlConfig { dual_clip: Some(3.0), ..RlConfig::default() };
    let t = token_loss(ln(4.0), 0.0, -1.0, None, &dual);
    close(t.pg, 3.0);
    close(t.dlogp, 0.0);
    // Advantage scales linearly; old log-prob shifts the ratio.
    let t = token_loss(-1.0 + ln(1.1), -1.0, 2.0, None, &sym);
    close(t.pg, -2.2);
}

#[test]
fn kl_estimators_and_their_derivatives() {
    let cfg = RlConfig::default();
    let (lp, rf) = (-1.0, -1.5);
    let k1 = token_loss(lp, lp, 0.0, Some((rf, 1.0, KlEstimator::K1)), &cfg);
    close(k1.kl, 0.5);
    close(k1.dlogp, 1.0);
    let k3 = token_loss(lp, lp, 0.0, Some((rf, 1.0, KlEstimator::K3)), &cfg);
    close(k3.kl, (-0.5f64).exp() + 0.5 - 1.0);
    close(k3.dlogp, 1.0 - (-0.5f64).exp());
    let k2 = token_loss(lp, lp, 0.0, Some((rf, 1.0, KlEstimator::K2)), &cfg);
    close(k2.kl, 0.125);
    close(k2.dlogp, 0.5);
    // Finite differences of the full token loss (inside the clip range), every estimator.
    for est in [KlEstimator::K1, KlEstimator::K2, KlEstimator::K3] {
        let f = |x: f64| token_loss(x, -1.02, 0.7, Some((rf, 0.3, est)), &cfg).value;
        let h = 1e-6;
        let fd = (f(lp + h) - f(lp - h)) / (2.0 * h);
        close(token_loss(lp, -1.02, 0.7, Some((rf, 0.3, est)), &cfg).dlogp, fd);
    }
}

#[test]
fn kl_cov_penalises_the_highest_covariance_tokens_and_never_clips() {
    // Covariance (A − Ā)(lp − l̄): token 2 (high A, high lp) is largest, then token 3 (low A,
    // low lp); tokens 0 and 1 are negative.
    let lps = [-0.5, -2.0, -0.1, -1.5];
    let advs = [0.5, 1.0, 2.0, -1.0];
    assert_eq!(kl_cov_selection(&lps, &advs, 0.25), [false, false, true, false]);
    // At least one token when the ratio is positive; none at 0.
    assert_eq!(kl_cov_selection(&lps, &advs, 0.0001).iter().filter(|&&b| b).count(), 1);
    assert!(kl_cov_selection(&lps, &advs, 0.0).iter().all(|&b| !b));
    assert_eq!(kl_cov_selection(&lps, &advs, 0.5), [false, false, true, true]);
    // Unselected: −A·r with no clip at ratio 1.5 (the clipped loss would stop at 1.2).
    let cfg = RlConfig {
        policy_loss: PolicyLoss::KlCov { ratio: 0.25, coef: 1.0 },
        ..RlConfig::default()
    };
    let t = token_loss(1.5f64.ln(), 0.0, 1.0, None, &cfg);
    close(t.pg, -1.5);
    close(t.dlogp, -1.5);
    assert!(!t.clipped_high);
    // Selected: plus coef·|lp − old|, with its derivative.
    let t = kl_cov_token_loss(-0.9, -1.0, 1.0, None, Some(2.0));
    close(t.pg, -(0.1f64).exp() + 0.2);
    let f = |x: f64| kl_cov_token_loss(x, -1.0, 1.0, None, Some(2.0)).value;
    let h = 1e-6;
    close(t.dlogp, (f(-0.9 + h) - f(-0.9 - h)) / (2.0 * h));
}

#[test]
fn token_versus_sequence_aggregation() {
    let counts = [1, 3];
    let losses = [vec![4.0], vec![1.0, 1.0, 1.0]];
    let agg = |a| {
        let c = aggregation_coefficients(&counts, a);
        c.iter()
            .zip(&losses)
            .map(|(c, l)| c.iter().zip(l).map(|(c, l)| c * l).sum::<f64>())
            .sum::<f64>()
    };
    close(agg(LossAggregation::TokenMean), 7.0 / 4.0);
    close(agg(LossAggregation::SeqMeanTokenMean), (4.0 + 1.0) / 2.0);
    close(agg(LossAggregation::SeqMeanTokenSum), (4.0 + 3.0) / 2.0);
}

#[test]
fn trajectory_level_aggregation_averages_a_trajectorys_turns_together() {
    // Three turns: the first two of one trajectory (1 + 3 tokens), the third alone (2 tokens).
    let counts = [1, 3, 2];
    let units = [7, 7, 9];
    let losses = [vec![4.0], vec![1.0, 1.0, 1.0], vec![2.0, 4.0]];
    let agg = |a| {
        let c = grouped_aggregation_coefficients(&counts, &units, a);
        c.iter()
            .zip(&losses)
            .map(|(c, l)| c.iter().zip(l).map(|(c, l)| c * l).sum::<f64>())
            .sum::<f64>()
    };
    close(agg(LossAggregation::TokenMean), 13.0 / 6.0);
    close(agg(LossAggregation::SeqMeanTokenMean), (7.0 / 4.0 + 6.0 / 2.0) / 2.0);
    close(agg(LossAggregation::SeqMeanTokenSum), (7.0 + 6.0) / 2.0);
}

#[test]
fn overlong_shaping() {
    let o = OverlongShaping { max_len: 10, cache_len: 4, penalty: 1.0 };
    close(overlong_penalty(6, &o), 0.0);
    close(overlong_penalty(8, &o), -0.5);
    close(overlong_penalty(10, &o), -1.0);
    close(overlong_penalty(12, &o), -1.0);
    let cfg = RlConfig { overlong: Some(o), ..RlConfig::default() };
    let mut long = s(0, 0, 1.0);
    long.completion_tokens = vec![0; 8];
    close(shaped_rewards(&[long], &cfg)[0], 0.5);
}

#[test]
fn dynamic_sampling_drops_equal_groups_and_refills() {
    let cfg = RlConfig::dapo();
    let mut buf = GroupBuffer::new(2);
    assert!(!buf.push_group(vec![s(0, 0, 1.0), s(0, 1, 1.0)], &cfg));
    assert!(!buf.push_group(vec![s(1, 0, 0.0), s(1, 1, 0.0)], &cfg));
    assert!(buf.push_group(vec![s(2, 0, 1.0), s(2, 1, 0.0)], &cfg));
    assert!(!buf.is_full());
    assert!(buf.push_group(vec![s(3, 0, 0.5), s(3, 1, 0.0)], &cfg));
    assert!(buf.is_full());
    assert_eq!((buf.groups, buf.dropped, buf.samples.len()), (2, 2, 4));
}
