//! From a model's turn to the browser actions it asks for: Hermes tool calls, checked against the
//! recipe's typed tool set (`toolcall`), become `wrl_browser::Action`s of the tool set's
//! coordinate space and family (OpenWebRL's tools in pixels or in 0–1000, OpAgent's in 0–1000,
//! the element tools by id); an answer tag becomes the terminal answer; the tiny policy's terse lines (`click 7`)
//! are read as `wrlc run` reads them. One place maps calls to actions, for every caller that has
//! a model's text or parsed calls (the env service; policies that write Hermes calls).

use serde_json::{Map, Value as Json};
use wrl_browser::{Action, AgentError, Elem, OpAgent, OpenWebRl, ToolSet, terse};
use wrl_plan::params::{Coordinates, Toolset};

use super::toolcall::{Arg, CallError, ToolCall, Turn, parse_turn};

/// The browser tool set whose actions a recipe's tool set addresses. Pixels are OpenWebRL's
/// tools, element ids the element tools; at 0–1000 both OpenWebRL's own set and OpAgent's
/// click points, so the one whose tool names the recipe's set uses more of is meant
/// (OpenWebRL's 13 share 6 names with OpAgent's 15); on a tie, OpenWebRL's where a tool takes
/// its `point_2d`, else OpAgent's.
pub fn tool_set(tools: &Toolset) -> ToolSet {
    match tools.coordinates {
        Coordinates::Pixels => ToolSet::Openwebrl,
        Coordinates::ElementIds => ToolSet::Elem,
        Coordinates::Norm1000 => {
            let runs = |set: ToolSet| {
                tools.tools.iter().filter(|t| set.tool_names().contains(&t.name.as_str())).count()
            };
            let (web, opagent) = (runs(ToolSet::OpenwebrlNorm), runs(ToolSet::Opagent));
            let points = tools.tools.iter().flat_map(|t| &t.params).any(|p| p.name == "point_2d");
            if web > opagent || (web == opagent && points) {
                ToolSet::OpenwebrlNorm
            } else {
                ToolSet::Opagent
            }
        }
    }
}

/// An argument as the JSON the browser's action types read.
pub fn arg_json(a: &Arg) -> Json {
    match a {
        Arg::Int(i) => Json::from(*i),
        Arg::Float(x) => serde_json::Number::from_f64(*x).map_or(Json::Null, Json::Number),
        Arg::Bool(b) => Json::Bool(*b),
        Arg::Str(s) | Arg::Word(s) => Json::String(s.clone()),
        Arg::List(items) => Json::Array(items.iter().map(arg_json).collect()),
        Arg::Json(v) => v.clone(),
    }
}

/// The browser's name for a recipe tool: the stdlib names history navigation `go_back`; the
/// element tools' action calls it `back`.
pub fn browser_name(set: ToolSet, tool: &str) -> &str {
    match (set, tool) {
        (ToolSet::Elem, "go_back") => "back",
        (ToolSet::Elem, "go_forward") => "forward",
        (_, n) => n,
    }
}

/// The tool names a recipe can give a set of these coordinates (the stdlib's spelling).
pub fn recipe_names(set: ToolSet) -> Vec<&'static str> {
    set.tool_names()
        .iter()
        .map(|n| match (set, *n) {
            (ToolSet::Elem, "back") => "go_back",
            (ToolSet::Elem, "forward") => "go_forward",
            (_, n) => n,
        })
        .collect()
}

/// The recipe tool set's tools the browser cannot run (their names), in recipe order.
pub fn unknown_tools(tools: &Toolset) -> Vec<&str> {
    let set = tool_set(tools);
    tools
        .tools
        .iter()
        .map(|t| t.name.as_str())
        .filter(|n| !set.tool_names().contains(&browser_name(set, n)))
        .collect()
}

/// One checked call as a browser action.
pub fn call_action(set: ToolSet, call: &ToolCall) -> Result<Action, AgentError> {
    let args: Map<String, Json> = call.args.iter().map(|(k, v)| (k.clone(), arg_json(v))).collect();
    Action::from_tool_call(set, browser_name(set, &call.name), &Json::Object(args))
}

