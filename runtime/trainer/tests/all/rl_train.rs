//! RL with the real tiny model: loss value and log-prob gap on a fresh batch, excluded samples,
//! and a bandit over byte strings with a known optimum whose expected reward must rise.

use candle_core::{Device, Tensor};
use wrl_trainer::{
    LossAggregation, MiniBatchUnit, OpsMode, RlConfig, Sample, SampleLevel, SampleParams, Trainer,
};

use crate::common::{snapshot, tiny, trainer};

const PROMPT: [u32; 5] = [256, 260, b'q' as u32, 257, 261];

fn group(
    t: &mut Trainer,
    n: usize,
    max_tokens: usize,
    reward: &dyn Fn(&[u32]) -> f32,
    gid: u64,
) -> Vec<Sample> {
    let outs = t
        .sample(&[PROMPT.to_vec()], &SampleParams { n, max_tokens, ..Default::default() })
        .unwrap();
    outs.into_iter()
        .enumerate()
        .map(|(i, c)| {
            let r = reward(&c.tokens);
            crate::common::sample(&PROMPT, c, r, (gid, gid * 1000 + i as u64))
        })
        .collect()
}

#[test]
fn loss_equals_minus_mean_advantage_on_fresh_samples() {
    let mut t = trainer(tiny(1, 32, OpsMode::Auto), 1e-3, 0.0, 2);
    let s = group(&mut t, 6, 5, &|toks| toks.len() as f32 + toks[0] as f32 / 300.0, 0);
    let cfg = RlConfig {
        normalize_std: false,
        aggregation: LossAggregation::TokenMean,
        ..RlConfig::default()
    };
    let m = t.rl_update(&s, &cfg).unwrap();
    // ratio = 1 on fresh samples, so the token-mean loss is −Σ Aᵢ·nᵢ / Σ nᵢ.
    let rs: Vec<f64> = s.iter().map(|x| x.reward as f64).collect();
    let mean = rs.iter().sum::<f64>() / rs.len() as f64;
    let n: f64 = s.iter().map(|x| x.completion_tokens.len() as f64).sum();
    let want =
        -s.iter().zip(&rs).map(|(x, r)| (r - mean) * x.completion_tokens.len() as f64).sum::<f64>()
            / n;
    assert!((m.loss - want).abs() < 1e-4, "loss {} want {want}", m.loss);
    let gap = m.logprob_gap.unwrap();
    assert!(gap < 1e-4, "rollout vs training log-prob gap {gap}");
    assert_eq!(m.clip_frac, Some(0.0));
    assert_eq!(m.optimizer_steps, Some(1));
}

#[test]
fn mini_batches_count_turns_or_whole_trajectories() {
    let mut t = trainer(tiny(1, 32, OpsMode::Auto), 1e-3, 0.0, 2);
    // Six samples: three trajectories of two turns each.
    let mut s = group(&mut t, 6, 4, &|toks| toks[0] as f32 / 100.0, 0);
    for (i, x) in s.iter_mut().enumerate() {
        x.trajectory_id = i as u64 / 2;
    }
    let steps = |t: &mut Trainer, s: &[Sample], cfg: RlConfig| {
        t.rl_update(s, &cfg).unwrap().optimizer_steps
    };
    let turns = RlConfig { mini_batch: 4, ppo_epochs: 2, ..RlConfig::default() };
    assert_eq!(steps(&mut t, &s, turns.clone()), Some(4), "6 turns in batches of 4: 2 per epoch");
    let trajs = RlConfig { level: SampleLevel::Trajectory, mini_batch: 2, ..turns };
    assert_eq!(steps(&mut t, &s, trajs), Some(4), "3 trajectories in batches of 2: 2 per epoch");
    let one = RlConfig { level: SampleLevel::Trajectory, mini_batch: 3, ..RlConfig::default() };
    assert_eq!(steps(&mut t, &s, one), Some(1));
    let by_count = RlConfig { minibatches: 3, ..RlConfig::default() };
    assert_eq!(steps(&mut t, &s, by_count), Some(3));
    // At turn level a mini-batch of groups or trajectories takes all their turns: trajectories
    // 0 and 1 are group 0 (four turns), trajectory 2 is group 1 (two turns), interleaved as
    // concurrent episodes finish.
    for (x, (traj, gid)) in s.iter_mut().zip([(0, 0), (2, 1), (0, 0), (1, 0), (2, 1), (1, 0)]) {
        (x.trajectory_id, x.group_id) = (traj, gid);
    }
    let groups = RlConfig { mini_batch: 1, mini_batch_unit: MiniBatchUnit::Groups, ..turns };
    assert_eq!(steps(&mut t, &s, groups.clone()), Some(4), "2 groups, one step each, 2 epochs");
    let both = RlConfig { mini_batch: 2, ..groups.clone() };
    assert_eq!(steps(&mut t, &s, both), Some(2), "both groups in one step");
    let whole = RlConfig { mini_batch_unit: MiniBatchUnit::Trajectories, ..groups };
    assert_eq!(steps(&mut t, &s, whole), Some(6), "3 trajectories of all their turns, 2 epochs");
}

