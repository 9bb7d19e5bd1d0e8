//! Chat conversations as SFT data (`kind = chat`): a row's `messages` (and the `tools` they may
//! call) in the layout TRL's conversational datasets and LLaMA-Factory's OpenAI-style sharegpt
//! files use, checked message by message before a run — roles known, turns in a sane order, an
//! assistant turn to train, tool calls whose arguments are JSON, a tool result only after a call
//! — and read into the trainer's segments (E0527 names the file, the line or row, the message
//! and what was expected).

use serde_json::{Map, Value as Json};
use wrl_trainer::chat::CallText;
use wrl_trainer::{Role, Segment, Trajectory};

/// The words every conversation error starts with, which the preflight reads as E0527 (a
/// conversation's shape), not E0503 (a file that cannot be read).
pub(crate) const NOT_A_CONVERSATION: &str = "not a valid chat conversation";

/// The help of a conversation refused (E0527).
pub(crate) const HELP: &str = "docs/sandbox.md (\"Chat conversations\") describes the messages, \
    their order and the tool calls; repair or drop the conversation";

/// One row's conversation (its `messages` and `tools`, already read through `columns`) as the
/// trainer's trajectory; why not, without a place.
pub(crate) fn conversation(row: &Map<String, Json>) -> Result<Trajectory, String> {
    let bad = |why: String| format!("{NOT_A_CONVERSATION}: {why}");
    let messages = match row.get("messages") {
        Some(Json::Array(m)) if !m.is_empty() => m,
        Some(Json::Array(_)) => return Err(bad("`messages` is an empty list".into())),
        Some(other) => {
            return Err(bad(format!("`messages` is {}, not a list of messages", what(other))));
        }
        None => return Err(bad(format!("it has no `messages` (the row has {})", keys(row)))),
    };
    let tools = tools(row.get("tools")).map_err(|why| bad(format!("`tools`: {why}")))?;
    let mut segments = Vec::new();
    // The calls of the last assistant message not yet answered, by index (and `id` if given).
    let mut open: Vec<Option<String>> = Vec::new();
    let mut prev: Option<Role> = None;
    for (i, m) in messages.iter().enumerate() {
        let at = |why: String| bad(format!("`messages[{i}]`: {why}"));
        let Json::Object(m) = m else {
            return Err(at(format!("{}, not a message (an object with `role`)", what(m))));
        };
        let role = match m.get("role").and_then(Json::as_str) {
            Some("system") => Role::System,
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            Some("tool") => Role::Tool,
            Some(other) => {
                return Err(at(format!(
                    "role `{other}` is not one of `system`, `user`, `assistant`, `tool`"
                )));
            }
            None => return Err(at("no `role`".into())),
        };
        let calls = match (role, m.get("tool_calls")) {
            (_, None | Some(Json::Null)) => Vec::new(),
            (Role::Assistant, Some(Json::Array(c))) => c
                .iter()
                .enumerate()
                .map(|(j, c)| call(c).map_err(|why| at(format!("`tool_calls[{j}]`: {why}"))))
                .collect::<Result<Vec<_>, _>>()?,
            (Role::Assistant, Some(other)) => {
                return Err(at(format!("`tool_calls` is {}, not a list", what(other))));
            }
            (_, Some(_)) => return Err(at("only an assistant message makes tool calls".into())),
        };
        let content = match m.get("content") {
            Some(Json::String(s)) => s.clone(),
            None | Some(Json::Null) if !calls.is_empty() => String::new(),
            Some(other) => {
                return Err(at(format!("`content` is {}, not a string", what(other))));
            }
            None => return Err(at("no `content`".into())),
        };
        order(prev, role, &open).map_err(at)?;
        match role {
            Role::Tool => {
                let id = m.get("tool_call_id").and_then(Json::as_str);
                let k = match id {
                    Some(id) if open.iter().any(|o| o.is_some()) => {
                        open.iter().position(|o| o.as_deref() == Some(id)).ok_or_else(|| {
                            at(format!("`tool_call_id` `{id}` answers none of the open calls"))
                        })?
                    }
                    _ => 0,
                };
                open.remove(k);
            }
            Role::Assistant => {
                open = calls.iter().map(|(id, _)| id.clone()).collect();
            }
            Role::System | Role::User | Role::Observation => open.clear(),
        }
        let mut seg = Segment::new(role, content);
        seg.tool_calls = calls.into_iter().map(|(_, c)| c).collect();
        segments.push(seg);
        prev = Some(role);
    }
    if !segments.iter().any(|s| s.role == Role::Assistant) {
        return Err(bad("it has no assistant message, so nothing in it is trained".into()));
    }
    Ok(Trajectory { segments, tools })
}

