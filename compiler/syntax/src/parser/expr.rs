//! Expressions: the Pratt table and the conversion of primaries.
//!
//! Precedence, lowest first (all binary operators are left-associative):
//!
//! | level | operators                    | note                                   |
//! |-------|------------------------------|----------------------------------------|
//! | 1     | `..`                         | range; `a .. b .. c` is an error        |
//! | 2     | `or`                         |                                        |
//! | 3     | `and`                        |                                        |
//! | 4     | `not` (prefix)               | `not a == b` is `not (a == b)`          |
//! | 5     | `== != < <= > >=`            | not chainable: `a < b < c` is an error  |
//! | 6     | `+ -`                        |                                        |
//! | 7     | `* /`                        |                                        |
//! | 8     | `-` (prefix)                 | `-x * y` is `(-x) * y`                  |
//! | 9     | call `f(…)`, `.name`, `[i]`, block `{…}` | postfix, tightest           |
//!
//! `if c then a else b` is a primary whose branches extend as far right as possible.
//! Expression trees are kept at most [`MAX_DEPTH`] deep so that no later phase can overflow
//! its stack on a pathological input.

use std::iter::Peekable;

use pest::iterators::{Pair, Pairs};
use wrl_diagnostics::{Diagnostic, Span};

use super::items::{block, ident, record};
use super::literal::{number, unescape, unit_word};
use super::{Ctx, expect_rule, inner};
use crate::ast::{Arg, BinaryOp, Expr, ExprKind, UnaryOp};
use crate::grammar::Rule;

/// How deep an expression tree may be.
pub const MAX_DEPTH: u32 = 200;

/// Binding powers of the table above, lowest first (level × 10).
const PREC_NOT: u32 = 40;
const PREC_NEG: u32 = 80;
const PREC_POSTFIX: u32 = 90;

/// A binary operator as the grammar's `infix` rule matched it: the range, or a binary
/// operator, and its binding power.
fn infix_op(text: &str) -> (Option<BinaryOp>, u32) {
    match text {
        ".." => (None, 10),
        "or" => (Some(BinaryOp::Or), 20),
        "and" => (Some(BinaryOp::And), 30),
        "==" => (Some(BinaryOp::Eq), 50),
        "!=" => (Some(BinaryOp::Ne), 50),
        "<" => (Some(BinaryOp::Lt), 50),
        "<=" => (Some(BinaryOp::Le), 50),
        ">" => (Some(BinaryOp::Gt), 50),
        ">=" => (Some(BinaryOp::Ge), 50),
        "+" => (Some(BinaryOp::Add), 60),
        "-" => (Some(BinaryOp::Sub), 60),
        "*" => (Some(BinaryOp::Mul), 70),
        "/" => (Some(BinaryOp::Div), 70),
        other => unreachable!("grammar: unexpected operator {other:?}"),
    }
}

/// An expression with the depth of its tree.
type Sized = (Expr, u32);

fn error(span: Span) -> Sized {
    (Expr::new(ExprKind::Error, span), 0)
}

fn is_error(e: &Expr) -> bool {
    matches!(e.kind, ExprKind::Error)
}

/// Wraps `kind` over children of depth `depth`, or reports that the tree is too deep.
fn grow(ctx: &Ctx, kind: ExprKind, span: Span, depth: u32) -> Sized {
    if depth + 1 > MAX_DEPTH {
        ctx.push(
            Diagnostic::new("E0104", "expression nests too deep")
                .label(span, format!("more than {MAX_DEPTH} levels"))
                .help("split the expression with `param` declarations"),
        );
        return error(span);
    }
    (Expr::new(kind, span), depth + 1)
}

/// Converts an `expr` pair.
pub(crate) fn expr(pair: Pair<Rule>, ctx: &Ctx) -> Expr {
    expr_sized(pair, ctx).0
}

pub(crate) fn expr_sized(pair: Pair<Rule>, ctx: &Ctx) -> Sized {
    expect_rule(&pair, Rule::expr);
    pratt(&mut pair.into_inner().peekable(), 0, ctx)
}

