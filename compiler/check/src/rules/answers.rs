//! `qa_match`'s settings that cannot score anything (E0312): a `tag` to extract that is not a
//! tag name, and `set_f1` items split at nothing. Its signature types the rest.

use std::collections::BTreeSet;

use wrl_diagnostics::Diagnostic;

use super::{Ctx, word};
use crate::value::{Obj, SigExpr, V, Val};

pub(super) fn check(ctx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    let mut seen = BTreeSet::new();
    for d in ctx.recipe.decls.iter().filter(|d| !d.std) {
        walk(
            &d.value,
            &mut |o| {
                if short(&o.ctor) == "qa_match" {
                    qa_match(ctx, o, &mut seen, out);
                }
            },
            0,
        );
    }
}

fn short(ctor: &str) -> &str {
    ctor.rsplit("::").next().unwrap_or(ctor)
}

/// Every object inside `v`, signals of reward expressions included.
pub(super) fn walk<'a>(v: &'a Val, f: &mut dyn FnMut(&'a Obj), depth: usize) {
    if depth > 32 {
        return;
    }
    match &v.v {
        V::Obj(o) => {
            f(o);
            let (own, _) = o.fields.parts();
            for (_, x) in own {
                walk(x, f, depth + 1);
            }
        }
        V::Signal { expr } => sig(expr, f, depth + 1),
        V::List { items } => items.iter().for_each(|x| walk(x, f, depth + 1)),
        V::Record { fields } => fields.values().for_each(|x| walk(x, f, depth + 1)),
        V::Range { lo, hi } => {
            walk(lo, f, depth + 1);
            walk(hi, f, depth + 1);
        }
        V::Num { .. }
        | V::Qty { .. }
        | V::Bool { .. }
        | V::Str { .. }
        | V::Symbol { .. }
        | V::Enum { .. }
        | V::Dims { .. }
        | V::Ref { .. }
        | V::Unknown => {}
    }
}

fn sig<'a>(e: &'a SigExpr, f: &mut dyn FnMut(&'a Obj), depth: usize) {
    if depth > 64 {
        return;
    }
    match e {
        SigExpr::Signal { obj } => f(obj),
        SigExpr::Unary { arg, .. } => sig(arg, f, depth + 1),
        SigExpr::Binary { lhs, rhs, .. } => {
            sig(lhs, f, depth + 1);
            sig(rhs, f, depth + 1);
        }
        SigExpr::If { cond, then, otherwise } => {
            sig(cond, f, depth + 1);
            sig(then, f, depth + 1);
            sig(otherwise, f, depth + 1);
        }
        SigExpr::Const { .. } | SigExpr::Bool { .. } | SigExpr::Reward { .. } => {}
    }
}

fn qa_match(
    ctx: &Ctx<'_>,
    o: &Obj,
    seen: &mut BTreeSet<(u32, u32, &'static str)>,
    out: &mut Vec<Diagnostic>,
) {
    let text = |name: &str| match o.fields.get(name).map(|v| &v.v) {
        Some(V::Str { value }) => Some(value.as_str()),
        _ => None,
    };
    let is = |name: &str, w: &str| o.fields.get(name).and_then(word) == Some(w);
    if is("extract", "tag")
        && let (Some(tag), Some(at)) = (text("tag"), o.fields.get("tag"))
        && (tag.is_empty() || !tag.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-')))
        && !ctx.is_default(at)
        && seen.insert((at.span.start, at.span.end, "tag"))
    {
        out.push(
            Diagnostic::new("E0312", format!("`qa_match` extracts the tag `{tag}`, which is not a tag name"))
                .label(at.span, "letters, digits, `_` and `-` only")
                .help("name the tag without its angle brackets: `tag = \"answer\"` reads the last `<answer>…</answer>`"),
        );
    }
    if is("metric", "set_f1")
        && text("items") == Some("")
        && let Some(at) = o.fields.get("items")
        && seen.insert((at.span.start, at.span.end, "items"))
    {
        out.push(
            Diagnostic::new(
                "E0312",
                "`qa_match(metric: set_f1)` splits its items at an empty `items`",
            )
            .label(at.span, "an empty separator")
            .help("say what separates the items of an answer, such as `items = \",\"`"),
        );
    }
}
