//! Finding a checked value by the place it was written: for values no override path reaches
//! (the fields of a judge inside a reward expression), the place is the key.

use wrl_check::{SigExpr, V, Val};
use wrl_diagnostics::Span;

/// The value written exactly at `span` inside `v` (reward expressions included).
pub fn by_span(v: &Val, span: Span) -> Option<&Val> {
    if v.span == span {
        return Some(v);
    }
    if let V::Signal { expr } = &v.v {
        return in_sig(expr, span);
    }
    let mut found = None;
    v.each_child(|c| {
        if found.is_none() {
            found = by_span(c, span);
        }
    });
    found
}

fn in_sig(e: &SigExpr, span: Span) -> Option<&Val> {
    match e {
        SigExpr::Signal { obj } => obj.fields.values().find_map(|f| by_span(f, span)),
        SigExpr::Unary { arg, .. } => in_sig(arg, span),
        SigExpr::Binary { lhs, rhs, .. } => in_sig(lhs, span).or_else(|| in_sig(rhs, span)),
        SigExpr::If { cond, then, otherwise } => {
            in_sig(cond, span).or_else(|| in_sig(then, span)).or_else(|| in_sig(otherwise, span))
        }
        SigExpr::Const { .. } | SigExpr::Bool { .. } | SigExpr::Reward { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_judge_field_inside_a_reward_is_found() {
        let src =
            "use std::rewards::{judge}\nreward r = 0.5 * judge(model: \"m\") { screenshots = 3 }\n";
        let (_, checked) = wrl_check::check_source("a.wrl", src, &wrl_check::MemLoader::default());
        let r = checked.recipes[0].decl("r").expect("r");
        let at = src.find("3 }").unwrap_or(0);
        let span = Span::new(wrl_diagnostics::FileId(0), at, at + 1);
        assert_eq!(by_span(&r.value, span).and_then(Val::as_f64), Some(3.0));
    }
}
