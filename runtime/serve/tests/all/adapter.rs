//! `wrlc serve` on a PEFT LoRA adapter directory: served over the base model its
//! `adapter_config.json` names (or another given), with the same log-probabilities as the base
//! with the adapters merged into its weights by hand (W + alpha/r · B·A); an adapter trained
//! over later weights, one that does not fit its base, and a pattern of target modules are
//! refused by name.

#![allow(clippy::unwrap_used)] // test helpers fail loudly, like the tests they serve

use std::collections::HashMap;
use std::path::Path;

use candle_core::{DType, Device, Tensor};
use serde_json::json;
use wrl_serve::{ServeOptions, Served, Server, load_adapter, load_policy, resolve_checkpoint};
use wrl_trainer::hf::tiny::{TinySpec, TokenizerSource};

const RANK: usize = 2;
const ALPHA: f64 = 8.0;
const TARGETS: [&str; 2] = ["q_proj", "v_proj"];

fn corpus() -> TokenizerSource {
    TokenizerSource::Generated {
        corpus: vec!["Open the cart. You are a judge.".into()],
        merges: 20,
    }
}

/// A deterministic tensor of `shape` with values in [-0.5, 0.5) from `seed`.
fn draw(shape: (usize, usize), seed: u64) -> Tensor {
    let n = shape.0 * shape.1;
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let v: Vec<f32> = (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect();
    Tensor::from_vec(v, shape, &Device::Cpu).unwrap()
}

/// Writes a PEFT adapter for `base` into `dir` (its config naming `named` as the base) and
/// returns the adapted weights merged by hand, by weight name.
fn write_adapter(
    base: &Path,
    dir: &Path,
    named: &str,
    extra: serde_json::Value,
) -> HashMap<String, Tensor> {
    let weights =
        candle_core::safetensors::load(base.join("model.safetensors"), &Device::Cpu).unwrap();
    let mut adapter = HashMap::new();
    let mut merged = HashMap::new();
    let mut seed = 1;
    let mut names: Vec<&String> = weights.keys().collect();
    names.sort();
    for name in names {
        let Some(module) = name.strip_suffix(".weight") else { continue };
        if !TARGETS.iter().any(|t| module.ends_with(t)) {
            continue;
        }
        let w = weights[name].to_dtype(DType::F32).unwrap();
        let (out, inp) = w.dims2().unwrap();
        let a = draw((RANK, inp), seed);
        let b = draw((out, RANK), seed + 1);
        seed += 2;
        let delta = (b.matmul(&a).unwrap() * (ALPHA / RANK as f64)).unwrap();
        merged.insert(name.clone(), (w + delta).unwrap());
        adapter.insert(format!("base_model.model.{module}.lora_A.weight"), a);
        adapter.insert(format!("base_model.model.{module}.lora_B.weight"), b);
    }
    std::fs::create_dir_all(dir).unwrap();
    candle_core::safetensors::save(&adapter, dir.join("adapter_model.safetensors")).unwrap();
    let mut config = json!({"peft_type": "LORA", "r": RANK, "lora_alpha": ALPHA, "lora_dropout": 0.05,
        "target_modules": TARGETS, "base_model_name_or_path": named, "task_type": "CAUSAL_LM"});
    if let (Some(c), Some(e)) = (config.as_object_mut(), extra.as_object()) {
        c.extend(e.clone());
    }
    std::fs::write(dir.join("adapter_config.json"), config.to_string()).unwrap();
    merged
}

/// The base model directory with `merged` in place of its weights.
fn write_merged(base: &Path, dir: &Path, merged: &HashMap<String, Tensor>) {
    std::fs::create_dir_all(dir).unwrap();
    for entry in std::fs::read_dir(base).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
    }
    let mut weights =
        candle_core::safetensors::load(base.join("model.safetensors"), &Device::Cpu).unwrap();
    for (name, w) in merged {
        let dtype = weights[name].dtype();
        weights.insert(name.clone(), w.to_dtype(dtype).unwrap());
    }
    candle_core::safetensors::save(&weights, dir.join("model.safetensors")).unwrap();
}

