//! A Qwen3-VL policy resumes exactly (#43 item 5): GRPO updates on samples that carry their
//! screenshots, saved and loaded between two of them, leave the same weights (text decoder
//! moved, tower as loaded) and the same sampling stream as the run that went straight through.

use std::sync::Arc;

use wrl_trainer::rl::{KlConfig, KlEstimator};
use wrl_trainer::{RlConfig, Sample, SampleParams, Trainer};

use crate::common::snapshot;

fn trainer(dir: &std::path::Path) -> Trainer {
    crate::common::vl_trainer(dir, 23)
}

/// One GRPO round: a prompt with the round's screenshot, four samples drawn through the whole
/// model, rewarded by their tokens, one update.
fn round(t: &mut Trainer, dir: &std::path::Path, r: u64) {
    let px = crate::common::screen(dir, r as usize, (160, 96));
    let side = t.model().vision().unwrap();
    let c = &side.config;
    let mut prompt = vec![5, 6 + r as u32, c.vision_start_token_id];
    prompt.extend(std::iter::repeat_n(c.mrope.image_token_id, side.pads(&px)));
    prompt.extend([c.vision_end_token_id, 7]);
    let params = SampleParams { n: 4, max_tokens: 4, ..Default::default() };
    let outs = t.sampler().sample_images(&prompt, std::slice::from_ref(&px), &params).unwrap();
    let images = vec![Arc::new(px)];
    let samples: Vec<Sample> = outs
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let reward = c.tokens.iter().map(|&x| (x % 7) as f32).sum::<f32>();
            let s = crate::common::sample(&prompt, c, reward, (r, i as u64));
            Sample { images: images.clone(), ..s }
        })
        .collect();
    let cfg = RlConfig {
        kl: Some(KlConfig { coef: 0.05, estimator: KlEstimator::K3 }),
        entropy_coef: 0.01,
        ..RlConfig::default()
    };
    t.rl_update(&samples, &cfg).unwrap();
}

#[test]
fn a_vl_policy_resumes_its_updates_and_its_sampling_exactly() {
    let model = crate::common::tiny_vl();
    let dir = model.path();
    let mut straight = trainer(dir);
    let source = snapshot(&straight);
    for r in 0..2 {
        round(&mut straight, dir, r);
    }
    let mut first = trainer(dir);
    round(&mut first, dir, 0);
    let ck = tempfile::tempdir().unwrap();
    first.save(ck.path()).unwrap();
    drop(first);
    let mut resumed = Trainer::load(ck.path()).unwrap();
    assert!(resumed.model().vision().is_some(), "the checkpoint is a VL policy");
    round(&mut resumed, dir, 1);
    assert_eq!(resumed.step(), straight.step());
    let (a, b) = (snapshot(&resumed), snapshot(&straight));
    assert_eq!(a, b, "the resumed weights differ from the straight run's");
    let moved = a.iter().filter(|(k, v)| source.get(*k).is_some_and(|s| s != *v)).count();
    assert!(moved > 0, "the updates moved nothing");
    // The sampling stream continues as it would have.
    let px = crate::common::screen(dir, 5, (160, 96));
    let side = straight.model().vision().unwrap();
    let c = &side.config;
    let mut prompt = vec![5, c.vision_start_token_id];
    prompt.extend(std::iter::repeat_n(c.mrope.image_token_id, side.pads(&px)));
    prompt.extend([c.vision_end_token_id]);
    let p = SampleParams { n: 2, max_tokens: 5, ..Default::default() };
    let one = std::slice::from_ref(&px);
    assert_eq!(
        resumed.sampler().sample_images(&prompt, one, &p).unwrap(),
        straight.sampler().sample_images(&prompt, one, &p).unwrap()
    );
}
