//! Gradient checks of every fused CPU op against the reference slow-op composition (forward
//! values and input/weight gradients), plus a whole-model check: the tiny model with fused ops
//! and with reference ops, same weights, same batch, gives the same loss and gradients.

use candle_core::{D, Device, Tensor, Var};
use rand::{Rng, SeedableRng};
use wrl_trainer::ops::fused::gelu::fast_tanh;
use wrl_trainer::ops::{Ops, OpsMode, reference};
use wrl_trainer::{Role, Segment, Trajectory, render};

use crate::common::{tiny, tiny_alibi, tiny_copy, trainer};

fn rand_var(shape: &[usize], scale: f32, seed: u64) -> Var {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|_| scale * (rng.random::<f32>() * 2.0 - 1.0)).collect();
    Var::from_tensor(&Tensor::from_vec(v, shape, &Device::Cpu).unwrap()).unwrap()
}

fn max_diff(a: &Tensor, b: &Tensor) -> f32 {
    (a - b).unwrap().abs().unwrap().flatten_all().unwrap().max(0).unwrap().to_scalar().unwrap()
}

fn max_abs(a: &Tensor) -> f32 {
    a.abs().unwrap().flatten_all().unwrap().max(0).unwrap().to_scalar().unwrap()
}

/// Compare fused vs reference: outputs, then gradients of Σ out·w (random w) for every input.
fn check(
    name: &str,
    inputs: &[&Var],
    fused: &dyn Fn() -> Tensor,
    reference: &dyn Fn() -> Tensor,
    tol: f32,
) {
    let yf = fused();
    let yr = reference();
    assert!(
        max_diff(&yf, &yr) <= tol * (1.0 + max_abs(&yr)),
        "{name}: forward differs by {}",
        max_diff(&yf, &yr)
    );
    let w = rand_var(yr.dims(), 1.0, 99);
    let gf = (yf * w.as_tensor()).unwrap().sum_all().unwrap().backward().unwrap();
    let gr = (yr * w.as_tensor()).unwrap().sum_all().unwrap().backward().unwrap();
    for (i, v) in inputs.iter().enumerate() {
        let a = gf
            .get(v.as_tensor())
            .unwrap_or_else(|| panic!("{name}: fused gives no gradient for input {i}"));
        let b = gr.get(v.as_tensor()).unwrap();
        let d = max_diff(a, b);
        assert!(
            d <= tol * (1.0 + max_abs(b)),
            "{name}: gradient {i} differs by {d} (max {})",
            max_abs(b)
        );
    }
}

#[test]
fn fast_tanh_is_accurate() {
    let mut worst = 0f32;
    for i in -12000..=12000 {
        let x = i as f32 / 1000.0;
        worst = worst.max((fast_tanh(x) - x.tanh()).abs());
    }
    assert!(worst < 1e-6, "fast tanh max error {worst}");
}

#[test]
fn fused_gelu_matches_reference() {
    let ops = Ops::new(OpsMode::Auto, &Device::Cpu);
    assert!(ops.is_fused());
    let x = rand_var(&[5, 37], 4.0, 1);
    check(
        "gelu",
        &[&x],
        &|| ops.gelu(x.as_tensor()).unwrap(),
        &|| reference::gelu(x.as_tensor()).unwrap(),
        2e-5,
    );
}

#[test]
fn fused_layer_norm_matches_reference() {
    let ops = Ops::new(OpsMode::Auto, &Device::Cpu);
    let x = rand_var(&[3, 70, 24], 3.0, 2);
    let w = rand_var(&[24], 1.0, 3);
    let b = rand_var(&[24], 1.0, 4);
    check(
        "layer_norm",
        &[&x, &w, &b],
        &|| ops.layer_norm(x.as_tensor(), w.as_tensor(), b.as_tensor(), 1e-5).unwrap(),
        &|| reference::layer_norm(x.as_tensor(), w.as_tensor(), b.as_tensor(), 1e-5).unwrap(),
        2e-5,
    );
}

#[test]
fn fused_attention_matches_reference() {
    let ops = Ops::new(OpsMode::Auto, &Device::Cpu);
    let q = rand_var(&[2, 3, 11, 8], 1.5, 5);
    let k = rand_var(&[2, 3, 11, 8], 1.5, 6);
    let v = rand_var(&[2, 3, 11, 8], 1.5, 7);
    let s = 1.0 / 8f64.sqrt();
    check(
        "attention",
        &[&q, &k, &v],
        &|| ops.causal_attention(q.as_tensor(), k.as_tensor(), v.as_tensor(), s, None).unwrap(),
        &|| reference::attention(q.as_tensor(), k.as_tensor(), v.as_tensor(), s, 0).unwrap(),
        2e-5,
    );
}

