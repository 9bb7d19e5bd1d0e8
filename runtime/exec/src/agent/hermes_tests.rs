//! An instruction-tuned policy's turns and demonstrations on the stdlib's `elements` and
//! `webdancer` tool sets (written out here as the plan decodes them).

use wrl_plan::params::{CallsPerTurn, Coordinates, Literal, Tool, ToolParam, ToolTy, Toolset};

use super::*;

fn param(name: &str, ty: &str, default: Option<Literal>) -> ToolParam {
    ToolParam { name: name.into(), ty: ToolTy::parse(ty).unwrap(), default }
}

fn tool(name: &str, params: Vec<ToolParam>, terminal: bool) -> Tool {
    Tool { name: name.into(), params, terminal }
}

/// `std::tools::elements`.
pub(crate) fn elements() -> Toolset {
    let id = || param("id", "int(min: 0)", None);
    Toolset {
        coordinates: Coordinates::ElementIds,
        calls_per_turn: CallsPerTurn::One,
        answer_tag: String::new(),
        mcp: Vec::new(),
        tools: vec![
            tool("click", vec![id()], false),
            tool(
                "type",
                vec![
                    id(),
                    param("text", "string", None),
                    param("submit", "bool", Some(Literal::Bool(false))),
                ],
                false,
            ),
            tool("select", vec![id(), param("option", "string", None)], false),
            tool(
                "scroll",
                vec![param("direction", "enum(up, down)", Some(Literal::Word("down".into())))],
                false,
            ),
            tool("go_back", vec![], false),
            tool("answer", vec![param("text", "string", None)], true),
        ],
    }
}

/// `std::tools::webdancer`.
pub(crate) fn webdancer() -> Toolset {
    Toolset {
        coordinates: Coordinates::ElementIds,
        calls_per_turn: CallsPerTurn::One,
        answer_tag: "answer".into(),
        mcp: Vec::new(),
        tools: vec![
            tool("search", vec![param("query", "list(string)", None)], false),
            tool(
                "visit",
                vec![param("url", "list(string)", None), param("goal", "string", None)],
                false,
            ),
        ],
    }
}

