//! Expressions, printed in source order; parentheses are AST nodes, so printing the tree
//! reproduces the same parse.

use wrl_syntax::ast::{Arg, Block, Expr, ExprKind, Number, UnaryOp};

use crate::escape::quote;
use crate::printer::{Fmt, MAX_WIDTH};
use crate::scan::find;
use crate::seq::{ARGS, BLOCK, LIST, seq};

pub(crate) fn expr(f: &mut Fmt, e: &Expr) {
    let cont = f.cont;
    f.comments_before(e.span.start as usize, cont);
    match &e.kind {
        ExprKind::Number(n) => f.write(&n.text),
        ExprKind::Quantity { value, unit, unit_span: _ } => {
            f.write(&value.text);
            if unit.word != "%" {
                f.write(" ");
            }
            f.write(unit.word);
        }
        ExprKind::Dims(w, h) => dims(f, w, h),
        ExprKind::Str(s) => f.write(&quote(s)),
        ExprKind::Text(t) => {
            if f.flat && t.contains('\n') {
                f.failed = true;
            }
            f.write("\"\"\"");
            f.write(t);
            f.write("\"\"\"");
        }
        ExprKind::Bool(b) => f.write(if *b { "true" } else { "false" }),
        ExprKind::Unknown => f.write("unknown"),
        ExprKind::Path(segments) => {
            let names: Vec<&str> = segments.iter().map(|s| s.name.as_str()).collect();
            f.write(&names.join("::"));
        }
        ExprKind::List(items) => {
            let at = (e.span.start as usize, f.end(e.span));
            seq(f, LIST, at, items, |x| x.span, expr);
        }
        ExprKind::Record(b) => block(f, b),
        ExprKind::Paren(inner) => {
            f.write("(");
            expr(f, inner);
            f.write(")");
        }
        ExprKind::Unary { op, op_span: _, operand } => {
            f.write(match op {
                UnaryOp::Neg => "-",
                UnaryOp::Not => "not ",
            });
            expr(f, operand);
        }
        ExprKind::Binary { op, op_span, lhs, rhs } => {
            expr(f, lhs);
            infix(f, f.end(lhs.span), op_span.start as usize, rhs, op.symbol());
        }
        ExprKind::Range { lo, hi } => {
            expr(f, lo);
            let op_at = find(f.src, f.end(lo.span), "..");
            infix(f, f.end(lo.span), op_at, hi, "..");
        }
        ExprKind::If { cond, then, otherwise } => {
            // Too long for its line: `else` starts a continuation line.
            let start_col = f.col();
            let long =
                !f.flat && f.measure(|m| expr(m, e)).is_none_or(|w| start_col + w > MAX_WIDTH);
            f.write("if ");
            expr(f, cond);
            let then_at = find(f.src, f.end(cond.span), "then");
            keyword(f, f.end(cond.span), then_at, "then", false);
            expr(f, then);
            let else_at = find(f.src, f.end(then.span), "else");
            keyword(f, f.end(then.span), else_at, "else", long);
            expr(f, otherwise);
        }
        ExprKind::Call { callee, args, args_span } => {
            expr(f, callee);
            let at = (args_span.start as usize, f.end(*args_span));
            seq(f, ARGS, at, args, |a| a.span, arg);
        }
        ExprKind::Member { base, name } => {
            expr(f, base);
            f.write(".");
            f.write(&name.name);
        }
        ExprKind::Index { base, index } => {
            expr(f, base);
            f.write("[");
            expr(f, index);
            f.write("]");
        }
        ExprKind::Configure { base, block: b } => {
            expr(f, base);
            f.write(" ");
            block(f, b);
        }
        ExprKind::Error => {
            let text = f.src.get(e.span.range()).unwrap_or("").to_string();
            f.write(&text);
        }
    }
    f.last_end = f.last_end.max(f.end(e.span));
}

fn dims(f: &mut Fmt, w: &Number, h: &Number) {
    f.write(&w.text);
    f.write(" x ");
    f.write(&h.text);
}

/// ` op rhs`, or a line break before `op` where the source had one.
fn infix(f: &mut Fmt, lhs_end: usize, op_at: usize, rhs: &Expr, op: &str) {
    keyword(f, lhs_end, op_at, op, false);
    expr(f, rhs);
}

/// A word between two operands (`then`, `else`, an operator) with a space after it; it starts
/// a continuation line where the source broke the line before it, or where `force_break`.
fn keyword(f: &mut Fmt, prev_end: usize, at: usize, word: &str, force_break: bool) {
    let cont = f.cont;
    f.comments_before(at, cont);
    let brk = force_break || f.src_breaks(prev_end, at);
    f.space_or_line(brk);
    f.write(word);
    f.write(" ");
    if at > prev_end {
        f.last_end = at + word.len();
    }
}

fn arg(f: &mut Fmt, a: &Arg) {
    if let Some(name) = &a.name {
        f.write(&name.name);
        f.write(": ");
        f.last_end = f.end(name.span);
    }
    expr(f, &a.value);
}

/// `{ … }`: a configuration block, record, profile or override.
pub(crate) fn block(f: &mut Fmt, b: &Block) {
    let at = (b.span.start as usize, f.end(b.span));
    seq(f, BLOCK, at, &b.items, crate::items::block_item_span, crate::items::block_item);
}
