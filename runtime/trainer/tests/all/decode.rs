//! Batched decoding (`decode`): the row-stable forward computes what candle's does, and a
//! group decodes the same tokens in a shared batch as alone, whoever else is in it.

use wrl_trainer::decode::tiny::{advance, forward, prefill};
use wrl_trainer::decode::{Batcher, Seq, Sequence, TinyWeights};
use wrl_trainer::models::Model;
use wrl_trainer::{OpsMode, SampleParams};

use crate::common::{alone_and_together, candle_difference, tiny, tiny_alibi, tiny_copy, trainer};

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
        let worst = candle_difference(t.model(), &mut cache, &feed, &ours);
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
    let job = |i: usize| (prompt(2 + 5 * i, i as u32), params(i));
    let (alone, together) = alone_and_together(&t, &batcher, (8, 7), job);
    assert_eq!(together, alone);
    let (steps, rows, _) = batcher.counts();
    assert!(steps > 0 && rows > steps, "{steps} steps advanced {rows} rows");
}

/// However a sequence's tokens are split between passes (a prompt at once, a prefix then the
/// rest, one token at a time) and whatever shares the passes, its scores have the same bits:
/// what makes a cached prefix exact.
#[test]
fn the_forward_does_not_depend_on_how_tokens_are_split() {
    let t = trainer(tiny_copy(2, 32, OpsMode::Auto), 1e-3, 0.0, 9);
    let Model::Tiny(m) = t.model() else { panic!("tiny") };
    let w = TinyWeights::new(m).unwrap();
    let p = prompt(30, 4);
    let mut whole = Seq::new(&w, 8);
    let want = prefill(&w, &mut whole, &p).unwrap();
    for cut in [1, 7, p.len() - 1] {
        let mut seq = Seq::new(&w, 8);
        prefill(&w, &mut seq, &p[..cut]).unwrap();
        let mut other = Seq::new(&w, 8);
        prefill(&w, &mut other, &prompt(3, 1)).unwrap();
        let got = forward(&w, &mut [&mut other, &mut seq], &[&[97, 98], &p[cut..]]).unwrap();
        assert_eq!(got[1], want, "cut at {cut}");
    }
    let mut one = Seq::new(&w, 8);
    let mut last = Vec::new();
    for &tok in &p {
        last = advance(&w, &mut [&mut one], &[tok]).unwrap().remove(0);
    }
    assert_eq!(last, want, "one token at a time");
    // A longer sequence cut back to a prefix goes on as the prefix fed alone.
    let mut cut = whole.clone();
    cut.truncate(12);
    let mut fresh = Seq::new(&w, 8);
    prefill(&w, &mut fresh, &p[..12]).unwrap();
    assert_eq!(
        advance(&w, &mut [&mut cut], &[99]).unwrap(),
        advance(&w, &mut [&mut fresh], &[99]).unwrap()
    );
    assert!(forward(&w, &mut [&mut fresh], &[&[]]).is_err(), "an empty feed");
}

/// Prompts sharing a task's prefix, and one prompt sampled twice, through the batch (whose
/// prefix cache serves them) decode exactly what they decode without any cache.
#[test]
fn cached_prefixes_decode_what_fresh_prefills_decode() {
    let t = trainer(tiny_copy(2, 32, OpsMode::Auto), 1e-3, 0.0, 3);
    let Model::Tiny(m) = t.model() else { panic!("tiny") };
    let batcher = Batcher::new(TinyWeights::new(m).unwrap(), t.tokenizer().clone());
    let plain = Batcher::new(TinyWeights::new(m).unwrap(), t.tokenizer().clone());
    let task = prompt(40, 2);
    let prompts: Vec<Vec<u32>> = (0..6)
        .map(|i| {
            let mut p = task.clone();
            p.extend(prompt(i % 4, i as u32));
            p
        })
        .collect();
    let params = SampleParams { n: 2, max_tokens: 8, temperature: 0.9, ..SampleParams::default() };
    let seeded = |i: usize| wrl_trainer::rng::rng_from_seed(wrl_trainer::rng::mix(3, i as u64));
    for (i, p) in prompts.iter().enumerate() {
        let cached = batcher.sample(std::slice::from_ref(p), &params, &mut seeded(i)).unwrap();
        let fresh = plain
            .sample_observed(std::slice::from_ref(p), &params, &mut seeded(i), &mut |_| {})
            .unwrap();
        assert_eq!(cached, fresh, "prompt {i}");
    }
    let (_, _, reused) = batcher.counts();
    assert!(reused >= 5 * task.len() as u64, "{reused} prompt tokens reused");
    assert_eq!(plain.counts().2, 0);
}
