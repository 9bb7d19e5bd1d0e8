//! `tags_ok`'s rules that no turn could keep (E0316): no tag listed, a tag that is no tag name
//! (`"<think>"` with its brackets), a tag listed twice, a `required` tag the rule does not list.
//! Each would score every episode 0, found only after the run.

use std::collections::BTreeSet;

use wrl_diagnostics::{Diagnostic, Span};

use super::Ctx;
use super::answers::walk;
use super::tags::bad_tag;
use crate::suggest::did_you_mean;
use crate::value::{Obj, V, Val};

pub(super) fn check(ctx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    let mut seen = BTreeSet::new();
    for d in ctx.recipe.decls.iter().filter(|d| !d.std) {
        walk(
            &d.value,
            &mut |o| {
                if o.ctor.rsplit("::").next() == Some("tags_ok") {
                    rule(ctx, o, &mut seen, out);
                }
            },
            0,
        );
    }
}

/// The strings of a list field, each with its span (other items are the type checker's).
fn strings(v: Option<&Val>) -> Vec<(&str, Span)> {
    match v.map(|v| &v.v) {
        Some(V::List { items }) => items
            .iter()
            .filter_map(|i| match &i.v {
                V::Str { value } => Some((value.as_str(), i.span)),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn rule(ctx: &Ctx<'_>, o: &Obj, seen: &mut BTreeSet<(u32, u32)>, out: &mut Vec<Diagnostic>) {
    let Some(list) = o.fields.get("tags") else { return };
    // A profile's check walks the same signal again: one report per place.
    if !seen.insert((list.span.start, list.span.end)) {
        return;
    }
    let tags = strings(Some(list));
    if tags.is_empty() && matches!(list.v, V::List { .. }) {
        out.push(
            Diagnostic::new("E0316", "`tags_ok` lists no tag")
                .label(list.span, "no tag to hold the turns to")
                .help("list the tags a turn writes, by name: `tags_ok([\"think\", \"answer\"])`"),
        );
    }
    let mut listed = BTreeSet::new();
    for &(tag, span) in &tags {
        if let Some(why) = bad_tag(tag) {
            out.push(
                Diagnostic::new("E0316", format!("`tags_ok` lists `{tag}`, which is not a tag name"))
                    .label(span, why)
                    .help("name the tag without its angle brackets: `\"think\"` is the block `<think>…</think>`"),
            );
        } else if !listed.insert(tag) {
            out.push(
                Diagnostic::new("E0316", format!("`tags_ok` lists the tag `{tag}` twice"))
                    .label(span, "listed again")
                    .help(
                        "list each tag once; `order = listed` already lets a tag repeat in place",
                    ),
            );
        }
    }
    let required = o.fields.get("required").filter(|r| !ctx.is_default(r));
    for (tag, span) in strings(required) {
        if !listed.contains(tag) && bad_tag(tag).is_none() {
            let help = did_you_mean(tag, listed.iter().copied()).unwrap_or_else(|| {
                format!("add `\"{tag}\"` to the rule's tags, or require one of them")
            });
            out.push(
                Diagnostic::new(
                    "E0316",
                    format!("`tags_ok` requires `{tag}`, which it does not list"),
                )
                .label(span, "not among the rule's tags")
                .help(help),
            );
        }
    }
}