/// `mini_batch_rest = drop`: the samples past the last whole mini-batch are left out and
/// counted; the step they would have made is not taken; a batch that splits evenly loses none.
#[test]
fn the_rest_past_the_last_whole_mini_batch_is_dropped_and_counted() {
    let mut t = trainer(tiny(1, 32, OpsMode::Auto), 1e-3, 0.0, 2);
    let s = group(&mut t, 6, 4, &|toks| toks[0] as f32 / 100.0, 0);
    let drop = RlConfig { mini_batch: 4, drop_rest: true, ..RlConfig::default() };
    let m = t.rl_update(&s, &drop).unwrap();
    assert_eq!((m.optimizer_steps, m.trimmed), (Some(1), Some(2)), "6 samples in fours");
    let even = RlConfig { mini_batch: 3, ..drop.clone() };
    let m = t.rl_update(&s, &even).unwrap();
    assert_eq!((m.optimizer_steps, m.trimmed), (Some(2), Some(0)));
    let train = RlConfig { drop_rest: false, ..drop };
    let m = t.rl_update(&s, &train).unwrap();
    assert_eq!((m.optimizer_steps, m.trimmed), (Some(2), None), "a shorter last step instead");
}

/// Forward batches (sorted by length, as many as fit, or `micro_batch` each) change the cost of
/// an update, not its result: loss and gradient norm agree to float rounding, and so do the
/// weights (Adam's first step is about ±lr per weight whatever the gradient's scale, so a
/// gradient that is zero in exact arithmetic, like the key bias's, moves by rounding noise).
#[test]
fn the_split_into_forward_batches_does_not_change_the_update() {
    let make = || trainer(tiny(1, 32, OpsMode::Auto), 1e-2, 0.0, 5);
    let mut probe = make();
    let mut s = group(&mut probe, 6, 6, &|toks| toks.len() as f32 + toks[0] as f32 / 300.0, 0);
    // Prompts of different lengths, so that sorting and padding matter.
    for (i, x) in s.iter_mut().enumerate() {
        x.prompt_tokens = PROMPT.iter().copied().cycle().take(PROMPT.len() + 3 * i).collect();
    }
    let after = |micro: usize| {
        let mut t = make();
        let cfg = RlConfig { micro_batch: micro, ..RlConfig::default() };
        let m = t.rl_update(&s, &cfg).unwrap();
        (m.loss, m.grad_norm, snapshot(&t))
    };
    let (loss, norm, whole) = after(0);
    for micro in [1, 4] {
        let (l, n, w) = after(micro);
        assert!(
            (l - loss).abs() < 1e-6 * loss.abs().max(1.0),
            "micro_batch {micro}: loss {l} vs {loss}"
        );
        assert!((n - norm).abs() < 1e-5 * norm, "micro_batch {micro}: grad norm {n} vs {norm}");
        for (name, w) in &w {
            let d = w.iter().zip(&whole[name]).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
            assert!(d < 1e-4, "micro_batch {micro}: `{name}` differs by {d}");
        }
    }
}

#[test]
fn excluded_samples_do_not_touch_the_update() {
    let mut a = trainer(tiny(1, 32, OpsMode::Auto), 1e-2, 0.0, 4);
    let mut b = trainer(tiny(1, 32, OpsMode::Auto), 1e-2, 0.0, 4);
    let s = group(&mut a, 4, 4, &|toks| toks[0] as f32 / 100.0, 0);
    let mut with_bad = s.clone();
    let mut bad = s[0].clone();
    bad.reward = 100.0;
    bad.trajectory_id = 99;
    bad.excluded = true;
    with_bad.push(bad);
    let ma = a.rl_update(&s, &RlConfig::default()).unwrap();
    let mb = b.rl_update(&with_bad, &RlConfig::default()).unwrap();
    assert_eq!(mb.excluded, Some(1));
    assert_eq!(ma.loss, mb.loss);
    assert_eq!(snapshot(&a), snapshot(&b));
}

