//! A ReAct agent whose policy is an `api(…)` model, evaluated by `wrlc run` against a chat
//! endpoint on loopback that speaks the OpenAI protocol: here the sandbox's scripted search
//! expert, reading the conversation it is sent (the question, its own earlier `tool_calls`, the
//! `tool` messages answering them) and answering with the next call. It solves every lookup, so
//! every question solved proves the round trip: tools offered, calls read, results returned
//! under the calls' ids. A server that fails ends episodes as the env's error, not the agent's.

#![allow(clippy::unwrap_used)] // test helpers fail loudly, like the tests they serve

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::post;
use serde_json::{Value as Json, json};
use wrl_sandbox::{Content, Split, Task};

use crate::run_e2e::records;

/// Serves `app` on a free loopback port, on `rt`.
fn serve(rt: &tokio::runtime::Runtime, app: axum::Router) -> u16 {
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        port
    })
}

/// Requests a chat endpoint on loopback was sent.
pub(crate) type Seen = Arc<Mutex<Vec<Json>>>;

/// A chat-completions endpoint on a free loopback port (on `rt`) answering each request body
/// with `reply(body)`, and the bodies it was sent, in order.
pub(crate) fn chat_server(
    rt: &tokio::runtime::Runtime,
    reply: impl Fn(&Json) -> Json + Clone + Send + Sync + 'static,
) -> (u16, Seen) {
    let seen: Seen = Arc::default();
    let log = seen.clone();
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        post(move |body: axum::Json<Json>| {
            let (log, reply) = (log.clone(), reply.clone());
            async move {
                let answer = reply(&body.0);
                log.lock().unwrap().push(body.0);
                axum::Json(answer)
            }
        }),
    );
    (serve(rt, app), seen)
}

/// tests/recipes/api_policy.wrl with its policy served at `port`.
fn recipe(dir: &std::path::Path, port: u16) -> std::path::PathBuf {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("recipes/api_policy.wrl")).unwrap();
    assert!(text.contains("127.0.0.1:6001"));
    let path = dir.join("api_policy.wrl");
    std::fs::write(&path, text.replace("127.0.0.1:6001", &format!("127.0.0.1:{port}"))).unwrap();
    path
}

fn run(recipe: &std::path::Path, out: &std::path::Path) -> (u8, String) {
    let args = ["run".as_ref(), recipe.as_os_str(), "--out".as_ref(), out.as_os_str()];
    let (code, _, stderr) = wrl_cli::run_captured(args);
    (code, stderr)
}

/// The question of a conversation: its first user message's `task:` line.
fn question(messages: &[Json]) -> String {
    let first = messages.iter().find(|m| m["role"] == "user").unwrap();
    let text = first["content"].as_str().unwrap();
    text.lines().find_map(|l| l.strip_prefix("task: ")).unwrap().trim().to_string()
}

/// The expert's calls so far, as the terse lines it plans with, from the assistant messages'
/// `tool_calls`.
fn calls_so_far(messages: &[Json]) -> Vec<String> {
    let mut out = Vec::new();
    for m in messages.iter().filter(|m| m["role"] == "assistant") {
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            let args: Json =
                serde_json::from_str(c["function"]["arguments"].as_str().unwrap()).unwrap();
            let what = match c["function"]["name"].as_str().unwrap() {
                "search" => format!("search {}", args["query"][0].as_str().unwrap()),
                "visit" => format!("visit {}", args["url"][0].as_str().unwrap()),
                other => panic!("the expert never calls {other}"),
            };
            out.push(what);
        }
    }
    out
}