#[test]
fn fused_logprobs_match_reference() {
    let ops = Ops::new(OpsMode::Auto, &Device::Cpu);
    let x = rand_var(&[37, 50], 5.0, 8);
    let t =
        Tensor::from_vec((0..37u32).map(|i| (i * 7) % 50).collect::<Vec<_>>(), 37, &Device::Cpu)
            .unwrap();
    check(
        "token_logprobs",
        &[&x],
        &|| ops.token_logprobs(x.as_tensor(), &t).unwrap(),
        &|| reference::token_logprobs(x.as_tensor(), &t).unwrap(),
        2e-5,
    );
    // Finite differences on a few coordinates of Σ logprobs.
    let f = |x: &Tensor| -> f64 {
        ops.token_logprobs(x, &t).unwrap().sum_all().unwrap().to_scalar::<f32>().unwrap() as f64
    };
    let g = ops.token_logprobs(x.as_tensor(), &t).unwrap().sum_all().unwrap().backward().unwrap();
    let g: Vec<Vec<f32>> = g.get(x.as_tensor()).unwrap().to_vec2().unwrap();
    let base: Vec<Vec<f32>> = x.as_tensor().to_vec2().unwrap();
    for &(r, c) in &[(0usize, 0usize), (3, 21), (10, 49), (36, 14)] {
        let mut plus = base.clone();
        let mut minus = base.clone();
        plus[r][c] += 1e-2;
        minus[r][c] -= 1e-2;
        let fd = (f(&Tensor::new(plus, &Device::Cpu).unwrap())
            - f(&Tensor::new(minus, &Device::Cpu).unwrap()))
            / 2e-2;
        assert!((fd - g[r][c] as f64).abs() < 2e-3, "fd {fd} vs {}", g[r][c]);
    }
}

#[test]
fn fused_and_reference_models_agree() {
    models_agree(tiny(2, 32, OpsMode::Auto), tiny(2, 32, OpsMode::Reference));
}

#[test]
fn fused_and_reference_alibi_models_agree() {
    models_agree(tiny_alibi(2, 32, OpsMode::Auto), tiny_alibi(2, 32, OpsMode::Reference));
}

#[test]
fn fused_and_reference_copy_models_agree() {
    models_agree(tiny_copy(2, 32, OpsMode::Auto), tiny_copy(2, 32, OpsMode::Reference));
}

fn models_agree(f: wrl_trainer::PolicyConfig, r: wrl_trainer::PolicyConfig) {
    let fused = trainer(f, 1e-3, 0.0, 12);
    let refm = trainer(r, 1e-3, 0.0, 12);
    let tr = Trajectory {
        segments: vec![
            Segment::new(Role::User, "compare"),
            Segment::new(Role::Assistant, "the two paths"),
        ],
        tools: Vec::new(),
    };
    let ex = render(fused.tokenizer(), &tr, 64).unwrap();
    let (lf, logits_f) = fused.sft_loss(&[&ex]).unwrap();
    let (lr, logits_r) = refm.sft_loss(&[&ex]).unwrap();
    let (a, b): (f32, f32) = (lf.to_scalar().unwrap(), lr.to_scalar().unwrap());
    assert!((a - b).abs() < 1e-5, "loss {a} vs {b}");
    assert!(max_diff(&logits_f, &logits_r) < 1e-4);
    let gf = lf.backward().unwrap();
    let gr = lr.backward().unwrap();
    let mut worst = 0f32;
    for ((name, vf), (_, vr)) in fused.model().params().iter().zip(refm.model().params().iter()) {
        let a = gf.get(vf.as_tensor()).unwrap_or_else(|| panic!("fused: no gradient for {name}"));
        let b =
            gr.get(vr.as_tensor()).unwrap_or_else(|| panic!("reference: no gradient for {name}"));
        worst = worst.max(max_diff(a, b) / (1e-3 + max_abs(b)));
    }
    assert!(worst < 1e-3, "relative gradient difference {worst}");
    let _ = D::Minus1;
}

#[test]
fn fused_linear_matches_reference() {
    let ops = Ops::new(OpsMode::Auto, &Device::Cpu);
    let x = rand_var(&[3, 29, 40], 1.0, 21);
    let w = rand_var(&[70, 40], 1.0, 22);
    let b = rand_var(&[70], 1.0, 23);
    check(
        "linear",
        &[&x, &w, &b],
        &|| ops.linear(x.as_tensor(), w.as_tensor(), Some(b.as_tensor())).unwrap(),
        &|| reference::linear(x.as_tensor(), w.as_tensor(), Some(b.as_tensor())).unwrap(),
        2e-5,
    );
    check(
        "linear-no-bias",
        &[&x, &w],
        &|| ops.linear(x.as_tensor(), w.as_tensor(), None).unwrap(),
        &|| reference::linear(x.as_tensor(), w.as_tensor(), None).unwrap(),
        2e-5,
    );
}

#[test]
fn fused_packed_qkv_attention_matches_reference() {
    let fused = Ops::new(OpsMode::Auto, &Device::Cpu);
    let refo = Ops::new(OpsMode::Reference, &Device::Cpu);
    assert!(!refo.is_fused());
    let qkv = rand_var(&[2, 13, 3 * 3 * 8], 1.5, 31);
    let s = 1.0 / 8f64.sqrt();
    check(
        "attention-qkv",
        &[&qkv],
        &|| fused.causal_attention_qkv(qkv.as_tensor(), 3, s, false).unwrap(),
        &|| refo.causal_attention_qkv(qkv.as_tensor(), 3, s, false).unwrap(),
        2e-5,
    );
    check(
        "attention-qkv-alibi",
        &[&qkv],
        &|| fused.causal_attention_qkv(qkv.as_tensor(), 3, s, true).unwrap(),
        &|| refo.causal_attention_qkv(qkv.as_tensor(), 3, s, true).unwrap(),
        2e-5,
    );
}

