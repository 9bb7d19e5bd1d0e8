//! The pure parts of MCP tools, without a server: truncation, per-episode call limits, what a
//! failed call does under `on_error`, and the routing of declared tools to servers.

use serde_json::json;
use wrl_browser::EndReason;
use wrl_plan::params::{
    CallsPerTurn, Coordinates, McpLimits, McpOnError, Seconds, Tool, ToolParam, ToolTy, Toolset,
};

use super::schema::Listed;
use super::*;

fn limits(on_error: McpOnError) -> McpLimits {
    McpLimits { timeout: Seconds(5.0), result_chars: 10, max_calls: Some(2), on_error }
}

#[test]
fn a_long_result_is_cut_and_says_so() {
    assert_eq!(truncate("short", 10), "short");
    assert_eq!(truncate("héllo wörld!", 5), "héllo\n[cut: 7 more characters]");
}

#[test]
fn calls_past_max_calls_are_refused_per_tool() {
    let mut calls = EpisodeCalls::default();
    assert!(calls.admit("run_code", Some(2)).is_ok());
    assert!(calls.admit("run_code", Some(2)).is_ok());
    let why = calls.admit("run_code", Some(2)).unwrap_err();
    assert!(why.contains("already called 2 times"), "{why}");
    assert!(calls.admit("add", Some(2)).is_ok());
    for _ in 0..100 {
        assert!(calls.admit("free", None).is_ok());
    }
}

#[test]
fn on_error_decides_whether_a_tool_error_ends_the_episode() {
    let r = reply("add", Outcome::ToolError("division by zero".into()), &limits(McpOnError::Text));
    assert_eq!(r.text, "error: div\n[cut: 13 more characters]");
    assert_eq!(r.end, None);
    let r = reply("add", Outcome::ToolError("boom".into()), &limits(McpOnError::EndEpisode));
    assert!(matches!(r.end, Some(EndReason::EnvError { .. })));
    // A server that cannot be reached ends the episode whatever `on_error` says: never a
    // silent 0 reward.
    let r = reply("add", Outcome::Unreachable("closed".into()), &limits(McpOnError::Text));
    assert!(
        matches!(r.end, Some(EndReason::EnvError { ref message }) if message.contains("cannot be reached"))
    );
    let r = reply("add", Outcome::Text("12345678901".into()), &limits(McpOnError::Text));
    assert_eq!((r.text.as_str(), r.end), ("1234567890\n[cut: 1 more characters]", None));
}

fn set(tools: &[(&str, &[(&str, &str)])]) -> Toolset {
    Toolset {
        coordinates: Coordinates::ElementIds,
        calls_per_turn: CallsPerTurn::One,
        answer_tag: "answer".into(),
        mcp: Vec::new(),
        tools: tools
            .iter()
            .map(|(n, ps)| Tool {
                name: n.to_string(),
                params: ps
                    .iter()
                    .map(|(p, t)| ToolParam {
                        name: p.to_string(),
                        ty: ToolTy::parse(t).expect("a type"),
                        default: None,
                    })
                    .collect(),
                terminal: false,
            })
            .collect(),
    }
}

fn listed(name: &str, schema: serde_json::Value) -> Listed {
    Listed { name: name.into(), input_schema: schema.as_object().cloned().unwrap_or_default() }
}

#[test]
fn declared_tools_are_routed_to_the_server_that_lists_them() {
    let tools =
        set(&[("search", &[("query", "list(string)")]), ("run_code", &[("code", "string")])]);
    let code =
        json!({"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]});
    let listings = vec![
        ("http://127.0.0.1:1/mcp".to_string(), vec![listed("add", json!({}))]),
        ("python3 server.py".to_string(), vec![listed("run_code", code.clone())]),
    ];
    let r = route(&tools, &["search", "visit", "answer"], &listings).unwrap();
    assert_eq!(r.into_iter().collect::<Vec<_>>(), vec![("run_code".to_string(), 1)]);

    let typo = set(&[("run_cod", &[("code", "string")])]);
    let why = route(&typo, &[], &listings).unwrap_err();
    assert_eq!(why.len(), 1);
    assert!(why[0].contains("tool `run_cod` is served by no MCP server"), "{}", why[0]);
    assert!(why[0].contains("did you mean `run_code`?"), "{}", why[0]);

    let twice = vec![listings[1].clone(), ("other".to_string(), vec![listed("run_code", code)])];
    let why = route(&set(&[("run_code", &[("code", "string")])]), &[], &twice).unwrap_err();
    assert!(why[0].contains("ambiguous"), "{}", why[0]);
}
