//! Activation checkpointing on the tiny random Qwen3: an SFT step that recomputes every layer in
//! the backward pass computes the gradients (norm) and the update of the step that keeps the
//! activations, in f32 and in bf16, with frozen embeddings too (the layers still learn).

use std::path::Path;

use wrl_trainer::chat;
use wrl_trainer::hf::tiny::TinySpec;
use wrl_trainer::models::Frozen;
use wrl_trainer::precision::Precision;
use wrl_trainer::{Example, Metrics, PretrainedSource, Trainer};

fn trainer(dir: &Path, dtype: Precision, checkpointing: bool, frozen: Vec<Frozen>) -> Trainer {
    let src = PretrainedSource {
        dtype,
        gradient_checkpointing: checkpointing,
        frozen,
        ..PretrainedSource::new(dir)
    };
    crate::hf::qwen3_trainer(src, 1e-2)
}

/// Two SFT steps: their metrics and the weights after them.
fn two_steps(t: &mut Trainer) -> (Vec<Metrics>, std::collections::BTreeMap<String, Vec<f32>>) {
    let ex = chat::examples(t.tokenizer(), &crate::hf::conversation(), 10_000).unwrap();
    let pairs: Vec<(&Example, f32)> = ex.iter().map(|e| (e, 1.0)).collect();
    let m = (0..2).map(|_| t.sft_step_on(&pairs, 2).unwrap()).collect();
    (m, crate::common::snapshot(t))
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * a.abs().max(b.abs()).max(1e-12)
}

#[test]
fn recomputed_layers_train_as_kept_ones() {
    let dir = tempfile::tempdir().unwrap();
    crate::hf::tiny_qwen3(dir.path(), TinySpec::default());
    for (dtype, tol) in [(Precision::F32, 1e-5), (Precision::Bf16, 2e-2)] {
        for frozen in [Vec::new(), vec![Frozen::Embeddings, Frozen::LmHead]] {
            let what = format!("{dtype:?}, frozen {frozen:?}");
            let (m_keep, w_keep) =
                two_steps(&mut trainer(dir.path(), dtype, false, frozen.clone()));
            let (m_re, w_re) = two_steps(&mut trainer(dir.path(), dtype, true, frozen.clone()));
            for (a, b) in m_keep.iter().zip(&m_re) {
                assert!(close(a.loss, b.loss, tol), "{what}: loss {} vs {}", a.loss, b.loss);
                assert!(a.grad_norm > 0.0);
                assert!(
                    close(a.grad_norm, b.grad_norm, tol),
                    "{what}: grad norm {} vs {}",
                    a.grad_norm,
                    b.grad_norm
                );
            }
            // Every trained weight moved, as it moved without recomputation: the layers'
            // gradients come back through the side channel, or those weights would stay put.
            let start = crate::common::snapshot(&trainer(dir.path(), dtype, true, frozen.clone()));
            let still = crate::common::unchanged(&start, &w_re);
            let want: Vec<String> = if frozen.is_empty() {
                Vec::new()
            } else {
                vec!["model.embed_tokens.weight".to_string()]
            };
            assert_eq!(still, want, "{what}");
            if dtype == Precision::F32 {
                for (name, a) in &w_keep {
                    let d =
                        a.iter().zip(&w_re[name]).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max);
                    assert!(d < 1e-4, "{what}: `{name}` differs by {d}");
                }
            }
        }
    }
}

/// A caller's own backward pass (on `Trainer::sft_loss`) leaves recomputed layers' gradients
/// aside; the next step must not take them for its own.
#[test]
fn a_callers_own_backward_does_not_leak_into_the_next_step() {
    let dir = tempfile::tempdir().unwrap();
    crate::hf::tiny_qwen3(dir.path(), TinySpec::default());
    let mut a = trainer(dir.path(), Precision::F32, true, Vec::new());
    let ex = chat::examples(a.tokenizer(), &crate::hf::conversation(), 10_000).unwrap();
    let all: Vec<&Example> = ex.iter().collect();
    let (loss, _) = a.sft_loss(&all).unwrap();
    loss.backward().unwrap();
    let pairs: Vec<(&Example, f32)> = ex.iter().map(|e| (e, 1.0)).collect();
    let got = a.sft_step_on(&pairs, 2).unwrap();
    let want =
        trainer(dir.path(), Precision::F32, true, Vec::new()).sft_step_on(&pairs, 2).unwrap();
    assert_eq!(got.grad_norm, want.grad_norm);
}
