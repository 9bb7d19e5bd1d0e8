//! Tag-style tool calls (`calls = tags() { … }`, Search-R1): the policy writes a call as the
//! tool's one argument between its tags, `<search>query</search>`, and reads the env's answer
//! between the result tags in the same sequence. A tool whose arguments cannot be written as
//! one string body cannot be called that way (E0421); tags that name no tool, are no tag
//! name, or that two meanings share — a result tag that is also a call tag, two tools with one
//! tag, a call tag that is the answer tag — make turns that cannot be read back (E0422).

use std::collections::BTreeMap;

use wrl_diagnostics::{Diagnostic, Span};

use super::Ctx;
use crate::suggest::did_you_mean;
use crate::value::{Obj, ToolV, V, Val};

pub(super) fn check(ctx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    for d in ctx.recipe.decls.iter().filter(|d| !d.std) {
        let V::Obj(agent) = &d.value.v else { continue };
        if agent.kind != "agent" || agent.ctor != "react" {
            continue;
        }
        let Some(calls) = agent.fields.get("calls") else { continue };
        let Some(tags) = ctx.obj(calls).filter(|o| o.kind == "call_format") else { continue };
        let Some(env) = agent.fields.get("env").and_then(|e| ctx.obj(e)) else { continue };
        let Some(set) = env.fields.get("tools").and_then(|t| ctx.obj(t)) else { continue };
        if set.kind != "tools" {
            continue;
        }
        bodies(calls.span, set, out);
        names(ctx, calls.span, tags, set, out);
    }
}

/// The parameter a tool's body fills: its one required parameter, or none when every
/// parameter has a default; `Err` with why when the arguments are not one string body.
pub(crate) fn body_param(tool: &ToolV) -> Result<Option<&str>, String> {
    let required: Vec<_> = tool.params.iter().filter(|p| p.default.is_none()).collect();
    match required.as_slice() {
        [] => Ok(None),
        [p] if is_text(&p.ty) => Ok(Some(&p.name)),
        [p] => Err(format!("its argument `{}` is `{}`, not text", p.name, p.ty)),
        ps => {
            let list: Vec<String> = ps.iter().map(|p| format!("`{}`", p.name)).collect();
            Err(format!("it needs {} arguments ({})", ps.len(), list.join(", ")))
        }
    }
}

/// A type whose value a tag's text body can be: a string, or a list of strings (of one).
fn is_text(ty: &str) -> bool {
    let ty: String = ty.chars().filter(|c| !c.is_whitespace()).collect();
    ty == "string" || ty == "list(string)"
}

/// E0421: every tool of the set is called with one string body.
fn bodies(calls: Span, set: &Obj, out: &mut Vec<Diagnostic>) {
    for tool in &set.tools {
        let Err(why) = body_param(tool) else { continue };
        out.push(
            Diagnostic::new(
                "E0421",
                format!("tool `{}` cannot be called by tags: {why}", tool.name),
            )
            .label(tool.span, "declared here")
            .label(calls, "the agent calls its tools by tags")
            .help(format!(
                "a tag-style call is `<{n}>TEXT</{n}>`: give `{n}` one `string` argument (the others with defaults), use a tool set without it, or set `calls = hermes`",
                n = tool.name
            )),
        );
    }
}

/// Why `tag` is no tag name: `<tag>` must read back as the tag and nothing else.
pub(super) fn bad_tag(tag: &str) -> Option<&'static str> {
    if tag.is_empty() {
        return Some("it is empty");
    }
    if tag.chars().any(|c| c.is_whitespace() || matches!(c, '<' | '>' | '/' | '"' | '\'' | '=')) {
        return Some("a tag name has no spaces, `<`, `>`, `/`, quotes or `=`");
    }
    None
}

/// E0422: the tags name tools of the set, are tag names, and no two meanings share one.
fn names(ctx: &Ctx<'_>, calls: Span, tags: &Obj, set: &Obj, out: &mut Vec<Diagnostic>) {
    let span_of = |field: &str| tags.fields.get(field).map_or(calls, |v| span_or(ctx, v, calls));
    let mut problem = |span: Span, message: String, label: String, help: String| {
        out.push(Diagnostic::new("E0422", message).label(span, label).help(help));
    };
    let mut shared = Vec::new();
    let tool_names: Vec<&str> = set.tools.iter().map(|t| t.name.as_str()).collect();
    let own: BTreeMap<&str, (&str, Span)> = match tags.fields.get("tools").map(|v| &v.v) {
        Some(V::Record { fields }) => fields
            .iter()
            .filter_map(|(k, v)| match &v.v {
                V::Str { value } => Some((k.as_str(), (value.as_str(), v.span))),
                _ => None,
            })
            .collect(),
        _ => BTreeMap::new(),
    };
    for (tool, (_, span)) in &own {
        if tool_names.contains(tool) {
            continue;
        }
        let list: Vec<String> = tool_names.iter().map(|n| format!("`{n}`")).collect();
        let help = did_you_mean(tool, tool_names.iter().copied())
            .unwrap_or_else(|| format!("its tools are {}", list.join(", ")));
        let at = ctx.find_word(tags.fields.get("tools").map_or(*span, |v| v.span), tool);
        problem(
            at,
            format!("`tags` gives a tag to `{tool}`, which the agent's tool set does not have"),
            "not a tool of this tool set".into(),
            help,
        );
    }
    // Every tag of the turn with what it means and where it is written.
    let mut meanings: Vec<(String, String, Span)> = Vec::new();
    for tool in &set.tools {
        let (tag, span) = match own.get(tool.name.as_str()) {
            Some((t, s)) => (t.to_string(), *s),
            None => (tool.name.clone(), tool.span),
        };
        meanings.push((tag, format!("the call tag of `{}`", tool.name), span));
    }
    if let Some(V::Str { value }) = set.fields.get("answer_tag").map(|v| &v.v)
        && !value.is_empty()
    {
        let span = set.fields.get("answer_tag").map_or(calls, |v| span_or(ctx, v, calls));
        meanings.push((value.clone(), "the tool set's answer tag".into(), span));
    }
    if let Some(V::Str { value }) = tags.fields.get("result").map(|v| &v.v) {
        meanings.push((value.clone(), "the result tag".into(), span_of("result")));
    }
    meanings.push(("think".into(), "the thinking tag".into(), calls));
    for (i, (tag, what, span)) in meanings.iter().enumerate() {
        if let Some(why) = bad_tag(tag) {
            problem(
                *span,
                format!("`{tag}` cannot be {what}: {why}"),
                "not a tag name".into(),
                "write a bare name, as `<information>` is written `information`".into(),
            );
            continue;
        }
        let Some((_, first, first_span)) = meanings[..i].iter().find(|(t, _, _)| t == tag) else {
            continue;
        };
        let mut d = Diagnostic::new("E0422", format!("`<{tag}>` is both {first} and {what}"))
            .label(*span, format!("{what} is `{tag}`"));
        if first_span != span {
            d = d.label(*first_span, format!("{first} is `{tag}`"));
        }
        shared.push(d.help(format!(
            "a turn's `<{tag}>` must mean one thing: give one of them another tag (`tags() {{ tools = {{ … }} }}`, `result = …`, `answer_tag = …`)"
        )));
    }
    out.extend(shared);
}

/// Where a value is written, or `fallback` when it is a stdlib default.
fn span_or(ctx: &Ctx<'_>, v: &Val, fallback: Span) -> Span {
    if ctx.is_default(v) { fallback } else { v.span }
}