/// Whether a message of `role` may follow one of `prev` (the calls of the assistant message
/// before still `open`): an optional system message first, then user and assistant turns in
/// turn, an assistant's calls answered by tool results before the assistant goes on.
fn order(prev: Option<Role>, role: Role, open: &[Option<String>]) -> Result<(), String> {
    let after = |p: Role| match p {
        Role::System => "the system message",
        Role::User => "a user message",
        Role::Assistant => "an assistant message",
        Role::Tool => "a tool result",
        Role::Observation => "an observation",
    };
    match (prev, role) {
        (None, Role::System | Role::User) => Ok(()),
        (None, r) => {
            Err(format!("a conversation starts with a system or user message, not {}", after(r)))
        }
        (Some(_), Role::System) => Err("the system message can only be the first".into()),
        (Some(Role::System), Role::User) => Ok(()),
        (Some(p @ (Role::User | Role::Tool | Role::Observation)), Role::User)
        | (Some(p @ Role::System), Role::Assistant) => {
            Err(format!("{} cannot come right after {}", after(role), after(p)))
        }
        (Some(Role::Assistant), Role::User) if !open.is_empty() => Err(format!(
            "the assistant's {} tool call{} must be answered by `tool` messages before the user \
             speaks",
            open.len(),
            if open.len() == 1 { "" } else { "s" }
        )),
        (Some(Role::Assistant), Role::User) => Ok(()),
        (Some(Role::User), Role::Assistant) => Ok(()),
        (Some(Role::Assistant | Role::Tool), Role::Assistant) if !open.is_empty() => Err(format!(
            "{} tool call{} of the assistant {} no result before it speaks again",
            open.len(),
            if open.len() == 1 { "" } else { "s" },
            if open.len() == 1 { "has" } else { "have" }
        )),
        (Some(Role::Tool), Role::Assistant) => Ok(()),
        (Some(Role::Assistant), Role::Assistant) => {
            Err("two assistant messages in a row (a user message or tool results between)".into())
        }
        (Some(Role::Assistant | Role::Tool), Role::Tool) if !open.is_empty() => Ok(()),
        (Some(Role::Assistant | Role::Tool), Role::Tool) => {
            Err("a tool result must follow an assistant message whose tool call it answers".into())
        }
        (Some(p @ (Role::System | Role::User | Role::Observation)), Role::Tool) => Err(format!(
            "a tool result must follow an assistant message with tool calls, not {}",
            after(p)
        )),
        (Some(Role::Observation), Role::Assistant) | (_, Role::Observation) => {
            Err("observations are not chat messages".into())
        }
    }
}

/// One tool call, OpenAI's `{"type": "function", "function": {"name", "arguments"}}` (or its
/// flat `{"name", "arguments"}`), with its `id` if it has one; `arguments` the JSON text of an
/// object (kept as written) or an object (whose keys the row's reader has sorted).
fn call(c: &Json) -> Result<(Option<String>, CallText), String> {
    let Json::Object(c) = c else { return Err(format!("{}, not a call", what(c))) };
    let id = c.get("id").and_then(Json::as_str).map(str::to_string);
    let f = match c.get("function") {
        Some(Json::Object(f)) => f,
        Some(other) => return Err(format!("`function` is {}, not an object", what(other))),
        None => c,
    };
    if let Some(t) = c.get("type").and_then(Json::as_str)
        && t != "function"
    {
        return Err(format!("`type` is `{t}`; a tool call is of `type` `function`"));
    }
    let name = match f.get("name") {
        Some(Json::String(n)) if !n.trim().is_empty() => n.clone(),
        _ => return Err("no `function.name` (the tool called)".into()),
    };
    let arguments = match f.get("arguments") {
        None | Some(Json::Null) => "{}".to_string(),
        Some(Json::Object(a)) => serde_json::to_string(a).map_err(|e| e.to_string())?,
        Some(Json::String(text)) => match serde_json::from_str::<Json>(text) {
            Ok(Json::Object(_)) => text.clone(),
            Ok(other) => {
                return Err(format!("`arguments` of `{name}` is {}, not an object", what(&other)));
            }
            Err(e) => return Err(format!("`arguments` of `{name}` is not JSON: {e}")),
        },
        Some(other) => {
            return Err(format!("`arguments` of `{name}` is {}, not an object", what(other)));
        }
    };
    Ok((id, CallText { name, arguments }))
}

