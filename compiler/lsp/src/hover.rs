//! Hover: for a field, its stdlib doc, type, unit, default, and its resolved value in the
//! recipe and in each profile with the override that set it; for a name, its declaration; for
//! a quantity or a number with a magnitude, its normalised value.

use std::fmt::Write as _;

use lsp_types::{Hover, HoverContents, MarkupContent, MarkupKind, Position};
use wrl_check::query::overrides_at;
use wrl_check::{Ty, Val};

use crate::analysis::{Analysis, DOC};
use crate::place::{Place, describe, value};
use crate::show;
use crate::stdlib::{self, doc_text, one_line};
use crate::target::{Target, of_node};
use crate::view::View;
use crate::walk::{Node, Root, Step, find, node_span};

/// Where prose in a hover is wrapped (terminal editors show the line breaks).
const WIDTH: usize = 88;

pub fn hover(view: &View<'_>, pos: Position) -> Option<Hover> {
    let an = view.analysis()?;
    // The first line, where nothing else answers (a recipe's header comment): its identity.
    match hover_at(view, an, pos) {
        None if pos.line == 0 => identity(an),
        found => found,
    }
}

fn hover_at(view: &View<'_>, an: &Analysis, pos: Position) -> Option<Hover> {
    let offset = view.offset(pos);
    let (root, steps, node) = find(an.file.as_ref()?, offset)?;
    let text = match &node {
        Node::Quantity { expr, number, unit, .. } => {
            let mut s = format!(
                "`{}` = **{}**",
                an.slice(expr.span),
                show::qty(number.value * unit.scale, unit.dim)
            );
            let place = describe(&an.tables, an.recipe.as_ref(), &root, &steps, None);
            if let (Some(f), Some(o)) = (&place.field, &place.owner) {
                let _ = write!(s, "\n\nin `{f}` of `{}`: {}", o.qual, describe_ty(&place));
            }
            s
        }
        Node::Number { span, number: Some(n) } => {
            let written = an.slice(*span);
            if !wrl_syntax::tokens::MAGNITUDES.iter().any(|(m, _)| written.ends_with(m)) {
                return None;
            }
            format!("`{written}` = **{}**", show::group(&wrl_plan::show_num(n.value)))
        }
        Node::ProfileName(name) => profile(an, &name.name)?,
        Node::FileRef { path, alias: None } => {
            let doc = an.file_name(DOC).unwrap_or("");
            let joined = wrl_check::join_relative(doc, &path.value);
            let read = if an.reads(&joined) { "read" } else { "not found" };
            format!("file `{joined}` ({read})")
        }
        other => {
            let target = of_node(an, &root, &steps, other, offset)?;
            target_text(an, &target, &root, &steps, other)?
        }
    };
    let range = view.range(node_span(&node));
    Some(Hover {
        contents: HoverContents::Markup(MarkupContent { kind: MarkupKind::Markdown, value: text }),
        range: Some(range),
    })
}

fn describe_ty(p: &Place) -> String {
    let mut s = match (&p.ty_text, &p.ty) {
        (Some(t), _) => format!("`{t}`"),
        (None, Some(t)) => t.describe(),
        (None, None) => "any value".into(),
    };
    if let (Some(Ty::Qty { dim, .. }), Some(_)) = (&p.ty, &p.ty_text) {
        let _ = write!(s, " (in {})", dim.canonical_unit());
    }
    match &p.default {
        Some(d) => {
            let _ = write!(s, ", default `{d}`");
        }
        None if p.slot.is_some() && p.field == p.slot => s.push_str(", required"),
        None => {}
    }
    s
}

fn target_text(
    an: &Analysis,
    t: &Target,
    root: &Root<'_>,
    steps: &[Step],
    node: &Node<'_>,
) -> Option<String> {
    Some(match t {
        Target::Field(place) => field(an, place, root, steps, node),
        Target::Enum { word, place } => {
            let mut s = format!("`{word}`");
            if let (Some(f), Some(o)) = (&place.field, &place.owner) {
                let _ = write!(s, ": a value of `{f}` of `{}`", o.qual);
            }
            if let Some(ty) = &place.ty {
                let _ = write!(s, "\n\n{}", ty.describe());
            }
            if let Some(d) = &place.default {
                let _ = write!(s, ", default `{d}`");
            }
            s
        }
        Target::Decl(d) => {
            let head = an
                .sources
                .get(d.span.file)
                .map(|f| first_line(f.slice(d.span)))
                .unwrap_or_default();
            let mut s = format!("```wrl\n{head}\n```");
            if let Some(doc) = &d.doc {
                let _ = write!(s, "\n\n{}", show::wrap(&doc_text(doc), WIDTH));
            }
            let file = an.file_name(d.name_span.file).unwrap_or("");
            if d.std {
                let _ = write!(s, "\n\n`{}` (stdlib)", d.key);
            } else if d.name_span.file != DOC {
                let line = an
                    .sources
                    .get(d.name_span.file)
                    .map_or(0, |f| f.line_col(d.name_span.start as usize).line);
                let _ = write!(s, "\n\ndeclared in `{file}` line {line}");
            }
            s
        }
        Target::Builtin(b) => {
            let (_, doc) = stdlib::index().builtin(&b.module, &b.name)?;
            let mut s = format!("```wrl\n{}\n```", doc.signature);
            if let Some(d) = &doc.doc {
                let _ = write!(s, "\n\n{}", show::wrap(d, WIDTH));
            }
            let fields: Vec<String> =
                b.slots.iter().filter(|s| !s.positional).map(|s| format!("`{}`", s.name)).collect();
            if !fields.is_empty() {
                let _ = write!(s, "\n\nfields: {}", fields.join(", "));
            }
            s
        }
        Target::Module(m) => {
            let items: Vec<String> =
                an.tables.members(&m.path).into_iter().map(|(n, _)| format!("`{n}`")).collect();
            format!("module `{}`\n\n{}", m.path, items.join(", "))
        }
        Target::GraphModule { name, .. } => format!("module `{name}` of this agent graph"),
    })
}

