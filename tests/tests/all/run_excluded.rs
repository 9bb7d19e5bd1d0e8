//! Judge failures are counted: a run whose judge answers every call with HTTP 500 (a real
//! loopback server) finishes when told to go on (`stop_excluded = off`), and its excluded
//! episodes appear by class in `metrics.jsonl`, `summary.json` and the report, with a warning
//! once they pass the phase's `warn_excluded`. Before, they were in `trajectories.jsonl` only
//! and the run looked normal. With a fault budget (`stop_excluded`, 100% by default) the run
//! stops at the iteration that reaches it, with E0509 and its last commit kept for a resume,
//! instead of training on what is left. A reward endpoint's episodes are scored by the server
//! the run calls (`tests/recipes/reward_endpoint.wrl` against one on loopback), its components
//! logged, and its calls counted by the estimate like a judge's.

#![allow(clippy::unwrap_used)]

use std::io::{Read, Write};
use std::net::TcpListener;

use wrl_exec::{MetricLine, Summary};

/// A judge that fails every call: HTTP 500, connection closed. Counts the calls.
fn failing_judge() -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = calls.clone();
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            let mut buf = [0u8; 65536];
            let _ = s.read(&mut buf);
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let body = "{\"error\":\"down\"}";
            let _ = write!(
                s,
                "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, calls)
}

