//! The stage pipeline: stages that start from each other's output (E0416), RL stages with no
//! phases to run (E0417), and stages that would train a frozen API model (E0415).

use std::collections::{BTreeMap, BTreeSet};

use wrl_diagnostics::{Diagnostic, Span};
use wrl_syntax::ast::DeclKind;

use super::{Ctx, RL_CTORS};
use crate::value::{Obj, V, Val};

pub(super) fn check(ctx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    for (decl, o) in ctx.stages() {
        if RL_CTORS.contains(&o.ctor.as_str())
            && let Some(p) = o.fields.get("phases")
            && matches!(&p.v, V::List { items } if items.is_empty())
        {
            out.push(
                        Diagnostic::new("E0417", format!("stage `{}` has no phases", decl.name))
                            .label(p.span, "an empty list: nothing would be trained")
                            .help("give at least one phase: `phases = [{ iters = 90, horizon = 15 steps, lr = 1e-6 }]`"),
                    );
        }
        frozen(ctx, &decl.name, o, out);
    }
    cycles(ctx, out);
}

fn frozen(ctx: &Ctx<'_>, stage: &str, o: &Obj, out: &mut Vec<Diagnostic>) {
    let Some(init) = o.fields.get("init").or_else(|| o.fields.get("model")) else { return };
    if ctx.base_model(init).is_none_or(|m| m.ctor != "api") {
        return;
    }
    let name = Ctx::ref_name(init).unwrap_or("this model");
    let mut d = Diagnostic::new(
        "E0415",
        format!("stage `{stage}` would train `{name}`, a frozen API model"),
    )
    .label(init.span, "served behind an API: no weights to update");
    if let Some(s) = Ctx::ref_name(init).and_then(|n| ctx.name_span(n)) {
        d = d.label(s, "declared with `api(…)`");
    }
    out.push(d.help("start the stage from a local model (`hf(\"…\")` or `std::models::tiny`); an API model is a judge, a frozen module, or a policy an evaluation runs as declared"));
}

/// References from one stage to other stages, with where they are written.
fn stage_refs<'a>(v: &'a Val, out: &mut Vec<(&'a str, Span)>) {
    if let V::Ref { decl, kind: DeclKind::Stage, .. } = &v.v {
        out.push((decl, v.span));
    }
    v.each_child(|c| stage_refs(c, out));
}

fn cycles(ctx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    let mut deps: BTreeMap<&str, Vec<(&str, Span)>> = BTreeMap::new();
    let mut order: Vec<&str> = Vec::new();
    for (decl, _) in ctx.stages() {
        let mut refs = Vec::new();
        stage_refs(&decl.value, &mut refs);
        deps.insert(&decl.name, refs);
        order.push(&decl.name);
    }
    let mut reported: BTreeSet<Vec<&str>> = BTreeSet::new();
    for start in &order {
        // Depth-first from each stage, looking for a path back to it.
        let mut path: Vec<(&str, Span)> = Vec::new();
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        if let Some(cycle) = find(start, start, &deps, &mut path, &mut seen) {
            let mut key: Vec<&str> = cycle.iter().map(|(n, _)| *n).collect();
            key.sort();
            if !reported.insert(key) {
                continue;
            }
            let mut names: Vec<&str> = vec![start];
            names.extend(cycle.iter().map(|(n, _)| *n));
            let chain: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
            let mut d = Diagnostic::new(
                "E0416",
                format!("stages depend on each other: {}", chain.join(" → ")),
            );
            let mut from = *start;
            for (to, span) in &cycle {
                d = d.label(*span, format!("`{from}` starts from `{to}`"));
                from = to;
            }
            out.push(d.help("a stage starts from a model or an earlier stage's output; one stage of this cycle must start from a model"));
        }
    }
}

fn find<'a>(
    target: &str,
    at: &'a str,
    deps: &BTreeMap<&'a str, Vec<(&'a str, Span)>>,
    path: &mut Vec<(&'a str, Span)>,
    seen: &mut BTreeSet<&'a str>,
) -> Option<Vec<(&'a str, Span)>> {
    for (next, span) in deps.get(at).into_iter().flatten() {
        path.push((next, *span));
        if *next == target {
            return Some(path.clone());
        }
        if seen.insert(next)
            && let Some(c) = find(target, next, deps, path, seen)
        {
            return Some(c);
        }
        path.pop();
    }
    None
}
