//! The plan as deterministic text: one block per node in topological order, its inputs, then
//! its parameters sorted by name, an `unknown` that `wrlc run` would refuse marked where it
//! stands. Golden files under `recipes/golden/` are this text.

use std::fmt::Write as _;

use crate::model::Plan;
use crate::value::{PExpr, PObj, PVal};

/// Renders a plan as text.
pub fn render_text(plan: &Plan) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "plan {} (format {})", plan.recipe, plan.version);
    let _ = writeln!(s, "profile {}", plan.profile.as_deref().unwrap_or("(none)"));
    if let Some(v) = &plan.variant {
        let _ = writeln!(s, "variant {v}");
    }
    let _ = writeln!(s, "identity {}", crate::Identity::of(plan).line());
    let _ = writeln!(s, "{} nodes, {} edges", plan.nodes.len(), plan.edges.len());
    for n in &plan.nodes {
        let _ = writeln!(s);
        let _ = write!(s, "{} = {}", n.id, n.kind.word());
        if n.ctor != n.kind.word() {
            let _ = write!(s, " {}", n.ctor);
        }
        if let Some(a) = &n.alias_of {
            let _ = write!(s, " (as {a})");
        }
        let _ = writeln!(s);
        for e in plan.inputs(&n.id) {
            let _ = writeln!(s, "  <- {} from {} ({})", e.port, e.from, e.data.word());
        }
        let refused = crate::unknowns::refused_unknowns(n);
        for (k, v) in &n.params {
            let _ = write!(s, "  {k} = {}", show_val(v));
            let inner: Vec<&str> = refused
                .iter()
                .filter(|p| crate::unknowns::is_refused(std::slice::from_ref(p), k))
                .map(String::as_str)
                .collect();
            match inner.as_slice() {
                [] => {}
                [p] if p == k => {
                    let _ = write!(s, "  # wrlc run refuses `unknown` here: give a value");
                }
                paths => {
                    let _ = write!(s, "  # wrlc run refuses `unknown` at {}", paths.join(", "));
                }
            }
            let _ = writeln!(s);
        }
    }
    for c in &plan.claims {
        let _ = writeln!(s);
        let _ = writeln!(s, "claim:{} = claim {}", c.name, c.kind.ctor());
        let _ = writeln!(s, "  states {}", c.statement());
        if let Some(e) = c.expect {
            let _ = writeln!(s, "  expect = {} points", crate::params::fmt_points(e));
        }
        if let Some(ps) = &c.profiles {
            let _ = writeln!(s, "  profiles = [{}]", ps.join(", "));
        }
        for (k, v) in [("paper", &c.paper), ("source", &c.source)] {
            if let Some(v) = v {
                let _ = writeln!(s, "  {k} = {v:?}");
            }
        }
    }
    s
}

/// A number as a person writes it: `3`, `0.28`, `1e-6`, `32768`.
pub fn show_num(x: f64) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    if x.fract() == 0.0 && x.abs() < 1e15 {
        return format!("{x:.0}");
    }
    if x.abs() < 1e-3 {
        return format!("{x:e}");
    }
    // Round away binary noise (0.1 * 100 = 10.000000000000002).
    let r = (x * 1e9).round() / 1e9;
    format!("{r}")
}

/// A value in the recipe's own notation.
pub fn show_val(v: &PVal) -> String {
    match v {
        PVal::Num { value } => show_num(*value),
        PVal::Qty { value, unit } if unit == "ratio" => format!("{}%", show_num(value * 100.0)),
        PVal::Qty { value, unit } => format!("{} {unit}", show_num(*value)),
        PVal::Bool { value } => value.to_string(),
        PVal::Str { value } => format!("{value:?}"),
        PVal::Enum { value } => value.clone(),
        PVal::List { items } => {
            format!("[{}]", items.iter().map(show_val).collect::<Vec<_>>().join(", "))
        }
        PVal::Record { fields } => {
            if fields.is_empty() {
                return "{}".into();
            }
            let fs: Vec<String> =
                fields.iter().map(|(k, x)| format!("{k} = {}", show_val(x))).collect();
            format!("{{ {} }}", fs.join(", "))
        }
        PVal::Range { lo, hi } => format!("{} .. {}", show_val(lo), show_val(hi)),
        PVal::Dims { width, height } => format!("{} x {}", show_num(*width), show_num(*height)),
        PVal::Obj(o) => show_obj(o),
        PVal::Ref { node } => format!("<{node}>"),
        PVal::Reward { expr } => show_expr(expr),
        PVal::Unknown => "unknown".into(),
    }
}

fn show_obj(o: &PObj) -> String {
    let mut parts: Vec<String> =
        o.fields.iter().map(|(k, x)| format!("{k} = {}", show_val(x))).collect();
    for m in &o.modules {
        parts.push(format!("module {} = {}", m.name, show_val(&m.value)));
    }
    for e in &o.edges {
        let mut s = format!("{} -> {}", e.from, e.to);
        if !e.when.is_empty() {
            s.push_str(&format!(" when {}", e.when.join(" | ")));
        }
        if let Some(l) = e.limit {
            s.push_str(&format!(" limit {}", show_num(l)));
        }
        parts.push(s);
    }
    for t in &o.tools {
        let ps: Vec<String> = t
            .params
            .iter()
            .map(|p| match &p.default {
                Some(d) => format!("{}: {} = {}", p.name, p.ty, show_val(d)),
                None => format!("{}: {}", p.name, p.ty),
            })
            .collect();
        let term = if t.terminal { " { terminal }" } else { "" };
        parts.push(format!("tool {}({}){term}", t.name, ps.join(", ")));
    }
    if parts.is_empty() {
        format!("{}()", o.ctor)
    } else {
        format!("{}({})", o.ctor, parts.join(", "))
    }
}

/// A reward expression, fully parenthesised below the top.
pub fn show_expr(e: &PExpr) -> String {
    match e {
        PExpr::Const { value } => show_num(*value),
        PExpr::Bool { value } => value.to_string(),
        PExpr::Signal { obj } => show_obj(obj),
        PExpr::Reward { node } => format!("<{node}>"),
        PExpr::Unary { neg: true, arg } => format!("-{}", paren(arg)),
        PExpr::Unary { neg: false, arg } => format!("not {}", paren(arg)),
        PExpr::Binary { bin, lhs, rhs } => format!("{} {bin} {}", paren(lhs), paren(rhs)),
        PExpr::If { cond, then, otherwise } => {
            format!("if {} then {} else {}", show_expr(cond), show_expr(then), show_expr(otherwise))
        }
    }
}

fn paren(e: &PExpr) -> String {
    match e {
        PExpr::Binary { .. } | PExpr::If { .. } => format!("({})", show_expr(e)),
        PExpr::Const { value } if *value < 0.0 => format!("({})", show_num(*value)),
        PExpr::Const { .. }
        | PExpr::Bool { .. }
        | PExpr::Signal { .. }
        | PExpr::Reward { .. }
        | PExpr::Unary { .. } => show_expr(e),
    }
}
