//! Exact resume: N steps straight and N/2 + save + load + N/2 give bit-identical weights,
//! optimiser state, RNG stream and data cursor on CPU — for SFT over a mixture and for RL with
//! sampling (which consumes the RNG) and a KL reference.

use wrl_trainer::{
    Dataset, KlConfig, KlEstimator, Mixture, MixtureWeights, OpsMode, RlConfig, Role, Sample,
    SampleParams, Segment, SftConfig, Trainer, Trajectory, render,
};

use crate::common::{snapshot, tiny, trainer};

fn mixture(t: &Trainer) -> Mixture {
    let mk = |texts: &[&str]| -> Vec<wrl_trainer::Example> {
        texts
            .iter()
            .map(|s| {
                let tr = Trajectory {
                    segments: vec![
                        Segment::new(Role::User, "q"),
                        Segment::new(Role::Assistant, *s),
                    ],
                    tools: Vec::new(),
                };
                render(t.tokenizer(), &tr, 64).unwrap()
            })
            .collect()
    };
    Mixture {
        datasets: vec![
            Dataset { name: "a".into(), examples: mk(&["alpha", "beta", "gamma"]) },
            Dataset { name: "b".into(), examples: mk(&["one", "two", "three", "four", "five"]) },
        ],
        weights: MixtureWeights::Fixed(vec![0.3, 0.7]),
    }
}

#[test]
fn sft_resume_is_bit_identical() {
    let cfg = SftConfig { micro_batch: 2, grad_accum: 2, epochs: 3, seed: None };
    let mut straight = trainer(tiny(1, 32, OpsMode::Auto), 3e-3, 0.01, 31);
    let data = mixture(&straight);
    for _ in 0..6 {
        straight.sft_step(&data, &cfg).unwrap();
    }
    let mut first = trainer(tiny(1, 32, OpsMode::Auto), 3e-3, 0.01, 31);
    for _ in 0..3 {
        first.sft_step(&data, &cfg).unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    first.save(dir.path()).unwrap();
    drop(first);
    let mut resumed = Trainer::load(dir.path()).unwrap();
    for _ in 0..3 {
        resumed.sft_step(&data, &cfg).unwrap();
    }
    assert_eq!(resumed.step(), straight.step());
    assert_eq!(resumed.cursor(), straight.cursor());
    assert_eq!(snapshot(&resumed), snapshot(&straight));
}

fn rl_round(t: &mut Trainer, round: u64) {
    let prompt = vec![256, 260, b'a' as u32 + round as u32, 261];
    let outs = t
        .sample(
            std::slice::from_ref(&prompt),
            &SampleParams { n: 4, max_tokens: 4, ..Default::default() },
        )
        .unwrap();
    let samples: Vec<Sample> = outs
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let r = c.tokens.iter().map(|&x| x as f32).sum::<f32>() / 1000.0;
            crate::common::sample(&prompt, c, r, (round, i as u64))
        })
        .collect();
    let cfg = RlConfig {
        ppo_epochs: 2,
        kl: Some(KlConfig { coef: 0.05, estimator: KlEstimator::K3 }),
        ..RlConfig::dapo()
    };
    t.rl_update(&samples, &cfg).unwrap();
}

#[test]
fn rl_resume_with_sampling_is_bit_identical() {
    let mut straight = trainer(tiny(1, 32, OpsMode::Auto), 3e-3, 0.0, 41);
    for r in 0..4 {
        rl_round(&mut straight, r);
    }
    let mut first = trainer(tiny(1, 32, OpsMode::Auto), 3e-3, 0.0, 41);
    for r in 0..2 {
        rl_round(&mut first, r);
    }
    assert!(first.has_reference());
    let dir = tempfile::tempdir().unwrap();
    first.save(dir.path()).unwrap();
    let mut resumed = Trainer::load(dir.path()).unwrap();
    assert!(resumed.has_reference());
    for r in 2..4 {
        rl_round(&mut resumed, r);
    }
    assert_eq!(resumed.step(), straight.step());
    assert_eq!(snapshot(&resumed), snapshot(&straight));
    // And the RNG continues identically.
    let p = SampleParams { n: 2, max_tokens: 5, ..Default::default() };
    assert_eq!(
        resumed.sample(&[vec![256, 261]], &p).unwrap(),
        straight.sample(&[vec![256, 261]], &p).unwrap()
    );
}

#[test]
fn no_reference_is_held_without_kl() {
    let mut t = trainer(tiny(1, 32, OpsMode::Auto), 1e-3, 0.0, 1);
    let prompt = vec![256, 261];
    let outs = t
        .sample(
            std::slice::from_ref(&prompt),
            &SampleParams { n: 2, max_tokens: 3, ..Default::default() },
        )
        .unwrap();
    let s: Vec<Sample> = outs
        .into_iter()
        .enumerate()
        .map(|(i, c)| crate::common::sample(&prompt, c, i as f32, (0, i as u64)))
        .collect();
    let cfg = RlConfig {
        kl: Some(KlConfig { coef: 0.0, estimator: KlEstimator::K1 }),
        ..RlConfig::default()
    };
    t.rl_update(&s, &cfg).unwrap();
    assert!(!t.has_reference());
}

/// A duplicate is the trainer as it stands, and independent of it: one SFT step on the original
/// leaves the duplicate's weights where they were, and the same step on the duplicate then gives
/// bit-identical weights.
#[test]
fn a_duplicate_trains_like_the_original_and_apart_from_it() {
    let mut a = trainer(tiny(1, 32, OpsMode::Auto), 3e-3, 0.01, 37);
    let data = mixture(&a);
    let cfg = SftConfig { micro_batch: 2, grad_accum: 1, epochs: 1, seed: None };
    a.sft_step(&data, &cfg).unwrap();
    let mut b = a.duplicate().unwrap();
    let before = snapshot(&b);
    a.sft_step(&data, &cfg).unwrap();
    assert_eq!(snapshot(&b), before, "training the original moved the duplicate");
    b.sft_step(&data, &cfg).unwrap();
    assert_eq!(snapshot(&b), snapshot(&a));
    assert_ne!(snapshot(&b), before);
}
