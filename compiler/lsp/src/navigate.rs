//! Go to definition and find references: declarations (in this file, an imported one or the
//! stdlib), `use` imports, stdlib constructors and modules, the stdlib slot a field fills,
//! agent-graph modules, and the files of `use "…"` and `extends "…"`.

use lsp_types::{GotoDefinitionResponse, Location, Position, Range};
use wrl_diagnostics::Span;

use crate::analysis::{Analysis, DOC};
use crate::lines::LineIndex;
use crate::stdlib;
use crate::target::{Target, of_node, same};
use crate::view::View;
use crate::walk::{Node, find, node_span, walk};

pub fn definition(view: &View<'_>, pos: Position) -> Option<GotoDefinitionResponse> {
    let an = view.analysis()?;
    let offset = view.offset(pos);
    let (root, steps, node) = find(an.file.as_ref()?, offset)?;
    if let Node::FileRef { path, alias: None } = node {
        let name = wrl_check::join_relative(an.file_name(DOC)?, &path.value);
        let uri = view.conv.ws.uri_of_name(&name)?;
        return Some(GotoDefinitionResponse::Scalar(Location::new(uri, Range::default())));
    }
    let target = of_node(an, &root, &steps, &node, offset)?;
    target_location(view, an, &target).map(GotoDefinitionResponse::Scalar)
}

/// Where a target is declared.
fn target_location(view: &View<'_>, an: &Analysis, t: &Target) -> Option<Location> {
    match t {
        Target::Decl(d) => view.conv.location(an, d.name_span),
        Target::Builtin(b) => view.conv.location(an, b.name_span),
        Target::GraphModule { decl, .. } => view.conv.location(an, *decl),
        Target::Module(m) => {
            let name = an.file_name(m.file)?;
            Some(Location::new(view.conv.ws.uri_of_name(name)?, Range::default()))
        }
        Target::Field(place) | Target::Enum { place, .. } => {
            let owner = place.owner.as_ref()?;
            let slot = place.slot.as_ref()?;
            let (m, doc) = stdlib::index().builtin(&owner.module, &owner.name)?;
            let (span, _) = doc.slots.get(slot)?;
            let name_end = span.start as usize + slot.len();
            let range = stdlib_range(&m.lines, m.text, span.start as usize, name_end, view);
            Some(Location::new(view.conv.ws.uri_of_name(m.name)?, range))
        }
    }
}

fn stdlib_range(lines: &LineIndex, text: &str, start: usize, end: usize, view: &View<'_>) -> Range {
    lines.range(text, start, end, view.conv.enc)
}

pub fn references(view: &View<'_>, pos: Position, with_decl: bool) -> Option<Vec<Location>> {
    let an = view.analysis()?;
    let file = an.file.as_ref()?;
    let offset = view.offset(pos);
    let (root, steps, node) = find(file, offset)?;
    let target = of_node(an, &root, &steps, &node, offset)?;
    let mut spans: Vec<Span> = Vec::new();
    walk(file, &mut |scope, n| {
        let is_decl = matches!(n, Node::DeclName(_) | Node::GraphModuleName { declared: true, .. });
        if is_decl && !with_decl {
            return;
        }
        let candidates: Vec<(usize, Span)> = match &n {
            Node::Name { segs, .. } => {
                segs.iter().map(|s| (s.span.start as usize, s.span)).collect()
            }
            Node::UseModule { segments, at } => {
                segments.get(*at).map(|s| vec![(s.span.start as usize, s.span)]).unwrap_or_default()
            }
            other => {
                let s = node_span(other);
                vec![(s.start as usize, s)]
            }
        };
        for (at, span) in candidates {
            if let Some(t) = of_node(an, scope.root, scope.steps, &n, at)
                && same(&t, &target)
            {
                spans.push(span);
            }
        }
    });
    let mut out: Vec<Location> = Vec::new();
    if with_decl
        && let Some(loc) = target_location(view, an, &target)
        && !loc.uri.as_str().eq(view.doc.uri.as_str())
    {
        out.push(loc);
    }
    spans.sort();
    spans.dedup();
    out.extend(spans.into_iter().map(|s| Location::new(view.doc.uri.clone(), view.range(s))));
    Some(out)
}
