//! Completion: the fields of the enclosing constructor (with types and defaults), record
//! fields (in a dataset's `columns`, its record kind's fields), constructors and declarations of
//! the kind a slot takes, the enum words valid at that field, `std::` paths, override paths in
//! profiles, and units after a number.

use lsp_types::{
    CompletionItem, CompletionItemKind, CompletionResponse, Documentation, MarkupContent,
    MarkupKind, Position,
};
use wrl_check::query::{BuiltinInfo, Resolved};
use wrl_check::{Seg, Ty, V};
use wrl_diagnostics::Span;
use wrl_syntax::ast::{self, DeclKind, Ident};
use wrl_syntax::tokens::{DECL_KINDS, UNITS};

use crate::analysis::{Analysis, DOC};
use crate::context::{Frame, Want, at};
use crate::place::{Place, describe, value};
use crate::stdlib;
use crate::view::View;
use crate::walk::{Root, Step};

pub fn complete(view: &View<'_>, pos: Position) -> Option<CompletionResponse> {
    let an = view.analysis()?;
    let offset = view.offset(pos);
    let ctx = at(view.doc.text.get(..offset)?);
    let mut items = Vec::new();
    let ident = |name: &str| Ident { name: name.to_string(), span: Span::default() };
    // The root: the override being written, else the declaration.
    let (over, rest) = match ctx.frames.split_first() {
        Some((Frame::Overrides { key }, rest)) => (Some(key.clone()), rest),
        _ => (None, ctx.frames.as_slice()),
    };
    let decl_holder;
    let over_ident;
    let root = match (&over, &ctx.decl) {
        (Some(Some(path)), _) => {
            let (head, segs) = override_path(path);
            over_ident = ident(&head);
            Root::Override { decl: &over_ident, path: segs }
        }
        (Some(None), _) => Root::None,
        (None, Some((kind, name))) => {
            decl_holder = dummy_decl(*kind, name);
            Root::Decl(&decl_holder)
        }
        (None, None) => Root::None,
    };
    if !ctx.qualifier.is_empty() {
        qualified(
            an,
            &ctx.qualifier,
            ctx.member,
            over.is_some() && rest.is_empty() && ctx.want == Want::Key,
            &mut items,
        );
        return Some(CompletionResponse::Array(items));
    }
    match ctx.want {
        Want::Item => {
            for w in DECL_KINDS.iter().chain(&["use", "profile", "extends"]) {
                items.push(item(w, CompletionItemKind::KEYWORD, None, None, None));
            }
        }
        Want::Key => match (rest.last(), over.is_some()) {
            (None, true) => {
                for (name, r) in an.tables.visible(DOC) {
                    if let Resolved::Decl(d) = r
                        && !d.std
                    {
                        items.push(item(
                            &name,
                            CompletionItemKind::VARIABLE,
                            Some(d.kind.word().into()),
                            None,
                            None,
                        ));
                    }
                }
            }
            (Some(Frame::Call { ctor, positional, keys, .. }), _) => {
                if let Some(b) = builtin(an, ctor) {
                    slot_items(&b, *positional, keys, ": ", &mut items);
                }
            }
            (Some(Frame::Block { ctor, keys, .. }), _) => {
                if let Some(b) = builtin(an, ctor) {
                    slot_items(&b, usize::MAX, keys, " = ", &mut items);
                }
            }
            (Some(Frame::Record { keys, .. }), _) => {
                let steps = frame_steps(&rest[..rest.len() - 1]);
                let p = describe(&an.tables, an.recipe.as_ref(), &root, &steps, None);
                if let Some(Ty::Record(fs)) = p.ty.as_ref().map(record_of) {
                    for (name, ty) in fs.iter().filter(|(n, _)| !keys.contains(n)) {
                        items.push(item(
                            name,
                            CompletionItemKind::FIELD,
                            Some(ty.describe()),
                            None,
                            Some(format!("{name} = ")),
                        ));
                    }
                } else if let Some(Ty::Map(_)) = p.ty.as_ref() {
                    for name in map_keys(an, &p).iter().filter(|n| !keys.iter().any(|k| k == *n)) {
                        items.push(item(
                            name,
                            CompletionItemKind::FIELD,
                            Some("a column name (a string)".into()),
                            None,
                            Some(format!("{name} = \"")),
                        ));
                    }
                }
            }
            (Some(Frame::List { .. } | Frame::Overrides { .. }) | None, _) => {}
        },
        Want::Value => {
            let steps = frame_steps(rest);
            let p = describe(&an.tables, an.recipe.as_ref(), &root, &steps, None);
            value_items(an, &p, &mut items);
        }
        Want::Unit => {
            let steps = frame_steps(rest);
            let p = describe(&an.tables, an.recipe.as_ref(), &root, &steps, None);
            let dim = match &p.ty {
                Some(Ty::Qty { dim, .. }) => Some(*dim),
                _ => None,
            };
            for u in UNITS.iter().filter(|u| dim.is_none_or(|d| u.dim == d)) {
                items.push(item(
                    u.word,
                    CompletionItemKind::UNIT,
                    Some(u.dim.describe().into()),
                    None,
                    None,
                ));
            }
        }
    }
    Some(CompletionResponse::Array(items))
}

