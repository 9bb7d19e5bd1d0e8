//! Qwen2/Qwen3: a tiny random checkpoint written by the test (config.json, safetensors,
//! byte-level BPE tokenizer.json, Qwen3's chat template) is loaded and its forward pass matched against a naive f64
//! reference implementation written here.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{Device, Tensor};
use rand::{Rng, SeedableRng};
use serde_json::json;
use wrl_trainer::models::Model;
use wrl_trainer::{OpsMode, PolicyConfig, PretrainedSource};

/// Sizes of the test checkpoints.
pub struct Shape {
    pub model_type: &'static str,
    pub tie: bool,
    pub hidden: usize,
    pub inter: usize,
    pub layers: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub vocab: usize,
}

pub fn qwen3_shape() -> Shape {
    Shape {
        model_type: "qwen3",
        tie: true,
        hidden: 32,
        inter: 48,
        layers: 2,
        heads: 4,
        kv_heads: 2,
        head_dim: 16,
        vocab: 264,
    }
}

pub fn qwen2_shape() -> Shape {
    Shape {
        model_type: "qwen2",
        tie: false,
        hidden: 32,
        inter: 48,
        layers: 2,
        heads: 4,
        kv_heads: 2,
        head_dim: 8,
        vocab: 264,
    }
}

/// GPT-2's byte → printable-char map used by byte-level BPE.
fn bytes_to_unicode() -> Vec<char> {
    let mut keep: Vec<u32> = (33..=126).chain(161..=172).chain(174..=255).collect();
    let mut out = vec!['\0'; 256];
    let mut extra = 0;
    for b in 0..256u32 {
        if keep.contains(&b) {
            out[b as usize] = char::from_u32(b).unwrap();
        } else {
            out[b as usize] = char::from_u32(256 + extra).unwrap();
            extra += 1;
        }
    }
    keep.clear();
    out
}

fn write_tokenizer(path: &Path) {
    let chars = bytes_to_unicode();
    let vocab: serde_json::Map<String, serde_json::Value> =
        chars.iter().enumerate().map(|(i, c)| (c.to_string(), json!(i))).collect();
    let special = |id: u32, s: &str| json!({"id": id, "content": s, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true});
    let tok = json!({
        "version": "1.0", "truncation": null, "padding": null,
        "added_tokens": [special(256, "<|endoftext|>"), special(257, "<|im_start|>"), special(258, "<|im_end|>")],
        "normalizer": null,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
        "post_processor": null,
        "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
        "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
                  "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
                  "vocab": vocab, "merges": []}
    });
    std::fs::write(path, serde_json::to_string(&tok).unwrap()).unwrap();
}

