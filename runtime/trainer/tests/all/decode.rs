//! Batched decoding (`decode`): the row-stable forward computes what candle's does, and a
//! group decodes the same tokens in a shared batch as alone, whoever else is in it.

use candle_core::{Device, Tensor};
use wrl_trainer::decode::tiny::{advance, prefill};
use wrl_trainer::decode::{Batcher, Seq, TinyWeights};
use wrl_trainer::models::Model;
use wrl_trainer::{OpsMode, SampleParams};

use crate::common::{tiny, tiny_alibi, tiny_copy, trainer};

/// A user turn, an assistant marker, a bit of an answer, and again: the copy head's mask has
/// a segment of its own to hide.
fn prompt(len: usize, salt: u32) -> Vec<u32> {
    let mut p = vec![256, 260];
    p.extend((0..len).map(|i| (b'a' as u32) + (i as u32 * 7 + salt) % 26));
    p.extend([261, b'c' as u32, b'l' as u32, 262, b'x' as u32, 261]);
    p
}

/// Prefill then three single tokens, the row-stable forward against candle's cached one.
fn forward_matches_candle(policy: wrl_trainer::PolicyConfig) {
    let t = trainer(policy, 1e-3, 0.0, 5);
    let Model::Tiny(m) = t.model() else { panic!("tiny") };
    let w = TinyWeights::new(m).unwrap();
    let p = prompt(9, 3);
    let mut seq = Seq::new(&w, 64);
    let mut cache = t.model().new_cache();
    let mut feed = p.clone();
    for step in 0..4 {
        let ours = if step == 0 {
            prefill(&w, &mut seq, &feed).unwrap()
        } else {
            advance(&w, &mut [&mut seq], &feed).unwrap().remove(0)
        };
        let ids = Tensor::from_vec(feed.clone(), (1, feed.len()), &Device::Cpu).unwrap();
        let theirs: Vec<f32> = t
            .model()
            .forward_cached_last(&ids, &mut cache)
            .unwrap()
            .squeeze(0)
            .unwrap()
            .to_vec1()
            .unwrap();
        let worst = ours.iter().zip(&theirs).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
        assert!(worst < 2e-4, "step {step}: scores differ by {worst}");
        feed = vec![(b'd' as u32) + step];
    }
    assert_eq!(seq.len(), p.len() + 3);
}

#[test]
fn the_forward_matches_candles_with_learned_positions() {
    forward_matches_candle(tiny(2, 32, OpsMode::Auto));
}

#[test]
fn the_forward_matches_candles_with_alibi() {
    forward_matches_candle(tiny_alibi(2, 32, OpsMode::Auto));
}

#[test]
fn the_forward_matches_candles_with_the_copy_head() {
    forward_matches_candle(tiny_copy(2, 32, OpsMode::Auto));
}

/// Sequences of different lengths stepped together give each the bits it gets alone, and a
/// prefill gives the bits of a prefill.
#[test]
fn a_sequence_scores_the_same_bits_in_any_batch() {
    let t = trainer(tiny_copy(2, 32, OpsMode::Auto), 1e-3, 0.0, 6);
    let Model::Tiny(m) = t.model() else { panic!("tiny") };
    let w = TinyWeights::new(m).unwrap();
    let prompts: Vec<Vec<u32>> = (0..5).map(|i| prompt(3 + 4 * i, i as u32)).collect();
    let fresh = || -> Vec<Seq> {
        prompts
            .iter()
            .map(|p| {
                let mut s = Seq::new(&w, 64);
                prefill(&w, &mut s, p).unwrap();
                s
            })
            .collect()
    };
    let mut alone = fresh();
    let mut together = fresh();
    for step in 0..3u32 {
        let tokens: Vec<u32> = (0..5).map(|i| b'a' as u32 + i + step).collect();
        let one: Vec<Vec<f32>> = alone
            .iter_mut()
            .zip(&tokens)
            .map(|(s, &tok)| advance(&w, &mut [s], &[tok]).unwrap().remove(0))
            .collect();
        let mut refs: Vec<&mut Seq> = together.iter_mut().collect();
        assert_eq!(advance(&w, &mut refs, &tokens).unwrap(), one, "step {step}");
    }
    let again = fresh();
    assert_eq!(again.len(), 5);
    let mut a = Seq::new(&w, 64);
    let mut b = Seq::new(&w, 64);
    assert_eq!(
        prefill(&w, &mut a, &prompts[4]).unwrap(),
        prefill(&w, &mut b, &prompts[4]).unwrap()
    );
}

/// Groups sampled from eight threads at once through one batcher decode exactly what each
/// decodes alone (`sample::sample` with the same seed), n > 1 groups, stop strings and all.
#[test]
fn concurrent_groups_decode_what_they_decode_alone() {
    let t = trainer(tiny_copy(2, 32, OpsMode::Auto), 1e-3, 0.0, 7);
    let Model::Tiny(m) = t.model() else { panic!("tiny") };
    let batcher = Batcher::new(TinyWeights::new(m).unwrap(), t.tokenizer().clone());
    let params = |i: usize| SampleParams {
        n: 1 + i % 3,
        max_tokens: 6 + 3 * i,
        temperature: 0.8,
        top_k: if i.is_multiple_of(2) { 0 } else { 20 },
        stop: if i == 5 { vec!["a".into()] } else { Vec::new() },
        repetition_penalty: if i == 3 { 1.3 } else { 1.0 },
        ..SampleParams::default()
    };
    let alone: Vec<_> = (0..8)
        .map(|i| {
            let mut s = t.sampler_for(100 + i as u64);
            s.sample(&[prompt(2 + 5 * i, i as u32)], &params(i)).unwrap()
        })
        .collect();
    let barrier = std::sync::Barrier::new(8);
    let together: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..8)
            .map(|i| {
                let (batcher, barrier) = (&batcher, &barrier);
                let mut rng = wrl_trainer::rng::rng_from_seed(wrl_trainer::rng::mix(7, 100 + i));
                s.spawn(move || {
                    barrier.wait();
                    batcher.sample(
                        &[prompt(2 + 5 * i as usize, i as u32)],
                        &params(i as usize),
                        &mut rng,
                    )
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap().unwrap()).collect()
    });
    assert_eq!(together, alone);
    let (steps, rows) = batcher.counts();
    assert!(steps > 0 && rows > steps, "{steps} steps advanced {rows} rows");
}
