//! `wrlc env serve`'s service end to end on loopback, in real Chromium on the sandbox web: the
//! quickstart recipe's environment served with a token, episodes created for its RL phase and
//! eval, stepped with Hermes text and parsed calls, scored by the recipe's reward; every bad
//! request answered with its code (no token, unknown episode, malformed calls, too many
//! episodes) and none of them losing the episode.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use serde_json::{Value as Json, json};
use wrl_check::FsLoader;
use wrl_diagnostics::SourceMap;
use wrl_envd::{EnvServer, ServiceOptions, SetupOptions};
use wrl_plan::params::TypedPlan;

const PHASE: &str = "stage:online/phase:1";
const TOKEN: &str = "test-token";

fn quickstart() -> wrl_plan::Plan {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let text = std::fs::read_to_string(root.join("recipes/quickstart.wrl")).unwrap();
    let mut sources = SourceMap::new();
    let id = sources.add("recipes/quickstart.wrl".to_string(), text.clone());
    let parsed = wrl_syntax::parse(id, &text);
    let checked = wrl_check::check(&mut sources, &[(id, &parsed.file)], &FsLoader);
    wrl_plan::lower(&checked.recipes.into_iter().next().unwrap()).unwrap()
}

/// A shop task of the sandbox (its content is fixed by `content_seed`).
fn task() -> Json {
    json!({"id": "train-0-00000", "split": "train", "template": "shop_price", "site": "shop",
           "start_path": "/shop/", "goal": "What is the price of the grey clock?",
           "params": {"product": "grey clock"},
           "checker": {"kind": "answer", "expected": "78.42", "mode": "number"},
           "max_steps": 6, "content_seed": 0})
}

struct Client {
    http: reqwest::Client,
    base: String,
}

impl Client {
    async fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<Json>,
        token: Option<&str>,
    ) -> (u16, Json) {
        let url = format!("{}{path}", self.base);
        let mut req = match method {
            "GET" => self.http.get(url),
            _ => self.http.post(url),
        };
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap())
    }

    async fn post(&self, path: &str, body: Json) -> (u16, Json) {
        self.call("POST", path, Some(body), Some(TOKEN)).await
    }

    async fn create(&self, node: &str) -> (u16, Json) {
        self.post("/v1/episodes", json!({"task": task(), "node": node})).await
    }
}

