//! `wrlc serve` end to end in-process: a tiny policy saved to a temporary checkpoint is served on
//! a loopback port and called over HTTP (reqwest and the judge client), covering the response
//! shape, token usage, greedy determinism, stop strings, errors and checkpoint resolution.

#![allow(clippy::unwrap_used)] // test helpers fail loudly, like the tests they serve

use std::path::Path;
use std::time::Duration;

use serde_json::{Value as Json, json};
use wrl_exec::reward::client::{JudgeClient, JudgeConfig, JudgeError, JudgeInput, JudgeStep};
use wrl_exec::reward::prompts::{OneCall, Protocol};
use wrl_exec::{RunDir, RunError};
use wrl_serve::{ServeHandle, ServeOptions, Server, load_policy, resolve_checkpoint};
use wrl_trainer::{Role, Segment, Trainer, TrainerConfig, render_prompt};

/// A tiny CPU policy with room for the judge's prompt (bytes are tokens).
fn tiny_trainer() -> Trainer {
    let config: TrainerConfig = serde_json::from_value(json!({
        "policy": {"family": "tiny", "layers": 1, "d_model": 32, "heads": 2, "context": 1024},
        "seed": 11,
        "device": "cpu",
    }))
    .unwrap();
    Trainer::new(config).unwrap()
}

async fn serve(dir: &Path, name: &str) -> ServeHandle {
    let resolved = resolve_checkpoint(dir).unwrap();
    let trainer = load_policy(&resolved.dir).unwrap();
    let opts = ServeOptions {
        addr: "127.0.0.1:0".into(),
        model_name: name.into(),
        fixed_created: Some(1_700_000_000),
        ..ServeOptions::default()
    };
    Server::bind(trainer, &opts).await.unwrap().spawn()
}