/// Write a random checkpoint into `dir`; returns its tensors.
pub fn write_checkpoint(
    dir: &Path,
    s: &Shape,
    seed: u64,
) -> HashMap<String, (Vec<usize>, Vec<f32>)> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut t: HashMap<String, (Vec<usize>, Vec<f32>)> = HashMap::new();
    let mut add = |name: String, shape: Vec<usize>, scale: f32, offset: f32| {
        let n = shape.iter().product();
        let v: Vec<f32> =
            (0..n).map(|_| offset + scale * (rng.random::<f32>() * 2.0 - 1.0)).collect();
        t.insert(name, (shape, v));
    };
    let (h, q, kv) = (s.hidden, s.heads * s.head_dim, s.kv_heads * s.head_dim);
    add("model.embed_tokens.weight".into(), vec![s.vocab, h], 0.5, 0.0);
    add("model.norm.weight".into(), vec![h], 0.2, 1.0);
    if !s.tie {
        add("lm_head.weight".into(), vec![s.vocab, h], 0.2, 0.0);
    }
    for i in 0..s.layers {
        let p = |x: &str| format!("model.layers.{i}.{x}");
        add(p("self_attn.q_proj.weight"), vec![q, h], 0.3, 0.0);
        add(p("self_attn.k_proj.weight"), vec![kv, h], 0.3, 0.0);
        add(p("self_attn.v_proj.weight"), vec![kv, h], 0.3, 0.0);
        add(p("self_attn.o_proj.weight"), vec![h, q], 0.3, 0.0);
        if s.model_type == "qwen2" {
            add(p("self_attn.q_proj.bias"), vec![q], 0.1, 0.0);
            add(p("self_attn.k_proj.bias"), vec![kv], 0.1, 0.0);
            add(p("self_attn.v_proj.bias"), vec![kv], 0.1, 0.0);
        } else {
            add(p("self_attn.q_norm.weight"), vec![s.head_dim], 0.2, 1.0);
            add(p("self_attn.k_norm.weight"), vec![s.head_dim], 0.2, 1.0);
        }
        add(p("mlp.gate_proj.weight"), vec![s.inter, h], 0.3, 0.0);
        add(p("mlp.up_proj.weight"), vec![s.inter, h], 0.3, 0.0);
        add(p("mlp.down_proj.weight"), vec![h, s.inter], 0.3, 0.0);
        add(p("input_layernorm.weight"), vec![h], 0.2, 1.0);
        add(p("post_attention_layernorm.weight"), vec![h], 0.2, 1.0);
    }
    let tensors: HashMap<String, Tensor> = t
        .iter()
        .map(|(k, (shape, v))| {
            (k.clone(), Tensor::from_vec(v.clone(), shape.as_slice(), &Device::Cpu).unwrap())
        })
        .collect();
    candle_core::safetensors::save(&tensors, dir.join("model.safetensors")).unwrap();
    let cfg = json!({
        "model_type": s.model_type, "vocab_size": s.vocab, "hidden_size": h, "intermediate_size": s.inter,
        "num_hidden_layers": s.layers, "num_attention_heads": s.heads, "num_key_value_heads": s.kv_heads,
        "head_dim": s.head_dim, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "max_position_embeddings": 128,
        "tie_word_embeddings": s.tie, "torch_dtype": "float32"
    });
    std::fs::write(dir.join("config.json"), cfg.to_string()).unwrap();
    write_tokenizer(&dir.join("tokenizer.json"));
    let tc = json!({"chat_template": wrl_trainer::hf::tiny::QWEN3_CHAT_TEMPLATE, "eos_token": "<|im_end|>",
                    "pad_token": "<|endoftext|>"});
    std::fs::write(dir.join("tokenizer_config.json"), tc.to_string()).unwrap();
    t
}

/// The policy config for a checkpoint written by [`write_checkpoint`].
pub fn policy(dir: &Path, s: &Shape, ops: OpsMode) -> PolicyConfig {
    let src = PretrainedSource { ops, ..PretrainedSource::new(dir) };
    if s.model_type == "qwen3" { PolicyConfig::Qwen3(src) } else { PolicyConfig::Qwen2(src) }
}

type W = HashMap<String, (Vec<usize>, Vec<f32>)>;

fn mat(w: &W, name: &str, x: &[f64]) -> Vec<f64> {
    let (shape, v) = &w[name];
    let (o, i) = (shape[0], shape[1]);
    (0..o).map(|r| (0..i).map(|c| v[r * i + c] as f64 * x[c]).sum()).collect()
}

fn rms(x: &[f64], g: &[f32], eps: f64) -> Vec<f64> {
    let ms = x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64;
    let r = 1.0 / (ms + eps).sqrt();
    x.iter().zip(g).map(|(v, g)| v * r * *g as f64).collect()
}

fn rope(x: &mut [f64], pos: usize, theta: f64) {
    let d = x.len();
    let half = d / 2;
    let orig = x.to_vec();
    for i in 0..half {
        let a = pos as f64 / theta.powf(2.0 * i as f64 / d as f64);
        let (c, s) = (a.cos(), a.sin());
        x[i] = orig[i] * c - orig[i + half] * s;
        x[i + half] = orig[i + half] * c + orig[i] * s;
    }
}