/// The backward from the forward's kept probabilities gives bit for bit the gradient of one that
/// recomputes them (what a call past `KEEP_MAX` does), with and without ALiBi.
#[test]
fn kept_attention_probabilities_give_the_recomputed_gradient() {
    use wrl_trainer::ops::fused::attention::CausalAttentionQkv;
    let qkv = rand_var(&[2, 21, 3 * 2 * 8], 1.5, 37);
    let g = rand_var(&[2, 21, 2 * 8], 1.0, 38);
    for alibi in [false, true] {
        let grad = |keep: usize| {
            let op = CausalAttentionQkv::new(2, 0.35, alibi).keeping(keep);
            let y = qkv.as_tensor().apply_op1(op).unwrap();
            let loss = (y * g.as_tensor()).unwrap().sum_all().unwrap();
            let store = loss.backward().unwrap();
            store.get(qkv.as_tensor()).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap()
        };
        let (kept, recomputed) = (grad(usize::MAX), grad(0));
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&kept), bits(&recomputed), "alibi {alibi}");
        assert!(kept.iter().any(|&x| x != 0.0));
    }
}

#[test]
fn entropy_metric_matches_reference() {
    let fused = Ops::new(OpsMode::Auto, &Device::Cpu);
    let refo = Ops::new(OpsMode::Reference, &Device::Cpu);
    let x = rand_var(&[9, 33], 4.0, 41);
    let a = fused.entropy_metric(x.as_tensor()).unwrap();
    let b = refo.entropy_metric(x.as_tensor()).unwrap();
    for (a, b) in a.iter().zip(&b) {
        assert!((a - b).abs() < 1e-5, "{a} vs {b}");
    }
}

#[test]
fn fused_and_reference_agree_when_every_position_is_trained() {
    let fused = trainer(tiny(1, 32, OpsMode::Auto), 1e-3, 0.0, 13);
    let refm = trainer(tiny(1, 32, OpsMode::Reference), 1e-3, 0.0, 13);
    let tokens: Vec<u32> = b"every byte is a target here".iter().map(|&b| b as u32).collect();
    let mut weights = vec![1.0; tokens.len()];
    weights[0] = 0.0;
    let ex = wrl_trainer::Example::new(tokens, weights);
    let (lf, _) = fused.sft_loss(&[&ex, &ex]).unwrap();
    let (lr, _) = refm.sft_loss(&[&ex, &ex]).unwrap();
    let (a, b): (f32, f32) = (lf.to_scalar().unwrap(), lr.to_scalar().unwrap());
    assert!((a - b).abs() < 1e-5, "loss {a} vs {b}");
    let gf = lf.backward().unwrap();
    let gr = lr.backward().unwrap();
    for ((name, vf), (_, vr)) in fused.model().params().iter().zip(refm.model().params().iter()) {
        let d = max_diff(gf.get(vf.as_tensor()).unwrap(), gr.get(vr.as_tensor()).unwrap());
        assert!(d < 1e-5, "{name}: gradient differs by {d}");
    }
}

/// Copy models score only the positions from the earliest target on; the log-probs (and their
/// gradients) equal those of a full forward, rows of different lengths included.
#[test]
fn copy_head_tail_scoring_matches_the_full_forward() {
    let t = trainer(tiny_copy(2, 32, OpsMode::Auto), 1e-3, 0.0, 23);
    let a: Vec<u32> = b"a longer first prompt, then an answer".iter().map(|&b| b as u32).collect();
    let b: Vec<u32> = b"short one: reply".iter().map(|&b| b as u32).collect();
    let sel = |s: &[u32], n: usize| ((s.len() - n)..s.len()).collect::<Vec<usize>>();
    let batch = wrl_trainer::batch::TokenBatch::new(
        &[a.as_slice(), b.as_slice()],
        &[sel(&a, 6), sel(&b, 5)],
        258,
        &Device::Cpu,
    )
    .unwrap();
    let ops = t.model().ops();
    let (tail, _) = batch.logprobs(t.model(), &ops, 0.7).unwrap();
    let full = t.model().forward(&batch.inputs).unwrap();
    let (whole, _) = batch.logprobs_from_logits(&full, &ops, 0.7).unwrap();
    assert!(max_diff(&tail, &whole) < 1e-5, "{tail} vs {whole}");
    let (gt, gw) =
        (tail.sum_all().unwrap().backward().unwrap(), whole.sum_all().unwrap().backward().unwrap());
    for (name, v) in t.model().params().iter() {
        let d = max_diff(gt.get(v.as_tensor()).unwrap(), gw.get(v.as_tensor()).unwrap());
        assert!(d < 1e-5, "{name}: gradient differs by {d}");
    }
}