/// Exact expected reward of the first generated byte under the policy (no sampling noise).
fn expected_reward(t: &Trainer, reward: &dyn Fn(&[u32]) -> f32) -> f64 {
    let ids = Tensor::from_vec(PROMPT.to_vec(), (1, PROMPT.len()), &Device::Cpu).unwrap();
    let logits: Vec<Vec<f32>> =
        t.model().forward(&ids).unwrap().squeeze(0).unwrap().to_vec2().unwrap();
    let last = &logits[PROMPT.len() - 1];
    let m = last.iter().cloned().fold(f32::MIN, f32::max);
    let z: f64 = last.iter().map(|&x| ((x - m) as f64).exp()).sum();
    last.iter()
        .enumerate()
        .map(|(i, &x)| ((x - m) as f64).exp() / z * reward(&[i as u32]) as f64)
        .sum()
}

#[test]
fn rl_raises_expected_reward_on_a_bandit() {
    // Reward of a one-token answer: 1 for 'm', falling linearly with byte distance; 0 for specials.
    let reward = |toks: &[u32]| -> f32 {
        match toks.first() {
            Some(&b) if b < 256 => 1.0 - (b as f32 - b'm' as f32).abs() / 256.0 * 4.0,
            _ => -1.0,
        }
        .max(-1.0)
    };
    let mut t = trainer(tiny(1, 32, OpsMode::Auto), 1e-2, 0.0, 8);
    let before = expected_reward(&t, &reward);
    let cfg = RlConfig { clip_high: 0.28, ..RlConfig::default() };
    for it in 0..30 {
        let mut s = group(&mut t, 8, 1, &reward, 2 * it);
        s.extend(group(&mut t, 8, 1, &reward, 2 * it + 1));
        t.rl_update(&s, &cfg).unwrap();
    }
    let after = expected_reward(&t, &reward);
    assert!(
        after > before + 0.4 && after > 0.6,
        "expected reward {before:.3} -> {after:.3} (optimum 1.0)"
    );
}

#[test]
fn completion_mask_removes_tool_tokens_from_the_loss() {
    let mut a = trainer(tiny(1, 32, OpsMode::Auto), 1e-2, 0.0, 6);
    let mut b = trainer(tiny(1, 32, OpsMode::Auto), 1e-2, 0.0, 6);
    let mut s = group(&mut a, 4, 6, &|toks| toks.len() as f32, 0);
    for x in &mut s {
        x.completion_tokens = vec![b'a' as u32, b'b' as u32, b'c' as u32, b'd' as u32];
        x.old_logprobs = vec![-5.0; 4];
        // Tokens 1 and 2 stand for tool output inside a multi-turn completion.
        x.completion_mask = Some(vec![true, false, false, true]);
    }
    for (i, x) in s.iter_mut().enumerate() {
        x.reward = i as f32;
    }
    let mut changed = s.clone();
    for x in &mut changed {
        x.old_logprobs[1] = -0.1;
        x.old_logprobs[2] = -9.0;
    }
    let ma = a.rl_update(&s, &RlConfig::default()).unwrap();
    let mb = b.rl_update(&changed, &RlConfig::default()).unwrap();
    assert_eq!(ma.tokens, 8);
    assert_eq!(ma.loss, mb.loss);
    assert_eq!(snapshot(&a), snapshot(&b));
}

/// The entropy bonus (`entropy` of `grpo`, `dapo` and `ppo`: `entropy_coef`): on the same fresh
/// samples and weights, a step's loss is the loss without it less coef × the mean token entropy
/// the step measured, and the bonus reaches the gradients (the weights move differently).
#[test]
fn entropy_bonus_lowers_the_loss_by_coef_times_entropy() {
    let coef = 0.1;
    let mut plain = trainer(tiny(1, 32, OpsMode::Auto), 1e-3, 0.0, 2);
    let mut bonus = trainer(tiny(1, 32, OpsMode::Auto), 1e-3, 0.0, 2);
    let s = group(&mut plain, 6, 5, &|toks| toks.len() as f32 + toks[0] as f32 / 300.0, 0);
    // PPO's settings: token-mean over the mini-batch, one epoch of one mini-batch.
    let cfg = RlConfig {
        normalize_std: false,
        aggregation: LossAggregation::TokenMean,
        ..RlConfig::default()
    };
    let without = plain.rl_update(&s, &cfg).unwrap();
    let with = bonus.rl_update(&s, &RlConfig { entropy_coef: coef, ..cfg }).unwrap();
    let h = with.entropy.unwrap();
    assert!(h > 0.0, "a random model's entropy is positive: {h}");
    assert!((without.entropy.unwrap() - h).abs() < 1e-6, "same weights, same entropy");
    let want = without.loss - coef * h;
    assert!((with.loss - want).abs() < 1e-5, "loss {} want {want} (entropy {h})", with.loss);
    assert_ne!(snapshot(&plain), snapshot(&bonus), "the bonus changes the step");
}
