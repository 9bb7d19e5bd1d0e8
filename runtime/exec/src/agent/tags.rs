//! Tag-style tool calls, as Search-R1, ZeroSearch and ARPO write them (`calls = tags() { … }`):
//! a call is the tool's one argument between its tags, `<search>capital of Osk</search>`, the
//! answer is the tool set's answer tag, and the env's response comes back inline in the same
//! sequence between the result tags, `<information>…</information>`. Decoding stops at the
//! first closing call tag ([`TagCalls::stops`]); a segment is read up to the first complete tag
//! ([`TagCalls::parse`]), what follows it ignored, and checked against the tool's typed schema
//! as a Hermes call is (`agent::toolcall`).

use serde_json::Value as Json;
use wrl_plan::params::{self, Tool, ToolKind, Toolset};

use super::toolcall::{CallError, Turn, check};

/// A tool set called by tags: each tool's tag, the answer tag, the result tag.
#[derive(Clone, Debug, PartialEq)]
pub struct TagCalls {
    pub tools: Toolset,
    /// The tag the env's response is wrapped in.
    pub result: String,
    /// Each tool's tag, in the tool set's order.
    calls: Vec<String>,
    /// The characters of a response the sequence keeps (the agent's `tool_response_chars`);
    /// `None`: all.
    pub keep: Option<usize>,
}

/// A tag found in a segment: a tool's call (its index in the tool set) or the answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Found {
    Call(usize),
    Answer,
}

impl TagCalls {
    pub fn new(tools: Toolset, tags: &params::Tags) -> TagCalls {
        let calls = tools.tools.iter().map(|t| tags.tag_of(&t.name).to_string()).collect();
        TagCalls { tools, result: tags.result.clone(), calls, keep: None }
    }

    /// Keeps at most `chars` characters of each response (`None`: all).
    pub fn keeping(self, chars: Option<usize>) -> TagCalls {
        TagCalls { keep: chars, ..self }
    }

    pub(crate) fn answer_tag(&self) -> Option<&str> {
        Some(self.tools.answer_tag.as_str()).filter(|t| !t.is_empty())
    }

    /// Every tag a segment may open, with what it is.
    fn opening(&self) -> Vec<(&str, Found)> {
        let mut all: Vec<(&str, Found)> =
            self.calls.iter().enumerate().map(|(i, t)| (t.as_str(), Found::Call(i))).collect();
        all.extend(self.answer_tag().map(|t| (t, Found::Answer)));
        all
    }

    /// The strings that end a generated segment: every closing call tag and the answer's.
    pub fn stops(&self) -> Vec<String> {
        self.opening().iter().map(|(t, _)| format!("</{t}>")).collect()
    }

    /// The env's response as the policy reads it, inline: `\n<information>…</information>\n`,
    /// cut to the characters it keeps.
    pub fn result_block(&self, response: &str) -> String {
        let response = response.trim();
        let kept = match self.keep {
            Some(n) => response.chars().take(n).collect::<String>(),
            None => response.to_string(),
        };
        format!("\n<{r}>{kept}</{r}>\n", r = self.result)
    }

    /// The tag of a tool (its own name unless the recipe gave it another).
    pub fn tag_of(&self, tool: &str) -> Option<&str> {
        let i = self.tools.tools.iter().position(|t| t.name == tool)?;
        self.calls.get(i).map(String::as_str)
    }

    /// What an instruction-tuned policy is told of the tags before its task, in its first
    /// turn's prompt (the tiny policy, whose every byte of context counts, learns them from its
    /// rewards alone); a tag-style demonstration's prompt says the same.
    pub fn instructions(&self) -> String {
        let calls: Vec<String> = self
            .tools
            .tools
            .iter()
            .filter_map(|t| {
                self.tag_of(&t.name).map(|g| format!("<{g}>…</{g}> calls `{}`", t.name))
            })
            .collect();
        let answer = match self.tools.answer_tag.as_str() {
            "" => String::new(),
            a => format!(" Give the final answer as <{a}>…</{a}>."),
        };
        format!(
            "Call a tool by writing its argument between its tags: {}. The result comes back \
             between <{r}> and </{r}>.{answer}",
            calls.join("; "),
            r = self.result
        )
    }

