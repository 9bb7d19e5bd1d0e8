//! Tool calls as instruction-tuned models write them — Hermes `<tool_call>{"name": …,
//! "arguments": {…}}</tool_call>`, several per turn where the tool set allows — checked against
//! the recipe's typed tool schemas: the tool exists, every argument is one it declares and has
//! its type, bounds and enum words, defaults fill what is left out. A turn that does not parse
//! is a format error, with what was wrong; an answer tag (`<answer>…</answer>`) ends the episode
//! when the tool set declares one.

use std::collections::BTreeMap;

use serde_json::Value as Json;
use wrl_plan::params::{CallsPerTurn, Literal, Tool, ToolKind, Toolset};

/// One checked call: the tool and its arguments, defaults filled.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    pub name: String,
    pub args: BTreeMap<String, Arg>,
    /// The tool ends the episode.
    pub terminal: bool,
}

/// An argument's value, as its schema types it.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
    /// A word of an `enum(…)` parameter.
    Word(String),
    List(Vec<Arg>),
    /// A value of a parameter typed `any`, as written.
    Json(Json),
}

/// A turn as the agent wrote it: its calls, and the answer of an answer tag.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Turn {
    /// The text before the first call or tag, thinking removed.
    pub text: String,
    pub calls: Vec<ToolCall>,
    pub answer: Option<String>,
}

/// Why a turn is not a valid turn of the tool set: a format error.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    #[error("the turn calls no tool{}", .0.as_deref().map(|t| format!(" and has no `<{t}>` answer")).unwrap_or_default())]
    NoCall(Option<String>),
    #[error("tool call {index}: {reason}")]
    Malformed { index: usize, reason: String },
    #[error(
        "the turn makes {count} tool calls; the tool set takes one a turn (`calls_per_turn = one`)"
    )]
    TooMany { count: usize },
    #[error("tool call {index}: there is no tool `{name}` (the tools are {known})")]
    UnknownTool { index: usize, name: String, known: String },
    #[error("tool call {index}: `{tool}` takes no argument `{arg}`")]
    UnknownArg { index: usize, tool: String, arg: String },
    #[error("tool call {index}: `{tool}` needs `{arg}`")]
    MissingArg { index: usize, tool: String, arg: String },
    #[error("tool call {index}: `{tool}`'s `{arg}` must be {expected}, not {found}")]
    BadArg { index: usize, tool: String, arg: String, expected: String, found: String },
}

/// The text between `open` and `close` tags, and the rest after `close` (or the end).
fn between<'t>(text: &'t str, open: &str, close: &str) -> Option<(&'t str, &'t str)> {
    let start = text.find(open)? + open.len();
    let rest = &text[start..];
    Some(match rest.find(close) {
        Some(end) => (&rest[..end], &rest[end + close.len()..]),
        None => (rest, ""),
    })
}

/// Parses one turn against `tools`. Thinking (`<think>…</think>`) is not part of the calls.
pub fn parse_turn(text: &str, tools: &Toolset) -> Result<Turn, CallError> {
    let body = match text.rfind("</think>") {
        Some(i) => &text[i + "</think>".len()..],
        None => text,
    };
    let lead_end = body.find("<tool_call>").unwrap_or(body.len());
    let mut turn = Turn::default();
    let tag = Some(tools.answer_tag.as_str()).filter(|t| !t.is_empty());
    if let Some(tag) = tag
        && let Some((answer, _)) = between(body, &format!("<{tag}>"), &format!("</{tag}>"))
    {
        turn.answer = Some(answer.trim().to_string());
    }
    let lead = body[..lead_end].trim();
    turn.text = match tag {
        Some(t) => lead.split(&format!("<{t}>")).next().unwrap_or("").trim().to_string(),
        None => lead.to_string(),
    };
    let mut rest = body;
    let mut index = 0;
    while let Some((inner, after)) = between(rest, "<tool_call>", "</tool_call>") {
        index += 1;
        turn.calls.push(call(index, inner, tools)?);
        rest = after;
    }
    if turn.calls.is_empty() && turn.answer.is_none() {
        return Err(CallError::NoCall(tag.map(str::to_string)));
    }
    if tools.calls_per_turn == CallsPerTurn::One && turn.calls.len() > 1 {
        return Err(CallError::TooMany { count: turn.calls.len() });
    }
    Ok(turn)
}

