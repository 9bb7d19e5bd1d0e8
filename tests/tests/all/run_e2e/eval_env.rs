//! An evaluation in an env other than its agent's (#47 item 6), end to end in real Chromium.

use super::records;

/// An evaluation in an env other than its agent's (#47 item 6): the agent acts there, with that
/// env's settings — here a narrower element list — while an evaluation without `env` acts in
/// the agent's own.
#[test]
fn an_evaluation_runs_in_the_env_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let recipe = dir.path().join("other_env.wrl");
    std::fs::write(
        &recipe,
        r#"model policy = std::models::tiny
dataset tasks = std::sandbox::tasks(count: 2)
env web = browser { target = std::sandbox::web
  tools = std::tools::elements, observe = [elements(max: 32), url, feedback] }
env narrow = browser { target = std::sandbox::web
  tools = std::tools::elements, observe = [elements(max: 3), url] }
agent actor = react(policy, web) { max_turns = 2 turns, max_response = 24 tokens }
eval own = evaluate(actor, tasks) { max_steps = 2 steps }
eval elsewhere = evaluate(actor, tasks) { env = narrow, max_steps = 2 steps }
"#,
    )
    .unwrap();
    let out = dir.path().join("run");
    let args: Vec<std::ffi::OsString> =
        vec!["run".into(), recipe.into_os_string(), "--out".into(), out.clone().into_os_string()];
    let (code, _, err) = wrl_cli::run_captured(args);
    assert_eq!(code, 0, "{err}");
    let (_, _, trajs) = records(&out);
    // The most elements any first observation lists, per evaluation.
    let widest = |node: &str| {
        trajs
            .iter()
            .filter(|t| t.node == node)
            .filter_map(|t| t.trajectory.steps.first())
            .map(|s| s.observation.lines().filter(|l| l.trim_start().starts_with('[')).count())
            .max()
            .unwrap_or(0)
    };
    assert_eq!(trajs.iter().filter(|t| t.node == "eval:elsewhere").count(), 2);
    assert!((1..=3).contains(&widest("eval:elsewhere")), "the narrow env's observations");
    assert!(widest("eval:own") > 3, "the agent's own env's observations");
}
