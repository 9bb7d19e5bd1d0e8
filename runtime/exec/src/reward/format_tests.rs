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

/// A rule of the recipe's own: Search-R1's tags, thinking required, nothing outside them.
#[test]
fn tags_ok_holds_turns_to_a_recipes_own_rule() {
    use wrl_plan::params::{Outside, TagOrder, TagsOk};
    let rule = |order, outside| TagsOk {
        tags: ["think", "search", "answer"].map(String::from).to_vec(),
        order,
        outside,
        required: vec!["think".into()],
    };
    let strict = rule(TagOrder::Listed, Outside::Whitespace);
    let prose = rule(TagOrder::Listed, Outside::Text);
    let any = rule(TagOrder::Any, Outside::Whitespace);
    // (why, text, strict, prose, any)
    let cases = [
        ("think then search", "<think>who?</think>\n<search>Osk founder</search>", 1, 1, 1),
        ("think then answer", "<think>so</think><answer>Avel</answer><|im_end|>", 1, 1, 1),
        ("no thinking", "<search>Osk founder</search>", 0, 0, 0),
        ("search before thinking", "<search>q</search><think>a</think>", 0, 0, 1),
        ("prose between the blocks", "<think>a</think> so: <search>q</search>", 0, 1, 0),
        ("a block inside another", "<think>a <search>q</search></think>", 0, 0, 0),
        ("a block never closed", "<think>a</think><search>q", 0, 0, 0),
        ("a close without its open", "a</think><search>q</search>", 0, 0, 0),
        ("a tag repeating in place", "<think>a</think><think>b</think><search>q</search>", 1, 1, 1),
        (
            "thinking again after the call",
            "<think>a</think><search>q</search><think>b</think>",
            0,
            0,
            1,
        ),
        (
            "tags the rule does not list are prose",
            "<think>a</think><tool_call>{}</tool_call>",
            0,
            1,
            0,
        ),
    ];
    for (why, text, s, p, a) in cases {
        let turn = TurnForm { text: text.into(), malformed: false };
        let got = [&strict, &prose, &any].map(|r| turn_keeps(r, &turn) as u8);
        assert_eq!(got, [s, p, a], "{why}: {text:?}");
    }
    let refused = TurnForm { text: "<think>a</think><search>q</search>".into(), malformed: true };
    assert!(!turn_keeps(&prose, &refused), "a turn the tool set refused fails");
    let good = TurnForm { text: "<think>a</think><answer>b</answer>".into(), malformed: false };
    assert!(tags_ok(&strict, std::slice::from_ref(&good)) && !tags_ok(&strict, &[]));
    assert!(!tags_ok(&strict, &[good, refused]), "one failing turn fails the episode");
}