/// The tools of a conversation as JSON texts of function schemas: a list of objects, or the
/// JSON text of one (LLaMA-Factory keeps `tools` as a string).
fn tools(v: Option<&Json>) -> Result<Vec<String>, String> {
    let list = match v {
        None | Some(Json::Null) => return Ok(Vec::new()),
        Some(Json::String(s)) if s.trim().is_empty() => return Ok(Vec::new()),
        Some(Json::String(s)) => match serde_json::from_str::<Json>(s) {
            Ok(Json::Array(l)) => l,
            Ok(other) => return Err(format!("{}, not a list of function schemas", what(&other))),
            Err(e) => return Err(format!("not JSON: {e}")),
        },
        Some(Json::Array(l)) => l.clone(),
        Some(other) => return Err(format!("{}, not a list of function schemas", what(other))),
    };
    list.iter()
        .enumerate()
        .map(|(i, t)| match t {
            Json::Object(_) => serde_json::to_string(t).map_err(|e| e.to_string()),
            other => Err(format!("`tools[{i}]` is {}, not a function schema", what(other))),
        })
        .collect()
}

/// What a JSON value is in a message: a chat message's parts are objects.
fn what(v: &Json) -> &'static str {
    wrl_sandbox::columns::kind(v, "an object")
}

fn keys(m: &Map<String, Json>) -> String {
    let mut k: Vec<String> = m.keys().map(|k| format!("`{k}`")).collect();
    k.sort();
    if k.is_empty() { "no columns".into() } else { k.join(", ") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(row: &str) -> Result<Trajectory, String> {
        let row: Map<String, Json> = serde_json::from_str(row).unwrap();
        conversation(&row)
    }

    #[test]
    fn a_conversation_with_tool_calls_is_read_as_segments() {
        let t = check(
            r#"{"tools": [{"type": "function", "function": {"name": "search"}}],
                "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Capital of Osk?"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "c1",
                  "type": "function", "function": {"name": "search",
                  "arguments": "{\"query\": \"capital of Osk\"}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "Osk's capital is Varn."},
                {"role": "assistant", "content": "Varn."}]}"#,
        )
        .unwrap();
        let roles: Vec<Role> = t.segments.iter().map(|s| s.role).collect();
        assert_eq!(roles, [Role::System, Role::User, Role::Assistant, Role::Tool, Role::Assistant]);
        assert_eq!(t.segments[2].tool_calls[0].name, "search");
        assert_eq!(t.segments[2].tool_calls[0].arguments, r#"{"query": "capital of Osk"}"#);
        assert_eq!(t.tools.len(), 1);
        // Object arguments and the flat call form are read too; tools as a JSON string.
        let t = check(
            r#"{"tools": "[{\"name\": \"f\"}]", "messages": [{"role": "user", "content": "x"},
                {"role": "assistant", "tool_calls": [{"name": "f", "arguments": {"a": 1}}]}]}"#,
        )
        .unwrap();
        assert_eq!(t.segments[1].tool_calls[0].arguments, r#"{"a":1}"#);
        assert_eq!(t.tools, [r#"{"name":"f"}"#]);
    }

    #[test]
    fn a_malformed_conversation_is_refused_with_the_message_and_why() {
        let err = |row: &str| check(row).unwrap_err();
        let u = r#"{"role": "user", "content": "q"}"#;
        let a = r#"{"role": "assistant", "content": "a"}"#;
        let call = r#"{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}"#;
        let tool = r#"{"role": "tool", "content": "r"}"#;
        let rows = |m: &[&str]| format!(r#"{{"messages": [{}]}}"#, m.join(","));
        assert_eq!(
            err(&rows(&[u, r#"{"role": "bot", "content": "a"}"#])),
            "not a valid chat conversation: `messages[1]`: role `bot` is not one of `system`, \
             `user`, `assistant`, `tool`"
        );
        assert!(
            err(&rows(&[u])).ends_with("it has no assistant message, so nothing in it is trained")
        );
        assert!(err(&rows(&[u, tool, a])).contains(
            "`messages[1]`: a tool result must follow an assistant message with tool calls, not a user message"
        ));
        assert!(err(&rows(&[u, a, tool])).contains(
            "`messages[2]`: a tool result must follow an assistant message whose tool call it answers"
        ));
        assert!(
            err(&rows(&[u, call, a]))
                .contains("`messages[2]`: 1 tool call of the assistant has no result")
        );
        assert!(err(&rows(&[u, call, u])).contains("must be answered by `tool` messages"));
        assert!(err(&rows(&[u, a, a])).contains("two assistant messages in a row"));
        assert!(err(&rows(&[a])).contains("starts with a system or user message"));
        assert!(
            err(&rows(&[u, u, a]))
                .contains("`messages[1]`: a user message cannot come right after a user message")
        );
        let bad_args = r#"{"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{oops"}}]}"#;
        assert!(err(&rows(&[u, bad_args])).contains(
            "`messages[1]`: `tool_calls[0]`: `arguments` of `f` is not JSON: key must be a string"
        ));
        assert!(
            err(r#"{"conversations": []}"#)
                .contains("it has no `messages` (the row has `conversations`)")
        );
        assert!(
            err(&rows(&[u, call, tool, tool, a]))
                .contains("`messages[3]`: a tool result must follow")
        );
    }
}
