//! The three `format_ok` rules on a table of turns (`format_cases.json`), whose `browser_env`
//! and `strict_tags` columns agree with OpenWebRL's own turn functions on the same texts (run
//! against `reward_browser.py` when the table was written; docs/rewards.md says how).

use serde::Deserialize;
use wrl_plan::params::FormatMode;
use wrl_sandbox::{Ending, TrajOutcome, TrajStep, Trajectory};

use super::*;

#[derive(Deserialize)]
struct Case {
    why: String,
    text: String,
    malformed: bool,
    browser_env: u8,
    strict_tags: u8,
    react_tags: u8,
}

#[test]
fn each_mode_reads_each_turn_as_its_source_does() {
    let cases: Vec<Case> = serde_json::from_str(include_str!("format_cases.json")).unwrap();
    assert!(cases.len() >= 20);
    for c in &cases {
        let turn = TurnForm { text: c.text.clone(), malformed: c.malformed };
        for (mode, want) in [
            (FormatMode::BrowserEnv, c.browser_env),
            (FormatMode::StrictTags, c.strict_tags),
            (FormatMode::ReactTags, c.react_tags),
        ] {
            assert_eq!(turn_ok(mode, &turn), want == 1, "{mode:?}: {} ({:?})", c.why, c.text);
        }
    }
}

fn step(said: Option<&str>, actions: &[&str], malformed: bool) -> TrajStep {
    TrajStep {
        observation: "task: g".into(),
        actions: actions.iter().map(|a| a.to_string()).collect(),
        feedback: String::new(),
        url: String::new(),
        screenshot: None,
        boxes: None,
        said: said.map(str::to_string),
        malformed,
    }
}

fn traj(steps: Vec<TrajStep>) -> Trajectory {
    Trajectory {
        task_id: "t".into(),
        template: "x".into(),
        goal: "g".into(),
        agent: "policy".into(),
        steps,
        outcome: TrajOutcome {
            reason: Ending::Completed,
            message: String::new(),
            answer: Some("a".into()),
            success: true,
            detail: String::new(),
            reward: None,
        },
        elapsed_ms: 0,
    }
}

#[test]
fn one_malformed_turn_fails_the_episode_whatever_follows() {
    let good = r#"<think>x</think><tool_call>{"name": "search", "arguments": {"query": ["a"]}}</tool_call>"#;
    let t = traj(vec![
        step(Some("<tool_call>{oops</tool_call>"), &["<tool_call>{oops</tool_call>"], true),
        step(Some(good), &["search a"], false),
        step(None, &["<answer>Avel</answer>"], false),
    ]);
    let read = turns(&t);
    assert_eq!(read.len(), 3);
    assert_eq!(read[1].text, good, "the reply as written, not the terse line the env ran");
    assert_eq!(read[2].text, "<answer>Avel</answer>", "no reply recorded: the actions");
    assert!(!ok(FormatMode::ReactTags, &read));
    assert!(ok(FormatMode::ReactTags, &read[1..]));
}

#[test]
fn steps_the_agent_wrote_nothing_in_are_no_turns_and_no_turn_is_no_pass() {
    let t =
        traj(vec![step(Some("<answer>x</answer>"), &["answer x"], false), step(None, &[], false)]);
    assert_eq!(turns(&t).len(), 1, "a step that recorded why the agent gave up is no turn");
    assert!(ok(FormatMode::ReactTags, &turns(&t)));
    assert!(!ok(FormatMode::ReactTags, &[]), "an episode without a turn scores 0");
    let refused = traj(vec![step(None, &[], true)]);
    assert_eq!(turns(&refused).len(), 1, "an empty reply the tool set refused is a turn");
}
