//! Sampling: seeded determinism, greedy/top-k/top-p, stop strings, max tokens, and log-probs
//! that agree with a full forward pass.

use candle_core::{D, Device, Tensor};
use wrl_trainer::{FinishReason, OpsMode, SampleParams};

use crate::common::{tiny, tiny_alibi, tiny_copy, trainer};

const PROMPT: [u32; 4] = [256, 260, b'x' as u32, 261];

#[test]
fn sampling_is_seeded_and_logprobs_match_forward() {
    seeded_and_matching(&|| trainer(tiny(1, 32, OpsMode::Auto), 1e-3, 0.0, 17));
}

#[test]
fn alibi_kv_cache_logprobs_match_forward() {
    seeded_and_matching(&|| trainer(tiny_alibi(2, 32, OpsMode::Auto), 1e-3, 0.0, 18));
}

#[test]
fn copy_head_kv_cache_logprobs_match_forward() {
    seeded_and_matching(&|| trainer(tiny_copy(2, 32, OpsMode::Auto), 1e-3, 0.0, 19));
}

/// A sampler forked from the trainer decodes the trainer's weights with its own seeded RNG:
/// identical trainers fork identical samplers, and each fork advances the trainer's RNG.
#[test]
fn samplers_fork_deterministically_and_share_the_weights() {
    let make = || trainer(tiny(1, 32, OpsMode::Auto), 1e-3, 0.0, 23);
    let (mut a, mut b) = (make(), make());
    let p = SampleParams { n: 2, max_tokens: 8, temperature: 0.9, ..Default::default() };
    let mut sa = a.sampler();
    let oa = sa.sample(&[PROMPT.to_vec()], &p).unwrap();
    assert_eq!(oa, b.sampler().sample(&[PROMPT.to_vec()], &p).unwrap());
    assert_ne!(oa, a.sampler().sample(&[PROMPT.to_vec()], &p).unwrap(), "a new fork, a new stream");
    // A named stream: the same tokens every time, without advancing the trainer's RNG.
    let s7 = a.sampler_for(7).sample(&[PROMPT.to_vec()], &p).unwrap();
    assert_eq!(s7, a.sampler_for(7).sample(&[PROMPT.to_vec()], &p).unwrap());
    assert_eq!(s7, b.sampler_for(7).sample(&[PROMPT.to_vec()], &p).unwrap());
    assert_ne!(s7, a.sampler_for(8).sample(&[PROMPT.to_vec()], &p).unwrap());
    let c = make();
    let _ = c.sampler_for(7).sample(&[PROMPT.to_vec()], &p).unwrap();
    let (mut c, mut d) = (c, make());
    assert_eq!(
        c.sampler().sample(&[PROMPT.to_vec()], &p).unwrap(),
        d.sampler().sample(&[PROMPT.to_vec()], &p).unwrap(),
        "a named stream leaves the trainer's RNG where it was"
    );
    // Greedy decoding through a sampler equals the trainer's own.
    let g = SampleParams { temperature: 0.0, max_tokens: 8, ..Default::default() };
    assert_eq!(
        a.sampler().sample(&[PROMPT.to_vec()], &g).unwrap(),
        a.sample(&[PROMPT.to_vec()], &g).unwrap()
    );
}

fn seeded_and_matching(make: &dyn Fn() -> wrl_trainer::Trainer) {
    let mut a = make();
    let mut b = make();
    let p = SampleParams { n: 3, max_tokens: 12, temperature: 0.7, ..Default::default() };
    let oa = a.sample(&[PROMPT.to_vec()], &p).unwrap();
    let ob = b.sample(&[PROMPT.to_vec()], &p).unwrap();
    assert_eq!(oa, ob);
    let oc = a.sample(&[PROMPT.to_vec()], &p).unwrap();
    assert_ne!(oa, oc, "the RNG advances between calls");
    // Log-probs from the KV-cache path equal a full forward at temperature 0.7.
    for c in &oa {
        let mut seq = PROMPT.to_vec();
        seq.extend(&c.tokens);
        let ids = Tensor::from_vec(seq.clone(), (1, seq.len()), &Device::Cpu).unwrap();
        let logits = (a.model().forward(&ids).unwrap() / 0.7).unwrap();
        let lsm = candle_nn::ops::log_softmax(&logits, D::Minus1).unwrap().squeeze(0).unwrap();
        let lsm: Vec<Vec<f32>> = lsm.to_vec2().unwrap();
        for (k, (&tok, &lp)) in c.tokens.iter().zip(&c.logprobs).enumerate() {
            let want = lsm[PROMPT.len() - 1 + k][tok as usize];
            assert!((want - lp).abs() < 1e-4, "token {k}: {lp} vs {want}");
        }
        if c.finish == FinishReason::Length {
            assert_eq!(c.tokens.len(), 12);
        }
    }
}