/// The Pratt loop over the flat `prefix* primary postfix* (infix prefix* primary postfix*)*`
/// sequence: operands and operators binding tighter than `min` (pest's `PrattParser`
/// algorithm, with the binding powers above).
fn pratt(pairs: &mut Peekable<Pairs<Rule>>, min: u32, ctx: &Ctx) -> Sized {
    let first = pairs.next().expect("grammar: an expression is not empty");
    let mut lhs = match first.as_rule() {
        Rule::op_neg => prefix(first, UnaryOp::Neg, pratt(pairs, PREC_NEG - 1, ctx), ctx),
        Rule::op_not => prefix(first, UnaryOp::Not, pratt(pairs, PREC_NOT - 1, ctx), ctx),
        _ => primary(first, ctx),
    };
    loop {
        let Some(next) = pairs.peek() else { return lhs };
        let (op, prec) = match next.as_rule() {
            Rule::infix => infix_op(next.as_str()),
            _ => (None, PREC_POSTFIX),
        };
        if prec <= min {
            return lhs;
        }
        let Some(next) = pairs.next() else { return lhs };
        lhs = if next.as_rule() == Rule::infix {
            let rhs = pratt(pairs, prec, ctx);
            infix(lhs, next, op, rhs, ctx)
        } else {
            postfix(lhs.0, lhs.1, next, ctx)
        };
    }
}

fn prefix(op: Pair<Rule>, op_kind: UnaryOp, (operand, d): Sized, ctx: &Ctx) -> Sized {
    let op_span = ctx.span(&op);
    let span = op_span.to(operand.span);
    if is_error(&operand) {
        return error(span);
    }
    grow(ctx, ExprKind::Unary { op: op_kind, op_span, operand: Box::new(operand) }, span, d)
}

/// `lhs op rhs`; `op` is `None` for the range.
fn infix(
    (lhs, dl): Sized,
    op_pair: Pair<Rule>,
    op: Option<BinaryOp>,
    (rhs, dr): Sized,
    ctx: &Ctx,
) -> Sized {
    let op_span = ctx.span(&op_pair);
    let span = lhs.span.to(rhs.span);
    if is_error(&lhs) || is_error(&rhs) {
        return error(span);
    }
    let depth = dl.max(dr);
    let Some(op) = op else {
        if let ExprKind::Range { .. } = lhs.kind {
            ctx.push(
                Diagnostic::new("E0108", "ranges cannot be chained")
                    .label(op_span, "second `..`")
                    .label(lhs.span, "this is already a range")
                    .help("a range has one lower and one upper bound: `lo .. hi`"),
            );
            return error(span);
        }
        let kind = ExprKind::Range { lo: Box::new(lhs), hi: Box::new(rhs) };
        return grow(ctx, kind, span, depth);
    };
    if let ExprKind::Binary { op: prev, .. } = &lhs.kind
        && op.is_comparison()
        && prev.is_comparison()
    {
        ctx.push(
            Diagnostic::new("E0108", "comparison operators cannot be chained")
                .label(op_span, format!("second comparison `{}`", op.symbol()))
                .label(lhs.span, "this is already a comparison")
                .help("combine two comparisons with `and`: `a < b and b < c`"),
        );
        return error(span);
    }
    let kind = ExprKind::Binary { op, op_span, lhs: Box::new(lhs), rhs: Box::new(rhs) };
    grow(ctx, kind, span, depth)
}

fn postfix(base: Expr, depth: u32, op: Pair<Rule>, ctx: &Ctx) -> Sized {
    let span = base.span.to(ctx.span(&op));
    if is_error(&base) {
        return error(span);
    }
    match op.as_rule() {
        Rule::call_args => {
            let args_span = ctx.span(&op);
            let mut args = Vec::new();
            let mut d = depth;
            let mut seen_named: Option<Span> = None;
            for arg in inner(op) {
                let arg_span = ctx.span(&arg);
                let mut parts = inner(arg);
                let (name, value) = match (parts.next(), parts.next()) {
                    (Some(n), Some(v)) => (Some(ident(n, ctx)), v),
                    (Some(v), None) => (None, v),
                    _ => unreachable!("grammar: arg has one or two children"),
                };
                let (value, vd) = expr_sized(value, ctx);
                d = d.max(vd);
                match (&name, seen_named) {
                    (Some(_), None) => seen_named = Some(arg_span),
                    (None, Some(named)) => ctx.push(
                        Diagnostic::new("E0107", "positional argument after a named argument")
                            .label(arg_span, "positional argument")
                            .label(named, "named arguments start here")
                            .help("put positional arguments first, or name this one"),
                    ),
                    _ => {}
                }
                args.push(Arg { name, value, span: arg_span });
            }
            grow(ctx, ExprKind::Call { callee: Box::new(base), args, args_span }, span, d)
        }
        Rule::member => {
            let name_pair = inner(op).next().expect("grammar: member has a name");
            let name = ident(name_pair, ctx);
            grow(ctx, ExprKind::Member { base: Box::new(base), name }, span, depth)
        }
        Rule::index => {
            let body = inner(op).next().expect("grammar: index has an expression");
            let (index, d) = expr_sized(body, ctx);
            let kind = ExprKind::Index { base: Box::new(base), index: Box::new(index) };
            grow(ctx, kind, span, depth.max(d))
        }
        Rule::block => {
            let (block, d) = block(op, ctx);
            grow(ctx, ExprKind::Configure { base: Box::new(base), block }, span, depth.max(d))
        }
        other => unreachable!("grammar: unexpected postfix {other:?}"),
    }
}

