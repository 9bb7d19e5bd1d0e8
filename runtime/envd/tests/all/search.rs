//! A `search_api` env through the service: the WebDancer recipe's smoke profile (the sandbox
//! wiki's search API), an episode stepped with WebDancer's tags — a search, then the answer — and
//! scored by the recipe's reward (format and answer match); a malformed call is recorded as
//! the model's mistake and the episode goes on. The service's connections are bounded as
//! `wrlc serve`'s are: 2,000 idle sockets are neither held for ever nor keep a request out.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use serde_json::{Value as Json, json};
use wrl_check::FsLoader;
use wrl_diagnostics::SourceMap;
use wrl_envd::{EnvServer, ServiceOptions, SetupOptions};
use wrl_plan::params::TypedPlan;

fn webdancer_smoke() -> wrl_plan::Plan {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let text = std::fs::read_to_string(root.join("recipes/webdancer.wrl")).unwrap();
    let mut sources = SourceMap::new();
    let id = sources.add("recipes/webdancer.wrl".to_string(), text.clone());
    let parsed = wrl_syntax::parse(id, &text);
    let checked = wrl_check::check(&mut sources, &[(id, &parsed.file)], &FsLoader);
    let recipe = checked.recipes.into_iter().next().unwrap().with_profile("smoke").unwrap();
    wrl_plan::lower(&recipe).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_episode_is_stepped_and_scored() {
    let plan = webdancer_smoke();
    let typed = TypedPlan::decode(&plan).unwrap();
    let setup = SetupOptions { chromium: None, state_dir: std::env::temp_dir() };
    let env = wrl_envd::environment(&typed, &setup).await.unwrap();
    assert!(env.pool.is_none(), "a search env starts no browsers");
    let served = &env.nodes["stage:online/phase:1"];
    assert_eq!(served.env_kind, "search_api");
    let opts = ServiceOptions { token: Some("t".into()), ..ServiceOptions::default() };
    let server = EnvServer::bind(env, &opts).await.unwrap();
    let base = format!("http://{}", server.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.run(async {
        let _ = stopped.await;
    }));
    let http = reqwest::Client::new();
    let post = |path: String, body: Json| {
        let req = http.post(format!("{base}{path}")).bearer_auth("t").json(&body);
        async move {
            let r = req.send().await.unwrap();
            (r.status().as_u16(), r.json::<Json>().await.unwrap())
        }
    };
    let task = json!({"id": "qa-train-0-00000", "split": "train", "template": "qa_founded",
        "site": "wiki", "start_path": "/wiki/", "goal": "In what year was Barlon founded?",
        "params": {"town": "Barlon"}, "checker": {"kind": "answer", "expected": "1870", "mode": "number"},
        "max_steps": 4, "content_seed": 0});
    let (s, v) =
        post("/v1/episodes".into(), json!({"node": "stage:online/phase:1", "task": task})).await;
    assert_eq!(s, 200, "{v}");
    let ep = v["episode"].as_str().unwrap().to_string();
    assert_eq!(v["observation"]["text"], "task: In what year was Barlon founded?\n");
    let (_, v) = post(
        format!("/v1/episodes/{ep}/step"),
        json!({"text": "<tool_call>{\"name\": \"fly\", \"arguments\": {}}</tool_call>"}),
    )
    .await;
    assert_eq!(v["error"]["code"], "E0613", "{v}");
    assert_eq!(v["done"], false);
    let (_, v) = post(
        format!("/v1/episodes/{ep}/step"),
        json!({"text": "<think>look it up</think><tool_call>{\"name\": \"search\", \"arguments\": {\"query\": [\"Barlon founded\"]}}</tool_call>"}),
    )
    .await;
    assert_eq!(v["done"], false, "{v}");
    let result = v["observation"]["text"].as_str().unwrap();
    assert!(result.contains("result: ") && result.contains("Barlon"), "{result}");
    let (_, v) = post(
        format!("/v1/episodes/{ep}/step"),
        json!({"text": "<think>found it</think><answer>1870</answer>"}),
    )
    .await;
    assert_eq!(v["done"], true, "{v}");
    let (_, score) = post(format!("/v1/episodes/{ep}/end"), json!({})).await;
    assert_eq!(score["failure_class"], "completed", "{score}");
    assert_eq!(score["success"], true, "{score}");
    assert_eq!(score["answer"], "1870");
    assert_eq!(score["steps"], 3);
    let reward = score["reward"].as_f64().unwrap();
    // 0.9 for the answer; `format_ok(mode: react_tags)` reads every turn, and the first was
    // no call of the tool set.
    assert!((reward - 0.9).abs() < 1e-9, "0 format + 0.9 answer: {score}");
    stop.send(()).unwrap();
    serving.await.unwrap().unwrap();
}

/// The prompts the service hands out for an `hf(…)` policy get the room its context leaves (as
/// `wrlc run` sizes them), not the tiny policy's 900 bytes: measured with the model's own
/// tokenizer and template when its files are here, estimated without them when they are not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_hf_policys_prompts_get_the_room_its_context_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("tiny-qwen3");
    let corpus = vec!["task: In what year was Barlon founded?".to_string(), "search Barlon".into()];
    let source = wrl_trainer::hf::tiny::TokenizerSource::Generated { corpus, merges: 50 };
    wrl_trainer::hf::tiny::write(&model, &wrl_trainer::hf::tiny::TinySpec::narrow(), &source)
        .unwrap();
    let room = |id: &str| {
        let text = format!(
            r#"use std::rewards::answer_match
model policy = hf("{id}") {{ family = qwen3, dtype = f32, context = 2048 tokens }}
dataset questions = std::sandbox::qa(count: 2)
env web = search_api("http://127.0.0.1:1") {{ target = std::sandbox::search, tools = std::tools::webdancer, step_text = 64 tokens }}
agent dancer = react(policy, web) {{ max_turns = 3 turns, max_response = 64 tokens }}
stage online = grpo(policy, questions, dancer) {{
  group = 2
  reward = answer_match
  phases = [{{ iters = 1, horizon = 3 steps, lr = 1e-6 }}]
}}
"#
        );
        let mut sources = SourceMap::new();
        let fid = sources.add("hf.wrl".to_string(), text.clone());
        let parsed = wrl_syntax::parse(fid, &text);
        let checked = wrl_check::check(&mut sources, &[(fid, &parsed.file)], &FsLoader);
        assert!(checked.diagnostics.iter().all(|d| !d.is_error()), "{:?}", checked.diagnostics);
        let plan = wrl_plan::lower(&checked.recipes.into_iter().next().unwrap()).unwrap();
        async move {
            let typed = TypedPlan::decode(&plan).unwrap();
            let setup = SetupOptions { chromium: None, state_dir: std::env::temp_dir() };
            let env = wrl_envd::environment(&typed, &setup).await.unwrap();
            let served = &env.nodes["stage:online/phase:1"];
            let schemas: usize = served.tools.function_schema_texts().iter().map(String::len).sum();
            (served.window.room, schemas)
        }
    };
    let (measured, _) = room(&model.display().to_string()).await;
    assert!(measured > 900 && measured < 2048 - 64, "room {measured}");
    let (estimated, schemas) = room("no-such-org/no-such-model").await;
    assert_eq!(estimated, 2048 - 64 - 1024 - schemas, "the estimate without the model's files");
    assert!(estimated < measured, "{estimated} vs {measured}: the estimate is the cautious one");
}