#[test]
fn greedy_top_k_and_top_p_agree() {
    let mut t = trainer(tiny(1, 32, OpsMode::Auto), 1e-3, 0.0, 5);
    let greedy = SampleParams { temperature: 0.0, max_tokens: 8, ..Default::default() };
    let topk = SampleParams { top_k: 1, max_tokens: 8, ..Default::default() };
    let topp = SampleParams { top_p: 1e-6, max_tokens: 8, ..Default::default() };
    let g = t.sample(&[PROMPT.to_vec()], &greedy).unwrap();
    let k = t.sample(&[PROMPT.to_vec()], &topk).unwrap();
    let p = t.sample(&[PROMPT.to_vec()], &topp).unwrap();
    assert_eq!(g[0].tokens, k[0].tokens);
    assert_eq!(g[0].tokens, p[0].tokens);
}

#[test]
fn stop_strings_end_generation() {
    let mut t = trainer(tiny(1, 32, OpsMode::Auto), 1e-3, 0.0, 5);
    let free = t
        .sample(
            &[PROMPT.to_vec()],
            &SampleParams { temperature: 0.0, max_tokens: 10, ..Default::default() },
        )
        .unwrap();
    let text = free[0].text.clone();
    let bytes: Vec<u8> = free[0].tokens.iter().filter_map(|&x| u8::try_from(x).ok()).collect();
    assert!(bytes.len() >= 3, "greedy output too short to test stops: {:?}", free[0].tokens);
    let stop = String::from_utf8_lossy(&bytes[1..3]).into_owned();
    let out = t
        .sample(
            &[PROMPT.to_vec()],
            &SampleParams {
                temperature: 0.0,
                max_tokens: 10,
                stop: vec![stop.clone()],
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(out[0].finish, FinishReason::Stop(stop.clone()));
    assert!(out[0].text.ends_with(&stop), "{:?} vs {text:?}", out[0].text);
    assert!(out[0].tokens.len() <= 3);
}

#[test]
fn sample_token_follows_the_distribution() {
    use wrl_trainer::sample::sample_token;
    let logits = [0.0f32, 3f32.ln(), -30.0];
    let mut rng = wrl_trainer::rng::rng_from_seed(3);
    let p = SampleParams::default();
    let n = 4000;
    let ones = (0..n).filter(|_| sample_token(&logits, &p, &mut rng).0 == 1).count();
    let frac = ones as f64 / n as f64;
    assert!((frac - 0.75).abs() < 0.03, "P(1) sampled as {frac}");
    let (tok, lp) =
        sample_token(&logits, &SampleParams { top_k: 1, ..Default::default() }, &mut rng);
    assert_eq!(tok, 1);
    assert!((lp - 0.75f32.ln()).abs() < 1e-4, "logprob is before truncation");
    for _ in 0..50 {
        assert_eq!(
            sample_token(&logits, &SampleParams { top_p: 0.5, ..Default::default() }, &mut rng).0,
            1
        );
        assert_ne!(
            sample_token(&logits, &SampleParams { top_k: 2, ..Default::default() }, &mut rng).0,
            2
        );
    }
    // Temperature sharpens: at T = 0.25 the odds 3:1 become 81:1.
    let cold = SampleParams { temperature: 0.25, ..Default::default() };
    let ones = (0..n).filter(|_| sample_token(&logits, &cold, &mut rng).0 == 1).count();
    assert!(ones as f64 / n as f64 > 0.97);
}

/// Measuring entropy (`entropy_tokens`) leaves the draws as they were, records one value for
/// each of the first N tokens, each in [0, 1]; and `top_entropy` is the top-20 entropy over
/// ln V: 20/V for a uniform row, about 0 for a sure one.
#[test]
fn entropy_is_measured_without_changing_the_draws() {
    let make = || trainer(tiny(1, 32, OpsMode::Auto), 1e-3, 0.0, 29);
    let p = SampleParams { n: 2, max_tokens: 10, temperature: 1.0, ..Default::default() };
    let measured = SampleParams { entropy_tokens: 4, ..p.clone() };
    let plain = make().sampler_for(3).sample(&[PROMPT.to_vec()], &p).unwrap();
    let with = make().sampler_for(3).sample(&[PROMPT.to_vec()], &measured).unwrap();
    for (a, b) in plain.iter().zip(&with) {
        assert_eq!((&a.tokens, &a.logprobs), (&b.tokens, &b.logprobs));
        assert!(a.entropy.is_empty());
        assert_eq!(b.entropy.len(), b.tokens.len().min(4));
        assert!(b.entropy.iter().all(|h| (0.0..=1.0).contains(h)), "{:?}", b.entropy);
    }
    let uniform = vec![0.5f32; 100];
    assert!((wrl_trainer::top_entropy(&uniform, 1.0) - 0.2).abs() < 1e-5);
    let mut sure = vec![-50.0f32; 100];
    sure[7] = 50.0;
    assert!(wrl_trainer::top_entropy(&sure, 1.0) < 1e-6);
}