/// Naive f64 forward: logits per position (index loops mirror the maths).
#[allow(clippy::needless_range_loop)]
fn reference_forward(w: &W, s: &Shape, ids: &[u32]) -> Vec<Vec<f64>> {
    let (h, hd) = (s.hidden, s.head_dim);
    let emb = &w["model.embed_tokens.weight"].1;
    let mut xs: Vec<Vec<f64>> =
        ids.iter().map(|&t| (0..h).map(|j| emb[t as usize * h + j] as f64).collect()).collect();
    let bias = |name: &str, mut v: Vec<f64>| {
        if let Some((_, b)) = w.get(name) {
            for (x, b) in v.iter_mut().zip(b) {
                *x += *b as f64;
            }
        }
        v
    };
    for l in 0..s.layers {
        let p = |x: &str| format!("model.layers.{l}.{x}");
        let mut qs = Vec::new();
        let mut ks = Vec::new();
        let mut vs = Vec::new();
        for (pos, x) in xs.iter().enumerate() {
            let hn = rms(x, &w[&p("input_layernorm.weight")].1, 1e-6);
            let q = bias(&p("self_attn.q_proj.bias"), mat(w, &p("self_attn.q_proj.weight"), &hn));
            let k = bias(&p("self_attn.k_proj.bias"), mat(w, &p("self_attn.k_proj.weight"), &hn));
            let v = bias(&p("self_attn.v_proj.bias"), mat(w, &p("self_attn.v_proj.weight"), &hn));
            let mut q: Vec<Vec<f64>> = q.chunks(hd).map(|c| c.to_vec()).collect();
            let mut k: Vec<Vec<f64>> = k.chunks(hd).map(|c| c.to_vec()).collect();
            if s.model_type == "qwen3" {
                for qh in q.iter_mut() {
                    *qh = rms(qh, &w[&p("self_attn.q_norm.weight")].1, 1e-6);
                }
                for kh in k.iter_mut() {
                    *kh = rms(kh, &w[&p("self_attn.k_norm.weight")].1, 1e-6);
                }
            }
            for qh in q.iter_mut() {
                rope(qh, pos, 10000.0);
            }
            for kh in k.iter_mut() {
                rope(kh, pos, 10000.0);
            }
            qs.push(q);
            ks.push(k);
            vs.push(v.chunks(hd).map(|c| c.to_vec()).collect::<Vec<_>>());
        }
        let rep = s.heads / s.kv_heads;
        let mut new_xs = Vec::new();
        for (i, x) in xs.iter().enumerate() {
            let mut att = Vec::new();
            for head in 0..s.heads {
                let kvh = head / rep;
                let scores: Vec<f64> = (0..=i)
                    .map(|j| {
                        qs[i][head].iter().zip(&ks[j][kvh]).map(|(a, b)| a * b).sum::<f64>()
                            / (hd as f64).sqrt()
                    })
                    .collect();
                let m = scores.iter().cloned().fold(f64::MIN, f64::max);
                let e: Vec<f64> = scores.iter().map(|s| (s - m).exp()).collect();
                let z: f64 = e.iter().sum();
                for d in 0..hd {
                    att.push((0..=i).map(|j| e[j] / z * vs[j][kvh][d]).sum::<f64>());
                }
            }
            let o = mat(w, &p("self_attn.o_proj.weight"), &att);
            let x1: Vec<f64> = x.iter().zip(&o).map(|(a, b)| a + b).collect();
            let hn = rms(&x1, &w[&p("post_attention_layernorm.weight")].1, 1e-6);
            let g = mat(w, &p("mlp.gate_proj.weight"), &hn);
            let u = mat(w, &p("mlp.up_proj.weight"), &hn);
            let act: Vec<f64> = g.iter().zip(&u).map(|(g, u)| g / (1.0 + (-g).exp()) * u).collect();
            let dn = mat(w, &p("mlp.down_proj.weight"), &act);
            new_xs.push(x1.iter().zip(&dn).map(|(a, b)| a + b).collect());
        }
        xs = new_xs;
    }
    let head = if s.tie { "model.embed_tokens.weight" } else { "lm_head.weight" };
    xs.iter().map(|x| mat(w, head, &rms(x, &w["model.norm.weight"].1, 1e-6))).collect()
}

