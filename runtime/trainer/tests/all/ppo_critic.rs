//! PPO with a learned critic on the real tiny model: the critic fits the returns, GAE learns
//! where group-relative advantages cannot (one sample per prompt), the critic's warm-up leaves
//! the policy alone, a checkpoint resumes the critic exactly, and KL as a reward penalty.

use wrl_trainer::{
    Advantage, Critic, KlConfig, KlEstimator, OpsMode, OptimConfig, RlConfig, Sample, SampleParams,
    Trainer,
};

use crate::common::{snapshot, tiny, trainer};

const PROMPT: [u32; 4] = [256, b'v' as u32, 257, 261];

/// `n` samples of one token each, every one its own group (`group = 1`).
fn singles(t: &mut Trainer, n: usize, reward: &dyn Fn(&[u32]) -> f32, from: u64) -> Vec<Sample> {
    let outs = t
        .sample(&[PROMPT.to_vec()], &SampleParams { n, max_tokens: 1, ..Default::default() })
        .unwrap();
    outs.into_iter()
        .enumerate()
        .map(|(i, c)| {
            let id = from + i as u64;
            let r = reward(&c.tokens);
            crate::common::sample(&PROMPT, c, r, (id, id))
        })
        .collect()
}

fn gae(warmup: u64) -> RlConfig {
    RlConfig {
        advantage: Advantage::Gae { gamma: 1.0, lambda: 1.0, value_clip: Some(0.5), warmup },
        ..RlConfig::default()
    }
}

fn with_critic(seed: u64, lr: f64) -> Trainer {
    let mut t = trainer(tiny(1, 32, OpsMode::Auto), 1e-2, 0.0, seed);
    let c = Critic::from_policy(&t, OptimConfig { lr, weight_decay: 0.0, ..Default::default() })
        .unwrap();
    t.set_critic(Some(c));
    t
}

/// Reward 1 for a lowercase letter, 0 otherwise.
fn letter(toks: &[u32]) -> f32 {
    f32::from(toks.first().is_some_and(|&b| (b'a' as u32..=b'z' as u32).contains(&b)))
}

/// The value of the prompt's state starts at 0 (zero head) and moves to the mean return.
#[test]
fn the_critic_fits_the_returns() {
    let mut t = with_critic(3, 3e-2);
    assert_eq!(t.prompt_values(&[PROMPT.to_vec()]).unwrap(), Some(vec![0.0]), "zero head");
    let constant = |_: &[u32]| 0.75f32;
    let mut first = None;
    let mut last = 0.0;
    for it in 0..25 {
        let s = singles(&mut t, 8, &constant, it * 100);
        let m = t.rl_update(&s, &gae(1000)).unwrap();
        first.get_or_insert(m.value_loss.unwrap());
        last = m.value_loss.unwrap();
        assert_eq!(m.return_mean, Some(0.75), "γ = λ = 1: the return is the reward");
    }
    let first = first.unwrap();
    assert!((first - 0.5 * 0.75f64.powi(2)).abs() < 1e-6, "first loss {first}: V = 0");
    assert!(last < first / 20.0, "value loss {first} -> {last}");
    assert!(t.critic().unwrap().steps() == 25);
    // The value of the prompt's state, as a task filter reads it, is the return it fitted.
    let v = t.prompt_values(&[PROMPT.to_vec(), PROMPT.to_vec()]).unwrap().unwrap();
    assert!(v.iter().all(|v| (v - 0.75).abs() < 0.1), "{v:?}");
    assert_eq!(v[0], v[1]);
    let none = trainer(tiny(1, 32, OpsMode::Auto), 1e-2, 0.0, 3);
    assert_eq!(none.prompt_values(&[PROMPT.to_vec()]).unwrap(), None, "no critic");
}

/// With one sample per prompt every group-relative advantage is 0 and nothing is learned;
/// GAE against a learned baseline raises the expected reward.
#[test]
fn gae_learns_with_one_sample_per_prompt() {
    let mut grpo = trainer(tiny(1, 32, OpsMode::Auto), 1e-2, 0.0, 5);
    let s = singles(&mut grpo, 8, &letter, 0);
    let m = grpo.rl_update(&s, &RlConfig::default()).unwrap();
    assert_eq!(m.advantage_abs_mean, Some(0.0));

    let mut t = with_critic(5, 1e-2);
    let rate = |t: &mut Trainer| {
        let s = singles(t, 256, &letter, 9_000_000);
        s.iter().map(|x| x.reward as f64).sum::<f64>() / s.len() as f64
    };
    let before = rate(&mut t);
    let mut moved = 0.0;
    for it in 0..30 {
        let s = singles(&mut t, 16, &letter, it * 100);
        moved += t.rl_update(&s, &gae(0)).unwrap().advantage_abs_mean.unwrap();
    }
    assert!(moved > 1.0, "GAE advantages summed to {moved}");
    let after = rate(&mut t);
    assert!(after > before + 0.3, "letters {before:.3} -> {after:.3}");
}

