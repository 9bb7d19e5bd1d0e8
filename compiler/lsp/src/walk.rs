//! One walk over a parsed file that every request shares: it calls back with each name, field,
//! literal and item part it meets, together with where it sits (the declaration or override it
//! belongs to and the steps from there: constructor calls, fields, list items). Hover, go to
//! definition, references and semantic tokens are all questions asked of these callbacks.

use wrl_check::Seg;
use wrl_diagnostics::Span;
use wrl_syntax::ast::{self, BlockItem, Expr, ExprKind, Ident, ItemKind, PathSegment, Use};
use wrl_syntax::tokens::UnitDef;

/// One step from a declaration (or an override) into its value.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Into a constructor call or configuration block; the callee as written.
    Ctor(Vec<String>),
    /// Into a named field or argument's value.
    Field(String),
    /// Into the i-th positional argument's value.
    Positional(usize),
    /// Into the i-th item of a list.
    Item(usize),
    /// Into a module of an agent graph.
    Module(String),
    /// Into a bound of a range.
    Bound,
    /// Into an operand of an operator, a condition, an index, …: no field path goes on.
    Opaque,
}

/// What a place belongs to.
#[derive(Clone, Debug)]
pub enum Root<'a> {
    Decl(&'a ast::Decl),
    /// The value of an override `decl.path = …` in a profile or `extends` block.
    Override {
        decl: &'a Ident,
        path: Vec<Seg>,
    },
    /// Builtin signatures, `use` items, profile names.
    None,
}

/// Where a node sits: its root and the steps from it (the node's own field not included).
pub struct Scope<'s, 'a> {
    pub root: &'s Root<'a>,
    pub steps: &'s [Step],
}

