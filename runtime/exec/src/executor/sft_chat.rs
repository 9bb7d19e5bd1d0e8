//! Chat conversations (`kind = chat`) as SFT examples: as they are for a policy with a chat
//! template (its own template renders the messages, tool calls and tools; the loss covers the
//! assistant turns, calls included, as TRL's `assistant_only_loss` does), and for the tiny
//! policy, which has no call format, each assistant tool call as the terse line it writes
//! (`search capital of Osk`), or refused when the call cannot be one; a call of a tool its
//! environment does not run itself (an MCP server's) as the `<tool_call>{…}</tool_call>` line
//! the environment reads back.

use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::Value as Json;
use wrl_trainer::Trajectory;

/// The examples of a dataset's conversations: as they are with a chat template (`chat`), else
/// with every tool call written into its assistant message as a terse line, or as its call line
/// where `runs_itself` says the environment does not run the tool; with `per_turn`
/// (`loss_on = current_turn`), each assistant turn in its own example after the conversation
/// before it, the only turn trained.
pub(super) fn examples(
    convs: &[Trajectory],
    chat: bool,
    per_turn: bool,
    runs_itself: &dyn Fn(&str) -> bool,
) -> Result<Vec<Trajectory>, String> {
    let convs: Vec<Trajectory> = if per_turn {
        let keep = wrl_trainer::ObservationHistory::KeepAll;
        convs.iter().flat_map(|c| wrl_trainer::per_turn(c, &keep)).collect()
    } else {
        convs.to_vec()
    };
    if chat {
        return Ok(convs);
    }
    convs
        .iter()
        .enumerate()
        .map(|(n, c)| {
            let mut c = c.clone();
            for (i, s) in c.segments.iter_mut().enumerate() {
                for (j, call) in std::mem::take(&mut s.tool_calls).iter().enumerate() {
                    let line = if runs_itself(&call.name) {
                        terse(&call.name, &call.arguments)
                    } else {
                        side_line(&call.name, &call.arguments)
                    };
                    let line = line.map_err(|why| {
                        format!(
                            "conversation {}: `messages[{i}].tool_calls[{j}]` (`{}`): {why}; the \
                             tiny policy writes a call as one terse line, `NAME ARG | ARG`",
                            n + 1,
                            call.name
                        )
                    })?;
                    if !s.text.is_empty() {
                        s.text.push('\n');
                    }
                    s.text.push_str(&line);
                }
            }
            Ok(c)
        })
        .collect()
}

/// A call of a tool the environment does not run itself as its one line,
/// `<tool_call>{"name": …, "arguments": {…}}</tool_call>`.
fn side_line(name: &str, arguments: &str) -> Result<String, String> {
    match serde_json::from_str::<Json>(arguments) {
        Ok(Json::Object(args)) => Ok(wrl_browser::side::render_call(name, &args)),
        Ok(_) => Err("its arguments are not a JSON object".into()),
        Err(e) => Err(format!("its arguments are not a JSON object: {e}")),
    }
}

/// A call as the tiny policy's terse line: the tool's name, then its arguments' values in the
/// order its JSON text writes them (a row's object arguments were read with their keys sorted),
/// joined by ` | ` (a list's items too), each on one line. An argument that is an object has no
/// terse form.
pub(super) fn terse(name: &str, arguments: &str) -> Result<String, String> {
    let args =
        ordered(arguments).map_err(|e| format!("its arguments are not a JSON object: {e}"))?;
    let mut parts = Vec::new();
    for (key, v) in &args {
        match v {
            Json::Array(items) => {
                for item in items {
                    parts.push(scalar(item).ok_or_else(|| nested(key))?);
                }
            }
            other => parts.push(scalar(other).ok_or_else(|| nested(key))?),
        }
    }
    let args = parts.join(" | ");
    Ok(if args.is_empty() { name.to_string() } else { format!("{name} {args}") })
}

fn nested(key: &str) -> String {
    format!("argument `{key}` is an object, which a terse line cannot hold")
}

