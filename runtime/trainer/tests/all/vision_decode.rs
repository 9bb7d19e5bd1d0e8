//! A Qwen-VL policy's turns in the shared decoding batch (#43 item 9): the row-stable decoder
//! computes what candle's whole model computes (Qwen3-VL with DeepStack, Qwen2.5-VL), whatever
//! the split of its rows, and the prefix cache reuses a cached prompt only as far as its
//! screenshots are the same: a turn whose tokens match another's but whose screenshot differs
//! decodes exactly what it decodes alone.

use wrl_trainer::decode::{Batcher, Decoder, QwenWeights, Sequence};
use wrl_trainer::hf::tiny::{TinySpec, TokenizerSource};
use wrl_trainer::hf::tiny_vl::{TinyVision, write_vl};
use wrl_trainer::models::Model;
use wrl_trainer::vision::Pixels;
use wrl_trainer::{SampleParams, Trainer};

use crate::common::{screen, vl_trainer};

fn trainer(vision: TinyVision) -> (tempfile::TempDir, Trainer) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let corpus = vec!["click the blue button then type the answer".to_string()];
    let tok = TokenizerSource::Generated { corpus, merges: 20 };
    write_vl(dir.path(), &TinySpec::narrow(), &vision, &tok).expect("the tiny VL model");
    let t = vl_trainer(dir.path(), 5);
    (dir, t)
}

/// `pre`, then each image's `<|vision_start|>`, pads and `<|vision_end|>`, then `post`.
fn prompt(t: &Trainer, pre: &[u32], images: &[Pixels], post: &[u32]) -> Vec<u32> {
    let side = t.model().vision().expect("a VL policy");
    let c = &side.config;
    let mut ids = pre.to_vec();
    for px in images {
        ids.push(c.vision_start_token_id);
        ids.extend(std::iter::repeat_n(c.mrope.image_token_id, side.pads(px)));
        ids.push(c.vision_end_token_id);
    }
    ids.extend_from_slice(post);
    ids
}

fn weights(t: &Trainer) -> QwenWeights {
    match t.model() {
        Model::Qwen(m) => QwenWeights::new(m).expect("the decoder's weights"),
        Model::Tiny(_) => panic!("a Qwen-VL policy"),
    }
}

/// The row-stable decoder's scores after `ids` fed in `cuts` pieces.
fn fed(t: &Trainer, w: &QwenWeights, ids: &[u32], images: &[Pixels], cuts: &[usize]) -> Vec<f32> {
    let side = t.model().vision().expect("a VL policy");
    let mut seq = w.new_seq(ids.len());
    seq.set_vision(side.plan(ids, images).expect("the plan"));
    let mut from = 0;
    let mut last = Vec::new();
    for &to in cuts.iter().chain(std::iter::once(&ids.len())) {
        last = w.forward(&mut [&mut seq], &[&ids[from..to]]).expect("forward").remove(0);
        from = to;
    }
    assert_eq!(seq.len(), ids.len());
    last
}

/// Candle's whole model's last-position scores for `ids`.
fn candle(t: &Trainer, ids: &[u32], images: &[Pixels]) -> Vec<f32> {
    let Model::Qwen(m) = t.model() else { panic!("a Qwen-VL policy") };
    let vl = t.model().vision().expect("a VL policy").model(m);
    let logits = vl.logits(ids, images).expect("logits");
    let last = logits.narrow(1, ids.len() - 1, 1).expect("narrow");
    last.flatten_all().expect("flat").to_vec1::<f32>().expect("f32")
}

