//! Spans point at the right text: checked with `&src[span.range()]` for named pieces, and by a
//! walk over every node that keeps each span inside the source and inside its parent.

use crate::common;

use common::{F, SpanCheck, parse_ok};
use wrl_syntax::ast::*;

/// The source under a span, without trailing whitespace and comments (a guard: spans end at
/// their last token, as `spans_have_no_surrounding_whitespace` checks; the tests here check what
/// the span starts and ends on).
fn text(src: &str, s: wrl_diagnostics::Span) -> &str {
    let mut t = &src[s.range()];
    loop {
        let trimmed = t.trim_end();
        let last_line_start = trimmed.rfind('\n').map_or(0, |i| i + 1);
        let last = &trimmed[last_line_start..];
        let cut = match last.find("//") {
            Some(i) if last[..i].matches('"').count().is_multiple_of(2) => last_line_start + i,
            _ => trimmed.len(),
        };
        if cut == t.len() {
            return t;
        }
        t = &t[..cut];
    }
}

/// The exact source under a span.
fn exact(src: &str, s: wrl_diagnostics::Span) -> &str {
    &src[s.range()]
}

fn decl_value(f: &File, i: usize) -> &Expr {
    match &f.items[i].kind {
        ItemKind::Decl(d) => &d.value,
        other => panic!("item {i} is not a declaration: {other:?}"),
    }
}

#[test]
fn items_span_from_their_keyword_to_their_last_token() {
    let src = "  /// doc\n  model policy = hf(\"q\") { context = 32k tokens }   // trailing\n\nuse std::tools::browser\nprofile smoke { a = 1 }\n";
    let f = parse_ok(src);
    assert_eq!(text(src, f.items[0].span), "model policy = hf(\"q\") { context = 32k tokens }");
    assert_eq!(text(src, f.items[1].span), "use std::tools::browser");
    assert_eq!(text(src, f.items[2].span), "profile smoke { a = 1 }");
    let ItemKind::Decl(d) = &f.items[0].kind else { panic!() };
    assert_eq!(text(src, d.kind_span), "model");
    assert_eq!(text(src, d.name.span), "policy");
    assert_eq!(text(src, d.value.span), "hf(\"q\") { context = 32k tokens }");
    SpanCheck::run(src, &f).assert_ok();
}

#[test]
fn expression_pieces() {
    let src = "reward r = a + b * c\nparam q = 32k   tokens\nparam call = judge(3 s, model: \"gpt\")\nparam m = warmup.model[0]";
    let f = parse_ok(src);

    let ExprKind::Binary { op_span, lhs, rhs, .. } = &decl_value(&f, 0).kind else { panic!() };
    assert_eq!(text(src, *op_span), "+");
    assert_eq!(text(src, lhs.span), "a");
    assert_eq!(text(src, rhs.span), "b * c");

    let q = decl_value(&f, 1);
    let ExprKind::Quantity { unit_span, .. } = &q.kind else { panic!() };
    assert_eq!(text(src, q.span), "32k   tokens");
    assert_eq!(text(src, *unit_span), "tokens");

    let ExprKind::Call { callee, args, args_span } = &decl_value(&f, 2).kind else { panic!() };
    assert_eq!(text(src, callee.span), "judge");
    assert_eq!(text(src, *args_span), "(3 s, model: \"gpt\")");
    assert_eq!(text(src, args[0].span), "3 s");
    assert_eq!(text(src, args[1].span), "model: \"gpt\"");
    assert_eq!(text(src, args[1].value.span), "\"gpt\"");

    let m = decl_value(&f, 3);
    let ExprKind::Index { base, index } = &m.kind else { panic!() };
    assert_eq!(text(src, m.span), "warmup.model[0]");
    assert_eq!(text(src, base.span), "warmup.model");
    assert_eq!(text(src, index.span), "0");
    SpanCheck::run(src, &f).assert_ok();
}

#[test]
fn block_pieces() {
    let src = "agent g = graph {\n  module p = llm(x)\n  a -> b when go | stop limit 3\n  web.target = w\n  phases[1].lr = 1\n  trainable\n}";
    let f = parse_ok(src);
    let ExprKind::Configure { base, block } = &decl_value(&f, 0).kind else { panic!() };
    assert_eq!(text(src, base.span), "graph");
    assert!(
        text(src, block.span).starts_with("{\n  module") && text(src, block.span).ends_with('}')
    );
    let texts: Vec<&str> = block
        .items
        .iter()
        .map(|i| match i {
            BlockItem::Module(m) => text(src, m.span),
            BlockItem::Edge(e) => text(src, e.span),
            BlockItem::Field(fl) => text(src, fl.span),
            BlockItem::Flag(i) => text(src, i.span),
            BlockItem::Tool(t) => text(src, t.span),
        })
        .collect();
    assert_eq!(
        texts,
        [
            "module p = llm(x)",
            "a -> b when go | stop limit 3",
            "web.target = w",
            "phases[1].lr = 1",
            "trainable"
        ]
    );
    let BlockItem::Field(fl) = &block.items[3] else { panic!() };
    assert_eq!(text(src, fl.path.span), "phases[1].lr");
    let PathSegment::Index { index, span } = &fl.path.segments[1] else { panic!() };
    assert_eq!((*index, text(src, *span)), (1, "1"));
    SpanCheck::run(src, &f).assert_ok();
}