/// One call's JSON, checked against its tool.
fn call(index: usize, json: &str, tools: &Toolset) -> Result<ToolCall, CallError> {
    let malformed = |reason: String| CallError::Malformed { index, reason };
    let v: Json =
        serde_json::from_str(json.trim()).map_err(|e| malformed(format!("not JSON: {e}")))?;
    let name = v.get("name").and_then(Json::as_str).ok_or_else(|| malformed("no `name`".into()))?;
    let args = match v.get("arguments") {
        None | Some(Json::Null) => serde_json::Map::new(),
        Some(Json::Object(m)) => m.clone(),
        // Some models write the arguments as a JSON string.
        Some(Json::String(s)) => match serde_json::from_str::<Json>(s) {
            Ok(Json::Object(m)) => m,
            _ => return Err(malformed("`arguments` is not an object".into())),
        },
        Some(_) => return Err(malformed("`arguments` is not an object".into())),
    };
    let Some(tool) = tools.tools.iter().find(|t| t.name == name) else {
        let known: Vec<String> = tools.tools.iter().map(|t| format!("`{}`", t.name)).collect();
        return Err(CallError::UnknownTool { index, name: name.into(), known: known.join(", ") });
    };
    check(index, tool, &args)
}

/// One call's arguments checked against its tool's schema, defaults filled.
pub(crate) fn check(
    index: usize,
    tool: &Tool,
    args: &serde_json::Map<String, Json>,
) -> Result<ToolCall, CallError> {
    if let Some(extra) = args.keys().find(|k| !tool.params.iter().any(|p| &p.name == *k)) {
        return Err(CallError::UnknownArg { index, tool: tool.name.clone(), arg: extra.clone() });
    }
    let mut out = BTreeMap::new();
    for p in &tool.params {
        let value = match (args.get(&p.name), &p.default) {
            (Some(v), _) => {
                typed(&p.ty.kind, v).map_err(|(expected, found)| CallError::BadArg {
                    index,
                    tool: tool.name.clone(),
                    arg: p.name.clone(),
                    expected,
                    found,
                })?
            }
            (None, Some(d)) => literal(d),
            (None, None) => {
                return Err(CallError::MissingArg {
                    index,
                    tool: tool.name.clone(),
                    arg: p.name.clone(),
                });
            }
        };
        out.insert(p.name.clone(), value);
    }
    Ok(ToolCall { name: tool.name.clone(), args: out, terminal: tool.terminal })
}

fn describe(v: &Json) -> String {
    match v {
        Json::Null => "null".into(),
        Json::Bool(b) => format!("`{b}`"),
        Json::Number(n) => format!("the number {n}"),
        Json::String(s) => format!("the string {s:?}"),
        Json::Array(_) => "a list".into(),
        Json::Object(_) => "an object".into(),
    }
}

fn bounds(min: Option<f64>, max: Option<f64>) -> String {
    match (min, max) {
        (Some(a), Some(b)) => format!(" from {a} to {b}"),
        (Some(a), None) => format!(" of at least {a}"),
        (None, Some(b)) => format!(" of at most {b}"),
        (None, None) => String::new(),
    }
}

/// `v` as a value of `kind`; else (what was expected, what was found).
fn typed(kind: &ToolKind, v: &Json) -> Result<Arg, (String, String)> {
    let bad = |expected: String| Err((expected, describe(v)));
    let within = |x: f64, min: Option<f64>, max: Option<f64>| {
        min.is_none_or(|m| x >= m) && max.is_none_or(|m| x <= m)
    };
    match kind {
        ToolKind::Int { min, max } => match v.as_f64() {
            Some(x) if x.fract() == 0.0 && within(x, *min, *max) => Ok(Arg::Int(x as i64)),
            _ => bad(format!("a whole number{}", bounds(*min, *max))),
        },
        ToolKind::Float { min, max } => match v.as_f64() {
            Some(x) if within(x, *min, *max) => Ok(Arg::Float(x)),
            _ => bad(format!("a number{}", bounds(*min, *max))),
        },
        ToolKind::Bool => match v.as_bool() {
            Some(b) => Ok(Arg::Bool(b)),
            None => bad("`true` or `false`".into()),
        },
        ToolKind::Str => match v.as_str() {
            Some(s) => Ok(Arg::Str(s.to_string())),
            None => bad("a string".into()),
        },
        ToolKind::Enum(words) => match v.as_str() {
            Some(s) if words.iter().any(|w| w == s) => Ok(Arg::Word(s.to_string())),
            _ => {
                let list: Vec<String> = words.iter().map(|w| format!("\"{w}\"")).collect();
                bad(format!("one of {}", list.join(", ")))
            }
        },
        ToolKind::List(item) => match v.as_array() {
            Some(items) => {
                items.iter().map(|x| typed(item, x)).collect::<Result<Vec<_>, _>>().map(Arg::List)
            }
            None => bad("a list".into()),
        },
        ToolKind::Any => Ok(Arg::Json(v.clone())),
    }
}

/// A schema's default as an argument.
fn literal(l: &Literal) -> Arg {
    match l {
        Literal::Num(x) if x.fract() == 0.0 => Arg::Int(*x as i64),
        Literal::Num(x) => Arg::Float(*x),
        Literal::Bool(b) => Arg::Bool(*b),
        Literal::Str(s) => Arg::Str(s.clone()),
        Literal::Word(w) => Arg::Word(w.clone()),
        Literal::List(items) => Arg::List(items.iter().map(literal).collect()),
    }
}