/// During the warm-up the critic trains and the policy does not move.
#[test]
fn the_warm_up_trains_the_critic_alone() {
    let mut t = with_critic(7, 1e-2);
    // Rewards that differ between samples, so that advantages are not all 0.
    let s = singles(&mut t, 8, &|toks: &[u32]| toks[0] as f32 / 256.0, 0);
    let before = snapshot(&t);
    let m = t.rl_update(&s, &gae(1)).unwrap();
    assert!(snapshot(&t) == before, "the policy moved during the critic's warm-up");
    assert_eq!(t.critic().unwrap().steps(), 1);
    assert!(m.value_loss.is_some());
    t.rl_update(&s, &gae(1)).unwrap();
    assert!(snapshot(&t) != before, "after the warm-up the policy trains");
}

/// A checkpoint holds the critic: the next update after a resume equals the uninterrupted one.
#[test]
fn a_checkpoint_resumes_the_critic_exactly() {
    let mut a = with_critic(11, 1e-2);
    let s1 = singles(&mut a, 8, &letter, 0);
    let s2 = singles(&mut a, 8, &letter, 100);
    a.rl_update(&s1, &gae(0)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    a.save(dir.path()).unwrap();
    assert!(dir.path().join("critic.safetensors").is_file());
    let mut b = Trainer::load(dir.path()).unwrap();
    assert_eq!(b.critic().unwrap().steps(), 1);
    let ma = a.rl_update(&s2, &gae(0)).unwrap();
    let mb = b.rl_update(&s2, &gae(0)).unwrap();
    assert_eq!(ma.value_loss, mb.value_loss);
    assert_eq!(ma.loss, mb.loss);
    assert!(snapshot(&a) == snapshot(&b), "the resumed policy differs");
    // Without its critic a GAE update is refused, never run as GRPO.
    let mut plain = trainer(tiny(1, 32, OpsMode::Auto), 1e-2, 0.0, 11);
    let e = plain.rl_update(&s2, &gae(0)).unwrap_err().to_string();
    assert!(e.contains("need a critic"), "{e}");
}

/// KL on the reward: equal rewards still give advantages once the policy has left its
/// reference (the trajectories' penalties differ), and the loss has no KL term.
#[test]
fn kl_as_a_reward_penalty_moves_the_advantages() {
    let mut t = trainer(tiny(1, 32, OpsMode::Auto), 3e-2, 0.0, 13);
    t.set_reference_to_current().unwrap();
    // Move the policy away from the reference.
    for it in 0..5 {
        let mut s = singles(&mut t, 8, &letter, it * 100);
        for x in &mut s {
            x.group_id = it;
        }
        t.rl_update(&s, &RlConfig::default()).unwrap();
    }
    let mut s = singles(&mut t, 8, &|_: &[u32]| 1.0, 1000);
    for x in &mut s {
        x.group_id = 1;
    }
    let kl = Some(KlConfig { coef: 0.5, estimator: KlEstimator::K1 });
    let in_loss = RlConfig { kl, ..RlConfig::default() };
    let on_reward = RlConfig { kl, kl_in_reward: true, ..RlConfig::default() };
    let mut a = t.duplicate().unwrap();
    let m_loss = a.rl_update(&s, &in_loss).unwrap();
    assert_eq!(m_loss.advantage_abs_mean, Some(0.0), "equal rewards: no advantage");
    let mut b = t.duplicate().unwrap();
    let m_reward = b.rl_update(&s, &on_reward).unwrap();
    assert!(m_reward.advantage_abs_mean.unwrap() > 0.1, "{m_reward:?}");
    assert!(m_reward.kl.unwrap().abs() > 0.0);
    // On fresh samples the ratio is 1: the loss is −mean A (token mean), no β·KL added.
    assert!(m_reward.loss.abs() < 1e-3, "{}", m_reward.loss);
    assert!(m_loss.loss.abs() > 1e-3, "{}", m_loss.loss);
}
