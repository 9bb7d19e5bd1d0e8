//! Unit tests of `api_policy`: the conversation as OpenAI messages, a reply read back as the
//! tool set's calls.

use super::*;

fn assistant(text: &str, calls: &[(&str, &str)]) -> Segment {
    let mut s = Segment::new(Role::Assistant, text);
    s.tool_calls = calls
        .iter()
        .map(|(n, a)| CallText { name: n.to_string(), arguments: a.to_string() })
        .collect();
    s
}

#[test]
fn a_conversation_becomes_messages_whose_tool_results_answer_their_calls() {
    let segments = [
        Segment::new(Role::User, "task: find it"),
        assistant("", &[("search", r#"{"query": ["a"]}"#)]),
        Segment::new(Role::Tool, "results"),
        assistant("thinking", &[("click", r#"{"id": 1}"#), ("type", r#"{"id": 2}"#)]),
        Segment::new(Role::Tool, "the page"),
        assistant("no call", &[]),
        Segment::new(Role::Tool, "same page"),
    ];
    let m = messages(&segments, &[]);
    let roles: Vec<&str> = m.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        ["user", "assistant", "tool", "assistant", "tool", "tool", "assistant", "user"]
    );
    assert_eq!(m[1]["tool_calls"][0]["id"], "call_1_0");
    assert_eq!(m[1]["tool_calls"][0]["function"]["arguments"], r#"{"query": ["a"]}"#);
    assert_eq!((&m[2]["tool_call_id"], &m[2]["content"]), (&json!("call_1_0"), &json!("results")));
    // Two calls: the earlier one is told where its result is; the last one gets the page.
    assert_eq!((&m[5]["tool_call_id"], &m[5]["content"]), (&json!("call_3_1"), &json!("the page")));
    assert_eq!(
        (&m[4]["tool_call_id"], &m[4]["content"]),
        (&json!("call_3_0"), &json!(EARLIER_CALL))
    );
    // A turn without calls has no `tool_calls`, and the page after it is the user's.
    assert!(m[6].get("tool_calls").is_none());
    assert_eq!(m[7]["content"], "same page");
}

#[test]
fn a_reply_is_read_as_hermes_calls_after_its_text() {
    let v = json!({"choices": [{"message": {"content": "<think>x</think>", "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "search", "arguments": "{\"query\":[\"q\"]}"}},
        {"id": "b", "type": "function", "function": {"name": "visit", "arguments": "not json"}}
    ]}}], "usage": {"completion_tokens": 9}});
    let r = Reply::read(&v).unwrap();
    assert_eq!(r.completion_tokens, Some(9));
    assert_eq!(
        r.hermes_text(),
        "<think>x</think>\n<tool_call>{\"name\": \"search\", \"arguments\": {\"query\":[\"q\"]}}</tool_call>\n\
         <tool_call>{\"name\": \"visit\", \"arguments\": not json}</tool_call>"
    );
    // A null content with calls, no usage: the calls alone.
    let v = json!({"choices": [{"message": {"content": null, "tool_calls": [
        {"function": {"name": "go_back", "arguments": "{}"}}]}}]});
    let r = Reply::read(&v).unwrap();
    assert_eq!(
        (r.hermes_text().as_str(), r.completion_tokens),
        ("<tool_call>{\"name\": \"go_back\", \"arguments\": {}}</tool_call>", None)
    );
    // No message at all, a call without a name: the answer cannot be read (the env's error).
    assert!(matches!(Reply::read(&json!({"choices": []})), Err(Breakdown::Env(_))));
    let nameless = json!({"choices": [{"message": {"tool_calls": [{"function": {}}]}}]});
    assert!(matches!(Reply::read(&nameless), Err(Breakdown::Env(_))));
}

#[test]
fn failures_are_the_envs_timeouts_included() {
    assert!(matches!(breakdown(JudgeError::Timeout), Breakdown::Timeout(_)));
    assert!(
        matches!(breakdown(JudgeError::Http(500)), Breakdown::Env(m) if m.contains("HTTP 500"))
    );
}

#[test]
fn kept_screenshots_are_image_parts_after_the_page_they_show() {
    let shots = vec!["data:image/png;base64,AA".to_string(), "data:image/png;base64,BB".into()];
    let segments = [
        Segment::new(Role::User, format!("task: t\n{}page 0", image_mark(0))),
        assistant("", &[("scroll", "{}")]),
        Segment::new(Role::Tool, format!("{}page 1", image_mark(1))),
    ];
    let m = messages(&segments, &shots);
    let roles: Vec<&str> = m.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "user"]);
    assert_eq!(m[0]["content"][0], json!({"type": "text", "text": "task: t\n"}));
    assert_eq!(m[0]["content"][1]["image_url"]["url"], shots[0]);
    assert_eq!(m[0]["content"][2]["text"], "page 0");
    assert_eq!(m[2]["content"], "page 1", "a tool message is text only");
    assert_eq!(m[3]["content"], json!([{"type": "image_url", "image_url": {"url": shots[1]}}]));
}

#[test]
fn a_served_policy_fills_the_room_its_context_leaves() {
    let cfg = crate::reward::client::JudgeConfig::default();
    let client = JudgeClient::new(cfg).unwrap();
    let run = ApiRun { client, context: 32_768, image_tokens: 1280 };
    let params = SampleParams { max_tokens: 512, ..SampleParams::default() };
    let hermes = Arc::new(Hermes::new(
        wrl_plan::params::Toolset {
            coordinates: wrl_plan::params::Coordinates::ElementIds,
            calls_per_turn: wrl_plan::params::CallsPerTurn::One,
            answer_tag: "answer".into(),
            mcp: Vec::new(),
            tools: Vec::new(),
        },
        super::super::hermes::EnvKind::Search,
    ));
    let p = ApiPolicy::new(run, params, (History::None, Window::default()), hermes, None);
    // Not the tiny policy's 900 bytes: what 32Ki tokens leave after the reply.
    assert_eq!(p.window.room, super::super::graph::api_room(32_768, 512, ""));
    assert!(p.window.room > 30_000);
}
