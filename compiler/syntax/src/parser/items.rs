//! Items (declarations, `use`, `extends`, profiles, builtins) and blocks: one function per
//! visible rule, each asserting its rule and destructuring its children.

use pest::iterators::Pair;

use super::expr::{call_args_of, expr, expr_sized};
use super::literal::unescape;
use super::{Ctx, expect_rule, inner};
use crate::ast::{
    Block, BlockItem, Builtin, Decl, DeclKind, Edge, Expr, ExprKind, Extends, Field, FieldPath,
    Ident, Item, ItemKind, Module, Param, PathSegment, Profile, ProfileKind, StrLit, Tool, Use,
};
use crate::grammar::Rule;

pub(crate) fn ident(pair: Pair<Rule>, ctx: &Ctx) -> Ident {
    debug_assert!(matches!(pair.as_rule(), Rule::ident | Rule::raw_ident));
    Ident { name: pair.as_str().to_string(), span: ctx.span(&pair) }
}

/// Converts one item pair (`use_item`, `decl`, …).
pub(crate) fn item(pair: Pair<Rule>, ctx: &Ctx) -> Item {
    let span = ctx.span(&pair);
    let kind = match pair.as_rule() {
        Rule::use_item => ItemKind::Use(use_item(pair, ctx)),
        Rule::extends_item => {
            let mut parts = inner(pair).skip(1);
            let path = parts.next().map(|p| str_lit(p, ctx)).unwrap_or_else(|| empty_str(span));
            let overrides = parts.next().map(|b| block(b, ctx).0);
            ItemKind::Extends(Extends { path, overrides })
        }
        Rule::profile_item => {
            let mut parts = inner(pair);
            let (word, name, body) = match (parts.next(), parts.next(), parts.next()) {
                (Some(w), Some(n), Some(b)) => (w, n, b),
                _ => unreachable!("grammar: profile has a keyword, a name and a block"),
            };
            let kind = match word.as_rule() {
                Rule::kw_variant => ProfileKind::Variant,
                _ => ProfileKind::Profile,
            };
            ItemKind::Profile(Profile {
                kind,
                name: ident(name, ctx),
                overrides: block(body, ctx).0,
            })
        }
        Rule::builtin_item => ItemKind::Builtin(builtin(pair, ctx)),
        Rule::decl => {
            let mut parts = inner(pair);
            let (kind, name, value) = match (parts.next(), parts.next(), parts.next()) {
                (Some(k), Some(n), Some(v)) => (k, n, v),
                _ => unreachable!("grammar: decl is kind, name, value"),
            };
            let kind_span = ctx.span(&kind);
            let decl_kind =
                DeclKind::from_word(kind.as_str()).expect("grammar: decl_kind is a known word");
            ItemKind::Decl(Decl {
                kind: decl_kind,
                kind_span,
                name: ident(name, ctx),
                value: expr(value, ctx),
            })
        }
        other => unreachable!("grammar: unexpected item {other:?}"),
    };
    Item { kind, doc: None, span }
}

fn empty_str(span: wrl_diagnostics::Span) -> StrLit {
    StrLit { value: String::new(), span }
}

fn str_lit(pair: Pair<Rule>, ctx: &Ctx) -> StrLit {
    expect_rule(&pair, Rule::string);
    let span = ctx.span(&pair);
    let body = inner(pair).next().expect("grammar: string has an inside");
    match unescape(body.as_str(), ctx.file, ctx.offset + body.as_span().start()) {
        Ok(value) => StrLit { value, span },
        Err(d) => {
            ctx.push(d);
            empty_str(span)
        }
    }
}

fn use_item(pair: Pair<Rule>, ctx: &Ctx) -> Use {
    expect_rule(&pair, Rule::use_item);
    let mut parts = inner(pair).skip(1).peekable();
    let first = parts.next().expect("grammar: use has a target");
    match first.as_rule() {
        Rule::string => {
            let path = str_lit(first, ctx);
            let alias = parts.find(|p| p.as_rule() == Rule::ident).map(|p| ident(p, ctx));
            Use::File { path, alias }
        }
        _ => {
            expect_rule(&first, Rule::use_path);
            let mut segments = Vec::new();
            let mut group = None;
            for p in inner(first) {
                match p.as_rule() {
                    Rule::ident => segments.push(ident(p, ctx)),
                    _ => group = Some(inner(p).map(|g| ident(g, ctx)).collect()),
                }
            }
            Use::Path { segments, group }
        }
    }
}

fn builtin(pair: Pair<Rule>, ctx: &Ctx) -> Builtin {
    expect_rule(&pair, Rule::builtin_item);
    let mut parts = inner(pair).skip(1);
    let (name, params_pair, _arrow, ret) =
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(n), Some(p), Some(a), Some(r)) => (n, p, a, r),
            _ => unreachable!("grammar: builtin is name, params, arrow, return type"),
        };
    let fields = parts.next().map(|spec| inner(spec).map(|p| param(p, ctx)).collect());
    Builtin {
        name: ident(name, ctx),
        params: params(params_pair, ctx),
        returns: ret_type(ret, ctx),
        fields: fields.unwrap_or_default(),
    }
}