    /// Reads one generated segment (the text since the last result): its first complete call
    /// or answer tag, thinking (`<think>…</think>`) and text after the tag's close ignored. A
    /// tag left open, a tag opened inside another, or no tag at all is a format error.
    pub fn parse(&self, text: &str) -> Result<Turn, CallError> {
        let body = unthought(text);
        let opening = self.opening();
        let first = opening
            .iter()
            .filter_map(|(t, f)| body.find(&format!("<{t}>")).map(|at| (at, *t, *f)))
            .min_by_key(|(at, _, _)| *at);
        let Some((at, tag, found)) = first else {
            return Err(CallError::NoCall(self.answer_tag().map(str::to_string)));
        };
        let lead = body[..at].trim().to_string();
        let inner_start = at + tag.len() + 2;
        let rest = &body[inner_start..];
        let malformed = |reason: String| CallError::Malformed { index: 1, reason };
        let Some(end) = rest.find(&format!("</{tag}>")) else {
            return Err(malformed(format!("`<{tag}>` is not closed by `</{tag}>`")));
        };
        let inner = &rest[..end];
        if let Some((other, _)) = opening.iter().find(|(t, _)| inner.contains(&format!("<{t}>"))) {
            return Err(malformed(format!("`<{tag}>` holds another tag, `<{other}>`")));
        }
        let inner = inner.trim();
        match found {
            Found::Answer if inner.is_empty() => Err(malformed(format!("`<{tag}>` is empty"))),
            Found::Answer => Ok(Turn { text: lead, calls: Vec::new(), answer: Some(inner.into()) }),
            Found::Call(i) => {
                let tool = self.tools.tools.get(i).ok_or_else(|| malformed("no tool".into()))?;
                let args = arguments(tool, inner).map_err(malformed)?;
                Ok(Turn { text: lead, calls: vec![check(1, tool, &args)?], answer: None })
            }
        }
    }
}

/// `text` without its complete `<think>…</think>` blocks; an unclosed one runs to the end.
fn unthought(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find("<think>") {
        out.push_str(&rest[..open]);
        match rest[open..].find("</think>") {
            Some(close) => rest = &rest[open + close + "</think>".len()..],
            None => return out,
        }
    }
    out.push_str(rest);
    out
}