fn matches_candle(vision: TinyVision) {
    let (dir, t) = trainer(vision);
    let (a, b) = (screen(dir.path(), 1, (160, 96)), screen(dir.path(), 2, (96, 128)));
    let images = [a, b];
    let ids = prompt(&t, &[5, 6, 7], &images, &[8, 9, 10]);
    let w = weights(&t);
    let ours = fed(&t, &w, &ids, &images, &[]);
    let theirs = candle(&t, &ids, &images);
    let banned = wrl_trainer::vision::vision_tokens(&t.model().vision().expect("VL").config);
    let mut worst = 0f32;
    for (i, (x, y)) in ours.iter().zip(&theirs).enumerate() {
        if banned.contains(&(i as u32)) {
            assert_eq!(*x, f32::NEG_INFINITY, "image token {i} is never drawn");
            continue;
        }
        worst = worst.max((x - y).abs());
    }
    assert!(worst < 1e-4, "the batch decoder is {worst} off candle's whole model");
    // Split anywhere (inside an image's run too), the rows are the same bits.
    let mid = ids.iter().position(|&x| x == 9).expect("post");
    for cuts in [vec![4], vec![6, 20], vec![mid]] {
        assert_eq!(fed(&t, &w, &ids, &images, &cuts), ours, "cut at {cuts:?}");
    }
}

#[test]
fn qwen3_vl_decodes_in_the_batch_as_candle_computes_it() {
    matches_candle(TinyVision::default());
}

#[test]
fn qwen25_vl_decodes_in_the_batch_as_candle_computes_it() {
    matches_candle(TinyVision::qwen25());
}

/// Turns through one shared batch: one on screenshot `a`, then one whose tokens are the same on
/// screenshot `b`, then `a`'s turn followed by more text. Each decodes exactly what it decodes
/// alone (a batch of its own, an empty cache, the same seed); the second reuses only the text
/// before its screenshot, and the third the whole of the first's prefill.
#[test]
fn the_prefix_cache_reuses_a_turn_only_with_its_screenshots() {
    let (dir, t) = trainer(TinyVision::default());
    let (a, b) = (screen(dir.path(), 1, (160, 96)), screen(dir.path(), 2, (160, 96)));
    assert_ne!(a, b);
    let pre: Vec<u32> = (5..25).collect();
    let first = prompt(&t, &pre, std::slice::from_ref(&a), &[30, 31]);
    let second = prompt(&t, &pre, std::slice::from_ref(&b), &[30, 31]);
    assert_eq!(first, second, "the same tokens, another screenshot");
    let mut third = first.clone();
    third.extend([32, 33, 34]);
    let params = SampleParams { n: 2, max_tokens: 6, temperature: 1.0, ..Default::default() };
    let side = t.model().vision().expect("VL").clone();
    let turns = [(&first, &a), (&second, &b), (&third, &a)];
    let shared = Batcher::new(weights(&t), t.tokenizer().clone());
    let mut seen = Vec::new();
    for (k, (ids, px)) in turns.iter().enumerate() {
        let images = std::slice::from_ref(*px);
        let seed = |k: usize| wrl_trainer::rng::rng_from_seed(40 + k as u64);
        let plan = side.plan(ids, images).expect("the plan");
        let got = shared.sample_vl(ids, plan, &params, &mut seed(k), None).expect("batched");
        let own = Batcher::new(weights(&t), t.tokenizer().clone());
        let plan = side.plan(ids, images).expect("the plan");
        let want = own.sample_vl(ids, plan, &params, &mut seed(k), None).expect("alone");
        let view = |c: &[wrl_trainer::Completion]| -> Vec<(Vec<u32>, Vec<u32>)> {
            c.iter()
                .map(|c| (c.tokens.clone(), c.logprobs.iter().map(|x| x.to_bits()).collect()))
                .collect()
        };
        assert_eq!(view(&got), view(&want), "turn {k}");
        seen.push(view(&got));
        let reused = shared.counts().2 as usize;
        match k {
            0 => assert_eq!(reused, 0),
            // The text before the screenshot, and its `<|vision_start|>`.
            1 => assert_eq!(reused, pre.len() + 1),
            _ => assert_eq!(reused, pre.len() + 1 + first.len()),
        }
    }
    assert_ne!(seen[0], seen[1], "screenshot b decoded as a");
    assert!(side.features_reused() >= 2, "screenshot a went through the tower again");
}