/// A checked turn as the actions it runs, in order; its answer tag (if any) last, as the tool
/// set's terminal answer.
pub fn turn_actions(turn: &Turn, tools: &Toolset) -> Result<Vec<Action>, AgentError> {
    let set = tool_set(tools);
    let mut out = turn.calls.iter().map(|c| call_action(set, c)).collect::<Result<Vec<_>, _>>()?;
    if let Some(answer) = &turn.answer {
        out.push(match set {
            ToolSet::Opagent => Action::Opagent(OpAgent::Answer { text: answer.clone() }),
            ToolSet::Openwebrl => Action::Openwebrl(OpenWebRl::Done { response: answer.clone() }),
            ToolSet::OpenwebrlNorm => {
                Action::OpenwebrlNorm(OpenWebRl::Done { response: answer.clone() })
            }
            ToolSet::Elem => Action::Elem(Elem::Answer { text: answer.clone() }),
        });
    }
    Ok(out)
}

/// Whether `text` is written as tool calls (Hermes tags or the tool set's answer tag) rather
/// than terse lines.
pub fn is_tagged(text: &str, tools: &Toolset) -> bool {
    text.contains("<tool_call>")
        || (!tools.answer_tag.is_empty() && text.contains(&format!("<{}>", tools.answer_tag)))
}

