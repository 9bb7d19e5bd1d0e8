//! Mixed precision on the tiny random Qwen3: bf16 and f16 forwards track the f32 one, their
//! gradients reach the f32 master weights as f32 and point the same way, SFT steps in bf16 and
//! f16 lower the loss, an f16 step whose scaled gradients overflow is skipped with the weights
//! untouched and the scale halved, and an f16 checkpoint resumes exactly, loss scale included.

use std::path::Path;

use candle_core::{DType, Device, Tensor};
use wrl_trainer::chat;
use wrl_trainer::hf::tiny::TinySpec;
use wrl_trainer::precision::Precision;
use wrl_trainer::{Example, PretrainedSource, Trainer};

fn trainer(dir: &Path, dtype: Precision, lr: f64) -> Trainer {
    crate::hf::qwen3_trainer(PretrainedSource { dtype, ..PretrainedSource::new(dir) }, lr)
}

fn examples(t: &Trainer) -> Vec<Example> {
    let c = crate::hf::conversation();
    chat::examples(t.tokenizer(), &c, 10_000).unwrap()
}

fn model_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    crate::hf::tiny_qwen3(dir.path(), TinySpec::default());
    dir
}

fn flat(t: &Tensor) -> Vec<f32> {
    t.to_dtype(DType::F32).unwrap().flatten_all().unwrap().to_vec1().unwrap()
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum();
    let n = |v: &[f32]| v.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    dot / (n(a) * n(b)).max(1e-30)
}

#[test]
fn half_precision_forwards_track_f32_and_decode_with_a_cache() {
    let dir = model_dir();
    let full = trainer(dir.path(), Precision::F32, 1e-3);
    let ex = examples(&full);
    let want = flat(&full.sft_logits(&[&ex[0]]).unwrap());
    let scale = want.iter().fold(0f32, |m, x| m.max(x.abs()));
    for (p, dt, tol) in [(Precision::Bf16, DType::BF16, 0.05), (Precision::F16, DType::F16, 0.01)] {
        let t = trainer(dir.path(), p, 1e-3);
        let logits = t.sft_logits(&[&ex[0]]).unwrap();
        assert_eq!(logits.dtype(), dt, "{p:?} computes in its dtype");
        let got = flat(&logits);
        let max = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
        assert!(max < tol * scale.max(1.0), "{p:?}: max |logit diff| {max} (scale {scale})");
        // The KV cache holds the compute dtype; decoding continues it.
        let ids = &ex[0].tokens[..8];
        let mut cache = t.model().new_cache();
        let x = Tensor::from_vec(ids.to_vec(), (1, ids.len()), &Device::Cpu).unwrap();
        let last = t.model().forward_cached_last(&x, &mut cache).unwrap();
        assert_eq!(cache.layers[0].as_ref().unwrap().0.dtype(), dt);
        assert_eq!(last.dims(), &[1, t.model().vocab()]);
        let next = Tensor::from_vec(vec![ids[0]], (1, 1), &Device::Cpu).unwrap();
        assert!(t.model().forward_cached_last(&next, &mut cache).is_ok());
        assert_eq!(cache.pos, 9);
    }
}

#[test]
fn half_precision_gradients_reach_the_f32_master_weights() {
    let dir = model_dir();
    let grads = |p: Precision| {
        let t = trainer(dir.path(), p, 1e-3);
        let ex = examples(&t);
        let all: Vec<&Example> = ex.iter().collect();
        let (loss, _) = t.sft_loss(&all).unwrap();
        assert_eq!(loss.dtype(), DType::F32);
        let store = loss.backward().unwrap();
        t.model()
            .params()
            .iter()
            .map(|(n, v)| {
                assert_eq!(v.dtype(), DType::F32, "{n}: master weights stay f32");
                let g = store.get(v.as_tensor()).unwrap_or_else(|| panic!("{n} has no gradient"));
                assert_eq!(g.dtype(), DType::F32, "{n}: its gradient is f32");
                (n.clone(), flat(g))
            })
            .collect::<Vec<_>>()
    };
    let want = grads(Precision::F32);
    for p in [Precision::Bf16, Precision::F16] {
        for ((n, g), (_, w)) in grads(p).iter().zip(&want) {
            let c = cosine(g, w);
            assert!(c > 0.98, "{p:?} {n}: cosine to the f32 gradient {c}");
        }
    }
}

