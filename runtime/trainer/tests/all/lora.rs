//! LoRA adapters (`lora.rs`) on the tiny random Qwen3: an SFT step moves the adapters only (every
//! base weight bit-identical, no optimiser state for it), a checkpoint resumes to the same
//! logits, its PEFT adapter loads back over the base to the same logits, its merged model loads
//! as a plain model, the batched decoder reads the adapted weights, and merging them away keeps
//! what the model computes; dropout on the adapters' inputs, as PEFT's, in training forwards
//! only, drawn the same on a rerun and by a recomputed layer.

use std::path::Path;

use candle_core::{Device, Tensor};
use wrl_trainer::decode::{Decoder, QwenWeights, Sequence};
use wrl_trainer::hf::tiny::TinySpec;
use wrl_trainer::lora::LoraSpec;
use wrl_trainer::models::Model;
use wrl_trainer::{Example, LoraStart, PretrainedSource, Trainer, chat};

fn spec(rank: usize) -> LoraSpec {
    let targets = ["q_proj", "v_proj", "o_proj", "gate_proj", "down_proj"];
    let targets = targets.map(String::from).to_vec();
    LoraSpec { rank, alpha: 8.0, dropout: 0.0, targets, base_step: 0 }
}

fn base_trainer(dir: &Path) -> Trainer {
    crate::hf::qwen3_trainer(PretrainedSource::new(dir), 1e-2)
}

/// A trainer on the model in `dir` with fresh rank-2 adapters, after `steps` SFT steps.
fn trained(dir: &Path, steps: usize) -> Trainer {
    trained_with(dir, steps, false)
}

/// [`trained`], its layers recomputed in the backward pass or not.
fn trained_with(dir: &Path, steps: usize, checkpointing: bool) -> Trainer {
    trained_dropout(dir, steps, checkpointing, 0.0)
}

/// [`trained_with`], the adapters' inputs dropped with probability `dropout` in training.
fn trained_dropout(dir: &Path, steps: usize, checkpointing: bool, dropout: f64) -> Trainer {
    let src =
        PretrainedSource { gradient_checkpointing: checkpointing, ..PretrainedSource::new(dir) };
    let mut t = crate::hf::qwen3_trainer(src, 1e-2);
    t.set_lora(Some(&LoraSpec { dropout, ..spec(2) }), &LoraStart::Fresh, 7).unwrap();
    let ex = chat::examples(t.tokenizer(), &crate::hf::conversation(), 10_000).unwrap();
    let pairs: Vec<(&Example, f32)> = ex.iter().map(|e| (e, 1.0)).collect();
    for _ in 0..steps {
        assert!(t.sft_step_on(&pairs, 2).unwrap().grad_norm > 0.0);
    }
    t
}

const IDS: [u32; 9] = [5, 17, 40, 3, 99, 120, 7, 64, 2];

fn logits(t: &Trainer) -> Vec<f32> {
    let ids = Tensor::from_vec(IDS.to_vec(), (1, IDS.len()), &Device::Cpu).unwrap();
    t.model().forward(&ids).unwrap().flatten_all().unwrap().to_vec1().unwrap()
}

fn worst(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max)
}

fn is_adapter(name: &str) -> bool {
    wrl_trainer::lora::is_adapter(name)
}