/// The greedy answer's tokens and log-probabilities from `trainer`.
async fn answer(trainer: wrl_trainer::Trainer) -> Vec<(String, f64)> {
    let opts = ServeOptions {
        addr: "127.0.0.1:0".into(),
        model_name: "m".into(),
        fixed_created: Some(1_700_000_000),
        ..ServeOptions::default()
    };
    let server = Server::bind(trainer, &opts).await.unwrap().spawn();
    let body = json!({"model": "m", "temperature": 0.0, "max_tokens": 8, "logprobs": true,
        "messages": [{"role": "user", "content": "Open the cart."}]});
    let v: serde_json::Value = reqwest::Client::new()
        .post(format!("{}/chat/completions", server.base_url()))
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    server.stop().await.unwrap();
    v["choices"][0]["logprobs"]["content"]
        .as_array()
        .unwrap_or_else(|| panic!("no logprobs: {v}"))
        .iter()
        .map(|e| (e["token"].as_str().unwrap().to_string(), e["logprob"].as_f64().unwrap()))
        .collect()
}

#[tokio::test]
async fn an_adapter_is_served_over_its_base_as_the_merged_model() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("base");
    wrl_trainer::hf::tiny::write(&base, &TinySpec::narrow(), &corpus()).unwrap();
    let adapter = tmp.path().join("adapter");
    let merged = write_adapter(&base, &adapter, base.to_str().unwrap(), json!({}));
    assert_eq!(merged.len(), 2 * TinySpec::narrow().layers);
    let by_hand = tmp.path().join("merged");
    write_merged(&base, &by_hand, &merged);

    let resolved = resolve_checkpoint(&adapter).unwrap();
    assert_eq!(resolved.kind, Served::Adapter);
    let served = answer(load_policy(&adapter).unwrap()).await;
    let reference = answer(load_policy(&by_hand).unwrap()).await;
    let plain = answer(load_policy(&base).unwrap()).await;
    assert!(!served.is_empty());
    assert_eq!(served.len(), reference.len());
    for (s, r) in served.iter().zip(&reference) {
        assert_eq!(s.0, r.0, "{served:?} against {reference:?}");
        assert!((s.1 - r.1).abs() < 1e-4, "{served:?} against {reference:?}");
    }
    let moved = served.iter().zip(&plain).map(|(s, p)| (s.1 - p.1).abs()).fold(0.0, f64::max);
    assert!(
        moved > 1e-3 || served.iter().map(|s| &s.0).ne(plain.iter().map(|p| &p.0)),
        "the adapter changed nothing"
    );

    // A base given explicitly wins over the one the config names.
    let elsewhere = tmp.path().join("named-elsewhere");
    write_adapter(&base, &elsewhere, "no/such-model", json!({}));
    let (trainer, used) = load_adapter(&elsewhere, Some(&base)).unwrap();
    assert_eq!(used, base);
    assert_eq!(answer(trainer).await, served);
    let e = load_policy(&elsewhere).unwrap_err();
    assert_eq!(e.code(), "E0503");
    assert!(e.message.contains("no/such-model"), "{e}");
}

#[test]
fn adapters_that_cannot_be_served_as_named_are_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("base");
    wrl_trainer::hf::tiny::write(&base, &TinySpec::narrow(), &corpus()).unwrap();
    let named = base.to_str().unwrap();

    let later = tmp.path().join("later");
    write_adapter(&base, &later, named, json!({"wrl_base_step": 40}));
    let e = load_policy(&later).unwrap_err();
    assert_eq!(e.code(), "E0505");
    assert!(e.message.contains("step 40"), "{e}");
    assert!(load_adapter(&later, Some(&base)).is_ok(), "an explicit base is taken as given");

    let pattern = tmp.path().join("pattern");
    write_adapter(&base, &pattern, named, json!({"target_modules": ".*proj"}));
    let e = load_policy(&pattern).unwrap_err();
    assert!(e.message.contains("pattern"), "{e}");

    let wider = tmp.path().join("wider");
    wrl_trainer::hf::tiny::write(&wider, &TinySpec::default(), &corpus()).unwrap();
    let e = load_adapter(&later, Some(&wider)).unwrap_err();
    assert_eq!(e.code(), "E0505");
    assert!(e.message.contains("does not fit the base model"), "{e}");
}