/// What the walk meets.
#[derive(Clone, Copy, Debug)]
pub enum Node<'a> {
    DeclName(&'a ast::Decl),
    /// A field's name in a block or record, a named argument's name, or a flag (no value).
    Field {
        name: &'a Ident,
        value: Option<&'a Expr>,
    },
    /// A field segment of an override path, with the declaration it starts from; the path
    /// up to and including this segment is `path_len` segments of the override's path.
    OverrideField {
        name: &'a Ident,
        decl: &'a Ident,
        field: &'a ast::Field,
        path_len: usize,
    },
    /// A path used as a value or constructor, or the declaration an override path starts at.
    Name {
        segs: &'a [Ident],
        span: Span,
        callee: bool,
    },
    /// `.model` of `warmup.model`.
    Member {
        base: &'a Expr,
        name: &'a Ident,
    },
    /// A plain number (`None` for a size `W x H`).
    Number {
        span: Span,
        number: Option<&'a ast::Number>,
    },
    Quantity {
        expr: &'a Expr,
        number: &'a ast::Number,
        unit: &'static UnitDef,
        unit_span: Span,
    },
    Str {
        span: Span,
    },
    /// A segment of a `use` path that names a module (`std`, `rewards`).
    UseModule {
        segments: &'a [Ident],
        at: usize,
    },
    /// An item a `use` imports (the last segment, or one of a group).
    UseItem {
        segments: &'a [Ident],
        item: &'a Ident,
    },
    /// The file of `use "…"` or `extends "…"`, and an `as` alias.
    FileRef {
        path: &'a ast::StrLit,
        alias: Option<&'a Ident>,
    },
    ProfileName(&'a Ident),
    /// A module's name in an agent graph: where it is declared or an edge naming it.
    GraphModuleName {
        name: &'a Ident,
        graph: &'a ast::Block,
        declared: bool,
    },
    /// A verdict in an edge guard.
    Verdict(&'a Ident),
    /// Names in builtin and tool signatures (the stdlib).
    SigName {
        name: &'a Ident,
        param: bool,
    },
    /// A type in a signature.
    Type {
        span: Span,
    },
}

struct Walker<'f, 'a> {
    f: &'f mut dyn FnMut(&Scope<'_, 'a>, Node<'a>),
    root: Root<'a>,
    steps: Vec<Step>,
}

/// Calls `f` on every node of `file`, in source order.
pub fn walk<'a>(file: &'a ast::File, f: &mut dyn FnMut(&Scope<'_, 'a>, Node<'a>)) {
    let mut w = Walker { f, root: Root::None, steps: Vec::new() };
    for item in &file.items {
        w.item(item);
    }
}

impl<'a> Walker<'_, 'a> {
    fn emit(&mut self, node: Node<'a>) {
        let scope = Scope { root: &self.root, steps: &self.steps };
        (self.f)(&scope, node);
    }

    fn within(&mut self, step: Step, e: &'a Expr) {
        self.steps.push(step);
        self.expr(e);
        self.steps.pop();
    }

    fn item(&mut self, item: &'a ast::Item) {
        self.root = Root::None;
        self.steps.clear();
        match &item.kind {
            ItemKind::Decl(d) => {
                self.emit(Node::DeclName(d));
                self.root = Root::Decl(d);
                self.expr(&d.value);
            }
            ItemKind::Use(Use::Path { segments, group }) => {
                let last = segments.len().saturating_sub(1);
                for (i, seg) in segments.iter().enumerate() {
                    if i == last && group.is_none() {
                        self.emit(Node::UseItem { segments, item: seg });
                    } else {
                        self.emit(Node::UseModule { segments, at: i });
                    }
                }
                for it in group.iter().flatten() {
                    self.emit(Node::UseItem { segments, item: it });
                }
            }
            ItemKind::Use(Use::File { path, alias }) => {
                self.emit(Node::FileRef { path, alias: alias.as_ref() })
            }
            ItemKind::Extends(e) => {
                self.emit(Node::FileRef { path: &e.path, alias: None });
                if let Some(b) = &e.overrides {
                    self.overrides(b);
                }
            }
            ItemKind::Profile(p) => {
                self.emit(Node::ProfileName(&p.name));
                self.overrides(&p.overrides);
            }
            ItemKind::Builtin(b) => {
                self.emit(Node::SigName { name: &b.name, param: false });
                for p in b.params.iter().chain(&b.fields) {
                    self.param(p);
                }
                self.emit(Node::Type { span: b.returns.span });
            }
        }
    }

    fn param(&mut self, p: &'a ast::Param) {
        self.emit(Node::SigName { name: &p.name, param: true });
        self.emit(Node::Type { span: p.ty.span });
        if let Some(d) = &p.default {
            self.within(Step::Opaque, d);
        }
    }

    fn overrides(&mut self, block: &'a ast::Block) {
        for item in &block.items {
            match item {
                BlockItem::Field(f) => {
                    let mut segs = f.path.segments.iter();
                    let Some(PathSegment::Name(decl)) = segs.next() else {
                        self.within(Step::Opaque, &f.value);
                        continue;
                    };
                    self.emit(Node::Name {
                        segs: std::slice::from_ref(decl),
                        span: decl.span,
                        callee: false,
                    });
                    let mut path = Vec::new();
                    for seg in segs {
                        match seg {
                            PathSegment::Name(n) => {
                                path.push(Seg::Field(n.name.clone()));
                                self.emit(Node::OverrideField {
                                    name: n,
                                    decl,
                                    field: f,
                                    path_len: path.len(),
                                });
                            }
                            PathSegment::Index { index, .. } => {
                                path.push(Seg::Index(*index as usize))
                            }
                        }
                    }
                    self.root = Root::Override { decl, path };
                    self.steps.clear();
                    self.expr(&f.value);
                    self.root = Root::None;
                }
                BlockItem::Flag(n) => self.emit(Node::Name {
                    segs: std::slice::from_ref(n),
                    span: n.span,
                    callee: false,
                }),
                BlockItem::Module(_) | BlockItem::Edge(_) | BlockItem::Tool(_) => {
                    self.block_item(item, block)
                }
            }
        }
    }

    fn block(&mut self, block: &'a ast::Block) {
        for item in &block.items {
            self.block_item(item, block);
        }
    }

    fn block_item(&mut self, item: &'a BlockItem, block: &'a ast::Block) {
        match item {
            BlockItem::Field(f) => match f.path.segments.as_slice() {
                [PathSegment::Name(n)] => {
                    self.emit(Node::Field { name: n, value: Some(&f.value) });
                    self.within(Step::Field(n.name.clone()), &f.value);
                }
                _ => self.within(Step::Opaque, &f.value),
            },
            BlockItem::Flag(n) => self.emit(Node::Field { name: n, value: None }),
            BlockItem::Module(m) => {
                self.emit(Node::GraphModuleName { name: &m.name, graph: block, declared: true });
                self.within(Step::Module(m.name.name.clone()), &m.value);
            }
            BlockItem::Edge(e) => {
                for n in &e.nodes {
                    self.emit(Node::GraphModuleName { name: n, graph: block, declared: false });
                }
                for g in &e.guard {
                    self.emit(Node::Verdict(g));
                }
                if let Some(l) = &e.limit {
                    self.within(Step::Opaque, l);
                }
            }
            BlockItem::Tool(t) => {
                self.emit(Node::SigName { name: &t.name, param: false });
                for p in &t.params {
                    self.param(p);
                }
                if let Some(b) = &t.body {
                    self.steps.push(Step::Opaque);
                    self.block(b);
                    self.steps.pop();
                }
            }
        }
    }

    /// A constructor call's arguments and block, inside `Step::Ctor` of its callee.
    fn ctor(&mut self, callee: &'a Expr, args: &'a [ast::Arg], block: Option<&'a ast::Block>) {
        let path = match &callee.kind {
            ExprKind::Path(segs) => {
                self.emit(Node::Name { segs, span: callee.span, callee: true });
                Some(segs.iter().map(|s| s.name.clone()).collect())
            }
            _ => {
                self.within(Step::Opaque, callee);
                None
            }
        };
        self.steps.push(path.map_or(Step::Opaque, Step::Ctor));
        let mut positional = 0;
        for a in args {
            match &a.name {
                Some(n) => {
                    self.emit(Node::Field { name: n, value: Some(&a.value) });
                    self.within(Step::Field(n.name.clone()), &a.value);
                }
                None => {
                    self.within(Step::Positional(positional), &a.value);
                    positional += 1;
                }
            }
        }
        if let Some(b) = block {
            self.block(b);
        }
        self.steps.pop();
    }

    fn expr(&mut self, e: &'a Expr) {
        match &e.kind {
            ExprKind::Number(n) => self.emit(Node::Number { span: e.span, number: Some(n) }),
            ExprKind::Quantity { value, unit, unit_span } => {
                self.emit(Node::Quantity { expr: e, number: value, unit, unit_span: *unit_span })
            }
            ExprKind::Dims(..) => self.emit(Node::Number { span: e.span, number: None }),
            ExprKind::Str(_) | ExprKind::Text(_) => self.emit(Node::Str { span: e.span }),
            ExprKind::Bool(_) | ExprKind::Unknown | ExprKind::Error => {}
            ExprKind::Path(segs) => self.emit(Node::Name { segs, span: e.span, callee: false }),
            ExprKind::List(items) => {
                for (i, it) in items.iter().enumerate() {
                    self.within(Step::Item(i), it);
                }
            }
            ExprKind::Record(b) => self.block(b),
            ExprKind::Paren(inner) => self.expr(inner),
            ExprKind::Unary { operand, .. } => self.within(Step::Opaque, operand),
            ExprKind::Binary { lhs, rhs, .. } => {
                self.within(Step::Opaque, lhs);
                self.within(Step::Opaque, rhs);
            }
            ExprKind::Range { lo, hi } => {
                self.within(Step::Bound, lo);
                self.within(Step::Bound, hi);
            }
            ExprKind::If { cond, then, otherwise } => {
                self.within(Step::Opaque, cond);
                self.within(Step::Opaque, then);
                self.within(Step::Opaque, otherwise);
            }
            ExprKind::Call { callee, args, .. } => self.ctor(callee, args, None),
            ExprKind::Configure { base, block } => match &base.kind {
                ExprKind::Call { callee, args, .. } => self.ctor(callee, args, Some(block)),
                _ => self.ctor(base, &[], Some(block)),
            },
            ExprKind::Member { base, name } => {
                self.within(Step::Opaque, base);
                self.emit(Node::Member { base, name });
            }
            ExprKind::Index { base, index } => {
                self.within(Step::Opaque, base);
                self.within(Step::Opaque, index);
            }
        }
    }
}