fn dummy_decl(kind: DeclKind, name: &str) -> ast::Decl {
    ast::Decl {
        kind,
        kind_span: Span::default(),
        name: Ident { name: name.to_string(), span: Span::default() },
        value: ast::Expr::new(ast::ExprKind::Error, Span::default()),
    }
}

/// `online.phases[0].lr` → `online` and its path.
fn override_path(path: &str) -> (String, Vec<Seg>) {
    let mut parts = path.split('.');
    let head = parts.next().unwrap_or("").to_string();
    let mut segs = Vec::new();
    for p in parts {
        let (name, index) =
            p.split_once('[').map_or((p, None), |(n, i)| (n, i.trim_end_matches(']').parse().ok()));
        if !name.is_empty() {
            segs.push(Seg::Field(name.to_string()));
        }
        if let Some(i) = index {
            segs.push(Seg::Index(i));
        }
    }
    (head, segs)
}

/// The steps the frames around the cursor stand for, each with the field being written.
fn frame_steps(frames: &[Frame]) -> Vec<Step> {
    let mut steps = Vec::new();
    for f in frames {
        match f {
            Frame::Call { ctor, key, positional, .. } => {
                steps.push(Step::Ctor(ctor.clone()));
                steps.push(key.clone().map_or(Step::Positional(*positional), Step::Field));
            }
            Frame::Block { ctor, key, .. } => {
                steps.push(Step::Ctor(ctor.clone()));
                steps.push(key.clone().map_or(Step::Opaque, Step::Field));
            }
            Frame::Record { key, .. } => steps.push(key.clone().map_or(Step::Opaque, Step::Field)),
            Frame::List { index } => steps.push(Step::Item(*index)),
            Frame::Overrides { .. } => steps.push(Step::Opaque),
        }
    }
    steps
}

fn builtin(an: &Analysis, ctor: &[String]) -> Option<BuiltinInfo> {
    let names: Vec<&str> = ctor.iter().map(String::as_str).collect();
    match an.tables.resolve(DOC, &names)? {
        Resolved::Builtin(b) => Some(b),
        Resolved::Decl(_) | Resolved::Module(_) => None,
    }
}

/// The names a `map(…)` record may hold at `p`: a dataset's `columns` takes the fields of its
/// record kind, read from the checked recipe.
fn map_keys(an: &Analysis, p: &Place) -> Vec<&'static str> {
    let (Some(recipe), Some((decl, path))) = (an.recipe.as_ref(), p.path.as_ref()) else {
        return Vec::new();
    };
    let Some((Seg::Field(last), owner)) = path.split_last() else { return Vec::new() };
    let value = recipe.decls.iter().find(|d| d.name.as_str() == decl).map(|d| &d.value);
    let kind = value.and_then(|v| wrl_check::query::value_at(v, owner)).and_then(|o| match &o.v {
        V::Obj(o) if o.kind == "dataset" && last == "columns" => o.fields.get("kind"),
        _ => None,
    });
    match kind.map(|k| &k.v) {
        Some(V::Enum { value }) => wrl_check::record_fields(value).unwrap_or_default().to_vec(),
        _ => Vec::new(),
    }
}

fn record_of(t: &Ty) -> Ty {
    match t {
        Ty::OneOf(ts) => ts.iter().find(|t| matches!(t, Ty::Record(_))).cloned().unwrap_or(Ty::Any),
        other => other.clone(),
    }
}

