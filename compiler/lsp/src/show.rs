//! Checked values and counts as a hover or a hint shows them: in the recipe's own notation
//! (`32768 tokens`, `0.2 .. 0.28`, `std::sandbox::tasks(…)`), short, and with thousands
//! separators for the estimates' counts.

use wrl_check::{SigExpr, V, Val};
use wrl_plan::show_num;
use wrl_syntax::tokens::Dimension;

/// A value in recipe notation, cut short inside lists, records and objects.
pub fn val(v: &Val) -> String {
    val_at(v, 0)
}

fn val_at(v: &Val, depth: usize) -> String {
    match &v.v {
        V::Num { value } => show_num(*value),
        V::Qty { value, dim } => qty(*value, *dim),
        V::Bool { value } => value.to_string(),
        V::Str { value } => {
            let short: String = value.chars().take(60).collect();
            if short.len() < value.len() { format!("{short:?}…") } else { format!("{value:?}") }
        }
        V::Symbol { name } => name.clone(),
        V::Enum { value } => value.clone(),
        V::List { items } if depth >= 2 && !items.is_empty() => "[…]".into(),
        V::List { items } => {
            let mut parts: Vec<String> =
                items.iter().take(4).map(|i| val_at(i, depth + 1)).collect();
            if items.len() > 4 {
                parts.push(format!("… {} more", items.len() - 4));
            }
            format!("[{}]", parts.join(", "))
        }
        V::Record { .. } if depth >= 2 => "{ … }".into(),
        V::Record { fields } => {
            let parts: Vec<String> =
                fields.iter().map(|(k, f)| format!("{k} = {}", val_at(f, depth + 1))).collect();
            format!("{{ {} }}", parts.join(", "))
        }
        V::Range { lo, hi } => format!("{} .. {}", val_at(lo, depth + 1), val_at(hi, depth + 1)),
        V::Dims { width, height } => format!("{} x {}", show_num(*width), show_num(*height)),
        V::Obj(o) => format!("{}(…)", o.ctor),
        V::Ref { decl, member: Some(m), .. } => format!("{decl}.{m}"),
        V::Ref { decl, member: None, .. } => decl.to_string(),
        V::Signal { expr } => sig(expr, 0),
        V::Unknown => "unknown".into(),
    }
}

fn sig(e: &SigExpr, depth: usize) -> String {
    if depth > 3 {
        return "…".into();
    }
    match e {
        SigExpr::Const { value } => show_num(*value),
        SigExpr::Bool { value } => value.to_string(),
        SigExpr::Signal { obj } => obj.ctor.to_string(),
        SigExpr::Reward { name } => name.clone(),
        SigExpr::Unary { neg: true, arg } => format!("-{}", sig(arg, depth + 1)),
        SigExpr::Unary { neg: false, arg } => format!("not {}", sig(arg, depth + 1)),
        SigExpr::Binary { bin, lhs, rhs } => {
            format!("{} {} {}", sig(lhs, depth + 1), bin.symbol(), sig(rhs, depth + 1))
        }
        SigExpr::If { cond, then, otherwise } => format!(
            "if {} then {} else {}",
            sig(cond, depth + 1),
            sig(then, depth + 1),
            sig(otherwise, depth + 1)
        ),
    }
}

/// A quantity in its canonical unit (`600 s`, `10%`, `85899345920 B`).
pub fn qty(value: f64, dim: Dimension) -> String {
    match dim {
        Dimension::Ratio => format!("{}%", show_num(value * 100.0)),
        d => format!("{} {}", show_num(value), d.canonical_unit()),
    }
}

/// A count with thousands separators (`684,000`); `unknown` when unknown.
pub fn count(n: Option<u64>) -> String {
    match n {
        None => "unknown".into(),
        Some(n) => group(&n.to_string()),
    }
}

/// `12345.5` → `12,345.5`: separators in the integer part of a number as printed.
pub fn group(digits: &str) -> String {
    let (sign, rest) = digits.strip_prefix('-').map_or(("", digits), |r| ("-", r));
    let (int, frac) = rest.split_once('.').map_or((rest, None), |(i, f)| (i, Some(f)));
    if int.len() < 4 || !int.bytes().all(|b| b.is_ascii_digit()) {
        return digits.to_string();
    }
    let mut out = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    match frac {
        Some(f) => format!("{sign}{out}.{f}"),
        None => format!("{sign}{out}"),
    }
}

/// Prose re-wrapped at `width` columns on word boundaries (Markdown reads single newlines as
/// spaces; terminal editors show them, and would otherwise cut words in two).
pub fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    for (i, para) in text.split("\n\n").enumerate() {
        if i > 0 {
            out.push_str("\n\n");
        }
        let mut col = 0;
        for word in para.split_whitespace() {
            let n = word.chars().count();
            if col > 0 && col + 1 + n > width {
                out.push('\n');
                col = 0;
            } else if col > 0 {
                out.push(' ');
                col += 1;
            }
            out.push_str(word);
            col += n;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_written() {
        assert_eq!(count(Some(684_000)), "684,000");
        assert_eq!(count(Some(999)), "999");
        assert_eq!(count(None), "unknown");
        assert_eq!(group("1234567.25"), "1,234,567.25");
        assert_eq!(group("-1000"), "-1,000");
        assert_eq!(qty(0.1, Dimension::Ratio), "10%");
        assert_eq!(qty(600.0, Dimension::Time), "600 s");
        assert_eq!(qty(32768.0, Dimension::Tokens), "32768 tokens");
        assert_eq!(wrap("aa bb cc\n\ndd", 5), "aa bb\ncc\n\ndd");
    }
}