#[test]
fn an_sft_step_moves_the_adapters_only() {
    let dir = tempfile::tempdir().unwrap();
    crate::hf::tiny_qwen3(dir.path(), TinySpec::default());
    let mut fresh = base_trainer(dir.path());
    let plain = logits(&fresh);
    fresh.set_lora(Some(&spec(2)), &LoraStart::Fresh, 7).unwrap();
    // B starts at zero: fresh adapters change nothing.
    assert_eq!(logits(&fresh), plain);
    let before = crate::common::snapshot(&fresh);
    let t = trained(dir.path(), 2);
    let after = crate::common::snapshot(&t);
    let unchanged = crate::common::unchanged(&before, &after);
    let base: Vec<String> = before.keys().filter(|n| !is_adapter(n)).cloned().collect();
    // Every base weight bit-identical, every adapter moved (A from the second step, once B
    // is no longer zero).
    assert_eq!(unchanged, base);
    assert_eq!(before.keys().filter(|n| is_adapter(n)).count(), 2 * 5 * TinySpec::default().layers);
    assert!(worst(&logits(&t), &plain) > 1e-4, "the adapters changed nothing");
    // Recomputed layers (the stdlib's default) train the adapters as kept ones do.
    let re = crate::common::snapshot(&trained_with(dir.path(), 2, true));
    for (n, v) in &after {
        assert!(worst(v, &re[n]) < 1e-5, "{n} differs with recomputed layers");
    }
    let ck = tempfile::tempdir().unwrap();
    t.save(ck.path()).unwrap();
    let moments =
        candle_core::safetensors::load(ck.path().join("optimizer.safetensors"), &Device::Cpu)
            .unwrap();
    let names: Vec<&String> = moments.keys().collect();
    assert!(!names.is_empty());
    assert!(names.iter().all(|k| is_adapter(k)), "optimiser state for {names:?}");
}

#[test]
fn a_checkpoint_resumes_and_its_adapter_and_merged_model_load_back() {
    let dir = tempfile::tempdir().unwrap();
    crate::hf::tiny_qwen3(dir.path(), TinySpec::default());
    let t = trained(dir.path(), 3);
    let want = logits(&t);
    let ck = tempfile::tempdir().unwrap();
    t.save(ck.path()).unwrap();
    let cfg: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(ck.path().join("adapter/adapter_config.json")).unwrap(),
    )
    .unwrap();
    assert_eq!((cfg["peft_type"].as_str(), cfg["r"].as_u64()), (Some("LORA"), Some(2)));
    let keys = candle_core::safetensors::load(
        ck.path().join("adapter/adapter_model.safetensors"),
        &Device::Cpu,
    )
    .unwrap();
    assert!(keys.contains_key("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"));
    // A resume: the same base, adapters and logits, bit for bit.
    let back = Trainer::load(ck.path()).unwrap();
    assert_eq!(back.lora(), Some(&spec(2)));
    assert_eq!(crate::common::snapshot(&back), crate::common::snapshot(&t));
    assert_eq!(logits(&back), want);
    // The PEFT adapter over the base model.
    let mut over = base_trainer(dir.path());
    over.set_lora(Some(&spec(2)), &LoraStart::Saved(ck.path().join("adapter")), 0).unwrap();
    assert_eq!(logits(&over), want);
    // Another rank is refused, not loaded.
    let mut other = base_trainer(dir.path());
    let err = other.set_lora(Some(&spec(1)), &LoraStart::Saved(ck.path().join("adapter")), 0);
    assert!(err.unwrap_err().to_string().contains("rank is 2"));
    // The checkpoint's own weights are the merged model, plain Hugging Face layout.
    let merged = base_trainer(ck.path());
    assert!(merged.lora().is_none());
    assert!(worst(&logits(&merged), &want) < 1e-5, "{}", worst(&logits(&merged), &want));
}