fn code(v: &Json) -> &str {
    v["error"]["code"].as_str().unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn episodes_run_in_chromium_and_are_scored_by_the_recipe() {
    let plan = quickstart();
    let typed = TypedPlan::decode(&plan).unwrap();
    let dir = std::env::temp_dir().join(format!("wrl-envd-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let setup = SetupOptions { chromium: None, state_dir: dir.clone() };
    let env = wrl_envd::environment(&typed, &setup).await.expect(
        "the env starts (Chromium must be installed: apt-get install chromium-headless-shell)",
    );
    assert_eq!(env.concurrency, 4, "quickstart's env runs 4 episodes at once");
    let opts = ServiceOptions { token: Some(TOKEN.into()), ..ServiceOptions::default() };
    let server = EnvServer::bind(env, &opts).await.unwrap();
    let base = format!("http://{}", server.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.run(async {
        let _ = stopped.await;
    }));
    let c = Client { http: reqwest::Client::new(), base };

    // The token guards every route but the health check.
    assert_eq!(c.call("GET", "/v1/health", None, None).await.0, 200);
    let (s, v) = c.call("GET", "/v1/env", None, None).await;
    assert_eq!((s, code(&v)), (401, "E0611"));
    let (s, v) = c.call("GET", "/v1/env", None, Some("wrong")).await;
    assert_eq!((s, code(&v)), (401, "E0611"));
    let (s, v) = c.call("GET", "/v1/env", None, Some(TOKEN)).await;
    assert_eq!(s, 200);
    assert_eq!(v["plan_digest"], wrl_plan::Identity::of(&plan).plan);
    let nodes: Vec<&str> =
        v["nodes"].as_array().unwrap().iter().map(|n| n["node"].as_str().unwrap()).collect();
    assert!(nodes.contains(&PHASE) && nodes.contains(&"eval:after_rl"), "{nodes:?}");

    // Bad requests: an unknown node, a task that is not one, a body that is not JSON.
    let (s, v) = c.create("stage:nope").await;
    assert_eq!((s, code(&v)), (400, "E0615"), "{v}");
    let (s, v) = c.post("/v1/episodes", json!({"task": {"id": 1}, "node": PHASE})).await;
    assert_eq!((s, code(&v)), (400, "E0615"), "{v}");
    let (s, v) = c.post("/v1/episodes/ep-424242/step", json!({"text": "click 1"})).await;
    assert_eq!((s, code(&v)), (404, "E0612"));

    // A solved episode: Hermes text, then a parsed call.
    let (s, v) = c.create(PHASE).await;
    assert_eq!(s, 200, "{v}");
    let ep = v["episode"].as_str().unwrap().to_string();
    let text = v["observation"]["text"].as_str().unwrap();
    assert!(text.starts_with("task: What is the price of the grey clock?"), "{text}");
    assert!(text.contains("textbox \"Search products\""), "{text}");
    // A malformed call is the model's mistake: coded, recorded, and the episode goes on.
    let (s, v) = c
        .post(
            &format!("/v1/episodes/{ep}/step"),
            json!({"text": "<tool_call>{\"name\": \"fly\"}</tool_call>"}),
        )
        .await;
    assert_eq!(s, 200);
    assert_eq!(v["error"]["code"], "E0613");
    assert!(v["error"]["message"].as_str().unwrap().contains("no tool `fly`"), "{v}");
    assert_eq!(v["done"], false);
    // A call that is not a call object is the client's: refused, the episode untouched.
    let (s, v) = c.post(&format!("/v1/episodes/{ep}/step"), json!({"calls": [42]})).await;
    assert_eq!((s, code(&v)), (400, "E0613"));
    let typed = "<think>search it</think><tool_call>{\"name\": \"type\", \"arguments\": {\"id\": 3, \"text\": \"grey clock\", \"submit\": true}}</tool_call>";
    let (s, v) = c.post(&format!("/v1/episodes/{ep}/step"), json!({"text": typed})).await;
    assert_eq!(s, 200, "{v}");
    let page = v["observation"]["text"].as_str().unwrap();
    assert!(page.contains("$78.42"), "the search results show the price: {page}");
    assert!(!v["feedback"].as_str().unwrap().contains("127.0.0.1"), "loopback origins are cut");
    let (s, v) = c
        .post(
            &format!("/v1/episodes/{ep}/step"),
            json!({"calls": [{"name": "answer", "arguments": {"text": "78.42"}}]}),
        )
        .await;
    assert_eq!((s, v["done"].clone()), (200, json!(true)), "{v}");
    assert_eq!(v["steps"], 3);
    let (s, score) = c.post(&format!("/v1/episodes/{ep}/end"), json!({})).await;
    assert_eq!(s, 200);
    assert_eq!(score["failure_class"], "completed");
    assert_eq!(score["success"], true);
    assert_eq!(score["reward"], 1.0);
    assert_eq!(score["answer"], "78.42");
    // Ended: gone.
    let (s, v) = c.post(&format!("/v1/episodes/{ep}/end"), json!({})).await;
    assert_eq!((s, code(&v)), (404, "E0612"));

    // Malformed turns up to the agent's `max_parse_failures`: a format error, -1 by the recipe.
    let (_, v) = c.create(PHASE).await;
    let ep = v["episode"].as_str().unwrap().to_string();
    let mut done = false;
    for _ in 0..6 {
        let (_, v) = c.post(&format!("/v1/episodes/{ep}/step"), json!({"text": "fly away"})).await;
        if v["done"] == true {
            done = true;
            break;
        }
    }
    assert!(done, "repeated malformed turns end the episode");
    let (_, score) = c.post(&format!("/v1/episodes/{ep}/end"), json!({})).await;
    assert_eq!(score["failure_class"], "agent_error", "{score}");
    assert_eq!(score["reward"], -1.0, "{score}");

    // Back-pressure: the plan's 4 slots, then 429 with Retry-After; an ended episode frees one.
    let mut live = Vec::new();
    for _ in 0..4 {
        let (s, v) = c.create("eval:after_rl").await;
        assert_eq!(s, 200, "{v}");
        live.push(v["episode"].as_str().unwrap().to_string());
    }
    let resp = c
        .http
        .post(format!("{}/v1/episodes", c.base))
        .bearer_auth(TOKEN)
        .json(&json!({"task": task(), "node": PHASE}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 429);
    assert_eq!(resp.headers()["retry-after"], "1");
    let v: Json = resp.json().await.unwrap();
    assert_eq!(code(&v), "E0614");
    // An eval scores by the checker: a wrong answer is 0; an episode the client truncates
    // (the trainer's token budget ran out) is `truncated`, the class a recipe can exclude.
    let (_, v) =
        c.post(&format!("/v1/episodes/{}/step", live[0]), json!({"text": "answer 12"})).await;
    assert_eq!(v["done"], true, "{v}");
    let (_, score) = c.post(&format!("/v1/episodes/{}/end", live[0]), json!({})).await;
    assert_eq!(
        (score["reward"].clone(), score["success"].clone()),
        (json!(0.0), json!(false)),
        "{score}"
    );
    let (_, score) =
        c.post(&format!("/v1/episodes/{}/end", live[1]), json!({"reason": "truncated"})).await;
    assert_eq!(score["failure_class"], "truncated", "{score}");
    let (s, v) = c.create(PHASE).await;
    assert_eq!(s, 200, "a slot came free: {v}");
    live.push(v["episode"].as_str().unwrap().to_string());
    for ep in &live[2..] {
        let (s, score) =
            c.post(&format!("/v1/episodes/{ep}/end"), json!({"reason": "crashed"})).await;
        assert_eq!(s, 200);
        assert_eq!(score["failure_class"], "env_error", "{score}");
        if score["node"] == PHASE {
            // The phase's `exclude` (the default: env_error, infra_timeout) leaves it out.
            let got = (score["reward"].clone(), score["excluded"].clone());
            assert_eq!(got, (Json::Null, json!("env_error")), "{score}");
        }
    }
    let (_, v) = c.call("GET", "/v1/env", None, Some(TOKEN)).await;
    assert_eq!(v["live"], 0);
    assert_eq!(v["finished"]["completed"], 2, "{v}");
    assert_eq!(
        v["finished"]["env_error"], 3,
        "episodes ended for another reason are env errors: {v}"
    );
    stop.send(()).unwrap();
    serving.await.unwrap().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_public_address_needs_the_flag_and_a_token() {
    assert!(wrl_envd::check_addr("127.0.0.1:0", false, false).is_ok());
    let e = wrl_envd::check_addr("0.0.0.0:0", false, true).unwrap_err();
    assert_eq!(e.code(), "E0616");
    assert!(e.to_string().contains("--public"), "{e}");
    let e = wrl_envd::check_addr("0.0.0.0:0", true, false).unwrap_err();
    assert!(e.to_string().contains("WRL_ENV_TOKEN"), "{e}");
    assert!(wrl_envd::check_addr("0.0.0.0:0", true, true).is_ok());
}

/// An env that observes screenshots sends each observation's page as a PNG (for a
/// vision-language policy), in real Chromium.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn screenshots_come_as_png_when_the_env_observes_them() {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let text = std::fs::read_to_string(root.join("recipes/quickstart.wrl"))
        .unwrap()
        .replace("feedback(dom_diff)]", "feedback(dom_diff), screenshot(last: 1)]");
    assert!(text.contains("screenshot(last: 1)"));
    let mut sources = SourceMap::new();
    let id = sources.add("quickstart-vision.wrl".to_string(), text.clone());
    let parsed = wrl_syntax::parse(id, &text);
    let checked = wrl_check::check(&mut sources, &[(id, &parsed.file)], &FsLoader);
    let plan = wrl_plan::lower(&checked.recipes.into_iter().next().unwrap()).unwrap();
    let typed = TypedPlan::decode(&plan).unwrap();
    let setup = SetupOptions { chromium: None, state_dir: std::env::temp_dir() };
    let env = wrl_envd::environment(&typed, &setup).await.unwrap();
    let server = EnvServer::bind(env, &ServiceOptions::default()).await.unwrap();
    let c =
        Client { http: reqwest::Client::new(), base: format!("http://{}", server.local_addr()) };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.run(async {
        let _ = stopped.await;
    }));
    let (s, v) = c.create(PHASE).await;
    assert_eq!(s, 200, "{v}");
    use base64::Engine;
    let png = base64::engine::general_purpose::STANDARD
        .decode(v["observation"]["screenshot"].as_str().expect("a screenshot"))
        .unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    let ep = v["episode"].as_str().unwrap().to_string();
    let (_, v) = c.post(&format!("/v1/episodes/{ep}/step"), json!({"text": "click 5"})).await;
    assert!(v["observation"]["screenshot"].is_string(), "every observation has one: {v}");
    assert_eq!(c.post(&format!("/v1/episodes/{ep}/end"), json!({})).await.0, 200);
    stop.send(()).unwrap();
    serving.await.unwrap().unwrap();
}