/// File descriptors this process has open (the service's sockets among them).
fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0)
}

/// `wrlc env serve` held every connection for ever (2,000 idle sockets, no token needed: at the
/// fd limit every request timed out). It has `wrlc serve`'s bounds now: at most
/// `max_connections` held at once (the rest wait in the kernel's queue, first come first
/// served), the idle ones making way for new ones, and a connection that sends no request
/// within the idle timeout closed, never answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sockets_are_neither_held_nor_keep_requests_out() {
    use tokio::io::AsyncReadExt;
    let plan = webdancer_smoke();
    let typed = TypedPlan::decode(&plan).unwrap();
    let setup = SetupOptions { chromium: None, state_dir: std::env::temp_dir() };
    let env = wrl_envd::environment(&typed, &setup).await.unwrap();
    let opts = ServiceOptions { token: Some("t".into()), ..ServiceOptions::default() };
    let cap = opts.limits.max_connections;
    let server = EnvServer::bind(env, &opts).await.unwrap();
    let addr = server.local_addr();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.run(async {
        let _ = stopped.await;
    }));
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let base = open_fds();
    let connects: Vec<_> = (0..2_000)
        .map(|_| {
            tokio::spawn(tokio::time::timeout(
                std::time::Duration::from_secs(60),
                tokio::net::TcpStream::connect(addr),
            ))
        })
        .collect();
    let mut idle = Vec::new();
    for c in connects {
        idle.push(c.await.unwrap().expect("a connect waited a minute").unwrap());
    }
    // The sockets the service holds are this process's fds beyond the clients' own.
    let held = || open_fds().saturating_sub(base + idle.len());
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert!(held() <= cap + 32, "the service holds {} connections, past its cap of {cap}", held());
    let health = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        reqwest::get(format!("http://{addr}/v1/health")),
    )
    .await
    .expect("the health check waited behind idle sockets")
    .unwrap();
    assert_eq!(health.status(), 200);
    // Past the idle timeout the service holds none of them any more.
    let started = std::time::Instant::now();
    while held() > 16 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(90),
            "the service still holds {} idle connections",
            held()
        );
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    // None was answered: they asked nothing.
    let mut buf = [0u8; 256];
    for s in &mut idle {
        let read =
            tokio::time::timeout(std::time::Duration::from_millis(5), s.read(&mut buf)).await;
        assert!(!matches!(read, Ok(Ok(n)) if n > 0), "an idle socket was answered");
    }
    stop.send(()).unwrap();
    serving.await.unwrap().unwrap();
}