#[test]
fn the_decoder_reads_the_adapted_weights_and_merging_keeps_the_model() {
    let dir = tempfile::tempdir().unwrap();
    crate::hf::tiny_qwen3(dir.path(), TinySpec::default());
    let mut t = trained(dir.path(), 3);
    let Model::Qwen(m) = t.model() else { panic!("a Qwen policy") };
    let w = QwenWeights::new(m).unwrap();
    let mut seq = w.new_seq(4);
    let ours = w.forward(&mut [&mut seq], &[&IDS]).unwrap().remove(0);
    let mut cache = t.model().new_cache();
    let gap = crate::common::candle_difference(t.model(), &mut cache, &IDS, &ours);
    assert!(gap < 2e-4, "decoder and adapted model differ by {gap}");
    assert_eq!(seq.len(), IDS.len());
    // `start = init` needs the same rank and targets.
    let err = t.set_lora(Some(&spec(3)), &LoraStart::Init, 0).unwrap_err().to_string();
    assert!(err.contains("rank 2"), "{err}");
    t.set_lora(Some(&spec(2)), &LoraStart::Init, 0).unwrap();
    // New adapters of another rank under the same names: the old ones' moments are gone.
    let mut again = t.duplicate().unwrap();
    again.set_lora(Some(&spec(3)), &LoraStart::Fresh, 1).unwrap();
    let ex = chat::examples(again.tokenizer(), &crate::hf::conversation(), 10_000).unwrap();
    let pairs: Vec<(&Example, f32)> = ex.iter().map(|e| (e, 1.0)).collect();
    assert!(again.sft_step_on(&pairs, 2).unwrap().grad_norm > 0.0);
    // A stage without adapters merges them in and trains every parameter.
    let before = logits(&t);
    t.set_lora(None, &LoraStart::Fresh, 0).unwrap();
    assert!(t.model().params().iter().all(|(n, _)| !is_adapter(n)));
    assert!(t.model().params().iter().all(|(n, _)| !t.model().params().is_frozen(n)));
    assert!(worst(&logits(&t), &before) < 1e-5);
}

#[test]
fn dropout_masks_are_peft_shaped_and_drawn_from_their_key() {
    let x = Tensor::ones((4, 500), candle_core::DType::F32, &Device::Cpu).unwrap();
    let values = |p: f64, key: u64| -> Vec<f32> {
        let d = wrl_trainer::lora::dropped(&x, p, key).unwrap();
        d.flatten_all().unwrap().to_vec1().unwrap()
    };
    let a = values(0.25, 1);
    let kept = a.iter().filter(|&&v| v != 0.0).count();
    assert!((1400..1600).contains(&kept), "{kept} of 2000 kept at p = 0.25");
    assert!(
        a.iter().all(|&v| v == 0.0 || (v - 4.0 / 3.0).abs() < 1e-6),
        "kept values scale by 1/(1 − p)"
    );
    assert_eq!(a, values(0.25, 1), "the same key draws the same mask");
    assert_ne!(a, values(0.25, 2));
    assert!(values(1.0, 1).iter().all(|&v| v == 0.0), "p = 1 drops everything, as torch's");
    assert!(values(0.0, 1).iter().all(|&v| v == 1.0));
    let (k, m) = (wrl_trainer::lora::module_key(9, "model.layers.0.self_attn.q_proj"), 9);
    assert_ne!(k, wrl_trainer::lora::module_key(m, "model.layers.1.self_attn.q_proj"));
}

#[test]
fn dropout_changes_training_not_evaluation_and_reruns_exactly() {
    let dir = tempfile::tempdir().unwrap();
    crate::hf::tiny_qwen3(dir.path(), TinySpec::default());
    let plain = trained_dropout(dir.path(), 2, false, 0.0);
    let dropped = trained_dropout(dir.path(), 2, false, 0.5);
    assert!(worst(&logits(&plain), &logits(&dropped)) > 1e-4, "dropout did not reach the updates");
    // A forward outside a step draws no mask: the same logits twice.
    assert_eq!(logits(&dropped), logits(&dropped));
    // A rerun draws the same masks; a recomputed layer draws its forward's.
    let again = trained_dropout(dir.path(), 2, false, 0.5);
    assert_eq!(logits(&dropped), logits(&again), "a rerun with dropout is not exact");
    let recomputed = trained_dropout(dir.path(), 2, true, 0.5);
    let w = worst(&logits(&dropped), &logits(&recomputed));
    assert!(w < 1e-5, "recomputed layers drew other masks: {w}");
}
