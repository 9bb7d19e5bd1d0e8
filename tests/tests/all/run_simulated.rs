//! tests/recipes/zerosearch.wrl's offline profile (issue #46 item 6) against a simulation LLM on
//! loopback: GRPO whose `search` calls a chat endpoint is asked, its two iterations at the
//! noise the curriculum gives them, then the evaluation in the real (sandbox) search engine.
//! The embedded tiny policy is untrained, so whether it writes a `<search>` at all is up to its
//! random weights: every search it does write must have reached the engine, with its episode's
//! question and the iteration's noise; runtime/exec's search_env::simulated tests the engine
//! with scripted calls.

#![allow(clippy::unwrap_used)] // test helpers fail loudly, like the tests they serve

use serde_json::json;
use wrl_exec::{MetricLine, RunDir};

#[test]
fn zerosearch_trains_against_a_simulated_engine_and_evaluates_on_a_real_one() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (port, seen) = crate::run_api_policy::chat_server(&rt, |body| {
        let user = body["messages"][1]["content"].as_str().unwrap_or("");
        let kind = if user.ends_with("Noisy Output:\n") { "noisy" } else { "useful" };
        let text = format!("Doc 1: {kind}\nDoc 2: more\nDoc 3: cut");
        json!({"choices": [{"message": {"content": text}}]})
    });
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("recipes/zerosearch.wrl")).unwrap();
    assert!(text.contains("127.0.0.1:6001"));
    let dir = tempfile::tempdir().unwrap();
    let recipe = dir.path().join("zerosearch.wrl");
    std::fs::write(&recipe, text.replace("127.0.0.1:6001", &format!("127.0.0.1:{port}"))).unwrap();
    let out = dir.path().join("run");
    let args = ["run".as_ref(), recipe.as_os_str(), "--profile".as_ref(), "offline".as_ref()];
    let (code, _, stderr) =
        wrl_cli::run_captured(args.into_iter().chain(["--out".as_ref(), out.as_os_str()]));
    assert_eq!(code, 0, "{stderr}");
    let run = RunDir::resume(&out).unwrap();
    let rl = run.read_metrics().unwrap().into_iter().filter(|m| matches!(m, MetricLine::Rl(_)));
    assert_eq!(rl.count(), 2);
    let lines = run.read_trajectories().unwrap();
    // Training's episodes searched the simulator; the evaluation's the sandbox's engine.
    let mut answered = 0;
    for l in &lines {
        for s in &l.trajectory.steps {
            let from_engine = s.feedback.starts_with("Doc 1: ");
            if l.iter == 0 {
                assert!(!from_engine, "the evaluation searches the real engine: {s:?}");
                continue;
            }
            if from_engine {
                answered += 1;
                // Cut before `Doc 3` (top_k = 2); noise 1 at the last of the two iterations.
                assert!(s.feedback.ends_with("Doc 2: more\n"), "{s:?}");
                if l.iter == 2 {
                    assert!(s.feedback.starts_with("Doc 1: noisy"), "{s:?}");
                }
            }
        }
    }
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), answered, "every engine reply reached a step");
    for body in seen.iter() {
        let user = body["messages"][1]["content"].as_str().unwrap();
        assert!(user.contains("whose answer is"), "{user}");
        assert_eq!(body["max_tokens"], 64);
    }
    assert!(lines.iter().any(|l| l.iter == 0), "the evaluation ran");
}