#[test]
fn sft_in_bf16_and_f16_lowers_the_loss() {
    let dir = model_dir();
    for p in [Precision::Bf16, Precision::F16] {
        let mut t = trainer(dir.path(), p, 1e-2);
        let ex = examples(&t);
        let pairs: Vec<(&Example, f32)> = ex.iter().map(|e| (e, 1.0)).collect();
        let first = t.sft_step_on(&pairs, 2).unwrap();
        let mut last = first.clone();
        let mut skipped = first.skipped_steps.unwrap_or(0);
        for _ in 0..7 {
            last = t.sft_step_on(&pairs, 2).unwrap();
            skipped += last.skipped_steps.unwrap_or(0);
        }
        assert!(last.loss < first.loss * 0.8, "{p:?}: loss {} → {}", first.loss, last.loss);
        match p {
            // An early overflow or two is f16's way (the scale settles); each halves the scale.
            Precision::F16 => {
                assert!(skipped <= 2, "{skipped} of 8 steps skipped");
                assert_eq!(last.loss_scale, Some(65536.0 / f64::from(1u32 << skipped)));
            }
            Precision::Bf16 | Precision::F32 => {
                assert_eq!((last.skipped_steps, last.loss_scale), (None, None));
            }
        }
    }
}

/// Every position trained (the fused loss reads 3-D f32 logits in place; half-precision ones
/// take the reference path), as in pretraining-style data.
#[test]
fn half_precision_trains_sequences_whose_every_token_counts() {
    let dir = model_dir();
    for p in [Precision::Bf16, Precision::F16] {
        let mut t = trainer(dir.path(), p, 1e-2);
        let tokens: Vec<u32> = examples(&t)[0].tokens.iter().copied().take(24).collect();
        let mut weights = vec![1.0; tokens.len()];
        weights[0] = 0.0;
        let e = Example::new(tokens, weights);
        let m = t.sft_step_on(&[(&e, 1.0)], 1).unwrap();
        assert!(m.loss.is_finite() && m.tokens == 23, "{p:?}: {m:?}");
    }
}

#[test]
fn an_f16_overflow_skips_the_step_and_halves_the_scale() {
    let dir = model_dir();
    let t = trainer(dir.path(), Precision::F16, 1e-2);
    let ex = examples(&t);
    let pairs: Vec<(&Example, f32)> = ex.iter().map(|e| (e, 1.0)).collect();
    // A scale no f16 gradient survives: every activation gradient overflows to ±inf.
    let ck = tempfile::tempdir().unwrap();
    t.save(ck.path()).unwrap();
    let state = ck.path().join("trainer_state.json");
    let text = std::fs::read_to_string(&state).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["loss_scale"]["scale"] = serde_json::json!(1e30);
    // An edit on purpose: sealed again, or the load refuses the changed state.
    let edited: wrl_trainer::checkpoint::TrainerState = serde_json::from_value(json).unwrap();
    let sealed = edited.sealed().unwrap();
    std::fs::write(&state, serde_json::to_string_pretty(&sealed).unwrap()).unwrap();
    let mut t = Trainer::load(ck.path()).unwrap();
    let before = crate::common::snapshot(&t);
    let m = t.sft_step_on(&pairs, 2).unwrap();
    assert_eq!(m.skipped_steps, Some(1));
    assert_eq!(m.loss_scale, Some(5e29));
    assert_eq!(crate::common::snapshot(&t), before, "a skipped step moves no weight");
    assert!(m.loss.is_finite(), "the reported loss is the unscaled one");
}

#[test]
fn an_f16_checkpoint_resumes_exactly_with_its_loss_scale() {
    let dir = model_dir();
    let mut a = trainer(dir.path(), Precision::F16, 1e-2);
    let ex = examples(&a);
    let pairs: Vec<(&Example, f32)> = ex.iter().map(|e| (e, 1.0)).collect();
    a.sft_step_on(&pairs, 2).unwrap();
    let ck = tempfile::tempdir().unwrap();
    a.save(ck.path()).unwrap();
    let mut b = Trainer::load(ck.path()).unwrap();
    let (ma, mb) = (a.sft_step_on(&pairs, 2).unwrap(), b.sft_step_on(&pairs, 2).unwrap());
    let same = |m: wrl_trainer::Metrics| wrl_trainer::Metrics { memory: Default::default(), ..m };
    assert_eq!(same(ma), same(mb));
    assert_eq!(crate::common::snapshot(&a), crate::common::snapshot(&b));
    assert_eq!(b.model().params().iter().next().unwrap().1.dtype(), DType::F32);
}