/// WebJudge asks about every episode; the binary protocols would score the untrained policy's
/// unanswered episodes 0 without a call, as their sources do.
#[test]
fn judge_failures_are_counted_in_metrics_summary_and_report() {
    let (port, calls) = failing_judge();
    let dir = tempfile::tempdir().unwrap();
    let recipe = dir.path().join("judged.wrl");
    std::fs::write(
        &recipe,
        format!(
            "use std::rewards::webjudge\n\
             model policy = std::models::tiny\n\
             dataset tasks = std::sandbox::tasks(count: 8)\n\
             reward graded = webjudge(model: \"gpt-4.1\") {{ base_url = \"http://127.0.0.1:{port}/v1\", retries = 0, timeout = 10 s }}\n\
             env web = browser {{ target = std::sandbox::web\n\
               tools = std::tools::elements, observe = [elements(max: 32), url, feedback, screenshot(last: 0)] }}\n\
             agent actor = react(policy, web) {{ max_turns = 2 turns, max_response = 16 tokens }}\n\
             stage online = grpo(policy, tasks, actor) {{\n\
               reward = graded\n\
               prompts = 2\n\
               group = 2\n\
               warn_excluded = 0.5\n\
               stop_excluded = off\n\
               phases = [{{ iters = 1, horizon = 2 steps, lr = 1e-4 }}]\n\
             }}\n"
        ),
    )
    .unwrap();
    let out = dir.path().join("run");
    let (code, _, stderr) = wrl_cli::run_captured([
        "run".as_ref(),
        recipe.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(calls.load(std::sync::atomic::Ordering::SeqCst) >= 4, "the judge was not called");

    let run = wrl_exec::RunDir::resume(&out).unwrap();
    let rl: Vec<_> = run
        .read_metrics()
        .unwrap()
        .into_iter()
        .filter_map(|m| match m {
            MetricLine::Rl(r) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(rl.len(), 1);
    assert_eq!(rl[0].excluded.get("judge_error"), Some(&4), "{:?}", rl[0].excluded);
    let summary: Summary =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary.excluded.get("judge_error"), Some(&4), "{summary:?}");
    assert_eq!(summary.warnings.len(), 1, "{summary:?}");
    assert!(summary.warnings[0].contains("4 of 4 episodes left out"), "{:?}", summary.warnings);
    assert!(summary.warnings[0].contains("`warn_excluded` = 0.5"), "{:?}", summary.warnings);
    assert!(summary.describe().contains("4 episodes left out of the loss (4 judge_error)"));
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(report.contains("<td>judge_error</td><td class=\"n\">4</td>"), "no exclusion table");
    assert!(report.contains("<b>warning:</b>"), "no warning in the report");
}

/// The judge fails every call: at the default fault budget (every episode excluded) the first
/// iteration stops the run with E0509 before its update, and the run can be resumed from its
/// last commit; a budget of half stops it too. Before, the run trained on what was left.
#[test]
fn a_fault_budget_stops_the_run_with_a_resumable_state() {
    let (port, _) = failing_judge();
    for budget in ["", "stop_excluded = 0.5\n"] {
        let dir = tempfile::tempdir().unwrap();
        let recipe = dir.path().join("judged.wrl");
        std::fs::write(
            &recipe,
            format!(
                "use std::rewards::webjudge\n\
                 model policy = std::models::tiny\n\
                 dataset tasks = std::sandbox::tasks(count: 8)\n\
                 reward graded = webjudge(model: \"gpt-4.1\") {{ base_url = \"http://127.0.0.1:{port}/v1\", retries = 0, timeout = 10 s }}\n\
                 env web = browser {{ target = std::sandbox::web\n\
                   tools = std::tools::elements, observe = [elements(max: 32), url, feedback, screenshot(last: 0)] }}\n\
                 agent actor = react(policy, web) {{ max_turns = 2 turns, max_response = 16 tokens }}\n\
                 stage online = grpo(policy, tasks, actor) {{\n\
                   reward = graded\n\
                   prompts = 2\n\
                   group = 2\n\
                   {budget}\
                   phases = [{{ iters = 2, horizon = 2 steps, lr = 1e-4 }}]\n\
                 }}\n"
            ),
        )
        .unwrap();
        let out = dir.path().join("run");
        let (code, _, stderr) = wrl_cli::run_captured([
            "run".as_ref(),
            recipe.as_os_str(),
            "--out".as_ref(),
            out.as_os_str(),
        ]);
        assert_eq!(code, 2, "{budget}: {stderr}");
        assert!(stderr.contains("E0509"), "{stderr}");
        assert!(stderr.contains("4 of 4 episodes"), "{stderr}");
        assert!(stderr.contains("judge_error"), "{stderr}");
        assert!(stderr.contains("wrlc run --resume"), "{stderr}");
        // Nothing of the stopped iteration was committed: no update, no metrics line.
        let committed = wrl_exec::RunDir::inspect(&out).unwrap();
        assert_eq!(committed.trajectories, 0, "{committed:?}");
        assert!(committed.cursor.phase.is_none(), "{committed:?}");
        let (code, stdout, stderr) = wrl_cli::run_captured([
            "run".as_ref(),
            "--dry-run".as_ref(),
            "--resume".as_ref(),
            out.as_os_str(),
        ]);
        assert_eq!(code, 0, "{stderr}");
        assert!(stdout.contains("can be resumed"), "{stdout}");
    }
}

/// The score a loopback scoring server gives an episode: a function of its task and turns, so
/// the test can say which reward each logged episode must have.
fn served_score(task_id: &str, turns: usize) -> f64 {
    let h = task_id.bytes().map(u64::from).sum::<u64>() % 7;
    h as f64 / 7.0 - 0.25 * turns as f64
}

/// `tests/recipes/reward_endpoint.wrl --profile offline` against a scoring server on loopback
/// that answers every request of schema `wrl.reward/1` with its score and two components: the
/// rewards logged are the server's, the components are in `metrics.jsonl` and every trajectory.
#[test]
fn a_reward_endpoint_scores_the_run_and_its_components_are_logged() {
    use axum::routing::post;
    use serde_json::{Value as Json, json};
    let rt = tokio::runtime::Runtime::new().unwrap();
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = calls.clone();
    let app = axum::Router::new().route(
        "/score",
        post(move |body: axum::Json<Json>| {
            let seen = seen.clone();
            async move {
                seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let req = body.0;
                assert_eq!(req["schema"], "wrl.reward/1");
                let id = req.pointer("/task/id").and_then(Json::as_str).unwrap_or("");
                let turns =
                    req.pointer("/trajectory/turns").and_then(Json::as_array).map_or(0, Vec::len);
                let score = served_score(id, turns);
                axum::Json(json!({"score": score, "components": {
                    "answer": score.max(0.0),
                    "efficiency": 1.0 / (1 + turns) as f64,
                }}))
            }
        }),
    );
    let port = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        port
    });
    let dir = tempfile::tempdir().unwrap();
    let recipe = dir.path().join("reward_endpoint.wrl");
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes/reward_endpoint.wrl"),
    )
    .unwrap();
    assert!(text.contains("127.0.0.1:9000/score"));
    std::fs::write(&recipe, text.replace("127.0.0.1:9000", &format!("127.0.0.1:{port}"))).unwrap();
    let out = dir.path().join("run");
    let args = ["run".as_ref(), recipe.as_os_str(), "--profile".as_ref(), "offline".as_ref()];
    let (code, _, stderr) =
        wrl_cli::run_captured(args.into_iter().chain(["--out".as_ref(), out.as_os_str()]));
    assert_eq!(code, 0, "{stderr}");
    // 1 iteration × 2 prompts × group 2, each scored once.
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 4);
    let run = wrl_exec::RunDir::resume(&out).unwrap();
    let trajs = run.read_trajectories().unwrap();
    assert_eq!(trajs.len(), 4);
    let mut rewards = Vec::new();
    for t in &trajs {
        let want = served_score(&t.trajectory.task_id, t.trajectory.steps.len());
        assert_eq!(
            t.reward,
            wrl_exec::rundir::records::Scored::Value(want),
            "{}",
            t.trajectory.task_id
        );
        assert_eq!(t.components.get("answer"), Some(&want.max(0.0)));
        assert!(t.components.contains_key("efficiency"), "{:?}", t.components);
        rewards.push(want);
    }
    let rl: Vec<_> = run
        .read_metrics()
        .unwrap()
        .into_iter()
        .filter_map(|m| match m {
            MetricLine::Rl(r) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(rl.len(), 1);
    let mean = rewards.iter().sum::<f64>() / rewards.len() as f64;
    assert!((rl[0].reward - mean).abs() < 1e-9, "{} vs {mean}", rl[0].reward);
    assert!(rl[0].excluded.is_empty(), "{:?}", rl[0].excluded);
    let keys: Vec<&str> = rl[0].components.keys().map(String::as_str).collect();
    assert_eq!(keys, ["answer", "efficiency"]);
    let answer = rewards.iter().map(|r| r.max(0.0)).sum::<f64>() / 4.0;
    assert!((rl[0].components["answer"] - answer).abs() < 1e-9);
    // TensorBoard gets them as the stage's `component/<name>` series.
    let line = MetricLine::Rl(rl[0].clone());
    let tags: Vec<String> =
        wrl_exec::rundir::tensorboard::scalars(&line).into_iter().map(|(t, _)| t).collect();
    assert!(tags.iter().any(|t| t == "online/component/efficiency"), "{tags:?}");
}

/// The same recipe against a server that fails every call (HTTP 500): no episode is scored 0;
/// each leaves the update as `reward_http_5xx`, counted in the metrics and the summary.
#[test]
fn an_endpoint_that_fails_every_call_excludes_every_episode_by_class() {
    let (port, calls) = failing_judge();
    let dir = tempfile::tempdir().unwrap();
    let recipe = dir.path().join("reward_endpoint.wrl");
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes/reward_endpoint.wrl"),
    )
    .unwrap()
    .replace("127.0.0.1:9000", &format!("127.0.0.1:{port}"))
    .replace("retries = 2", "retries = 0")
    .replace("reward = graded", "reward = graded\n  stop_excluded = off");
    assert!(text.contains("stop_excluded = off") && text.contains("retries = 0"));
    std::fs::write(&recipe, text).unwrap();
    let out = dir.path().join("run");
    let args = ["run".as_ref(), recipe.as_os_str(), "--profile".as_ref(), "offline".as_ref()];
    let (code, _, stderr) =
        wrl_cli::run_captured(args.into_iter().chain(["--out".as_ref(), out.as_os_str()]));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 4, "one try per episode");
    let run = wrl_exec::RunDir::resume(&out).unwrap();
    for t in run.read_trajectories().unwrap() {
        let excluded =
            wrl_exec::rundir::records::Scored::Excluded { excluded: "reward_http_5xx".into() };
        assert_eq!(t.reward, excluded);
        assert!(t.components.is_empty());
    }
    let rl = run.read_metrics().unwrap().into_iter().find_map(|m| match m {
        MetricLine::Rl(r) => Some(r),
        _ => None,
    });
    let rl = rl.unwrap();
    assert_eq!(rl.excluded.get("reward_http_5xx"), Some(&4), "{:?}", rl.excluded);
    assert!(rl.components.is_empty());
    let summary: Summary =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary.excluded.get("reward_http_5xx"), Some(&4), "{summary:?}");
}

/// `wrlc estimate` counts a reward endpoint's calls as it counts a judge's: one per episode the
/// reward scores (20 iterations × 32 prompts × group 4), under `endpoint URL`.
#[test]
fn the_estimate_counts_reward_endpoint_calls_like_judge_calls() {
    let args = ["estimate", "tests/recipes/reward_endpoint.wrl", "--format", "json"];
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let (code, out, err) = wrl_cli::run_captured(
        args.iter()
            .map(|a| if a.ends_with(".wrl") { root.join(a).into_os_string() } else { a.into() }),
    );
    assert_eq!(code, 0, "{err}");
    let e: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(e["judge_calls_max"].as_u64(), Some(2_560), "{e}");
    let by = &e["stages"][0]["judge_calls_by_model"];
    assert_eq!(by["endpoint http://127.0.0.1:9000/score"].as_u64(), Some(2_560), "{e}");
}
