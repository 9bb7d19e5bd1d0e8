//! Tools a browser turn may call beside the page's, served by whatever runs the episode around
//! the browser (`wrl_exec`'s MCP servers): the browser knows only how such a call is written in
//! a turn and where its answer goes. A call is one line, `<tool_call>{"name": …, "arguments":
//! {…}}</tool_call>`, as a search env's turn writes it; it runs in its place among the turn's
//! page actions through [`SideTools`], and what it answers is that line's feedback. Which tools
//! exist, what a call does, its limits and its counts stay with the implementor.

use futures::future::BoxFuture;
use serde_json::{Map, Value as Json};

use crate::action::Action;
use crate::failure::{AgentError, EndReason};
use crate::terse;

/// A call of a tool the page does not run: its name and JSON arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct SideCall {
    pub name: String,
    pub arguments: Map<String, Json>,
}

/// What a side call answered: the text the policy reads as the call's feedback, and how the
/// episode ends there when it does (a server that cannot be reached: `env_error`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SideReply {
    pub text: String,
    pub end: Option<EndReason>,
}

/// The tools of one episode beside the page's. One value serves one episode, so it may keep
/// the episode's own state (its calls per tool, for a per-episode limit).
pub trait SideTools: Send {
    /// Whether `name` is one of them (a line calling another is an unknown tool).
    fn serves(&self, name: &str) -> bool;
    /// Calls one of them. A failure the policy should read is text; only what ends the
    /// episode is `end`.
    fn call(&mut self, call: SideCall) -> BoxFuture<'_, SideReply>;
}

/// No tools beside the page's: a browser env whose tool set is the page's alone.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSideTools;

impl SideTools for NoSideTools {
    fn serves(&self, _name: &str) -> bool {
        false
    }

    fn call(&mut self, call: SideCall) -> BoxFuture<'_, SideReply> {
        // `serves` admits none, so a turn that calls one is rejected before it runs.
        Box::pin(async move {
            SideReply { text: format!("error: there is no tool `{}`", call.name), end: None }
        })
    }
}

/// One line of a turn: a page action, or a call of a side tool.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnLine {
    Page(Action),
    Side(SideCall),
}

const OPEN: &str = "<tool_call>";
const CLOSE: &str = "</tool_call>";

/// The side call `line` writes, when it is one (it opens with `<tool_call>`); `Some(Err)` for
/// one whose JSON is no call.
pub fn parse_call(line: &str) -> Option<Result<SideCall, AgentError>> {
    let body = line.trim().strip_prefix(OPEN)?;
    let body = body.strip_suffix(CLOSE).unwrap_or(body).trim();
    let bad = |why: String| AgentError::Parse(format!("the tool call {body:?}: {why}"));
    Some(match serde_json::from_str::<Json>(body) {
        Err(e) => Err(bad(format!("not JSON: {e}"))),
        Ok(v) => match (v.get("name").and_then(Json::as_str), v.get("arguments")) {
            (None, _) => Err(bad("it has no `name`".into())),
            (Some(name), None | Some(Json::Null)) => {
                Ok(SideCall { name: name.to_string(), arguments: Map::new() })
            }
            (Some(name), Some(Json::Object(args))) => {
                Ok(SideCall { name: name.to_string(), arguments: args.clone() })
            }
            (Some(_), Some(_)) => Err(bad("its `arguments` is not an object".into())),
        },
    })
}

/// A side call as its line (one line: JSON escapes newlines), the inverse of [`parse_call`].
pub fn render_call(name: &str, arguments: &Map<String, Json>) -> String {
    let call = serde_json::json!({ "name": name, "arguments": arguments });
    format!("{OPEN}{call}{CLOSE}")
}

/// Parses a turn: one page action (terse syntax) or side call per non-empty line, all or
/// nothing; a call of a tool `side` does not serve is an unknown tool.
pub fn parse_turn(text: &str, side: &dyn SideTools) -> Result<Vec<TurnLine>, AgentError> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        out.push(match parse_call(line) {
            Some(Ok(call)) if side.serves(&call.name) => TurnLine::Side(call),
            Some(Ok(call)) => return Err(AgentError::UnknownTool(call.name)),
            Some(Err(e)) => return Err(e),
            None => TurnLine::Page(terse::parse(line)?),
        });
    }
    if out.is_empty() {
        return Err(AgentError::Parse("no action in the turn".into()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::Elem;

    struct Code;

    impl SideTools for Code {
        fn serves(&self, name: &str) -> bool {
            name == "run_code"
        }
        fn call(&mut self, _call: SideCall) -> BoxFuture<'_, SideReply> {
            Box::pin(async { SideReply { text: "42".into(), end: None } })
        }
    }

    #[test]
    fn a_turn_mixes_page_actions_and_side_calls_in_order() {
        let mut args = Map::new();
        args.insert("code".into(), Json::String("print(6 * 7)\nprint(1)".into()));
        let line = render_call("run_code", &args);
        assert!(!line.contains('\n'), "{line}");
        let turn = parse_turn(&format!("click 7\n\n{line}\nanswer 42"), &Code).unwrap();
        assert_eq!(
            turn,
            vec![
                TurnLine::Page(Action::Elem(Elem::Click { id: 7 })),
                TurnLine::Side(SideCall { name: "run_code".into(), arguments: args }),
                TurnLine::Page(Action::Elem(Elem::Answer { text: "42".into() })),
            ]
        );
        let bare = parse_turn("<tool_call>{\"name\": \"run_code\"}", &Code).unwrap();
        assert!(matches!(&bare[0], TurnLine::Side(c) if c.arguments.is_empty()));
    }

    #[test]
    fn calls_of_tools_not_served_or_not_json_are_agent_errors() {
        let line = render_call("run_code", &Map::new());
        assert_eq!(
            parse_turn(&line, &NoSideTools),
            Err(AgentError::UnknownTool("run_code".into()))
        );
        assert!(matches!(
            parse_turn("<tool_call>{nope</tool_call>", &Code),
            Err(AgentError::Parse(_))
        ));
        assert!(matches!(
            parse_turn("<tool_call>{\"arguments\": {}}</tool_call>", &Code),
            Err(AgentError::Parse(m)) if m.contains("no `name`")
        ));
        assert!(matches!(
            parse_turn("<tool_call>{\"name\": \"run_code\", \"arguments\": 3}</tool_call>", &Code),
            Err(AgentError::Parse(m)) if m.contains("not an object")
        ));
        assert!(matches!(parse_turn("click 1\nfly", &Code), Err(AgentError::UnknownTool(_))));
        assert!(matches!(parse_turn(" \n", &Code), Err(AgentError::Parse(_))));
    }
}