#[cfg(test)]
mod tests {
    use wrl_plan::params::{Coordinates, ToolParam, ToolTy};

    use super::*;

    fn param(name: &str, ty: &str, default: Option<Literal>) -> ToolParam {
        ToolParam { name: name.into(), ty: ToolTy::parse(ty).unwrap(), default }
    }

    fn tools(answer_tag: &str) -> Toolset {
        Toolset {
            coordinates: Coordinates::Pixels,
            calls_per_turn: CallsPerTurn::Many,
            answer_tag: answer_tag.into(),
            mcp: Vec::new(),
            tools: vec![
                Tool {
                    name: "click".into(),
                    params: vec![
                        param("point_2d", "list(float)", None),
                        param("clicks", "int(min: 1, max: 3)", Some(Literal::Num(1.0))),
                        param(
                            "button",
                            "enum(left, right, middle)",
                            Some(Literal::Word("left".into())),
                        ),
                    ],
                    terminal: false,
                },
                Tool {
                    name: "done".into(),
                    params: vec![param("response", "string", None)],
                    terminal: true,
                },
            ],
        }
    }

    #[test]
    fn hermes_calls_are_checked_and_defaults_filled() {
        let text = "<think>the button</think>I click it.\n<tool_call>\n{\"name\": \"click\", \
                    \"arguments\": {\"point_2d\": [412, 80.5]}}\n</tool_call>\n<tool_call>{\"name\": \
                    \"done\", \"arguments\": \"{\\\"response\\\": \\\"ok\\\"}\"}</tool_call>";
        let turn = parse_turn(text, &tools("")).unwrap();
        assert_eq!(turn.text, "I click it.");
        assert_eq!(turn.calls.len(), 2);
        let click = &turn.calls[0];
        assert_eq!(click.args["point_2d"], Arg::List(vec![Arg::Float(412.0), Arg::Float(80.5)]));
        assert_eq!((click.args["clicks"].clone(), click.terminal), (Arg::Int(1), false));
        assert_eq!(click.args["button"], Arg::Word("left".into()));
        assert_eq!(turn.calls[1].args["response"], Arg::Str("ok".into()));
        assert!(turn.calls[1].terminal);
    }

    #[test]
    fn malformed_turns_say_what_is_wrong() {
        let t = tools("");
        let err = |text: &str| parse_turn(text, &t).unwrap_err().to_string();
        assert_eq!(err("I am done."), "the turn calls no tool");
        assert!(err("<tool_call>{nope</tool_call>").starts_with("tool call 1: not JSON"));
        assert_eq!(
            err("<tool_call>{\"name\": \"type\"}</tool_call>"),
            "tool call 1: there is no tool `type` (the tools are `click`, `done`)"
        );
        assert_eq!(
            err("<tool_call>{\"name\": \"done\", \"arguments\": {}}</tool_call>"),
            "tool call 1: `done` needs `response`"
        );
        assert_eq!(
            err(
                "<tool_call>{\"name\":\"click\",\"arguments\":{\"point_2d\":[1,2],\"clicks\":4}}</tool_call>"
            ),
            "tool call 1: `click`'s `clicks` must be a whole number from 1 to 3, not the number 4"
        );
        assert_eq!(
            err(
                "<tool_call>{\"name\":\"click\",\"arguments\":{\"point_2d\":[1],\"button\":\"up\"}}</tool_call>"
            ),
            "tool call 1: `click`'s `button` must be one of \"left\", \"right\", \"middle\", not the string \"up\""
        );
        assert!(
            err("<tool_call>{\"name\":\"click\",\"arguments\":{\"x\":1}}</tool_call>")
                .contains("no argument `x`")
        );
        // One call a turn where the tool set says so.
        let one = Toolset { calls_per_turn: CallsPerTurn::One, ..tools("") };
        let two =
            "<tool_call>{\"name\": \"done\", \"arguments\": {\"response\": \"a\"}}</tool_call>";
        assert_eq!(
            parse_turn(&format!("{two}\n{two}"), &one).unwrap_err(),
            CallError::TooMany { count: 2 }
        );
        assert_eq!(parse_turn(two, &one).unwrap().calls.len(), 1);
    }

    #[test]
    fn an_answer_tag_ends_a_turn_without_a_tool() {
        let turn =
            parse_turn("<think>…</think>It is <answer> 1204 </answer>", &tools("answer")).unwrap();
        assert_eq!((turn.answer.as_deref(), turn.calls.len()), (Some("1204"), 0));
        assert_eq!(turn.text, "It is");
        assert_eq!(
            parse_turn("no answer", &tools("answer")).unwrap_err().to_string(),
            "the turn calls no tool and has no `<answer>` answer"
        );
    }
}
