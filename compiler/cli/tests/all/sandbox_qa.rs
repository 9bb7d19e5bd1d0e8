//! `wrlc sandbox tasks --qa` prints QA JSONL that a recipe reads back as `jsonl(…) { kind = qa }`:
//! the printed pairs pass `wrlc run`'s preflight as a search agent's RL tasks.

use std::process::Command;

#[test]
fn printed_qa_pairs_feed_a_search_agent_recipe() {
    let out = Command::new(env!("CARGO_BIN_EXE_wrlc"))
        .args(["sandbox", "tasks", "--qa", "--count", "4", "--split", "test"])
        .output()
        .expect("wrlc runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    assert_eq!(text.lines().count(), 4, "{text}");
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap_or("")).unwrap();
    assert!(first["question"].as_str().is_some_and(|q| q.ends_with('?')), "{first}");
    assert!(first["answer"].as_str().is_some_and(|a| !a.is_empty()), "{first}");

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("qa.jsonl"), &text).unwrap();
    let recipe = dir.path().join("r.wrl");
    std::fs::write(
        &recipe,
        "use std::rewards::answer_match\n\
         model policy = std::models::tiny\n\
         dataset questions = jsonl(\"qa.jsonl\") { kind = qa }\n\
         env web = search_api(\"http://127.0.0.1:9\") {\n\
         \x20 target = std::sandbox::search\n\
         \x20 tools = std::tools::webdancer\n\
         \x20 step_text = 64 tokens\n\
         }\n\
         agent dancer = react(policy, web) {\n\
         \x20 max_turns = 4 turns\n\
         \x20 max_response = 48 tokens\n\
         \x20 history = action_only\n\
         }\n\
         reward right = answer_match(mode: normalized)\n\
         stage online = grpo(policy, questions, dancer) {\n\
         \x20 reward = right\n\
         \x20 phases = [{ iters = 1, horizon = 4 steps, lr = 1e-4 }]\n\
         }\n",
    )
    .unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_wrlc"))
        .current_dir(dir.path())
        .args(["run", "r.wrl", "--dry-run"])
        .output()
        .expect("wrlc runs");
    let said =
        format!("{}{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    assert!(run.status.success(), "{said}");
    assert!(said.contains("is ready to run"), "{said}");
}