/// The expert's next message for a conversation, as an OpenAI chat completion.
fn expert_reply(tasks: &BTreeMap<String, Task>, body: &Json) -> Json {
    let messages = body["messages"].as_array().unwrap();
    let goal = question(messages);
    let task = tasks.get(&goal).unwrap_or_else(|| panic!("no sandbox question {goal:?}"));
    let history = calls_so_far(messages);
    let last = messages.iter().rev().find(|m| m["role"] == "tool");
    let response = last.and_then(|m| m["content"].as_str()).unwrap_or("");
    let next = wrl_sandbox::search_api::expert_action(task, &history, response)
        .unwrap_or_else(|| format!("answer stuck after {history:?} on {response:?}"));
    let call = |name: &str, args: Json| {
        json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": format!("srv-{}", history.len()), "type": "function",
            "function": {"name": name, "arguments": args.to_string()}}]})
    };
    let message = match next.split_once(' ') {
        Some(("search", q)) => call("search", json!({"query": [q]})),
        Some(("visit", u)) => call("visit", json!({"url": [u], "goal": goal})),
        Some(("answer", a)) => {
            json!({"role": "assistant", "content": format!("<answer>{a}</answer>")})
        }
        _ => panic!("the expert wrote {next:?}"),
    };
    json!({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
           "usage": {"prompt_tokens": 100, "completion_tokens": 12, "total_tokens": 112}})
}

/// Every lookup the sandbox could ask, by its question.
fn sandbox_questions() -> BTreeMap<String, Task> {
    let content = Content::new(0);
    let mut out = BTreeMap::new();
    for split in [Split::Train, Split::Test] {
        for seed in 0..3 {
            for t in wrl_sandbox::generate_qa(&content, split, 64, seed) {
                out.insert(t.goal.clone(), t);
            }
        }
    }
    out
}

#[test]
fn an_api_policy_is_evaluated_through_the_chat_protocol() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let tasks = Arc::new(sandbox_questions());
    let (port, seen) = chat_server(&rt, move |body| expert_reply(&tasks, body));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let (code, stderr) = run(&recipe(dir.path(), port), &out);
    assert_eq!(code, 0, "{stderr}");
    let (summary, _, trajs) = records(&out);
    let held = summary.evals.iter().find(|e| e.eval == "held_out").unwrap();
    assert_eq!((held.success, held.episodes), (1.0, 6), "{held:?}\n{stderr}");
    // Each episode: search, visit, answer, as the expert's terse calls.
    for t in &trajs {
        let actions: Vec<&str> =
            t.trajectory.steps.iter().flat_map(|s| &s.actions).map(String::as_str).collect();
        assert_eq!(actions.len(), 3, "{actions:?}");
        assert!(actions[0].contains("search") && actions[1].contains("visit"), "{actions:?}");
    }
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 6 * 3, "three turns an episode");
    for body in seen.iter() {
        // The tool set offered as functions, greedy decoding, the agent's reply budget.
        let names: Vec<&str> = body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["search", "visit"], "{body}");
        assert_eq!(
            (body["temperature"].as_f64(), body["max_tokens"].as_u64()),
            (Some(0.0), Some(64))
        );
        assert_eq!(body["model"], "expert");
        assert!(body["seed"].is_u64(), "{body}");
        // Every `tool` message answers a call of the assistant message before it, by its id.
        let messages = body["messages"].as_array().unwrap();
        for (i, m) in messages.iter().enumerate().filter(|(_, m)| m["role"] == "tool") {
            let asked = messages[..i].iter().rev().find(|m| m["role"] == "assistant").unwrap();
            let ids: Vec<&Json> =
                asked["tool_calls"].as_array().unwrap().iter().map(|c| &c["id"]).collect();
            assert!(ids.contains(&&m["tool_call_id"]), "{m} answers none of {ids:?}");
        }
    }
}

#[test]
fn a_failing_endpoint_ends_episodes_as_the_envs_error() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        post(|| async { (StatusCode::BAD_REQUEST, "no").into_response() }),
    );
    let port = serve(&rt, app);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let (code, stderr) = run(&recipe(dir.path(), port), &out);
    assert_eq!(code, 0, "{stderr}");
    let (_, _, trajs) = records(&out);
    assert_eq!(trajs.len(), 6);
    for t in &trajs {
        let o = &t.trajectory.outcome;
        assert_eq!(o.reason, wrl_sandbox::Ending::EnvError, "{o:?}");
        assert!(o.message.contains("the policy's model answered HTTP 400"), "{o:?}");
    }
}