/// The span a node is found by (its name, literal or segment).
pub fn node_span(node: &Node<'_>) -> Span {
    match node {
        Node::DeclName(d) => d.name.span,
        Node::Field { name, .. } | Node::OverrideField { name, .. } => name.span,
        Node::Name { segs, span, .. } => {
            segs.first().map(|f| f.span.to(segs.last().map_or(f.span, |l| l.span))).unwrap_or(*span)
        }
        Node::Member { name, .. } => name.span,
        Node::Number { span, .. } | Node::Str { span } | Node::Type { span } => *span,
        Node::Quantity { expr, .. } => expr.span,
        Node::UseModule { segments, at } => segments.get(*at).map_or(Span::default(), |s| s.span),
        Node::UseItem { item, .. } => item.span,
        Node::FileRef { path, .. } => path.span,
        Node::ProfileName(n) | Node::Verdict(n) => n.span,
        Node::GraphModuleName { name, .. } | Node::SigName { name, .. } => name.span,
    }
}

/// The innermost node at byte `offset` (a span's end counts, so a cursor right after a name
/// finds it), with a copy of its root and steps.
pub fn find<'a>(file: &'a ast::File, offset: usize) -> Option<(Root<'a>, Vec<Step>, Node<'a>)> {
    let mut best: Option<(usize, Root<'a>, Vec<Step>, Node<'a>)> = None;
    let at = u32::try_from(offset).unwrap_or(u32::MAX);
    walk(file, &mut |scope, node| {
        let span = node_span(&node);
        if span.start <= at && at <= span.end {
            let len = span.len();
            // The innermost wins; on a tie (a name ending where the next begins) the later.
            if best.as_ref().is_none_or(|(l, ..)| len <= *l) {
                best = Some((len, scope.root.clone(), scope.steps.to_vec(), node));
            }
        }
    });
    best.map(|(_, r, s, n)| (r, s, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(src: &str) -> ast::File {
        wrl_syntax::parse(wrl_diagnostics::FileId(0), src).file
    }

    #[test]
    fn steps_lead_from_the_declaration_to_the_field() {
        let src = "stage s = grpo(p, t, a) {\n  phases = [{ iters = 2, horizon = 4 steps }]\n}\n";
        let file = parse(src);
        let at = src.find("horizon").unwrap_or(0) + 2;
        let (root, steps, node) = find(&file, at).expect("a node");
        assert!(matches!(root, Root::Decl(d) if d.name.name == "s"));
        assert!(matches!(node, Node::Field { name, .. } if name.name == "horizon"));
        assert_eq!(
            steps,
            vec![Step::Ctor(vec!["grpo".into()]), Step::Field("phases".into()), Step::Item(0)]
        );
        let unit = src.find("steps").unwrap_or(0) + 1;
        assert!(matches!(find(&file, unit), Some((_, _, Node::Quantity { .. }))));
        let arg = src.find("t,").unwrap_or(0);
        let (_, steps, node) = find(&file, arg).expect("a node");
        assert!(matches!(node, Node::Name { callee: false, .. }));
        assert_eq!(steps.last(), Some(&Step::Positional(1)));
    }

    #[test]
    fn override_paths_name_the_declaration_then_fields() {
        let src = "profile smoke {\n  online.phases[0].iters = 2\n}\n";
        let file = parse(src);
        let head = src.find("online").unwrap_or(0);
        assert!(matches!(find(&file, head), Some((_, _, Node::Name { .. }))));
        let iters = src.find("iters").unwrap_or(0);
        match find(&file, iters) {
            Some((_, _, Node::OverrideField { name, path_len, .. })) => {
                assert_eq!((name.name.as_str(), path_len), ("iters", 3))
            }
            other => panic!("{other:?}"),
        }
        let value = src.find("2\n").unwrap_or(0);
        match find(&file, value) {
            Some((Root::Override { decl, path }, _, Node::Number { .. })) => {
                assert_eq!(decl.name, "online");
                assert_eq!(path.len(), 3);
            }
            other => panic!("{other:?}"),
        }
    }
}
