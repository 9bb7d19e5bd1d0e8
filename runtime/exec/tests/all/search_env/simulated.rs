//! `simulated_search(engine)` over real HTTP: a `search` is answered by a chat endpoint on
//! loopback that reads ZeroSearch's prompt (the question, its reference answer, useful or
//! noisy), its reply cut before `Doc {top_k + 1}`; the share of noisy documents follows the
//! stage's iterations; draws repeat with the seed; a task without a reference answer and a
//! failing engine end the episode as environment errors.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::routing::post;
use serde_json::{Value as Json, json};
use wrl_exec::env::SearchEnv;
use wrl_exec::env::simulated::{Simulator, cut, prompt};
use wrl_plan::params::{Api, NodeRef, Noise, Seconds, SimTemplate, SimulatedSearch, Tokens};
use wrl_sandbox::{Checker, Sandbox, Split, generate_qa};

use super::{Script, cfg};

/// A chat endpoint on loopback that writes three documents naming the query and whether it was
/// asked for useful or noisy ones, and keeps every request; or answers HTTP 500.
async fn engine(fail: bool) -> (String, Arc<Mutex<Vec<Json>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        post(move |body: axum::Json<Json>| {
            let log = log.clone();
            async move {
                let user = body.0["messages"][1]["content"].as_str().unwrap_or("").to_string();
                log.lock().unwrap().push(body.0);
                if fail {
                    return Err(axum::http::StatusCode::INTERNAL_SERVER_ERROR);
                }
                let query = user.split("Query: ").nth(1).unwrap_or("").lines().next().unwrap_or("");
                let kind = if user.ends_with("Noisy Output:\n") { "noisy" } else { "useful" };
                let text = format!("Doc 1: {kind} {query}\n\nDoc 2: second\nDoc 3: third");
                Ok(axum::Json(json!({"choices": [{"message": {"content": text}}]})))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (base, seen)
}

fn api(base: &str) -> Api {
    Api {
        model: "sim".into(),
        base_url: base.into(),
        api_key_env: String::new(),
        context: Tokens(8192),
        timeout: Seconds(5.0),
        retries: 0,
        concurrency: 4,
        temperature: 0.8,
        image_tokens: Tokens(0),
    }
}

fn spec(start: f64, end: f64) -> SimulatedSearch {
    SimulatedSearch {
        engine: NodeRef("model:sim".into()),
        template: SimTemplate::Sft,
        top_k: 2,
        noise: Noise { start, end },
        noise_base: 4.0,
        max_tokens: Tokens(64),
    }
}

fn env_with(sim: Simulator) -> SearchEnv {
    // The search service is never asked: its URL goes nowhere.
    let env = SearchEnv::new("http://127.0.0.1:9", 1500, Duration::from_secs(5)).unwrap();
    env.with_simulator(Arc::new(sim))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engine_writes_the_documents_from_zerosearchs_prompt() {
    let sb = Sandbox::start(0, 0).await.unwrap();
    let task = generate_qa(sb.content(), Split::Test, 1, 3).remove(0);
    let Checker::Answer { expected, .. } = &task.checker else { panic!("a QA task") };
    let (base, seen) = engine(false).await;
    let env = env_with(Simulator::new(&spec(0.0, 0.0), &api(&base), 7).unwrap());
    let script = Script(vec!["search founding of Osk", "answer 1900"]);
    let t = env.run_task(&task, &mut { script }, &cfg()).await;
    assert_eq!(t.outcome.reason.word(), "completed", "{:?}", t.outcome);
    // Blank lines closed up, cut before `Doc 3` (top_k = 2).
    assert_eq!(t.steps[0].feedback, "Doc 1: useful founding of Osk\nDoc 2: second\n");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    let body = &seen[0];
    assert_eq!(body["messages"][0], json!({"role": "system", "content": ""}));
    assert_eq!((body["max_tokens"].as_u64(), body["temperature"].as_f64()), (Some(64), Some(0.8)));
    let first = expected.split(wrl_sandbox::REFERENCE_SEPARATOR).next().unwrap();
    let want = prompt(SimTemplate::Sft, false, &task.goal, first, "founding of Osk");
    assert_eq!(body["messages"][1]["content"], want);
    assert!(want.contains(&format!("\"{}\" whose answer is {first}.", task.goal)), "{want}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn noise_follows_the_stages_iterations_and_repeats_with_the_seed() {
    let sb = Sandbox::start(0, 0).await.unwrap();
    let tasks = generate_qa(sb.content(), Split::Test, 40, 5);
    let (base, _) = engine(false).await;
    let sim = Simulator::new(&spec(0.0, 1.0), &api(&base), 11).unwrap();
    // ZeroSearch's dynamic_threshold: start + (4^(i/n) − 1)/3 · (end − start), `end` from the
    // last iteration on and outside training.
    sim.set_iteration(Some((1, 4)));
    assert!((sim.noise() - (4f64.powf(0.25) - 1.0) / 3.0).abs() < 1e-12);
    sim.set_iteration(Some((4, 4)));
    assert_eq!(sim.noise(), 1.0);
    sim.set_iteration(None);
    assert_eq!(sim.noise(), 1.0);
    sim.set_iteration(Some((0, 4)));
    assert_eq!(sim.noise(), 0.0);
    // At p ≈ 0.41, about that share of 40 draws is noisy, and the same inputs draw the same.
    sim.set_iteration(Some((2, 4)));
    let noisy = |s: &Simulator| -> Vec<bool> {
        tasks.iter().map(|t| s.noisy(t, &["search x".to_string()], "q")).collect()
    };
    let draws = noisy(&sim);
    let share = draws.iter().filter(|n| **n).count();
    assert!((8..=26).contains(&share), "{share} of 40 noisy at p = {}", sim.noise());
    assert_eq!(draws, noisy(&sim));
    let other = Simulator::new(&spec(0.0, 1.0), &api(&base), 12).unwrap();
    other.set_iteration(Some((2, 4)));
    assert_ne!(draws, noisy(&other), "another seed draws otherwise");
    // Through the env: all noisy at the end of training.
    let env = env_with(sim);
    wrl_exec::env::Env::at_iteration(&env, Some((4, 4)));
    let t = env.run_task(&tasks[0], &mut Script(vec!["search a b", "answer x"]), &cfg()).await;
    assert_eq!(t.steps[0].feedback, "Doc 1: noisy a b\nDoc 2: second\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_reference_or_a_failing_engine_is_an_environment_error() {
    let sb = Sandbox::start(0, 0).await.unwrap();
    let mut task = generate_qa(sb.content(), Split::Test, 1, 3).remove(0);
    let (base, seen) = engine(true).await;
    let env = env_with(Simulator::new(&spec(0.0, 0.0), &api(&base), 1).unwrap());
    let t = env.run_task(&task, &mut Script(vec!["search q"]), &cfg()).await;
    assert_eq!(t.outcome.reason.word(), "env_error", "{:?}", t.outcome);
    assert!(t.outcome.message.contains("the simulated search engine failed"), "{:?}", t.outcome);
    assert_eq!(seen.lock().unwrap().len(), 1, "no retries with `retries = 0`");
    task.checker = Checker::Url { path: "/".into() };
    let t = env.run_task(&task, &mut Script(vec!["search q"]), &cfg()).await;
    assert_eq!(t.outcome.reason.word(), "env_error");
    assert!(t.outcome.message.contains("has no reference answer"), "{:?}", t.outcome);
    assert_eq!(seen.lock().unwrap().len(), 1, "the engine is not asked");
}

#[test]
fn the_reply_is_cut_before_the_document_past_top_k() {
    assert_eq!(cut("Doc 1: a\n\nDoc 2: b\n\nDoc 3: c", 2), "Doc 1: a\nDoc 2: b\n");
    assert_eq!(cut("Doc 1: a", 5), "Doc 1: a");
    let useful = prompt(SimTemplate::Prompt, false, "Q?", "A", "q");
    assert!(useful.contains("Useful Output:\nDoc 1: The George Washington Bridge"), "{useful}");
    assert!(useful.contains("Doc 5: Handling over 103 million"), "{useful}");
    assert!(useful.ends_with("\n\nQuery: q\nUseful Output:\n"), "{useful}");
    let noisy = prompt(SimTemplate::Prompt, true, "Q?", "A", "q");
    assert!(noisy.starts_with("You are the Google search engine. \n"), "{noisy}");
    assert!(!noisy.contains("whose answer is"), "the noisy few-shot prompt hides the answer");
}
