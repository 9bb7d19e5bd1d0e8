//! Every trainable parameter receives a non-zero gradient, for every model family and objective.
//! Checked through the optimiser: with weight decay 0, AdamW leaves a parameter bit-for-bit
//! unchanged exactly when its whole gradient is zero.

use wrl_trainer::{
    KlConfig, KlEstimator, LossAggregation, OpsMode, PolicyConfig, PolicyLoss, RlConfig, Role,
    Sample, SampleLevel, SampleParams, Segment, Trainer, Trajectory, render, render_prompt,
};

use crate::common::{snapshot, tiny, tiny_alibi, trainer, unchanged};
use crate::qwen::{policy, qwen2_shape, qwen3_shape, write_checkpoint};

fn samples(t: &mut Trainer) -> Vec<Sample> {
    let prompt = render_prompt(t.tokenizer(), &[Segment::new(Role::User, "go")]).unwrap();
    let outs = t
        .sample(
            std::slice::from_ref(&prompt),
            &SampleParams { n: 4, max_tokens: 6, ..Default::default() },
        )
        .unwrap();
    outs.into_iter()
        .enumerate()
        .map(|(i, c)| crate::common::sample(&prompt, c, [1.0, 0.0, 0.5, 0.2][i], (0, i as u64)))
        .collect()
}

fn objectives() -> Vec<(&'static str, RlConfig)> {
    vec![
        (
            "grpo",
            RlConfig { aggregation: LossAggregation::SeqMeanTokenMean, ..RlConfig::default() },
        ),
        ("dapo", RlConfig::dapo()),
        (
            "ppo+kl+entropy",
            RlConfig {
                ppo_epochs: 2,
                minibatches: 2,
                micro_batch: 1,
                kl: Some(KlConfig { coef: 0.1, estimator: KlEstimator::K3 }),
                entropy_coef: 0.01,
                use_rollout_logprobs: false,
                ..RlConfig::default()
            },
        ),
        (
            "kl_cov+k2 by trajectory",
            RlConfig {
                policy_loss: PolicyLoss::KlCov { ratio: 0.5, coef: 1.0 },
                kl: Some(KlConfig { coef: 0.1, estimator: KlEstimator::K2 }),
                level: SampleLevel::Trajectory,
                mini_batch: 2,
                ppo_epochs: 2,
                ..RlConfig::default()
            },
        ),
    ]
}

fn check_all(make: &dyn Fn() -> Trainer, label: &str) {
    // SFT
    let mut t = make();
    let tr = Trajectory {
        segments: vec![Segment::new(Role::User, "hello"), Segment::new(Role::Assistant, "world!")],
        tools: Vec::new(),
    };
    let ex = render(t.tokenizer(), &tr, 64).unwrap();
    let before = snapshot(&t);
    t.sft_step_on(&[(&ex, 1.0)], 1).unwrap();
    let same = unchanged(&before, &snapshot(&t));
    assert!(same.is_empty(), "{label}/sft: no gradient for {same:?}");
    // RL objectives
    for (name, cfg) in objectives() {
        let mut t = make();
        let s = samples(&mut t);
        let before = snapshot(&t);
        let m = t.rl_update(&s, &cfg).unwrap();
        assert!(m.grad_norm > 0.0);
        let same = unchanged(&before, &snapshot(&t));
        assert!(same.is_empty(), "{label}/{name}: no gradient for {same:?}");
    }
}

#[test]
fn every_param_gets_gradient_tiny_fused() {
    check_all(&|| trainer(tiny(2, 32, OpsMode::Auto), 1e-3, 0.0, 3), "tiny-fused");
}

#[test]
fn every_param_gets_gradient_tiny_alibi() {
    check_all(&|| trainer(tiny_alibi(2, 32, OpsMode::Auto), 1e-3, 0.0, 3), "tiny-alibi");
}

#[test]
fn every_param_gets_gradient_tiny_reference_ops() {
    check_all(&|| trainer(tiny(2, 32, OpsMode::Reference), 1e-3, 0.0, 3), "tiny-reference");
}

#[test]
fn every_param_gets_gradient_qwen() {
    for shape in [qwen2_shape(), qwen3_shape()] {
        let dir = tempfile::tempdir().unwrap();
        write_checkpoint(dir.path(), &shape, 4);
        let p: PolicyConfig = policy(dir.path(), &shape, OpsMode::Auto);
        check_all(&|| trainer(p.clone(), 1e-3, 0.0, 3), shape.model_type);
    }
}