fn item(
    label: &str,
    kind: CompletionItemKind,
    detail: Option<String>,
    doc: Option<String>,
    insert: Option<String>,
) -> CompletionItem {
    CompletionItem {
        label: label.to_string(),
        kind: Some(kind),
        detail,
        documentation: doc.map(|d| {
            Documentation::MarkupContent(MarkupContent { kind: MarkupKind::Markdown, value: d })
        }),
        insert_text: insert,
        ..CompletionItem::default()
    }
}

/// The slots of a constructor not yet given (`skip_positional`: how many positional
/// arguments are written; `MAX` in a block, which takes only named fields).
fn slot_items(
    b: &BuiltinInfo,
    skip_positional: usize,
    given: &[String],
    sep: &str,
    items: &mut Vec<CompletionItem>,
) {
    let docs = stdlib::index().builtin(&b.module, &b.name);
    let mut pos = 0;
    for s in &b.slots {
        if s.positional {
            pos += 1;
            if skip_positional == usize::MAX || pos <= skip_positional {
                continue;
            }
        }
        if given.contains(&s.name) {
            continue;
        }
        let mut doc = String::new();
        if let Some((m, d)) = docs {
            if let Some(default) = s.default.and_then(|sp| m.text.get(sp.range())) {
                doc.push_str(&format!("default `{}`", stdlib::one_line(default)));
            } else {
                doc.push_str("required");
            }
            if let Some((_, Some(text))) = d.slots.get(&s.name) {
                doc.push_str("\n\n");
                doc.push_str(text);
            }
        }
        items.push(item(
            &s.name,
            CompletionItemKind::FIELD,
            Some(s.ty_text.clone()),
            Some(doc),
            Some(format!("{}{sep}", s.name)),
        ));
    }
}

/// What a slot of type `kind` accepts from declarations and constructors of kind `have`.
fn accepts(want: &str, have: &str) -> bool {
    want == have
        || (want == "checkpoint" && matches!(have, "model" | "stage"))
        || (matches!(want, "reward" | "signal")
            && matches!(have, "signal" | "condition" | "reward"))
}

fn kinds(t: &Ty, out: &mut Vec<String>) {
    match t {
        Ty::Kind(k) => out.push(k.clone()),
        Ty::OneOf(ts) => ts.iter().for_each(|t| kinds(t, out)),
        Ty::List(t) => kinds(t, out),
        _ => {}
    }
}

fn value_items(an: &Analysis, p: &Place, items: &mut Vec<CompletionItem>) {
    let Some(ty) = &p.ty else { return };
    for w in ty.enum_values() {
        items.push(item(
            w,
            CompletionItemKind::ENUM_MEMBER,
            p.field.clone().map(|f| format!("a value of `{f}`")),
            None,
            None,
        ));
    }
    if matches!(ty, Ty::Bool) {
        for w in ["true", "false"] {
            items.push(item(w, CompletionItemKind::KEYWORD, None, None, None));
        }
    }
    if let Some(d) = &p.default {
        items.push(item(d, CompletionItemKind::VALUE, Some("the default".into()), None, None));
    }
    let mut wanted = Vec::new();
    kinds(ty, &mut wanted);
    if wanted.is_empty() {
        return;
    }
    // A profile or a variant of this recipe by its name (a claim's `profiles`, `variant`),
    // or `base`: the recipe without one.
    for (want, kind) in
        [("profile", ast::ProfileKind::Profile), ("variant", ast::ProfileKind::Variant)]
    {
        if !wanted.iter().any(|w| w == want) {
            continue;
        }
        let base = format!("the recipe without a {want}");
        items.push(item(
            wrl_check::BASE_PROFILE,
            CompletionItemKind::ENUM_MEMBER,
            Some(base),
            None,
            None,
        ));
        for p in profiles_of(an, kind) {
            items.push(item(&p, CompletionItemKind::ENUM_MEMBER, Some(want.into()), None, None));
        }
    }
    let ok = |have: &str| wanted.iter().any(|w| accepts(w, have));
    for (name, r) in an.tables.visible(DOC) {
        match r {
            Resolved::Decl(d) if ok(d.kind.word()) => {
                let label = if d.kind == DeclKind::Stage && wanted.iter().any(|w| w == "checkpoint")
                {
                    format!("{name}.model")
                } else {
                    name
                };
                items.push(item(
                    &label,
                    CompletionItemKind::VARIABLE,
                    Some(d.kind.word().into()),
                    d.doc.as_deref().map(stdlib::doc_text),
                    None,
                ));
            }
            Resolved::Builtin(b) if ok(&b.kind) => items.push(ctor_item(&name, &b)),
            Resolved::Decl(_) | Resolved::Builtin(_) | Resolved::Module(_) => {}
        }
    }
    for m in an.tables.std_modules().iter().filter(|m| m.path != "std::prelude") {
        for (name, r) in an.tables.members(&m.path) {
            let full = format!("{}::{name}", m.path);
            match r {
                Resolved::Decl(d) if ok(d.kind.word()) => items.push(item(
                    &full,
                    CompletionItemKind::VARIABLE,
                    Some(d.kind.word().into()),
                    d.doc.as_deref().map(stdlib::doc_text),
                    None,
                )),
                Resolved::Builtin(b) if ok(&b.kind) => items.push(ctor_item(&full, &b)),
                Resolved::Decl(_) | Resolved::Builtin(_) | Resolved::Module(_) => {}
            }
        }
    }
}