fn ret_type(pair: Pair<Rule>, ctx: &Ctx) -> Expr {
    expect_rule(&pair, Rule::ret_type);
    let mut parts = inner(pair);
    let path = parts.next().expect("grammar: return type has a path");
    let path_span = ctx.span(&path);
    let segments = inner(path).map(|p| ident(p, ctx)).collect();
    let base = Expr::new(ExprKind::Path(segments), path_span);
    match parts.next() {
        Some(args) => call_args_of(base, args, ctx),
        None => base,
    }
}

fn params(pair: Pair<Rule>, ctx: &Ctx) -> Vec<Param> {
    expect_rule(&pair, Rule::params);
    inner(pair).map(|p| param(p, ctx)).collect()
}

fn param(pair: Pair<Rule>, ctx: &Ctx) -> Param {
    expect_rule(&pair, Rule::param);
    let span = ctx.span(&pair);
    let mut parts = inner(pair);
    let (name, ty) = match (parts.next(), parts.next()) {
        (Some(n), Some(t)) => (n, t),
        _ => unreachable!("grammar: param is a name and a type"),
    };
    Param {
        name: ident(name, ctx),
        ty: expr(ty, ctx),
        default: parts.next().map(|d| expr(d, ctx)),
        span,
    }
}

/// Converts a `block` pair (after a value, a profile, an override or a tool).
pub(crate) fn block(pair: Pair<Rule>, ctx: &Ctx) -> (Block, u32) {
    expect_rule(&pair, Rule::block);
    block_items(pair, ctx)
}

/// Converts a `record` pair (a block standing alone as a value).
pub(crate) fn record(pair: Pair<Rule>, ctx: &Ctx) -> (Block, u32) {
    expect_rule(&pair, Rule::record);
    block_items(pair, ctx)
}

fn block_items(pair: Pair<Rule>, ctx: &Ctx) -> (Block, u32) {
    let span = ctx.span(&pair);
    let mut depth = 0;
    let mut items = Vec::new();
    for p in inner(pair) {
        let item_span = ctx.span(&p);
        let item = match p.as_rule() {
            Rule::field => {
                let mut parts = inner(p);
                let (path, value) = match (parts.next(), parts.next()) {
                    (Some(a), Some(b)) => (a, b),
                    _ => unreachable!("grammar: field is a path and a value"),
                };
                let (value, d) = expr_sized(value, ctx);
                depth = depth.max(d);
                BlockItem::Field(Field { path: field_path(path, ctx), value, span: item_span })
            }
            Rule::flag => {
                let name = inner(p).next().expect("grammar: flag has a name");
                BlockItem::Flag(ident(name, ctx))
            }
            Rule::module_item => {
                let mut parts = inner(p).skip(1);
                let (name, value) = match (parts.next(), parts.next()) {
                    (Some(a), Some(b)) => (a, b),
                    _ => unreachable!("grammar: module is a name and a value"),
                };
                let (value, d) = expr_sized(value, ctx);
                depth = depth.max(d);
                BlockItem::Module(Module { name: ident(name, ctx), value, span: item_span })
            }
            Rule::tool_item => {
                let mut parts = inner(p).skip(1);
                let (name, ps) = match (parts.next(), parts.next()) {
                    (Some(a), Some(b)) => (a, b),
                    _ => unreachable!("grammar: tool is a name and params"),
                };
                let body = parts.next().map(|b| {
                    let (b, d) = block(b, ctx);
                    depth = depth.max(d);
                    b
                });
                BlockItem::Tool(Tool {
                    name: ident(name, ctx),
                    params: params(ps, ctx),
                    body,
                    span: item_span,
                })
            }
            Rule::edge => {
                let mut nodes = Vec::new();
                let mut guard = Vec::new();
                let mut limit = None;
                for part in inner(p) {
                    match part.as_rule() {
                        Rule::ident => nodes.push(ident(part, ctx)),
                        Rule::arrow => {}
                        Rule::guard => guard.extend(
                            inner(part)
                                .filter(|g| g.as_rule() == Rule::ident)
                                .map(|g| ident(g, ctx)),
                        ),
                        Rule::edge_limit => {
                            let e = inner(part).find(|x| x.as_rule() == Rule::expr);
                            limit = e.map(|e| expr(e, ctx));
                        }
                        other => unreachable!("grammar: unexpected edge part {other:?}"),
                    }
                }
                BlockItem::Edge(Edge { nodes, guard, limit, span: item_span })
            }
            other => unreachable!("grammar: unexpected block item {other:?}"),
        };
        items.push(item);
    }
    (Block { items, span }, depth + 1)
}

fn field_path(pair: Pair<Rule>, ctx: &Ctx) -> FieldPath {
    expect_rule(&pair, Rule::field_path);
    let span = ctx.span(&pair);
    let segments = inner(pair)
        .map(|p| match p.as_rule() {
            Rule::raw_ident => PathSegment::Name(ident(p, ctx)),
            _ => PathSegment::Index {
                index: p.as_str().parse().unwrap_or(u32::MAX),
                span: ctx.span(&p),
            },
        })
        .collect();
    FieldPath { segments, span }
}
