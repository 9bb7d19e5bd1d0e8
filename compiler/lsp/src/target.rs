//! What a node of the walk refers to, resolved the way the checker resolves it: a bare name
//! in an enum slot is the enum's word (`kind = tasks` with a dataset called `tasks`), any
//! other name is looked up in the file's scope; a field is a builtin's slot. Two nodes refer
//! to the same thing when their targets are [`same`].

use wrl_check::query::{BuiltinInfo, DeclInfo, ModuleInfo, Resolved};
use wrl_check::{Seg, Tables};
use wrl_syntax::ast::{self, Ident, PathSegment};

use crate::analysis::{Analysis, DOC};
use crate::place::{Place, describe};
use crate::walk::{Node, Root, Step};

#[derive(Clone, Debug)]
pub enum Target {
    Decl(DeclInfo),
    Builtin(BuiltinInfo),
    Module(ModuleInfo),
    /// An enum word at a place.
    Enum {
        word: String,
        place: Place,
    },
    /// A slot or record field at a place.
    Field(Place),
    /// A module of an agent graph, by the span of its declaration.
    GraphModule {
        name: String,
        decl: wrl_diagnostics::Span,
    },
}

impl From<Resolved> for Target {
    fn from(r: Resolved) -> Target {
        match r {
            Resolved::Decl(d) => Target::Decl(d),
            Resolved::Builtin(b) => Target::Builtin(b),
            Resolved::Module(m) => Target::Module(m),
        }
    }
}

/// The target of a name written as `segs`, up to and including segment `at`.
pub fn name(
    an: &Analysis,
    root: &Root<'_>,
    steps: &[Step],
    segs: &[Ident],
    at: usize,
    callee: bool,
) -> Option<Target> {
    if let [one] = segs
        && !callee
    {
        let place = describe(&an.tables, an.recipe.as_ref(), root, steps, None);
        if place.ty.as_ref().is_some_and(|t| t.enum_values().contains(&one.name.as_str())) {
            return Some(Target::Enum { word: one.name.clone(), place });
        }
    }
    let names: Vec<&str> = segs.iter().take(at + 1).map(|s| s.name.as_str()).collect();
    an.tables.resolve(DOC, &names).map(Target::from)
}

/// The path of an override up to its `len`-th segment after the declaration.
pub fn override_path(field: &ast::Field, len: usize) -> Vec<Seg> {
    field
        .path
        .segments
        .iter()
        .skip(1)
        .take(len)
        .map(|s| match s {
            PathSegment::Name(n) => Seg::Field(n.name.clone()),
            PathSegment::Index { index, .. } => Seg::Index(*index as usize),
        })
        .collect()
}

/// The target of any node (`offset` picks the segment of a path).
pub fn of_node(
    an: &Analysis,
    root: &Root<'_>,
    steps: &[Step],
    node: &Node<'_>,
    offset: usize,
) -> Option<Target> {
    let tables: &Tables = &an.tables;
    let at_segment = |segs: &[Ident]| {
        segs.iter()
            .position(|s| (s.span.start as usize) <= offset && offset <= s.span.end as usize)
            .unwrap_or(segs.len().saturating_sub(1))
    };
    match node {
        Node::Name { segs, callee, .. } => name(an, root, steps, segs, at_segment(segs), *callee),
        Node::DeclName(d) => tables.resolve(DOC, &[d.name.name.as_str()]).map(Target::from),
        Node::Field { name, .. } => {
            Some(Target::Field(describe(tables, an.recipe.as_ref(), root, steps, Some(&name.name))))
        }
        Node::OverrideField { decl, field, path_len, .. } => {
            let r = Root::Override { decl, path: override_path(field, *path_len) };
            Some(Target::Field(describe(tables, an.recipe.as_ref(), &r, &[], None)))
        }
        Node::UseItem { segments, item } => {
            let mut names: Vec<&str> = segments.iter().map(|s| s.name.as_str()).collect();
            if !segments.iter().any(|s| std::ptr::eq(s, *item)) {
                names.push(&item.name);
            }
            tables.resolve(DOC, &names).map(Target::from)
        }
        Node::UseModule { segments, at } => {
            let names: Vec<&str> = segments.iter().take(at + 1).map(|s| s.name.as_str()).collect();
            tables.resolve(DOC, &names).map(Target::from)
        }
        Node::FileRef { alias: Some(a), .. } => {
            tables.resolve(DOC, &[a.name.as_str()]).map(Target::from)
        }
        Node::GraphModuleName { name, graph, .. } => graph_module(graph, &name.name),
        Node::Member { base, .. } => match &base.kind {
            ast::ExprKind::Path(segs) => tables
                .resolve(DOC, &segs.iter().map(|s| s.name.as_str()).collect::<Vec<_>>())
                .map(Target::from),
            _ => None,
        },
        Node::FileRef { alias: None, .. }
        | Node::Number { .. }
        | Node::Quantity { .. }
        | Node::Str { .. }
        | Node::ProfileName(_)
        | Node::Verdict(_)
        | Node::SigName { .. }
        | Node::Type { .. } => None,
    }
}

/// The module `name` declared in an agent graph's block.
pub fn graph_module(graph: &ast::Block, name: &str) -> Option<Target> {
    graph.items.iter().find_map(|i| match i {
        ast::BlockItem::Module(m) if m.name.name == name => {
            Some(Target::GraphModule { name: name.to_string(), decl: m.name.span })
        }
        _ => None,
    })
}

/// Whether two targets are the same thing.
pub fn same(a: &Target, b: &Target) -> bool {
    let owner = |p: &Place| p.owner.as_ref().map(|o| o.qual.clone());
    match (a, b) {
        (Target::Decl(x), Target::Decl(y)) => x.key == y.key && x.module == y.module,
        (Target::Builtin(x), Target::Builtin(y)) => x.qual == y.qual,
        (Target::Module(x), Target::Module(y)) => x.path == y.path,
        (Target::Enum { word: w1, place: p1 }, Target::Enum { word: w2, place: p2 }) => {
            w1 == w2 && owner(p1) == owner(p2) && p1.slot == p2.slot
        }
        (Target::Field(p1), Target::Field(p2)) => {
            owner(p1).is_some()
                && owner(p1) == owner(p2)
                && p1.slot == p2.slot
                && p1.field == p2.field
        }
        (Target::GraphModule { decl: d1, .. }, Target::GraphModule { decl: d2, .. }) => d1 == d2,
        _ => false,
    }
}
