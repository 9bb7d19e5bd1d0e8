//! Operators over checked values: unary and binary arithmetic with units, comparisons, `if`, and
//! reward expressions built from signals.

use wrl_diagnostics::{Diagnostic, Span};

use wrl_syntax::ast::{BinaryOp, UnaryOp};
use wrl_syntax::tokens::Dimension;

use crate::checker::Checker;
use crate::eval::{is_signal, to_sig};
use crate::value::{SigExpr, V, Val};

impl Checker<'_> {
    pub(crate) fn unary(&mut self, op: UnaryOp, x: Val, span: Span) -> Val {
        let v = match (op, &x.v) {
            (_, V::Unknown) => V::Unknown,
            (UnaryOp::Neg, V::Num { value }) => V::Num { value: -value },
            (UnaryOp::Neg, V::Qty { value, dim }) => V::Qty { value: -value, dim: *dim },
            (UnaryOp::Not, V::Bool { value }) => V::Bool { value: !value },
            (_, _) if is_signal(&x) => {
                let arg = Box::new(to_sig(&x));
                V::Signal {
                    expr: Box::new(match op {
                        UnaryOp::Neg => SigExpr::Unary { neg: true, arg },
                        UnaryOp::Not => SigExpr::Unary { neg: false, arg },
                    }),
                }
            }
            _ => {
                let what = match op {
                    UnaryOp::Neg => "negate",
                    UnaryOp::Not => "apply `not` to",
                };
                self.diags.push(
                    Diagnostic::new("E0300", format!("cannot {what} {}", x.describe()))
                        .label(x.span, "wrong type here"),
                );
                V::Unknown
            }
        };
        Val::new(v, span)
    }

    pub(crate) fn binary(
        &mut self,
        op: BinaryOp,
        op_span: Span,
        a: Val,
        b: Val,
        span: Span,
    ) -> Val {
        if matches!(a.v, V::Unknown) || matches!(b.v, V::Unknown) {
            return Val::new(V::Unknown, span);
        }
        if (is_signal(&a) || is_signal(&b))
            && let (Some(x), Some(y)) = (sig_operand(&a), sig_operand(&b))
        {
            let expr = SigExpr::Binary { bin: op, lhs: Box::new(x), rhs: Box::new(y) };
            return Val::new(V::Signal { expr: Box::new(expr) }, span);
        }
        let num = |v: &Val| match v.v {
            V::Num { value } => Some((value, None)),
            V::Qty { value, dim } => Some((value, Some(dim))),
            _ => None,
        };
        let mismatch = |this: &mut Self, msg: String, help: &str| {
            this.diags.push(
                Diagnostic::new("E0305", msg)
                    .label(op_span, "these cannot be combined")
                    .label(a.span, a.describe())
                    .label(b.span, b.describe())
                    .help(help.to_string()),
            );
            Val::new(V::Unknown, span)
        };
        let v = match op {
            BinaryOp::And | BinaryOp::Or => match (&a.v, &b.v) {
                (V::Bool { value: x }, V::Bool { value: y }) => {
                    V::Bool { value: if op == BinaryOp::And { *x && *y } else { *x || *y } }
                }
                _ => return self.type_error_bin(op, op_span, &a, &b, span),
            },
            _ => {
                let (Some((x, dx)), Some((y, dy))) = (num(&a), num(&b)) else {
                    if op.is_comparison() && a.v == b.v {
                        return Val::new(
                            V::Bool {
                                value: op == BinaryOp::Eq
                                    || op == BinaryOp::Le
                                    || op == BinaryOp::Ge,
                            },
                            span,
                        );
                    }
                    return self.type_error_bin(op, op_span, &a, &b, span);
                };
                match op {
                    BinaryOp::Add | BinaryOp::Sub => match (dx, dy) {
                        (Some(p), Some(q)) if p != q => {
                            return mismatch(
                                self,
                                format!(
                                    "cannot {} {} and {}",
                                    if op == BinaryOp::Add { "add" } else { "subtract" },
                                    p.describe(),
                                    q.describe()
                                ),
                                "both sides need the same unit",
                            );
                        }
                        (Some(_), None) | (None, Some(_)) => {
                            return mismatch(
                                self,
                                "cannot add a plain number to a quantity".into(),
                                "give the number a unit, e.g. `2 steps`",
                            );
                        }
                        (d, _) => qty(if op == BinaryOp::Add { x + y } else { x - y }, d),
                    },
                    BinaryOp::Mul => match (dx, dy) {
                        (Some(p), Some(q)) => {
                            return mismatch(
                                self,
                                format!("cannot multiply {} by {}", p.describe(), q.describe()),
                                "multiply a quantity by a plain number",
                            );
                        }
                        (d, e) => qty(x * y, d.or(e)),
                    },
                    BinaryOp::Div => {
                        if y == 0.0 {
                            self.diags.push(
                                Diagnostic::new("E0306", "division by zero")
                                    .label(b.span, "this is zero"),
                            );
                            return Val::new(V::Unknown, span);
                        }
                        match (dx, dy) {
                            (Some(p), Some(q)) if p == q => V::Num { value: x / y },
                            (Some(p), Some(q)) => {
                                return mismatch(
                                    self,
                                    format!("cannot divide {} by {}", p.describe(), q.describe()),
                                    "divide quantities of the same unit, or by a plain number",
                                );
                            }
                            (None, Some(_)) => {
                                return mismatch(
                                    self,
                                    "cannot divide a plain number by a quantity".into(),
                                    "divide a quantity by a plain number",
                                );
                            }
                            (d, None) => qty(x / y, d),
                        }
                    }
                    _ => {
                        if dx != dy {
                            return mismatch(
                                self,
                                "cannot compare values of different units".into(),
                                "compare quantities of the same unit",
                            );
                        }
                        let r = match op {
                            BinaryOp::Eq => x == y,
                            BinaryOp::Ne => x != y,
                            BinaryOp::Lt => x < y,
                            BinaryOp::Le => x <= y,
                            BinaryOp::Gt => x > y,
                            _ => x >= y,
                        };
                        V::Bool { value: r }
                    }
                }
            }
        };
        Val::new(v, span)
    }

    fn type_error_bin(&mut self, op: BinaryOp, op_span: Span, a: &Val, b: &Val, span: Span) -> Val {
        for v in [a, b] {
            if let V::Symbol { name } = &v.v {
                let name = name.clone();
                let m = self
                    .modules
                    .iter()
                    .position(|md| md.file == v.span.file)
                    .unwrap_or(self.prelude);
                self.unknown_name(m, &name, v.span);
                return Val::new(V::Unknown, span);
            }
        }
        self.diags.push(
            Diagnostic::new(
                "E0300",
                format!("`{}` cannot combine {} and {}", op.symbol(), a.describe(), b.describe()),
            )
            .label(op_span, "here")
            .label(a.span, a.describe())
            .label(b.span, b.describe()),
        );
        Val::new(V::Unknown, span)
    }

    pub(crate) fn if_value(&mut self, c: Val, t: Val, o: Val, span: Span) -> Val {
        match &c.v {
            V::Bool { value } => Val::new(if *value { t.v } else { o.v }, span),
            V::Unknown => Val::new(V::Unknown, span),
            _ if is_signal(&c) => match (sig_operand(&t), sig_operand(&o)) {
                (Some(x), Some(y)) => {
                    let expr = SigExpr::If {
                        cond: Box::new(to_sig(&c)),
                        then: Box::new(x),
                        otherwise: Box::new(y),
                    };
                    Val::new(V::Signal { expr: Box::new(expr) }, span)
                }
                _ => {
                    self.diags.push(
                        Diagnostic::new(
                            "E0300",
                            "both branches of a reward `if` must be numbers or signals",
                        )
                        .label(t.span, t.describe())
                        .label(o.span, o.describe()),
                    );
                    Val::new(V::Unknown, span)
                }
            },
            _ => {
                self.diags.push(
                    Diagnostic::new(
                        "E0300",
                        format!("an `if` condition must be true or false, found {}", c.describe()),
                    )
                    .label(c.span, "not a condition"),
                );
                Val::new(V::Unknown, span)
            }
        }
    }
}

fn qty(value: f64, dim: Option<Dimension>) -> V {
    match dim {
        Some(dim) => V::Qty { value, dim },
        None => V::Num { value },
    }
}

fn sig_operand(v: &Val) -> Option<SigExpr> {
    match &v.v {
        V::Num { value } => Some(SigExpr::Const { value: *value }),
        V::Bool { value } => Some(SigExpr::Bool { value: *value }),
        _ if is_signal(v) => Some(to_sig(v)),
        _ => None,
    }
}