async fn chat(base: &str, body: Json) -> (u16, Json) {
    let resp = reqwest::Client::new()
        .post(format!("{base}/chat/completions"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

fn content(v: &Json) -> String {
    v["choices"][0]["message"]["content"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn chat_completions_models_health_and_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let ckpt = tmp.path().join("sft-1");
    let trainer = tiny_trainer();
    trainer.save(&ckpt).unwrap();
    let server = serve(&ckpt, "sft-1").await;
    let base = server.base_url();
    let http = reqwest::Client::new();

    // A plain completion: the OpenAI shape, with usage counted in the policy's tokens.
    let messages = json!([
        {"role": "system", "content": "You are a web agent."},
        {"role": "user", "content": "Open the cart."},
    ]);
    let (status, v) = chat(
        &base,
        json!({"model": "sft-1", "messages": messages, "temperature": 0.8, "max_tokens": 12, "seed": 3}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["model"], "sft-1");
    assert_eq!(v["created"], 1_700_000_000);
    assert!(v["id"].as_str().unwrap().starts_with("chatcmpl-"), "{v}");
    let choice = &v["choices"][0];
    assert_eq!(choice["index"], 0);
    assert_eq!(choice["message"]["role"], "assistant");
    assert!(["stop", "length"].contains(&choice["finish_reason"].as_str().unwrap()), "{v}");
    let history = [
        Segment::new(Role::System, "You are a web agent."),
        Segment::new(Role::User, "Open the cart."),
    ];
    let prompt = render_prompt(trainer.tokenizer(), &history).unwrap();
    let usage = &v["usage"];
    assert_eq!(usage["prompt_tokens"], prompt.len());
    let completion = usage["completion_tokens"].as_u64().unwrap();
    assert!((1..=12).contains(&completion), "{v}");
    if choice["finish_reason"] == "length" {
        assert_eq!(completion, 12);
    }
    assert_eq!(usage["total_tokens"].as_u64().unwrap(), prompt.len() as u64 + completion);
    // The same seed gives the same sample.
    let (_, again) = chat(
        &base,
        json!({"model": "sft-1", "messages": messages, "temperature": 0.8, "max_tokens": 12, "seed": 3}),
    )
    .await;
    assert_eq!(content(&again), content(&v));

    // Greedy decoding is deterministic across calls; n completions are n choices.
    let greedy = json!({"messages": messages, "temperature": 0, "max_tokens": 24, "n": 2});
    let (_, a) = chat(&base, greedy.clone()).await;
    let (_, b) = chat(&base, greedy).await;
    assert_eq!(a["choices"], b["choices"]);
    assert_eq!(a["choices"].as_array().unwrap().len(), 2);
    assert_eq!(a["choices"][1]["index"], 1);
    assert_eq!(a["choices"][0]["message"], a["choices"][1]["message"]);
    let per_choice = |v: &Json| v["usage"]["completion_tokens"].as_u64().unwrap();
    assert_eq!(per_choice(&a) % 2, 0, "usage sums both choices: {a}");

    // `stop` (a string or a list) ends the completion; the stop text is left out.
    let full = content(&a);
    let stop = full
        .chars()
        .skip(2)
        .find(|c| *c != char::REPLACEMENT_CHARACTER)
        .unwrap_or_else(|| panic!("the greedy sample {full:?} is too short to test `stop`"))
        .to_string();
    let cut = &full[..full.find(&stop).unwrap()];
    for stop_field in [json!(stop), json!(["\u{1}never", stop])] {
        let (status, s) = chat(
            &base,
            json!({"messages": messages, "temperature": 0, "max_tokens": 24, "stop": stop_field}),
        )
        .await;
        assert_eq!(status, 200, "{s}");
        assert_eq!(content(&s), cut, "stop {stop:?} in {full:?}");
        assert_eq!(s["choices"][0]["finish_reason"], "stop");
        assert!(per_choice(&s) <= 24);
    }

    // Malformed requests get an OpenAI error object, never a panic.
    let resp = http
        .post(format!("{base}/chat/completions"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    let e: Json = resp.json().await.unwrap();
    assert_eq!(e["error"]["type"], "invalid_request_error");
    assert_eq!(e["error"]["code"], "invalid_json");
    assert!(e["error"]["message"].as_str().unwrap().contains("not valid JSON"), "{e}");
    for (body, code) in [
        (
            json!({"messages": messages, "tools": [{"type": "function", "function": {"name": "f"}}]}),
            "tools_not_supported",
        ),
        (json!({"messages": "hi"}), "invalid_type"),
        (
            json!({"messages": [{"role": "user", "content": "x".repeat(2000)}]}),
            "context_length_exceeded",
        ),
    ] {
        let (status, e) = chat(&base, body).await;
        assert_eq!(status, 400, "{e}");
        assert_eq!(e["error"]["code"], code, "{e}");
    }
    let (status, e) = chat(&base, json!({"model": "gpt-4", "messages": messages})).await;
    assert_eq!(status, 404);
    assert_eq!(e["error"]["code"], "model_not_found");

    // Models, health, and unknown paths.
    let models: Json =
        http.get(format!("{base}/models")).send().await.unwrap().json().await.unwrap();
    assert_eq!(models["object"], "list");
    assert_eq!(models["data"][0]["id"], "sft-1");
    assert_eq!(models["data"][0]["object"], "model");
    let root = base.trim_end_matches("/v1");
    let health: Json =
        http.get(format!("{root}/health")).send().await.unwrap().json().await.unwrap();
    assert_eq!(health["status"], "ok");
    let missing = http.get(format!("{root}/v2/nothing")).send().await.unwrap();
    assert_eq!(missing.status().as_u16(), 404);
    let e: Json = missing.json().await.unwrap();
    assert_eq!(e["error"]["code"], "not_found");
    let wrong = http.get(format!("{base}/chat/completions")).send().await.unwrap();
    assert_eq!(wrong.status().as_u16(), 405);
    let e: Json = wrong.json().await.unwrap();
    assert_eq!(e["error"]["code"], "method_not_allowed");

    server.stop().await.unwrap();
    assert!(
        http.get(format!("{root}/health")).send().await.is_err(),
        "the server is gone after stop"
    );
}

#[tokio::test]
async fn the_judge_client_talks_to_a_served_policy() {
    let tmp = tempfile::tempdir().unwrap();
    let ckpt = tmp.path().join("judge-ckpt");
    tiny_trainer().save(&ckpt).unwrap();
    let server = serve(&ckpt, "judge").await;
    let judge = JudgeClient::new(JudgeConfig {
        base_url: server.base_url(),
        model: "judge".into(),
        api_key_env: "WRL_TEST_NO_SUCH_KEY".into(),
        timeout: Duration::from_secs(60),
        retries: 0,
        screenshots: 0,
        ..JudgeConfig::default()
    })
    .unwrap();
    let input = JudgeInput {
        task: "buy a mug".into(),
        steps: vec![JudgeStep { actions: vec!["click 3".into()], feedback: "ok".into() }],
        answer: Some("done".into()),
        screenshots: Vec::new(),
    };
    // The untrained policy answers gibberish: the request and the reply's transport and JSON
    // shape must work, so the only acceptable failure is an unparsable verdict.
    match judge.verdict(&input, Protocol::One(OneCall::Plain)).await {
        Ok(r) => assert!(r == 0.0 || r == 1.0),
        Err(JudgeError::Malformed(m)) => assert!(m.contains("no SUCCESS"), "{m}"),
        Err(e) => panic!("the judge could not talk to the served policy: {e}"),
    }
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_beyond_max_concurrency_get_429() {
    let tmp = tempfile::tempdir().unwrap();
    let ckpt = tmp.path().join("busy");
    tiny_trainer().save(&ckpt).unwrap();
    let opts = ServeOptions {
        addr: "127.0.0.1:0".into(),
        model_name: "busy".into(),
        max_concurrency: 1,
        ..ServeOptions::default()
    };
    let server = Server::bind(load_policy(&ckpt).unwrap(), &opts).await.unwrap().spawn();
    let base = server.base_url();
    let hi = json!([{"role": "user", "content": "hi"}]);
    let long = tokio::spawn({
        let base = base.clone();
        let hi = hi.clone();
        // A probe below may hold the one slot when this starts; retry until it is admitted.
        async move {
            let body = json!({"messages": hi, "n": 8, "max_tokens": 600});
            let mut reply = chat(&base, body.clone()).await;
            for _ in 0..500 {
                if reply.0 != 429 {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                reply = chat(&base, body.clone()).await;
            }
            reply
        }
    });
    let mut statuses = Vec::new();
    while !long.is_finished() {
        let resp = reqwest::Client::new()
            .post(format!("{base}/chat/completions"))
            .json(&json!({"messages": hi, "max_tokens": 1}))
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        if status == 429 {
            let retry = resp.headers().get("retry-after").map(|h| h.to_str().unwrap().to_string());
            assert_eq!(retry.as_deref(), Some("1"), "a 429 says when to retry");
            let v: Json = resp.json().await.unwrap();
            assert_eq!(v["error"]["code"], "rate_limit_exceeded", "{v}");
        }
        statuses.push(status);
        // Leave the slot free for a moment so the long request can be admitted.
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    let (status, v) = long.await.unwrap();
    assert_eq!(status, 200, "{v}");
    assert!(statuses.contains(&429), "no request was turned away while one sampled: {statuses:?}");
    // Once the policy is free, requests are admitted again.
    assert_eq!(chat(&base, json!({"messages": hi, "max_tokens": 1})).await.0, 200);
    server.stop().await.unwrap();
}

#[test]
fn checkpoints_and_run_directories_resolve() {
    let tmp = tempfile::tempdir().unwrap();
    let code = |r: Result<_, RunError>| r.unwrap_err().code();

    // Missing, a file, an empty directory, an interrupted save.
    assert_eq!(code(resolve_checkpoint(&tmp.path().join("nope"))), "E0503");
    std::fs::write(tmp.path().join("file"), "x").unwrap();
    assert_eq!(code(resolve_checkpoint(&tmp.path().join("file"))), "E0503");
    let e = resolve_checkpoint(tmp.path()).unwrap_err();
    assert!(e.message.contains("not a checkpoint"), "{e}");
    assert!(e.help.is_some());

    // A run directory serves its latest committed checkpoint.
    let root = tmp.path().join("run");
    let mut run = RunDir::create(&root, "{}").unwrap();
    let e = resolve_checkpoint(&root).unwrap_err();
    assert!(e.message.contains("has not committed a checkpoint"), "{e}");
    tiny_trainer().save(&run.checkpoint_dir("sft-1")).unwrap();
    run.commit(Some("sft-1"), &wrl_exec::Cursor::default(), false).unwrap();
    let r = resolve_checkpoint(&root).unwrap();
    assert_eq!(r.dir, root.join("checkpoints").join("sft-1"));
    assert_eq!(r.run.as_deref(), Some(root.as_path()));
    assert_eq!(resolve_checkpoint(&r.dir).unwrap().run, None);
    assert!(load_policy(&r.dir).is_ok());

    // Damaged weights are a load error, not a resolution error.
    std::fs::write(r.dir.join("model.safetensors"), "garbage").unwrap();
    assert_eq!(load_policy(&r.dir).unwrap_err().code(), "E0505");
}

/// A checkpoint of a Hugging Face policy (a tiny random Qwen3 in HF layout, saved by the
/// trainer as a model directory) is served with its own chat template: the prompt is the
/// template's rendering with its generation prompt, and greedy decoding is deterministic.
#[tokio::test]
async fn a_hugging_face_checkpoint_is_served_with_its_chat_template() {
    use wrl_trainer::hf::tiny::{TinySpec, TokenizerSource};
    let tmp = tempfile::tempdir().unwrap();
    let model = tmp.path().join("tiny-qwen3");
    let corpus = vec!["Open the cart. You are a web agent.".to_string()];
    wrl_trainer::hf::tiny::write(
        &model,
        &TinySpec::narrow(),
        &TokenizerSource::Generated { corpus, merges: 20 },
    )
    .unwrap();
    let config: TrainerConfig = serde_json::from_value(json!({
        "policy": {"family": "qwen3", "path": model},
        "seed": 5,
        "device": "cpu",
    }))
    .unwrap();
    let ckpt = tmp.path().join("sft-1");
    Trainer::new(config).unwrap().save(&ckpt).unwrap();
    std::fs::remove_dir_all(&model).unwrap();
    let server = serve(&ckpt, "sft-1").await;
    let base = server.base_url();
    let messages = json!([
        {"role": "system", "content": "You are a web agent."},
        {"role": "user", "content": "Open the cart."},
    ]);
    let body = json!({"model": "sft-1", "messages": messages, "temperature": 0.0, "max_tokens": 8});
    let (status, v) = chat(&base, body.clone()).await;
    assert_eq!(status, 200, "{v}");
    let trainer = load_policy(&ckpt).unwrap();
    let tok = trainer.tokenizer();
    let text = "<|im_start|>system\nYou are a web agent.<|im_end|>\n<|im_start|>user\nOpen the \
                cart.<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";
    let prompt = render_prompt(
        tok,
        &[
            Segment::new(Role::System, "You are a web agent."),
            Segment::new(Role::User, "Open the cart."),
        ],
    )
    .unwrap();
    assert_eq!(prompt, tok.encode(text).unwrap(), "the template's rendering, thinking off");
    assert_eq!(v["usage"]["prompt_tokens"], prompt.len());
    let (_, again) = chat(&base, body).await;
    assert_eq!(content(&v), content(&again), "greedy decoding is deterministic");
    server.stop().await.unwrap();
}

#[path = "../../examples/tool_checkpoint.rs"]
mod tool_checkpoint;

#[tokio::test]
async fn tool_calls_come_back_in_openais_shape() {
    use tool_checkpoint::{CLICK, REPLY, taught};
    let tmp = tempfile::tempdir().unwrap();
    let ckpt = tmp.path().join("tools-1");
    taught(&tmp.path().join("work")).unwrap().save(&ckpt).unwrap();
    let server = serve(&ckpt, "tools-1").await;
    let base = server.base_url();
    let tools: Json = json!([serde_json::from_str::<Json>(CLICK).unwrap()]);
    let user = json!([{"role": "user", "content": "Open the cart."}]);
    let body = json!({"model": "tools-1", "messages": user, "tools": tools, "temperature": 0.0});
    let (status, v) = chat(&base, body.clone()).await;
    assert_eq!(status, 200, "{v}");
    let choice = &v["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls", "{v}");
    assert_eq!(choice["message"]["content"], Json::Null);
    let call = &choice["message"]["tool_calls"][0];
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "click");
    assert_eq!(call["function"]["arguments"], "{\"id\": 7}");
    assert!(call["id"].as_str().unwrap().starts_with("call_chatcmpl-"), "{call}");
    // The prompt is the template's, with the client's tool schema in its `tools`.
    let trainer = load_policy(&ckpt).unwrap();
    let tok = trainer.tokenizer();
    let prompt = wrl_trainer::render_prompt_with(
        tok,
        &[Segment::new(Role::User, "Open the cart.")],
        &[serde_json::to_string(&tools[0]).unwrap()],
    )
    .unwrap();
    assert_eq!(v["usage"]["prompt_tokens"], prompt.len());
    // `tool_choice: "none"`: the same reply, as content.
    let mut none = body.clone();
    none["tool_choice"] = json!("none");
    let (_, v) = chat(&base, none).await;
    assert_eq!(content(&v), REPLY);
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    // Without the tool offered, the call names a tool the request does not have: content.
    let mut other = body.clone();
    other["tools"][0]["function"]["name"] = json!("type");
    let (_, v) = chat(&base, other).await;
    assert_eq!(
        (content(&v), &v["choices"][0]["finish_reason"]),
        (REPLY.to_string(), &json!("stop"))
    );
    // The call and its result go back into the conversation through the template.
    let history = json!([
        {"role": "user", "content": "Open the cart."},
        {"role": "assistant", "content": null, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "content": "opened"},
    ]);
    let (status, v) = chat(
        &base,
        json!({"messages": history, "tools": tools, "temperature": 0.0, "max_tokens": 4}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    let text = tok
        .chat()
        .unwrap()
        .prompt_text(&wrl_trainer::chat::Conversation {
            messages: vec![
                wrl_trainer::chat::Message::new(
                    wrl_trainer::chat::ChatRole::User,
                    "Open the cart.",
                ),
                wrl_trainer::chat::Message {
                    tool_calls: vec![wrl_trainer::chat::CallText {
                        name: "click".into(),
                        arguments: "{\"id\": 7}".into(),
                    }],
                    ..wrl_trainer::chat::Message::new(wrl_trainer::chat::ChatRole::Assistant, "")
                },
                wrl_trainer::chat::Message::new(wrl_trainer::chat::ChatRole::Tool, "opened"),
            ],
            tools: vec![serde_json::to_string(&tools[0]).unwrap()],
        })
        .unwrap();
    assert!(text.contains("<tool_response>\nopened\n</tool_response>"), "{text}");
    assert_eq!(v["usage"]["prompt_tokens"], tok.encode(&text).unwrap().len());
    // Tool calls are read from the whole reply: not streamed.
    let mut streamed = body;
    streamed["stream"] = json!(true);
    let (status, v) = chat(&base, streamed).await;
    assert_eq!((status, &v["error"]["param"]), (400, &json!("stream")), "{v}");
    server.stop().await.unwrap();
}