fn check_forward(s: Shape, ops: OpsMode) {
    let dir = tempfile::tempdir().unwrap();
    let w = write_checkpoint(dir.path(), &s, 21);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
    let (model, tok) = Model::build(&policy(dir.path(), &s, ops), &Device::Cpu, &mut rng).unwrap();
    let ids = tok.encode("hi there, <b>").unwrap();
    assert!(ids.len() > 8);
    let want = reference_forward(&w, &s, &ids);
    let input = Tensor::from_vec(ids.clone(), (1, ids.len()), &Device::Cpu).unwrap();
    let got: Vec<Vec<f32>> = model.forward(&input).unwrap().squeeze(0).unwrap().to_vec2().unwrap();
    let mut max = 0f64;
    for (g, w) in got.iter().zip(&want) {
        for (a, b) in g.iter().zip(w) {
            max = max.max((*a as f64 - b).abs());
        }
    }
    assert!(max < 2e-4, "{}: max |logit diff| {max}", s.model_type);
    // Incremental decoding with the KV cache gives the same logits.
    let mut cache = model.new_cache();
    let n = ids.len();
    let first = Tensor::from_vec(ids[..n - 3].to_vec(), (1, n - 3), &Device::Cpu).unwrap();
    model.forward_cached(&first, &mut cache).unwrap();
    for (k, &id) in ids[n - 3..].iter().enumerate() {
        let one = Tensor::from_vec(vec![id], (1, 1), &Device::Cpu).unwrap();
        let l: Vec<f32> = model
            .forward_cached(&one, &mut cache)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap();
        let pos = n - 3 + k;
        let d = l.iter().zip(&want[pos]).map(|(a, b)| (*a as f64 - b).abs()).fold(0.0, f64::max);
        assert!(d < 2e-4, "cached logits at {pos} differ by {d}");
    }
}

#[test]
fn qwen3_forward_matches_reference() {
    check_forward(qwen3_shape(), OpsMode::Auto);
}

#[test]
fn qwen2_forward_matches_reference() {
    check_forward(qwen2_shape(), OpsMode::Auto);
}

#[test]
fn qwen3_reference_ops_match_reference() {
    check_forward(qwen3_shape(), OpsMode::Reference);
}

#[test]
fn qwen_tokenizer_chat_format() {
    let dir = tempfile::tempdir().unwrap();
    let s = qwen3_shape();
    write_checkpoint(dir.path(), &s, 1);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
    let (_, tok) =
        Model::build(&policy(dir.path(), &s, OpsMode::Auto), &Device::Cpu, &mut rng).unwrap();
    let p = wrl_trainer::render_prompt(
        &tok,
        &[wrl_trainer::Segment::new(wrl_trainer::Role::User, "hi")],
    )
    .unwrap();
    // The model's own template (Qwen3's): thinking off leaves an empty think block.
    assert_eq!(p[0], 257);
    assert_eq!(tok.decode(&p).unwrap(), "user\nhi\nassistant\n<think>\n\n</think>\n\n");
    assert_eq!(tok.eos_id(), 258);
    // Family mismatch is reported.
    let wrong = PolicyConfig::Qwen2(PretrainedSource::new(dir.path()));
    assert!(Model::build(&wrong, &Device::Cpu, &mut rng).is_err());
}

/// The attention biases config.json promises must be in the checkpoint: a Qwen2 one without a
/// k_proj bias, or a Qwen3 one with `attention_bias` and no biases, is refused when loading,
/// naming the first missing tensor, rather than run as another model.
#[test]
fn missing_attention_biases_are_refused() {
    let build_err = |dir: &Path, s: &Shape| {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
        match Model::build(&policy(dir, s, OpsMode::Auto), &Device::Cpu, &mut rng) {
            Ok(_) => panic!("a checkpoint without its attention biases loaded"),
            Err(e) => e.to_string(),
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let s = qwen2_shape();
    write_checkpoint(dir.path(), &s, 3);
    let file = dir.path().join("model.safetensors");
    let mut t = candle_core::safetensors::load(&file, &Device::Cpu).unwrap();
    t.remove("model.layers.1.self_attn.k_proj.bias").unwrap();
    candle_core::safetensors::save(&t, &file).unwrap();
    let e = build_err(dir.path(), &s);
    assert!(e.contains("missing tensor `model.layers.1.self_attn.k_proj.bias`"), "{e}");

    let dir = tempfile::tempdir().unwrap();
    let s = qwen3_shape();
    write_checkpoint(dir.path(), &s, 4);
    let cfg_path = dir.path().join("config.json");
    let mut cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cfg_path).unwrap()).unwrap();
    cfg["attention_bias"] = json!(true);
    std::fs::write(&cfg_path, cfg.to_string()).unwrap();
    let e = build_err(dir.path(), &s);
    assert!(e.contains("missing tensor `model.layers.0.self_attn.q_proj.bias`"), "{e}");
}