#[test]
fn spans_are_byte_offsets_in_non_ascii_text() {
    let src = "/// Überblick ☃\nparam naive = \"crème brûlée\" + ☃x";
    // `☃x` is not valid, but everything before it must be right.
    let p = wrl_syntax::parse(F, src);
    let d = &p.diagnostics[0];
    assert_eq!(exact(src, d.primary_span().unwrap()), "☃");
    let ok = "/// Überblick ☃\nparam naive = \"crème brûlée\" + x";
    let f = parse_ok(ok);
    let ExprKind::Binary { lhs, rhs, .. } = &decl_value(&f, 0).kind else { panic!() };
    assert_eq!(text(ok, lhs.span), "\"crème brûlée\"");
    assert_eq!(text(ok, rhs.span), "x");
    assert_eq!(f.items[0].doc.as_deref(), Some("Überblick ☃"));
    SpanCheck::run(ok, &f).assert_ok();
}

#[test]
fn diagnostic_spans_point_at_the_offending_text() {
    let cases: &[(&str, &str, &str)] = &[
        ("param p = 3 parsecs", "E0103", "parsecs"),
        ("param p = \"a\\qb\"", "E0102", "\\q"),
        ("param p = 1e999", "E0105", "1e999"),
        ("param p = f(a: 1, 2)", "E0107", "2"),
        ("param p = 1 < 2 < 3", "E0108", "<"),
        ("param p = \"open\nparam q = 1", "E0101", "\"open"),
        ("param p = 'x'", "E0100", "'"),
        ("param p = a b", "E0100", "b"),
        ("model p = hf(\"q\") { context: 1 }", "E0100", ":"),
    ];
    for (src, code, want) in cases {
        let p = wrl_syntax::parse(F, src);
        let d = p.diagnostics.first().unwrap_or_else(|| panic!("{src}: no diagnostic"));
        assert_eq!(d.code, *code, "{src}: {}", d.message);
        assert_eq!(exact(src, d.primary_span().unwrap()), *want, "{src}: {}", d.message);
    }
    // The chained comparison points at the second `<`.
    let src = "param p = 1 < 2 < 3";
    let d = &wrl_syntax::parse(F, src).diagnostics[0];
    assert_eq!(d.primary_span().unwrap().start, 16);
}

/// Regression: a pair's span in pest includes the whitespace and comments that the implicit
/// `WHITESPACE` skipping (comments reach pest as blanks) consumed before an optional or repeated
/// element that then matched nothing (`"param a = 1\n\n"`, `"turns "`, `"- "`). `Ctx::span` trims them, and the
/// operators are atomic rules.
#[test]
fn spans_have_no_surrounding_whitespace() {
    let mut padded = Vec::new();
    for (name, text) in common::corpus() {
        let p = wrl_syntax::parse(F, &text);
        let check = SpanCheck::run(&text, &p.file);
        padded.extend(check.padding.iter().take(3).map(|m| format!("{name}: {m}")));
    }
    assert!(padded.is_empty(), "{}", padded.join("\n"));
}

/// The smallest case of the bug above, pinned to exact offsets.
#[test]
fn item_and_operator_spans_stop_at_their_last_token() {
    let src = "param a = x - y   // c\n\n/// doc of b\nparam b = 2\n";
    let f = parse_ok(src);
    assert_eq!(exact(src, f.items[0].span), "param a = x - y");
    let ExprKind::Binary { op_span, lhs, .. } = &decl_value(&f, 0).kind else { panic!() };
    assert_eq!(exact(src, *op_span), "-");
    assert_eq!(exact(src, lhs.span), "x");
}

/// A byte-order mark is whitespace to the grammar anywhere in a file; a span that pest let run
/// over one (and the comment after it) ends at the last token all the same.
#[test]
fn spans_stop_before_a_byte_order_mark_in_a_line() {
    let src = "param a = b\u{feff}  // c\nparam q = f(x\u{feff}) { n = 1\u{feff} }\n";
    let f = parse_ok(src);
    assert_eq!(exact(src, decl_value(&f, 0).span), "b");
    assert_eq!(exact(src, f.items[0].span), "param a = b");
    assert_eq!(exact(src, f.items[1].span), "param q = f(x\u{feff}) { n = 1\u{feff} }");
    let check = SpanCheck::run(src, &f);
    check.assert_ok();
    assert!(check.padding.is_empty(), "{:?}", check.padding);
}