#[test]
fn browser_calls_become_the_lines_the_runner_runs() {
    let h = Hermes::new(elements(), EnvKind::Browser);
    let call = |name: &str, args: &str| {
        format!(
            "<think>\n\n</think>\n\n<tool_call>\n{{\"name\": \"{name}\", \"arguments\": {args}}}\n</tool_call>"
        )
    };
    assert_eq!(h.read(&call("click", r#"{"id": 7}"#)).unwrap(), "click 7");
    assert_eq!(
        h.read(&call("type", r#"{"id": 3, "text": "blue mug", "submit": true}"#)).unwrap(),
        "type! 3 blue mug"
    );
    assert_eq!(h.read(&call("go_back", "{}")).unwrap(), "back");
    assert_eq!(h.read(&call("answer", r#"{"text": "12.50"}"#)).unwrap(), "answer 12.50");
    // Format errors, as the agent errors the runner counts toward `max_parse_failures`.
    assert!(matches!(h.read("click 7"), Err(AgentError::Parse(_))), "terse is not a call");
    assert_eq!(
        h.read(&call("hover", r#"{"id": 1}"#)),
        Err(AgentError::UnknownTool("hover".into()))
    );
    assert!(matches!(h.read(&call("click", r#"{"id": -1}"#)), Err(AgentError::BadArguments(_))));
    let second = "<tool_call>\n{\"name\": \"click\", \"arguments\": {\"id\": 2}}\n</tool_call>";
    let two = format!("{}\n{second}", call("click", r#"{"id": 1}"#));
    assert!(
        matches!(h.read(&two), Err(AgentError::Parse(m)) if m.contains("calls_per_turn = one"))
    );
    assert!(matches!(h.read("<tool_call>{\"name\": \"click\", \"argu"), Err(AgentError::Parse(_))));
    // Where the tool set takes several, each runs, in order.
    let many =
        Hermes::new(Toolset { calls_per_turn: CallsPerTurn::Many, ..elements() }, EnvKind::Browser);
    assert_eq!(many.read(&two).unwrap(), "click 1\nclick 2");
}

/// A browser tool set with a tool an MCP server serves (`run_code`): its call becomes the line
/// the browser's side tools read, in its place among the page's actions, and a demonstration's
/// such line the call again.
#[test]
fn a_browser_turns_mcp_call_stays_a_call_line_among_the_page_actions() {
    let mut tools = Toolset { calls_per_turn: CallsPerTurn::Many, ..elements() };
    tools.tools.push(tool("run_code", vec![param("code", "string", None)], false));
    let h = Hermes::new(tools, EnvKind::Browser);
    let text = "<think>try it</think><tool_call>{\"name\": \"click\", \"arguments\": {\"id\": 4}}</tool_call>\n\
                <tool_call>{\"name\": \"run_code\", \"arguments\": {\"code\": \"print(1)\\nprint(2)\"}}</tool_call>\n\
                <tool_call>{\"name\": \"answer\", \"arguments\": {\"text\": \"2\"}}</tool_call>";
    let lines = h.read(text).unwrap();
    let run =
        r#"<tool_call>{"arguments":{"code":"print(1)\nprint(2)"},"name":"run_code"}</tool_call>"#;
    assert_eq!(lines, format!("click 4\n{run}\nanswer 2"));
    // What the search env writes for the same call, so either env reads one spelling.
    let w = Hermes::new(
        Toolset {
            tools: vec![tool("run_code", vec![param("code", "string", None)], false)],
            ..webdancer()
        },
        EnvKind::Search,
    );
    let only = r#"<tool_call>{"name": "run_code", "arguments": {"code": "print(1)\nprint(2)"}}</tool_call>"#;
    assert_eq!(w.read(only).unwrap(), run);
    let seg = h.demo(&["click 4".into(), run.into()], None, "g").unwrap();
    let names: Vec<&str> = seg.tool_calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["click", "run_code"]);
    assert_eq!(seg.tool_calls[1].arguments, r#"{"code":"print(1)\nprint(2)"}"#);
}

#[test]
fn search_calls_and_the_answer_tag_become_the_search_envs_lines() {
    let h = Hermes::new(webdancer(), EnvKind::Search);
    let t = r#"<tool_call>{"name": "search", "arguments": {"query": ["Barvel", "river Avel"]}}</tool_call>"#;
    assert_eq!(h.read(t).unwrap(), "search Barvel | river Avel");
    let v = r#"<tool_call>{"name": "visit", "arguments": {"url": ["/wiki/barvel"], "goal": "the population"}}</tool_call>"#;
    assert_eq!(h.read(v).unwrap(), "visit /wiki/barvel | the population");
    assert_eq!(
        parse_call(&h.read(v).unwrap()).unwrap(),
        Call::Visit { urls: vec!["/wiki/barvel".into()], goal: Some("the population".into()) }
    );
    assert_eq!(h.read("<think>so</think>It is <answer> 1543 </answer>").unwrap(), "answer 1543");
    // A string where the schema says a list is a bad argument, not a guess.
    let s = r#"<tool_call>{"name": "search", "arguments": {"query": "Barvel"}}</tool_call>"#;
    assert!(matches!(h.read(s), Err(AgentError::BadArguments(_))));
    assert!(matches!(h.read("search Barvel"), Err(AgentError::Parse(_))));
}

#[test]
fn demonstrations_become_the_calls_the_template_renders() {
    let h = Hermes::new(elements(), EnvKind::Browser);
    let seg = h.demo(&["type! 3 blue mug".into()], None, "g").unwrap();
    assert_eq!((seg.role, seg.text.as_str()), (Role::Assistant, ""));
    assert_eq!(
        seg.tool_calls,
        vec![CallText {
            name: "type".into(),
            arguments: r#"{"id":3,"submit":true,"text":"blue mug"}"#.into()
        }]
    );
    assert_eq!(h.demo(&["back".into()], None, "g").unwrap().tool_calls[0].name, "go_back");
    let e = h.demo(&["hover 2".into()], None, "g").unwrap_err();
    assert!(e.contains("`hover 2`") && e.contains("no tool `hover`"), "{e}");
    let w = Hermes::new(webdancer(), EnvKind::Search);
    let visit = w.demo(&["visit /wiki/barvel".into()], None, "How many live in Barvel?").unwrap();
    assert_eq!(
        visit.tool_calls[0].arguments,
        r#"{"goal":"How many live in Barvel?","url":["/wiki/barvel"]}"#
    );
    let answer = w.demo(&["answer 1543".into()], None, "g").unwrap();
    assert_eq!((answer.text.as_str(), answer.tool_calls.len()), ("<answer>1543</answer>", 0));
    // What a demonstration teaches is what the loop reads back.
    let search = w.demo(&["search Barvel | river Avel".into()], None, "g").unwrap();
    let c = &search.tool_calls[0];
    let text = format!(
        "<tool_call>\n{{\"name\": \"{}\", \"arguments\": {}}}\n</tool_call>",
        c.name, c.arguments
    );
    assert_eq!(w.read(&text).unwrap(), "search Barvel | river Avel");
}
