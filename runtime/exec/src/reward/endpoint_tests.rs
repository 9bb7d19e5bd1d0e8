//! The reward endpoint's client against a real scoring server on loopback: scores and
//! components, a slow answer (a timeout), a 500 then a 200 (a retry), a NaN, a 4xx, a closed port,
//! components missing or undeclared; then through `Judges` and `score`, each failure an
//! exclusion with its own class, never a 0.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::post;
use serde_json::{Value as Json, json};
use wrl_plan::params::{Backoff, Endpoint, Seconds, Signal};

use super::*;
use crate::reward::judges::{ApiModels, Judges};
use crate::reward::tests::sig;
use crate::reward::{Exclusion, RewardValue, Rewards};
use crate::rollout::{Scoring, score};

/// A scoring server on loopback; what it answers depends on the task's instruction. Counts its
/// calls and keeps the last request.
async fn server(calls: Arc<AtomicUsize>, last: Arc<std::sync::Mutex<Json>>) -> String {
    let flaky = Arc::new(AtomicUsize::new(0));
    let app = Router::new().route(
        "/score",
        post(move |body: axum::Json<Json>| {
            let (calls, last, flaky) = (calls.clone(), last.clone(), flaky.clone());
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                let task = body.0.pointer("/task/instruction").and_then(Json::as_str);
                let task = task.unwrap_or("").to_string();
                if let Ok(mut l) = last.lock() {
                    *l = body.0.clone();
                }
                let ok = |text: &str| (StatusCode::OK, text.to_string());
                if task.contains("slow") {
                    tokio::time::sleep(Duration::from_millis(800)).await;
                }
                // Every other call of a flaky task fails: a 500, then a 200.
                if task.contains("flaky") && flaky.fetch_add(1, Ordering::SeqCst).is_multiple_of(2) {
                    return (StatusCode::INTERNAL_SERVER_ERROR, "{}".to_string());
                }
                if task.contains("refuse") {
                    return (StatusCode::UNPROCESSABLE_ENTITY, "{\"error\":\"no\"}".to_string());
                }
                if task.contains("nan") {
                    // What Python's `json.dumps(float("nan"))` writes.
                    return ok("{\"score\": NaN, \"components\": {\"answer\": 1, \"steps\": 0}}");
                }
                if task.contains("missing") {
                    return ok("{\"score\": 1, \"components\": {\"answer\": 1}}");
                }
                if task.contains("extra") {
                    return ok("{\"score\": 1, \"components\": {\"answer\": 1, \"steps\": 0.5, \"style\": 1}}");
                }
                let turns = body.0.pointer("/trajectory/turns").and_then(Json::as_array);
                let steps = turns.map_or(0, Vec::len) as f64;
                ok(&json!({"score": 0.75, "components": {"answer": 1.0, "steps": steps}})
                    .to_string())
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/score")
}

pub(crate) fn endpoint(url: &str) -> Endpoint {
    Endpoint {
        url: url.into(),
        components: vec!["answer".into(), "steps".into()],
        api_key_env: "WRL_TEST_NO_SUCH_KEY".into(),
        timeout: Seconds(0.3),
        retries: 1,
        backoff: Backoff { first: Seconds(0.01), factor: 2.0 },
        concurrency: 4,
        observation_chars: 8,
    }
}

fn episode(task: &str) -> Trajectory {
    serde_json::from_value(json!({
        "task_id": "t1", "template": "qa", "goal": task, "agent": "policy",
        "steps": [{"observation": "page: a long observation", "actions": ["search mugs"],
                   "said": "<think>mugs</think><search>mugs</search>",
                   "feedback": "3 results", "url": "/"},
                  {"observation": "short", "actions": ["answer 42"], "feedback": "", "url": "/"}],
        "outcome": {"reason": "completed", "message": "", "answer": "42", "success": true,
                    "detail": ""},
        "elapsed_ms": 1
    }))
    .unwrap()
}

#[tokio::test]
async fn scores_components_retries_and_failure_classes() {
    let calls = Arc::new(AtomicUsize::new(0));
    let last = Arc::new(std::sync::Mutex::new(Json::Null));
    let url = server(calls.clone(), last.clone()).await;
    let client = EndpointClient::new(&endpoint(&url)).unwrap();
    let a = client.score(&episode("what is six times seven"), &["42", "forty-two"]).await;
    let want = Answer {
        score: 0.75,
        components: [("answer".to_string(), 1.0), ("steps".to_string(), 2.0)].into(),
    };
    assert_eq!(a, Ok(want));
    // The request, as docs/reward-endpoint.md lays it out.
    let req = last.lock().unwrap().clone();
    assert_eq!(req["schema"], "wrl.reward/1");
    assert_eq!(req["task"]["id"], "t1");
    assert_eq!(req["task"]["references"], json!(["42", "forty-two"]));
    assert_eq!(req["trajectory"]["turns"][0]["observation"], "page: a ");
    assert_eq!(req["trajectory"]["turns"][0]["observation_truncated"], true);
    assert_eq!(req["trajectory"]["turns"][1]["observation_truncated"], false);
    assert_eq!(req["trajectory"]["turns"][0]["actions"], json!(["search mugs"]));
    // What the agent wrote: the reply as written where it was kept, else the actions.
    let response = "<think>mugs</think><search>mugs</search>";
    assert_eq!(req["trajectory"]["turns"][0]["response"], response);
    assert_eq!(req["trajectory"]["turns"][1]["response"], "answer 42");
    assert_eq!(req["trajectory"]["turns"][1]["malformed"], false);
    assert_eq!(req["trajectory"]["answer"], "42");
    assert_eq!(req["trajectory"]["end_reason"], "completed");
    assert_eq!(req["components"], json!(["answer", "steps"]));

    let before = calls.load(Ordering::SeqCst);
    let a = client.score(&episode("flaky"), &[]).await;
    assert_eq!(a.map(|a| a.score), Ok(0.75), "a 500 then a 200: the retry scores");
    assert_eq!(calls.load(Ordering::SeqCst) - before, 2);

    let failure = |task: &'static str| {
        let client = client.clone();
        async move { client.score(&episode(task), &[]).await.err().map(|e| e.word()) }
    };
    assert_eq!(failure("slow").await, Some("reward_timeout"));
    assert_eq!(failure("nan").await, Some("reward_malformed"));
    assert_eq!(failure("missing").await, Some("reward_malformed"));
    assert_eq!(failure("extra").await, Some("reward_malformed"));
    let before = calls.load(Ordering::SeqCst);
    assert_eq!(failure("refuse").await, Some("reward_http_4xx"));
    assert_eq!(calls.load(Ordering::SeqCst) - before, 1, "a 4xx is not retried");
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}/score", closed.local_addr().unwrap());
    drop(closed);
    let dead = EndpointClient::new(&endpoint(&dead)).unwrap();
    let e = dead.score(&episode("x"), &[]).await.unwrap_err();
    assert_eq!(e.word(), "reward_unreachable", "{e}");
}

#[test]
fn answers_are_read_strictly() {
    let declared = ["a".to_string()];
    let read = |s: &str| read_answer(s.as_bytes(), &declared).map(|a| a.score);
    assert_eq!(read("{\"score\": -2.5, \"components\": {\"a\": 0}}"), Ok(-2.5));
    assert!(read("{\"score\": 1e999, \"components\": {\"a\": 0}}").is_err(), "not finite");
    assert!(read("{\"score\": \"1\", \"components\": {\"a\": 0}}").is_err());
    assert!(read("{\"components\": {\"a\": 0}}").is_err());
    assert!(read("{\"score\": 1, \"components\": {\"a\": null}}").is_err());
    assert!(read("{\"score\": 1}").is_err(), "a declared component is missing");
    assert_eq!(read_answer(b"{\"score\": 1}", &[]).map(|a| a.score), Ok(1.0));
    let all = [
        EndpointFailure::Timeout,
        EndpointFailure::Refused(404),
        EndpointFailure::Failed(503),
        EndpointFailure::Unreachable(String::new()),
        EndpointFailure::Malformed(String::new()),
    ];
    assert_eq!(all.map(|e| e.word()), EndpointFailure::WORDS);
    assert_eq!(head("héllo", 2), ("hé", true));
    assert_eq!(head("hé", 2), ("hé", false));
}

/// Through the scoring every rollout uses: the endpoint's score is the reward, its components
/// come out beside it, and a failure excludes the episode with its class.
#[tokio::test]
async fn an_unanswered_reward_is_an_exclusion_never_a_zero() {
    let calls = Arc::new(AtomicUsize::new(0));
    let url = server(calls, Arc::new(std::sync::Mutex::new(Json::Null))).await;
    let reward = sig(Signal::Endpoint(endpoint(&url)));
    let rewards = Rewards::new();
    let judges = Judges::for_reward(&reward, &rewards, &ApiModels::new()).unwrap();
    let scoring = Scoring { reward: &reward, rewards: &rewards, judges: &judges };
    let (value, components) = score(scoring, &episode("six times seven"), Some("42"), &[]).await;
    assert_eq!(value, RewardValue::Value(0.75));
    assert_eq!(components.get("steps"), Some(&2.0));
    for (task, class) in [("slow", "reward_timeout"), ("nan", "reward_malformed")] {
        let (value, components) = score(scoring, &episode(task), None, &[]).await;
        match value {
            RewardValue::Excluded(e @ Exclusion::Endpoint(_)) => assert_eq!(e.counted_as(), class),
            other => panic!("{task}: {other:?}"),
        }
        assert!(components.is_empty());
    }
}