/// A tag's body as the tool's arguments: its one required parameter (a string, or a list of
/// one), the others left to their defaults; a tool without one takes no text.
fn arguments(tool: &Tool, body: &str) -> Result<serde_json::Map<String, Json>, String> {
    let mut args = serde_json::Map::new();
    let required: Vec<_> = tool.params.iter().filter(|p| p.default.is_none()).collect();
    match required.as_slice() {
        [] if body.is_empty() => {}
        [] => return Err(format!("`{}` takes no text, and the tag holds some", tool.name)),
        [p] => {
            let value = match &p.ty.kind {
                ToolKind::List(_) => Json::Array(vec![Json::String(body.into())]),
                _ => Json::String(body.into()),
            };
            args.insert(p.name.clone(), value);
        }
        // The checker refuses such a tool (E0421).
        _ => return Err(format!("`{}` takes several arguments, not one text", tool.name)),
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use wrl_plan::params::{CallsPerTurn, Coordinates, Literal, ToolParam, ToolTy};

    use super::*;
    use crate::agent::toolcall::Arg;

    fn param(name: &str, ty: &str, default: Option<Literal>) -> ToolParam {
        ToolParam { name: name.into(), ty: ToolTy::parse(ty).unwrap(), default }
    }

    fn calls(own: &[(&str, &str)]) -> TagCalls {
        let tools = Toolset {
            coordinates: Coordinates::ElementIds,
            calls_per_turn: CallsPerTurn::One,
            answer_tag: "answer".into(),
            mcp: Vec::new(),
            tools: vec![
                Tool {
                    name: "search".into(),
                    params: vec![
                        param("query", "string", None),
                        param("k", "int(min: 1)", Some(Literal::Num(3.0))),
                    ],
                    terminal: false,
                },
                Tool {
                    name: "visit".into(),
                    params: vec![param("url", "list(string)", None)],
                    terminal: false,
                },
                Tool { name: "give_up".into(), params: vec![], terminal: true },
            ],
        };
        let tools_map: BTreeMap<String, String> =
            own.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
        TagCalls::new(tools, &params::Tags { result: "information".into(), tools: tools_map })
    }

    #[test]
    fn a_call_is_its_tags_body_checked_against_the_tool() {
        let t = calls(&[]);
        let turn = t
            .parse("<think>who founded it?</think>Let me look. <search> Osk founder </search>")
            .unwrap();
        assert_eq!(turn.text, "Let me look.");
        assert_eq!(turn.calls[0].name, "search");
        assert_eq!(turn.calls[0].args["query"], Arg::Str("Osk founder".into()));
        assert_eq!(turn.calls[0].args["k"], Arg::Int(3));
        let visit = t.parse("<visit>/wiki/article/osk</visit>").unwrap();
        assert_eq!(
            visit.calls[0].args["url"],
            Arg::List(vec![Arg::Str("/wiki/article/osk".into())])
        );
        let done = t.parse("<give_up></give_up>").unwrap();
        assert!(done.calls[0].terminal);
        assert_eq!(t.stops(), ["</search>", "</visit>", "</give_up>", "</answer>"]);
        assert_eq!(t.result_block(" hits "), "\n<information>hits</information>\n");
        let cut = calls(&[]).keeping(Some(3));
        assert_eq!(cut.result_block("héllo"), "\n<information>hél</information>\n");
    }

    #[test]
    fn the_first_complete_tag_counts_and_what_follows_is_ignored() {
        let t = calls(&[]);
        // Several tags: the first; the text after its close (a made-up result, a second call)
        // is not read.
        let turn =
            t.parse("<search>a</search><information>fake</information><search>b</search>").unwrap();
        assert_eq!(
            (turn.calls.len(), turn.calls[0].args["query"].clone()),
            (1, Arg::Str("a".into()))
        );
        let answered = t.parse("<answer>1204</answer> <search>later</search>").unwrap();
        assert_eq!((answered.answer.as_deref(), answered.calls.len()), (Some("1204"), 0));
        // A tag inside thinking is not a call.
        let thought = t.parse("<think><search>x</search></think><answer>Avel</answer>").unwrap();
        assert_eq!(thought.answer.as_deref(), Some("Avel"));
    }

    #[test]
    fn unclosed_nested_and_missing_tags_are_format_errors() {
        let t = calls(&[]);
        let err = |s: &str| t.parse(s).unwrap_err().to_string();
        assert_eq!(
            err("<search>never closed"),
            "tool call 1: `<search>` is not closed by `</search>`"
        );
        assert_eq!(
            err("<search>a <visit>b</visit></search>"),
            "tool call 1: `<search>` holds another tag, `<visit>`"
        );
        assert_eq!(
            err("<search>a <search>b</search>"),
            "tool call 1: `<search>` holds another tag, `<search>`"
        );
        assert_eq!(err("I think it is 12."), "the turn calls no tool and has no `<answer>` answer");
        assert_eq!(
            err("<think>unclosed <search>x</search>"),
            "the turn calls no tool and has no `<answer>` answer"
        );
        assert_eq!(err("<answer> </answer>"), "tool call 1: `<answer>` is empty");
        assert_eq!(
            err("<give_up>now</give_up>"),
            "tool call 1: `give_up` takes no text, and the tag holds some"
        );
        // A closing tag of another tool does not close this one.
        assert!(err("<search>a</visit>").contains("not closed"));
    }

    #[test]
    fn a_tool_may_have_its_own_tag() {
        let t = calls(&[("search", "query")]);
        assert_eq!(t.tag_of("search"), Some("query"));
        let turn = t.parse("<query>Osk</query>").unwrap();
        assert_eq!(turn.calls[0].name, "search");
        // Its name is no longer a tag of the turn.
        assert!(t.parse("<search>Osk</search>").is_err());
        assert_eq!(t.stops()[0], "</query>");
    }
}