/// A served policy in real Chromium, shown screenshots (`screenshot(last: 2, older:
/// placeholder)`): every turn's request holds the last two screenshots as PNG `image_url` parts
/// after the page they show (the first page's in the user's message, a later page's in a user
/// message after its `tool` message, which is text only) and the older one as the placeholder
/// line, as a local vision-language policy keeps them.
#[test]
fn a_served_policy_is_sent_its_last_screenshots_as_image_parts() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (port, seen) = chat_server(&rt, scroll_twice_then_answer);
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "model policy = api(\"seer\") {{ base_url = \"http://127.0.0.1:{port}/v1\", api_key_env = \"\" }}\n\
         dataset heldout = std::sandbox::tasks(count: 2) {{ split = test, sites = [shop] }}\n\
         env web = browser {{\n  target = std::sandbox::web\n  tools = std::tools::elements\n  \
         viewport = 640 x 400\n  observe = [screenshot(last: 2, older: placeholder), elements(max: 16), url, feedback]\n  \
         timeout = {{ step = 20 s, task = 120 s }}\n}}\n\
         agent actor = react(policy, web) {{ history = full_text, max_turns = 3 turns }}\n\
         eval held_out = evaluate(actor, heldout)\n"
    );
    let recipe = dir.path().join("seer.wrl");
    std::fs::write(&recipe, text).unwrap();
    let (code, stderr) = run(&recipe, &dir.path().join("run"));
    assert_eq!(code, 0, "{stderr}");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2 * 3, "three turns an episode");
    let png = |part: &Json| {
        let url = part["image_url"]["url"].as_str().unwrap();
        let b64 = url.strip_prefix("data:image/png;base64,").unwrap();
        let bytes =
            base64::Engine::decode(&base64::engine::general_purpose::STANDARD, b64).unwrap();
        assert!(bytes.starts_with(b"\x89PNG"), "not a PNG");
    };
    for body in seen.iter() {
        let messages = body["messages"].as_array().unwrap();
        let turn = messages.iter().filter(|m| m["role"] == "assistant").count();
        let parts: Vec<&Json> = messages
            .iter()
            .filter_map(|m| m["content"].as_array())
            .flatten()
            .filter(|p| p["type"] == "image_url")
            .collect();
        assert_eq!(parts.len(), (turn + 1).min(2), "turn {turn}: {body}");
        parts.iter().for_each(|p| png(p));
        let all = serde_json::to_string(messages).unwrap();
        assert!(!all.contains('\u{1}'), "a mark left in the text: {all}");
        assert_eq!(all.contains("[screenshot omitted]"), turn == 2, "turn {turn}: {all}");
        // A tool message is text; the images of its page follow it in a user message.
        for (i, m) in messages.iter().enumerate().filter(|(_, m)| m["role"] == "tool") {
            assert!(m["content"].is_string(), "{m}");
            if turn - messages[..i].iter().filter(|m| m["role"] == "tool").count() <= 2 {
                let next = &messages[i + 1];
                assert_eq!(next["role"], "user", "{next}");
                assert_eq!(next["content"][0]["type"], "image_url", "{next}");
            }
        }
    }
}

/// Scrolls on the first two turns, then answers: a reply as an endpoint writes one.
fn scroll_twice_then_answer(body: &Json) -> Json {
    let messages = body["messages"].as_array().unwrap();
    let turn = messages.iter().filter(|m| m["role"] == "assistant").count();
    let (name, args) = match turn {
        0 | 1 => ("scroll", json!({"direction": "down"})),
        _ => ("answer", json!({"text": "x"})),
    };
    let function = json!({"name": name, "arguments": args.to_string()});
    let call = json!({"id": "c", "type": "function", "function": function});
    let message = json!({"role": "assistant", "content": "", "tool_calls": [call]});
    json!({"choices": [{"message": message}], "usage": {"completion_tokens": 5}})
}