/// A value as one line of text; `None` for an object (or a list inside a list).
fn scalar(v: &Json) -> Option<String> {
    match v {
        Json::Null => Some("null".into()),
        Json::Bool(b) => Some(b.to_string()),
        Json::Number(n) => Some(n.to_string()),
        Json::String(s) => Some(s.split_whitespace().collect::<Vec<_>>().join(" ")),
        Json::Array(_) | Json::Object(_) => None,
    }
}

/// A JSON object's entries in the order they are written (serde_json's map sorts its keys).
fn ordered(text: &str) -> Result<Vec<(String, Json)>, serde_json::Error> {
    struct Entries;
    impl<'de> Visitor<'de> for Entries {
        type Value = Vec<(String, Json)>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(entry) = m.next_entry::<String, Json>()? {
                out.push(entry);
            }
            Ok(out)
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let out = (&mut de).deserialize_map(Entries)?;
    de.end()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wrl_trainer::chat::CallText;
    use wrl_trainer::{Role, Segment};

    #[test]
    fn calls_become_terse_lines_in_the_order_written() {
        assert_eq!(
            terse("search", r#"{"query": "capital of\nOsk"}"#).unwrap(),
            "search capital of Osk"
        );
        assert_eq!(
            terse("visit", r#"{"url": "http://a/b", "goal": "the date"}"#).unwrap(),
            "visit http://a/b | the date"
        );
        assert_eq!(terse("search", r#"{"query": ["a", "b"]}"#).unwrap(), "search a | b");
        assert_eq!(terse("stop", "{}").unwrap(), "stop");
        assert_eq!(terse("click", r#"{"id": 7}"#).unwrap(), "click 7");
        assert!(
            terse("f", r#"{"opts": {"a": 1}}"#)
                .unwrap_err()
                .contains("argument `opts` is an object")
        );
    }

    #[test]
    fn the_tiny_policy_gets_terse_lines_and_a_template_the_calls() {
        let all = |_: &str| true;
        let mut call = Segment::new(Role::Assistant, "");
        call.tool_calls =
            vec![CallText { name: "search".into(), arguments: r#"{"query": "q"}"#.into() }];
        let conv = Trajectory::new(vec![
            Segment::new(Role::User, "Who?"),
            call,
            Segment::new(Role::Tool, "result"),
            Segment::new(Role::Assistant, "answer x"),
        ]);
        let tiny = examples(std::slice::from_ref(&conv), false, false, &all).unwrap();
        assert_eq!(tiny[0].segments[1].text, "search q");
        assert!(tiny[0].segments[1].tool_calls.is_empty());
        assert_eq!(examples(std::slice::from_ref(&conv), true, false, &all).unwrap()[0], conv);
        // `current_turn`: each assistant turn alone, after what came before it.
        let turns = examples(std::slice::from_ref(&conv), true, true, &all).unwrap();
        assert_eq!(turns.len(), 2);
        assert_eq!(turns[0].segments.len(), 2);
        assert!(turns[1].segments[3].trained() && !turns[1].segments[1].trained());
        let mut bad = conv.clone();
        bad.segments[1].tool_calls[0].arguments = r#"{"q": {"deep": 1}}"#.into();
        let e = examples(&[conv.clone(), bad], false, false, &all).unwrap_err();
        assert!(e.starts_with("conversation 2: `messages[1].tool_calls[0]` (`search`)"), "{e}");
        // A tool the environment does not run itself (an MCP server's): its call line, which
        // the search env and the browser's side tools read back.
        let served = |name: &str| name != "search";
        let line = &examples(std::slice::from_ref(&conv), false, false, &served).unwrap()[0];
        let call = r#"<tool_call>{"arguments":{"query":"q"},"name":"search"}</tool_call>"#;
        assert_eq!(line.segments[1].text, call);
        assert!(wrl_browser::side::parse_call(call).is_some_and(|c| c.is_ok()));
    }
}