fn primary(pair: Pair<Rule>, ctx: &Ctx) -> Sized {
    let span = ctx.span(&pair);
    match pair.as_rule() {
        Rule::numeric => numeric(pair, span, ctx),
        Rule::string => {
            let body = inner(pair).next().expect("grammar: string has an inside");
            match unescape(body.as_str(), ctx.file, ctx.offset + body.as_span().start()) {
                Ok(s) => (Expr::new(ExprKind::Str(s), span), 1),
                Err(d) => {
                    ctx.push(d);
                    error(span)
                }
            }
        }
        Rule::text_block => {
            let body = inner(pair).next().expect("grammar: text block has an inside");
            (Expr::new(ExprKind::Text(body.as_str().to_string()), span), 1)
        }
        Rule::kw_true => (Expr::new(ExprKind::Bool(true), span), 1),
        Rule::kw_false => (Expr::new(ExprKind::Bool(false), span), 1),
        Rule::kw_unknown => (Expr::new(ExprKind::Unknown, span), 1),
        Rule::path => {
            let segments = inner(pair).map(|p| ident(p, ctx)).collect();
            (Expr::new(ExprKind::Path(segments), span), 1)
        }
        Rule::paren => {
            let body = inner(pair).next().expect("grammar: paren has an expression");
            let (e, d) = expr_sized(body, ctx);
            if is_error(&e) {
                return error(span);
            }
            grow(ctx, ExprKind::Paren(Box::new(e)), span, d)
        }
        Rule::list => {
            let mut d = 0;
            let items = inner(pair)
                .map(|p| {
                    let (e, ed) = expr_sized(p, ctx);
                    d = d.max(ed);
                    e
                })
                .collect();
            grow(ctx, ExprKind::List(items), span, d)
        }
        Rule::record => {
            let (b, d) = record(pair, ctx);
            grow(ctx, ExprKind::Record(b), span, d)
        }
        Rule::if_expr => {
            let mut parts = inner(pair).filter(|p| p.as_rule() == Rule::expr);
            let (c, t, e) = match (parts.next(), parts.next(), parts.next()) {
                (Some(c), Some(t), Some(e)) => (c, t, e),
                _ => unreachable!("grammar: if has three expressions"),
            };
            let (cond, dc) = expr_sized(c, ctx);
            let (then, dt) = expr_sized(t, ctx);
            let (otherwise, de) = expr_sized(e, ctx);
            if is_error(&cond) || is_error(&then) || is_error(&otherwise) {
                return error(span);
            }
            let kind = ExprKind::If {
                cond: Box::new(cond),
                then: Box::new(then),
                otherwise: Box::new(otherwise),
            };
            grow(ctx, kind, span, dc.max(dt).max(de))
        }
        other => unreachable!("grammar: unexpected primary {other:?}"),
    }
}

/// A `numeric` pair: a number, a quantity (a number and a unit) or a size (two numbers).
fn numeric(pair: Pair<Rule>, span: Span, ctx: &Ctx) -> Sized {
    let mut parts = inner(pair);
    let first = parts.next().expect("grammar: numeric starts with a number");
    let value = number(first.as_str(), ctx.span(&first));
    let kind = match parts.next() {
        None => value.map(ExprKind::Number),
        Some(unit) if unit.as_rule() == Rule::unit => {
            let unit_span = ctx.span(&unit);
            match (value, unit_word(unit.as_str(), unit_span)) {
                (Ok(value), Ok(unit)) => Ok(ExprKind::Quantity { value, unit, unit_span }),
                (Err(d), _) | (_, Err(d)) => Err(d),
            }
        }
        Some(h) => match (value, number(h.as_str(), ctx.span(&h))) {
            (Ok(w), Ok(h)) => Ok(ExprKind::Dims(w, h)),
            (Err(d), _) | (_, Err(d)) => Err(d),
        },
    };
    match kind {
        Ok(kind) => (Expr::new(kind, span), 1),
        Err(d) => {
            ctx.push(d);
            error(span)
        }
    }
}

/// Converts a call argument list outside an expression (used by `ret_type`).
pub(crate) fn call_args_of(base: Expr, op: Pair<Rule>, ctx: &Ctx) -> Expr {
    postfix(base, 1, op, ctx).0
}