/// The first line of an item (its doc comment excluded), cut at 100 characters.
fn first_line(item: &str) -> String {
    let line = item.lines().find(|l| !l.trim_start().starts_with("///")).unwrap_or("").trim_end();
    let short: String = line.chars().take(100).collect();
    if short.len() < line.len() { format!("{short} …") } else { short }
}

fn field(an: &Analysis, p: &Place, root: &Root<'_>, steps: &[Step], node: &Node<'_>) -> String {
    let name = p.field.clone().unwrap_or_default();
    let mut s = match &p.owner {
        Some(o) if p.slot == p.field => {
            format!("**`{name}`** · field of `{}` ({})", o.qual, o.kind)
        }
        Some(o) => {
            format!("**`{name}`** · in `{}` of `{}`", p.slot.as_deref().unwrap_or(""), o.qual)
        }
        None => format!("**`{name}`**"),
    };
    if p.owner.is_some() {
        let _ = write!(s, "\n\n{}", describe_ty(p));
    }
    if let (Some(o), Some(slot)) = (&p.owner, &p.slot)
        && let Some((_, doc)) = stdlib::index().builtin(&o.module, &o.name)
        && let Some((_, Some(d))) = doc.slots.get(slot)
    {
        let _ = write!(s, "\n\n{}", show::wrap(d, WIDTH));
    }
    let Some(recipe) = an.recipe.as_ref() else { return s };
    match &p.path {
        Some((key, path)) => {
            if let Some(v) = value(recipe, key, path) {
                let _ = write!(s, "\n\n**value** `{}`{}", show::val(v), origin(an, v));
            }
            let mut unchanged = Vec::new();
            for prof in &recipe.profiles {
                let touching = overrides_at(prof, key, path);
                if touching.is_empty() {
                    unchanged.push(format!("`{}`", prof.name));
                    continue;
                }
                let shown = recipe
                    .with_named(&prof.name)
                    .ok()
                    .and_then(|r| value(&r, key, path).map(show::val))
                    .unwrap_or_else(|| "?".into());
                let by: Vec<String> = touching
                    .iter()
                    .map(|o| {
                        let line = an
                            .sources
                            .get(o.span.file)
                            .map_or(0, |f| f.line_col(o.span.start as usize).line);
                        format!("`{}` (line {line})", short(&one_line(an.slice(o.span))))
                    })
                    .collect();
                let _ =
                    write!(s, "\n- profile `{}`: `{shown}`, set by {}", prof.name, by.join(", "));
            }
            if !unchanged.is_empty() {
                let _ = write!(s, "\n- unchanged in profile {}", unchanged.join(", "));
            }
        }
        None => {
            // Inside a reward expression or an operator: no path, but the value written here
            // is in the recipe, found by its place.
            let value_span = match node {
                Node::Field { value: Some(v), .. } => Some(v.span),
                _ => None,
            };
            if let (Root::Decl(d), Some(span)) = (root, value_span)
                && let Some(decl) = recipe.decl(&d.name.name)
                && let Some(v) = crate::find::by_span(&decl.value, span)
            {
                let _ = write!(s, "\n\n**value** `{}`", show::val(v));
            }
            let _ = steps;
        }
    }
    s
}

fn short(s: &str) -> String {
    let cut: String = s.chars().take(60).collect();
    if cut.len() < s.len() { format!("{cut}…") } else { cut }
}

/// Where a value was written: here, in an `extends` block, in another file, or the default.
fn origin(an: &Analysis, v: &Val) -> String {
    match an.sources.get(v.span.file) {
        Some(f) if f.name.starts_with("std/") => " (the default)".into(),
        Some(f) if v.span.file == DOC => {
            format!(" (line {})", f.line_col(v.span.start as usize).line)
        }
        Some(f) => format!(" (from `{}` line {})", f.name, f.line_col(v.span.start as usize).line),
        None => String::new(),
    }
}

/// A profile: how many overrides, and what the plan estimates with it.
fn profile(an: &Analysis, name: &str) -> Option<String> {
    let recipe = an.recipe.as_ref()?;
    let p = recipe.profiles.iter().find(|p| p.name == name)?;
    let word = p.kind.word();
    let mut s =
        format!("{word} `{name}`: {} overrides (`wrlc run --{word} {name}`)", p.overrides.len());
    if let Some((_, Some(e))) = an.estimates().profiles.iter().find(|(n, _)| n == name) {
        let _ = write!(
            s,
            "\n\n{} trajectories · ≤ {} env steps · {} optimizer steps",
            show::count(e.trajectories),
            show::count(e.max_env_steps),
            show::count(e.optimizer_steps)
        );
    }
    Some(s)
}

/// On a recipe's first line: its identity, and each profile's (`wrlc plan` states the same).
fn identity(an: &Analysis) -> Option<Hover> {
    let ids = an.identities();
    if ids.is_empty() {
        return None;
    }
    let mut s = String::from("**recipe identity** (`wrlc plan`, `wrlc diff`)\n");
    for (profile, id) in &ids {
        let which = profile.as_deref().map_or("recipe".to_string(), |p| format!("profile `{p}`"));
        let _ = write!(s, "\n- {which}: `{}` (wrlc {})", id.plan, id.wrlc);
    }
    Some(Hover {
        contents: HoverContents::Markup(MarkupContent { kind: MarkupKind::Markdown, value: s }),
        range: None,
    })
}
