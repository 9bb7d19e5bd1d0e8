//! SFT of a Qwen3-VL policy (#43 item 5): an example's image pads expanded to its screenshot's
//! tokens with no loss on them, a cut that never splits an image, and SFT steps whose forward
//! reads the screenshots (two screenshots, two losses) and whose gradient trains the text
//! decoder; a VL policy never draws the tokens that stand for an image.

use wrl_trainer::{Example, Trainer};

fn trainer(dir: &std::path::Path) -> Trainer {
    crate::common::vl_trainer(dir, 5)
}

fn model() -> tempfile::TempDir {
    crate::common::tiny_vl()
}

/// `text, <vision_start> <image_pad> <vision_end>` per image, then two trained tokens.
fn example(t: &Trainer, images: usize) -> Example {
    let c = &t.model().vision().unwrap().config;
    let mut tokens = vec![5, 6];
    for _ in 0..images {
        tokens.extend([c.vision_start_token_id, c.mrope.image_token_id, c.vision_end_token_id]);
    }
    tokens.extend([7, 8, 9]);
    let mut weights = vec![0.0; tokens.len()];
    let n = weights.len();
    weights[n - 2..].copy_from_slice(&[1.0, 1.0]);
    Example::new(tokens, weights)
}

#[test]
fn image_pads_expand_without_loss_and_a_cut_never_splits_an_image() {
    let dir = model();
    let t = trainer(dir.path());
    let side = t.model().vision().unwrap();
    let pad = side.config.mrope.image_token_id;
    let (a, b) = (
        crate::common::screen(dir.path(), 1, (160, 96)),
        crate::common::screen(dir.path(), 2, (96, 64)),
    );
    let (na, nb) = (side.pads(&a), side.pads(&b));
    assert!(na > 1 && nb > 1 && na != nb, "{na} {nb}");
    let ex = example(&t, 2);
    let whole = side.expand_example(&ex, &[a.clone(), b.clone()], usize::MAX).unwrap();
    assert_eq!(whole.tokens.len(), ex.tokens.len() - 2 + na + nb);
    assert_eq!(whole.tokens.iter().filter(|&&x| x == pad).count(), na + nb);
    assert_eq!(whole.images.len(), 2);
    assert_eq!(whole.trained_tokens(), 2, "no loss on the pads");
    for (x, w) in whole.tokens.iter().zip(&whole.weights) {
        if *x == pad {
            assert_eq!(*w, 0.0);
        }
    }
    // A cut inside the second image falls before it: the first image stays whole.
    let cut = side.expand_example(&ex, &[a.clone(), b.clone()], 2 + 3 + na + 2).unwrap();
    assert_eq!(cut.images.len(), 1);
    assert_eq!(cut.tokens.iter().filter(|&&x| x == pad).count(), na);
    assert_eq!(cut.tokens.len(), 2 + 1 + na + 1 + 1, "cut before the second image's pads");
    // Placeholders and images that do not pair up are refused.
    let err = side.expand_example(&ex, &[a], usize::MAX).unwrap_err();
    assert!(err.to_string().contains("2 image placeholder(s) for 1 image(s)"), "{err}");
}

#[test]
fn sft_steps_read_the_screenshots_and_train_the_text_decoder() {
    let dir = model();
    let mut t = trainer(dir.path());
    let side = t.model().vision().unwrap().clone();
    let (a, b) = (
        crate::common::screen(dir.path(), 1, (160, 96)),
        crate::common::screen(dir.path(), 3, (160, 96)),
    );
    let ex = example(&t, 1);
    let on_a = side.expand_example(&ex, std::slice::from_ref(&a), usize::MAX).unwrap();
    let on_b = side.expand_example(&ex, std::slice::from_ref(&b), usize::MAX).unwrap();
    let loss = |t: &Trainer, e: &Example| t.sft_loss(&[e]).unwrap().0.to_scalar::<f32>().unwrap();
    let (la, lb) = (loss(&t, &on_a), loss(&t, &on_b));
    assert!(la.is_finite() && lb.is_finite());
    assert!((la - lb).abs() > 1e-6, "the screenshot does not reach the loss: {la} vs {lb}");
    // The step's own loss is the loss of its example, and steps lower it.
    let first = t.sft_step_on(&[(&on_a, 1.0)], 1).unwrap();
    assert!((first.loss as f32 - la).abs() < 1e-4, "{} vs {la}", first.loss);
    assert!(first.grad_norm > 0.0);
    for _ in 0..4 {
        t.sft_step_on(&[(&on_a, 1.0)], 1).unwrap();
    }
    let after = loss(&t, &on_a);
    assert!(after < la - 1e-3, "five SFT steps left the loss at {after} (from {la})");
    // A batch of two examples with different screenshots is the mean of the two.
    let both = t.sft_loss(&[&on_a, &on_b]).unwrap().0.to_scalar::<f32>().unwrap();
    let (la, lb) = (loss(&t, &on_a), loss(&t, &on_b));
    assert!((both - (la + lb) / 2.0).abs() < 1e-4, "{both} vs {la} {lb}");
}

/// A random policy draws any token; the ones that stand for an image never reach a completion,
/// where the turn's update and the next prompt would read them as an image that is not there.
#[test]
fn a_vl_policy_never_draws_its_image_tokens() {
    let dir = model();
    let mut t = trainer(dir.path());
    let side = t.model().vision().unwrap().clone();
    let c = &side.config;
    let banned = [
        c.vision_start_token_id,
        c.mrope.image_token_id,
        c.vision_end_token_id,
        c.mrope.video_token_id,
    ];
    let px = crate::common::screen(dir.path(), 4, (160, 96));
    let ex = example(&t, 1);
    let prompt = side.expand(&ex.tokens, std::slice::from_ref(&px)).unwrap();
    let params =
        wrl_trainer::SampleParams { n: 8, max_tokens: 64, temperature: 3.0, ..Default::default() };
    let outs = t.sampler().sample_images(&prompt, &[px], &params).unwrap();
    let drawn: usize = outs.iter().map(|o| o.tokens.len()).sum();
    assert!(drawn > 100, "{drawn} tokens");
    for o in &outs {
        assert!(o.tokens.iter().all(|x| !banned.contains(x)), "{:?}", o.tokens);
        assert!(o.logprobs.iter().all(|l| l.is_finite()));
    }
}

/// The update reads the distribution the rollout drew from: without the image tokens, so an
/// on-policy update's log-probs are the rollout's (a gap of the banned tokens' mass otherwise).
#[test]
fn the_update_reads_the_rollouts_log_probs_of_a_vl_policy() {
    use wrl_trainer::{RlConfig, Sample};
    let dir = model();
    let mut t = trainer(dir.path());
    let side = t.model().vision().unwrap().clone();
    let px = crate::common::screen(dir.path(), 5, (160, 96));
    let prompt = side.expand(&example(&t, 1).tokens, std::slice::from_ref(&px)).unwrap();
    let params = wrl_trainer::SampleParams { n: 4, max_tokens: 16, ..Default::default() };
    let outs = t.sampler().sample_images(&prompt, std::slice::from_ref(&px), &params).unwrap();
    let images = vec![std::sync::Arc::new(px)];
    let samples: Vec<Sample> = outs
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let s = crate::common::sample(&prompt, c, i as f32, (0, i as u64));
            Sample { images: images.clone(), ..s }
        })
        .collect();
    let m = t.rl_update(&samples, &RlConfig::default()).unwrap();
    let gap = m.logprob_gap.expect("the first batch's gap");
    assert!(gap < 1e-5, "the update read another distribution than the rollout: {gap}");
}
