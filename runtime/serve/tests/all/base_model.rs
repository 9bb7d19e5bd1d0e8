//! `wrlc serve` on a plain Hugging Face model directory that no run wrote (a base model, as
//! transformers' `save_pretrained` lays it out): resolved as one, served with its own chat
//! template, deterministic under greedy decoding; a vision-language directory loads with its
//! vision side (`vision.rs` serves it) and a directory with weights but no `config.json` is
//! still an interrupted save.

#![allow(clippy::unwrap_used)] // test helpers fail loudly, like the tests they serve

use serde_json::json;
use wrl_serve::{ServeOptions, Server, load_policy, resolve_checkpoint};
use wrl_trainer::hf::tiny::{TinySpec, TokenizerSource};

fn corpus() -> TokenizerSource {
    TokenizerSource::Generated {
        corpus: vec!["Open the cart. You are a judge.".into()],
        merges: 20,
    }
}

#[tokio::test]
async fn a_base_model_directory_is_served_as_it_is() {
    let tmp = tempfile::tempdir().unwrap();
    let model = tmp.path().join("Qwen3-tiny");
    wrl_trainer::hf::tiny::write(&model, &TinySpec::narrow(), &corpus()).unwrap();
    let resolved = resolve_checkpoint(&model).unwrap();
    assert!(resolved.kind == wrl_serve::Served::BaseModel && resolved.run.is_none());
    let trainer = load_policy(&resolved.dir).unwrap();
    assert_eq!(trainer.step(), 0);
    let opts = ServeOptions {
        addr: "127.0.0.1:0".into(),
        model_name: "judge".into(),
        fixed_created: Some(1_700_000_000),
        ..ServeOptions::default()
    };
    let server = Server::bind(trainer, &opts).await.unwrap().spawn();
    let body = json!({"model": "judge", "temperature": 0.0, "max_tokens": 6,
        "messages": [{"role": "user", "content": "Open the cart."}]});
    let http = reqwest::Client::new();
    let mut answers = Vec::new();
    for _ in 0..2 {
        let resp = http
            .post(format!("{}/chat/completions", server.base_url()))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 200);
        let v: serde_json::Value = resp.json().await.unwrap();
        assert!(v["usage"]["prompt_tokens"].as_u64().unwrap() > 5, "{v}");
        answers.push(v["choices"][0]["message"]["content"].clone());
    }
    assert_eq!(answers[0], answers[1], "greedy decoding is deterministic");
    server.stop().await.unwrap();
}

#[test]
fn vision_language_directories_load_and_interrupted_ones_are_refused_by_name() {
    use wrl_trainer::hf::tiny_vl::{TinyVision, write_vl};
    let tmp = tempfile::tempdir().unwrap();
    let vl = tmp.path().join("vl");
    write_vl(&vl, &TinySpec::narrow(), &TinyVision::default(), &corpus()).unwrap();
    let resolved = resolve_checkpoint(&vl).unwrap();
    assert_eq!(resolved.kind, wrl_serve::Served::BaseModel);
    let trainer = load_policy(&resolved.dir).unwrap();
    assert!(trainer.model().vision().is_some(), "the tower and processor load with it");

    let half = tmp.path().join("half");
    std::fs::create_dir(&half).unwrap();
    std::fs::copy(vl.join("model.safetensors"), half.join("model.safetensors")).unwrap();
    let e = resolve_checkpoint(&half).unwrap_err();
    assert_eq!(e.code(), "E0503");
    assert!(e.message.contains("the save was interrupted"), "{e}");
}
