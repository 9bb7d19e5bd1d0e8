//! Batched decoding of Qwen models (`decode::qwen`): the row-stable forward computes what
//! candle's cached forward does (grouped queries, biases or q/k norms, a sliding window), a
//! sequence's scores do not depend on how its tokens were split or what shares its passes, and
//! concurrent groups decode in one batch exactly what each decodes alone.

use wrl_trainer::decode::{Batcher, Decoder, QwenWeights, Sequence};
use wrl_trainer::models::Model;
use wrl_trainer::{OpsMode, SampleParams, Trainer};

use crate::common::{alone_and_together, candle_difference, trainer};
use crate::qwen::{Shape, policy, qwen2_shape, qwen3_shape, write_checkpoint};

/// A trainer over a random checkpoint of `shape`, its layers from the second on sliding with a
/// window of `window` positions if given.
fn qwen_trainer(shape: &Shape, window: Option<usize>, seed: u64) -> (tempfile::TempDir, Trainer) {
    let dir = tempfile::tempdir().unwrap();
    write_checkpoint(dir.path(), shape, 21);
    if let Some(w) = window {
        let path = dir.path().join("config.json");
        let mut cfg: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        cfg["use_sliding_window"] = serde_json::json!(true);
        cfg["sliding_window"] = serde_json::json!(w);
        cfg["max_window_layers"] = serde_json::json!(1);
        std::fs::write(&path, cfg.to_string()).unwrap();
    }
    let t = trainer(policy(dir.path(), shape, OpsMode::Auto), 1e-3, 0.0, seed);
    (dir, t)
}

fn weights(t: &Trainer) -> QwenWeights {
    let Model::Qwen(m) = t.model() else { panic!("a Qwen policy") };
    QwenWeights::new(m).unwrap()
}

/// Token ids below the test vocabulary (264).
fn prompt(len: usize, salt: u32) -> Vec<u32> {
    (0..len as u32).map(|i| (i * 37 + salt * 11) % 256).collect()
}

/// A prompt's prefill then three single tokens, against candle's cached forward.
fn matches_candle(shape: Shape, window: Option<usize>) {
    let (_dir, t) = qwen_trainer(&shape, window, 5);
    let w = weights(&t);
    let p = prompt(23, 3);
    let mut seq = w.new_seq(8);
    let mut cache = t.model().new_cache();
    let mut feed = p.clone();
    for step in 0..4u32 {
        let ours = w.forward(&mut [&mut seq], &[&feed]).unwrap().remove(0);
        let worst = candle_difference(t.model(), &mut cache, &feed, &ours);
        assert!(worst < 2e-4, "{}: step {step}: logits differ by {worst}", shape.model_type);
        feed = vec![40 + step];
    }
    assert_eq!(seq.len(), p.len() + 3);
}

#[test]
fn the_qwen2_forward_matches_candles() {
    matches_candle(qwen2_shape(), None);
}

#[test]
fn the_qwen3_forward_matches_candles() {
    matches_candle(qwen3_shape(), None);
}

#[test]
fn a_sliding_window_matches_candles() {
    matches_candle(qwen2_shape(), Some(5));
}

/// A prompt fed whole, in two parts beside another sequence, or one token at a time scores
/// the same bits; a sequence cut back to a prefix goes on as the prefix fed alone.
#[test]
fn the_qwen_forward_does_not_depend_on_how_tokens_are_split() {
    let (_dir, t) = qwen_trainer(&qwen3_shape(), Some(7), 9);
    let w = weights(&t);
    let p = prompt(30, 4);
    let mut whole = w.new_seq(8);
    let want = w.forward(&mut [&mut whole], &[&p]).unwrap().remove(0);
    for cut in [1, 7, p.len() - 1] {
        let mut seq = w.new_seq(8);
        w.forward(&mut [&mut seq], &[&p[..cut]]).unwrap();
        let mut other = w.new_seq(8);
        w.forward(&mut [&mut other], &[&prompt(3, 1)]).unwrap();
        let got = w.forward(&mut [&mut other, &mut seq], &[&[97, 98], &p[cut..]]).unwrap();
        assert_eq!(got[1], want, "cut at {cut}");
    }
    let mut one = w.new_seq(8);
    let mut last = Vec::new();
    for &tok in &p {
        last = w.forward(&mut [&mut one], &[&[tok]]).unwrap().remove(0);
    }
    assert_eq!(last, want, "one token at a time");
    let mut cut = whole.clone();
    cut.truncate(12);
    let mut fresh = w.new_seq(8);
    w.forward(&mut [&mut fresh], &[&p[..12]]).unwrap();
    assert_eq!(
        w.forward(&mut [&mut cut], &[&[99]]).unwrap(),
        w.forward(&mut [&mut fresh], &[&[99]]).unwrap()
    );
    let err = w.forward(&mut [&mut fresh], &[&[9999]]).unwrap_err().to_string();
    assert!(err.contains("vocabulary"), "{err}");
}

/// Groups sampled from six threads at once through one batcher decode exactly what each
/// decodes alone (the trainer's sampler, the same seed).
#[test]
fn concurrent_qwen_groups_decode_what_they_decode_alone() {
    let (_dir, t) = qwen_trainer(&qwen2_shape(), None, 7);
    let batcher = Batcher::new(weights(&t), t.tokenizer().clone());
    let params = |i: usize| SampleParams {
        n: 1 + i % 2,
        max_tokens: 5 + 2 * i,
        temperature: 0.9,
        ..SampleParams::default()
    };
    let job = |i: usize| (prompt(4 + 5 * i, i as u32), params(i));
    let (alone, together) = alone_and_together(&t, &batcher, (6, 7), job);
    assert_eq!(together, alone);
    let (steps, rows, _) = batcher.counts();
    assert!(steps > 0 && rows > steps, "{steps} steps advanced {rows} rows");
}