/// Why a turn could not become actions: the calls did not check against the tool set, or the
/// actions they name do not exist in the browser.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TurnError {
    #[error(transparent)]
    Call(#[from] CallError),
    #[error(transparent)]
    Action(#[from] AgentError),
}

impl TurnError {
    /// The agent error an episode records for this turn (it counts toward
    /// `max_parse_failures`, as a malformed turn does in `wrlc run`).
    pub fn agent_error(&self) -> AgentError {
        match self {
            TurnError::Call(CallError::UnknownTool { name, .. }) => {
                AgentError::UnknownTool(name.clone())
            }
            TurnError::Call(
                c
                @ (CallError::NoCall(_) | CallError::Malformed { .. } | CallError::TooMany { .. }),
            ) => AgentError::Parse(c.to_string()),
            TurnError::Call(
                c @ (CallError::UnknownArg { .. }
                | CallError::MissingArg { .. }
                | CallError::BadArg { .. }),
            ) => AgentError::BadArguments(c.to_string()),
            TurnError::Action(a) => a.clone(),
        }
    }
}

/// The actions of a model's turn: Hermes calls checked against `tools` when the text has tags,
/// else terse lines (the tiny policy's syntax, element tools only), as `wrlc run` reads them.
/// Thinking before the calls is not an action.
pub fn read_turn(text: &str, tools: &Toolset) -> Result<(Turn, Vec<Action>), TurnError> {
    if is_tagged(text, tools) {
        let turn = parse_turn(text, tools)?;
        let actions = turn_actions(&turn, tools)?;
        return Ok((turn, actions));
    }
    let body = match text.rfind("</think>") {
        Some(i) => &text[i + "</think>".len()..],
        None => text,
    };
    let actions = match tool_set(tools) {
        ToolSet::Elem => terse::parse_turn(body)?,
        ToolSet::Openwebrl | ToolSet::OpenwebrlNorm | ToolSet::Opagent => {
            return Err(TurnError::Call(CallError::NoCall(
                Some(tools.answer_tag.clone()).filter(|t| !t.is_empty()),
            )));
        }
    };
    Ok((Turn { text: String::new(), calls: Vec::new(), answer: None }, actions))
}

/// Parsed calls (`{"name", "arguments"}` objects, as a client's tool-call parser gives them) as
/// the Hermes text they stand for, so they are checked exactly as a model's text is.
pub fn calls_text(calls: &[Json], answer: Option<&str>, tools: &Toolset) -> String {
    let mut out = String::new();
    for c in calls {
        out.push_str("<tool_call>");
        out.push_str(&c.to_string());
        out.push_str("</tool_call>\n");
    }
    if let Some(a) = answer.filter(|_| !tools.answer_tag.is_empty()) {
        out.push_str(&format!("<{t}>{a}</{t}>", t = tools.answer_tag));
    }
    out
}

#[cfg(test)]
mod tests {
    use wrl_browser::MouseButton;
    use wrl_plan::params::{CallsPerTurn, Literal, Tool, ToolParam, ToolTy};

    use super::*;

    fn param(name: &str, ty: &str, default: Option<Literal>) -> ToolParam {
        ToolParam { name: name.into(), ty: ToolTy::parse(ty).unwrap(), default }
    }

    fn tool(name: &str, params: Vec<ToolParam>, terminal: bool) -> Tool {
        Tool { name: name.into(), params, terminal }
    }

    fn elements() -> Toolset {
        Toolset {
            coordinates: Coordinates::ElementIds,
            calls_per_turn: CallsPerTurn::One,
            answer_tag: String::new(),
            mcp: Vec::new(),
            tools: vec![
                tool("click", vec![param("id", "int(min: 0)", None)], false),
                tool(
                    "type",
                    vec![
                        param("id", "int(min: 0)", None),
                        param("text", "string", None),
                        param("submit", "bool", Some(Literal::Bool(false))),
                    ],
                    false,
                ),
                tool("go_back", vec![], false),
                tool("answer", vec![param("text", "string", None)], true),
            ],
        }
    }

    #[test]
    fn hermes_calls_and_terse_lines_become_the_same_actions() {
        let t = elements();
        let hermes = "<think>the box</think><tool_call>{\"name\": \"type\", \"arguments\": \
                      {\"id\": 3, \"text\": \"blue mug\", \"submit\": true}}</tool_call>";
        let (_, a) = read_turn(hermes, &t).unwrap();
        let (_, b) = read_turn("type! 3 blue mug", &t).unwrap();
        assert_eq!(a, b);
        let (_, back) = read_turn("<tool_call>{\"name\": \"go_back\"}</tool_call>", &t).unwrap();
        assert_eq!(back, vec![Action::Elem(Elem::Back)]);
        let (_, ans) = read_turn(
            "<tool_call>{\"name\":\"answer\",\"arguments\":{\"text\":\"12\"}}</tool_call>",
            &t,
        )
        .unwrap();
        assert!(ans[0].is_terminal());
        let parsed =
            calls_text(&[serde_json::json!({"name": "click", "arguments": {"id": 7}})], None, &t);
        assert_eq!(read_turn(&parsed, &t).unwrap().1, vec![Action::Elem(Elem::Click { id: 7 })]);
    }

    #[test]
    fn pixel_tools_and_answer_tags_map_to_their_tool_sets() {
        let pixels = Toolset {
            coordinates: Coordinates::Pixels,
            calls_per_turn: CallsPerTurn::Many,
            answer_tag: String::new(),
            mcp: Vec::new(),
            tools: vec![tool(
                "click",
                vec![
                    param("point_2d", "list(float)", None),
                    param("clicks", "int(min: 1, max: 3)", Some(Literal::Num(1.0))),
                    param(
                        "button",
                        "enum(left, right, middle)",
                        Some(Literal::Word("left".into())),
                    ),
                ],
                false,
            )],
        };
        let text =
            "<tool_call>{\"name\": \"click\", \"arguments\": {\"point_2d\": [10, 20]}}</tool_call>";
        let (_, a) = read_turn(text, &pixels).unwrap();
        let want =
            OpenWebRl::Click { point_2d: [10.0, 20.0], clicks: 1, button: MouseButton::Left };
        assert_eq!(a, vec![Action::Openwebrl(want)]);
        // Terse lines are the element tools' syntax only.
        let e = read_turn("click 3", &pixels).unwrap_err();
        assert!(matches!(e.agent_error(), AgentError::Parse(_)), "{e}");
        let opagent = Toolset {
            coordinates: Coordinates::Norm1000,
            answer_tag: "answer".into(),
            mcp: Vec::new(),
            tools: vec![],
            ..pixels
        };
        let (turn, a) = read_turn("It is <answer>42</answer>", &opagent).unwrap();
        assert_eq!(turn.answer.as_deref(), Some("42"));
        assert_eq!(a, vec![Action::Opagent(OpAgent::Answer { text: "42".into() })]);
    }

    #[test]
    fn malformed_turns_are_agent_errors_with_the_reason() {
        let t = elements();
        let e = read_turn("<tool_call>{\"name\": \"fly\"}</tool_call>", &t).unwrap_err();
        assert_eq!(e.agent_error(), AgentError::UnknownTool("fly".into()));
        let e = read_turn("<tool_call>{\"name\": \"click\", \"arguments\": {}}</tool_call>", &t)
            .unwrap_err();
        assert!(matches!(e.agent_error(), AgentError::BadArguments(m) if m.contains("needs `id`")));
        assert!(read_turn("fly away", &t).is_err());
    }
}