fn ctor_item(label: &str, b: &BuiltinInfo) -> CompletionItem {
    let doc = stdlib::index().builtin(&b.module, &b.name).map(|(_, d)| {
        let mut s = format!("```wrl\n{}\n```", d.signature);
        if let Some(text) = &d.doc {
            s.push_str("\n\n");
            s.push_str(text);
        }
        s
    });
    item(label, CompletionItemKind::CONSTRUCTOR, Some(b.kind.clone()), doc, None)
}

/// After `std::`, `std::m::`, `alias::` or `decl.`.
fn qualified(
    an: &Analysis,
    q: &[String],
    member: bool,
    in_override: bool,
    items: &mut Vec<CompletionItem>,
) {
    let names: Vec<&str> = q.iter().map(String::as_str).collect();
    if member {
        if in_override {
            return override_children(an, q, items);
        }
        if let Some(Resolved::Decl(d)) = an.tables.resolve(DOC, &names[..1])
            && d.kind == DeclKind::Stage
        {
            items.push(item(
                "model",
                CompletionItemKind::FIELD,
                Some("the stage's trained model".into()),
                None,
                None,
            ));
        }
        return;
    }
    if names == ["std"] {
        for m in an.tables.std_modules().iter().filter(|m| m.path != "std::prelude") {
            let short = m.path.trim_start_matches("std::");
            items.push(item(short, CompletionItemKind::MODULE, Some(m.path.clone()), None, None));
        }
        return;
    }
    let module = match an.tables.resolve(DOC, &names) {
        Some(Resolved::Module(m)) => m.path,
        _ => return,
    };
    for (name, r) in an.tables.members(&module) {
        match r {
            Resolved::Builtin(b) => items.push(ctor_item(&name, &b)),
            Resolved::Decl(d) => items.push(item(
                &name,
                CompletionItemKind::VARIABLE,
                Some(d.kind.word().into()),
                d.doc.as_deref().map(stdlib::doc_text),
                None,
            )),
            Resolved::Module(_) => {}
        }
    }
}

/// `online.` / `online.phases[0].` in a profile: the fields (and graph modules) there.
fn override_children(an: &Analysis, q: &[String], items: &mut Vec<CompletionItem>) {
    let Some(recipe) = an.recipe.as_ref() else { return };
    let (head, segs) = override_path(&q.join("."));
    let key = match an.tables.resolve(DOC, &[head.as_str()]) {
        Some(Resolved::Decl(d)) => d.key,
        _ => return,
    };
    let Some(v) = value(recipe, &key, &segs).map(|v| crate::place::deref(Some(recipe), v)) else {
        return;
    };
    match &v.v {
        V::Obj(o) => {
            if let Some(b) = an.tables.builtin(&o.ctor) {
                slot_items(&b, 0, &[], " = ", items);
            }
            for m in &o.modules {
                items.push(item(
                    &m.name,
                    CompletionItemKind::MODULE,
                    Some("agent-graph module".into()),
                    None,
                    None,
                ));
            }
        }
        V::Record { fields } => {
            for k in fields.keys() {
                items.push(item(k, CompletionItemKind::FIELD, None, None, Some(format!("{k} = "))));
            }
        }
        _ => {}
    }
}

/// The names of the document's profiles (or variants), in order.
fn profiles_of(an: &Analysis, kind: ast::ProfileKind) -> Vec<String> {
    let Some(file) = &an.file else { return Vec::new() };
    (file.items.iter())
        .filter_map(|it| match &it.kind {
            ast::ItemKind::Profile(p) if p.kind == kind => Some(p.name.name.clone()),
            _ => None,
        })
        .collect()
}
