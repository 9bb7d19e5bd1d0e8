//! Top-level items, block items and parameter lists.

use wrl_diagnostics::Span;
use wrl_syntax::ast::{
    BlockItem, Builtin, Decl, Edge, Field, File, Ident, Item, ItemKind, Param, PathSegment, Use,
};

use crate::escape::quote;
use crate::expr::{block, expr};
use crate::printer::Fmt;
use crate::scan::{find, list_end};
use crate::seq::{ARGS, BLOCK, GROUP, seq};

/// The whole file: items separated by one blank line, except one-line items of the same group
/// that the user wrote on consecutive lines.
pub(crate) fn file(f: &mut Fmt, file: &File) {
    let mut prev: Option<(bool, bool)> = None; // (was a `use`, was multi-line)
    for it in &file.items {
        let is_use = matches!(it.kind, ItemKind::Use(_));
        let mark = if prev.is_some() {
            f.trailing_comments(it.span.start as usize);
            f.line(0);
            Some(f.out_len())
        } else {
            None
        };
        f.item_line(it.span.start as usize, 0);
        let start = f.out_len();
        f.cont = 2;
        item(f, it);
        f.last_end = f.last_end.max(f.end(it.span));
        let multi = f.broke_since(start);
        if let (Some(mark), Some((prev_use, prev_multi))) = (mark, prev)
            && (prev_multi || multi || prev_use != is_use)
        {
            f.insert_blank_at(mark);
        }
        prev = Some((is_use, multi));
    }
}

fn item(f: &mut Fmt, it: &Item) {
    match &it.kind {
        ItemKind::Use(Use::Path { segments, group }) => {
            f.write("use ");
            f.write(&path(segments));
            if let Some(group) = group {
                f.write("::");
                let last = segments.last().map_or(it.span.start as usize, |s| f.end(s.span));
                let open = find(f.src, last, "::");
                let open = find(f.src, open + 2, "{");
                let close = group.last().map_or(open + 1, |g| f.end(g.span));
                let close = list_end(f.src, close, '}');
                seq(f, GROUP, (open, close), group, |g| g.span, |f, g| f.write(&g.name));
            }
        }
        ItemKind::Use(Use::File { path, alias }) => {
            f.write("use ");
            f.write(&quote(&path.value));
            if let Some(alias) = alias {
                f.write(" as ");
                f.write(&alias.name);
            }
        }
        ItemKind::Extends(ext) => {
            f.write("extends ");
            f.write(&quote(&ext.path.value));
            if let Some(b) = &ext.overrides {
                f.write(" ");
                block(f, b);
            }
        }
        ItemKind::Profile(p) => {
            f.write(p.kind.word());
            f.write(" ");
            f.write(&p.name.name);
            f.write(" ");
            block(f, &p.overrides);
        }
        ItemKind::Builtin(b) => builtin(f, b),
        ItemKind::Decl(d) => decl(f, d),
    }
}

fn path(segments: &[Ident]) -> String {
    segments.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join("::")
}

fn decl(f: &mut Fmt, d: &Decl) {
    f.write(d.kind.word());
    f.write(" ");
    f.write(&d.name.name);
    f.write(" =");
    f.last_end = f.end(d.name.span);
    let cont = f.cont;
    f.comments_before(d.value.span.start as usize, cont);
    let brk = f.src_breaks(f.end(d.name.span), d.value.span.start as usize);
    f.space_or_line(brk);
    expr(f, &d.value);
}

fn builtin(f: &mut Fmt, b: &Builtin) {
    f.write("builtin ");
    f.write(&b.name.name);
    params(f, f.end(b.name.span), &b.params);
    f.write(" -> ");
    expr(f, &b.returns);
    if !b.fields.is_empty() {
        f.write(" ");
        let open = find(f.src, f.end(b.returns.span), "{");
        let close = b.fields.last().map_or(open + 1, |p| f.end(p.span));
        let close = list_end(f.src, close, '}');
        seq(f, BLOCK, (open, close), &b.fields, |p| p.span, param);
    }
}

/// `(name: type = default, …)` after the name that ends at `name_end`.
fn params(f: &mut Fmt, name_end: usize, ps: &[Param]) {
    let open = find(f.src, name_end, "(");
    let close = ps.last().map_or(open + 1, |p| f.end(p.span));
    let close = list_end(f.src, close, ')');
    seq(f, ARGS, (open, close), ps, |p| p.span, param);
}

fn param(f: &mut Fmt, p: &Param) {
    f.write(&p.name.name);
    f.write(": ");
    f.last_end = f.end(p.name.span);
    expr(f, &p.ty);
    if let Some(d) = &p.default {
        f.write(" = ");
        expr(f, d);
    }
}

pub(crate) fn block_item_span(item: &BlockItem) -> Span {
    match item {
        BlockItem::Field(x) => x.span,
        BlockItem::Flag(x) => x.span,
        BlockItem::Module(x) => x.span,
        BlockItem::Edge(x) => x.span,
        BlockItem::Tool(x) => x.span,
    }
}

pub(crate) fn block_item(f: &mut Fmt, item: &BlockItem) {
    match item {
        BlockItem::Field(x) => field(f, x),
        BlockItem::Flag(x) => f.write(&x.name),
        BlockItem::Module(m) => {
            f.write("module ");
            f.write(&m.name.name);
            f.write(" = ");
            f.last_end = f.end(m.name.span);
            expr(f, &m.value);
        }
        BlockItem::Edge(e) => edge(f, e),
        BlockItem::Tool(t) => {
            f.write("tool ");
            f.write(&t.name.name);
            params(f, f.end(t.name.span), &t.params);
            if let Some(b) = &t.body {
                f.write(" ");
                block(f, b);
            }
        }
    }
}

fn field(f: &mut Fmt, x: &Field) {
    for (i, seg) in x.path.segments.iter().enumerate() {
        match seg {
            PathSegment::Name(n) => {
                if i > 0 {
                    f.write(".");
                }
                f.write(&n.name);
            }
            PathSegment::Index { index, span: _ } => f.write(&format!("[{index}]")),
        }
    }
    f.write(" = ");
    f.last_end = f.end(x.path.span);
    expr(f, &x.value);
}

fn edge(f: &mut Fmt, e: &Edge) {
    let nodes: Vec<&str> = e.nodes.iter().map(|n| n.name.as_str()).collect();
    f.write(&nodes.join(" -> "));
    if !e.guard.is_empty() {
        let guard: Vec<&str> = e.guard.iter().map(|n| n.name.as_str()).collect();
        f.write(" when ");
        f.write(&guard.join(" | "));
    }
    if let Some(limit) = &e.limit {
        f.write(" limit ");
        expr(f, limit);
    }
}
