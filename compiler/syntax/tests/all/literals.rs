//! Literals: a quantity for every unit word in `tokens::UNITS`, number magnitudes (`32k` is
//! 32,000, `32Ki` is 32,768), sizes, strings with escapes, text blocks, and the places where a
//! word after a number is, or is not, read as its unit.

use crate::common;

use common::{F, expr, expr_codes, sx};
use wrl_syntax::ast::ExprKind;
use wrl_syntax::tokens::{MAGNITUDES, UNITS};

#[test]
fn every_unit_makes_a_quantity() {
    for u in UNITS {
        for src in [format!("3 {}", u.word), format!("3{}", u.word), format!("3\t{}", u.word)] {
            let e = expr(&src);
            let ExprKind::Quantity { value, unit, unit_span } = &e.kind else {
                panic!("`{src}` is not a quantity: {e:?}")
            };
            assert_eq!(value.value, 3.0, "{src}");
            assert_eq!(unit.word, u.word, "{src}");
            assert_eq!(*unit, u, "{src}: the unit's definition is the table's");
            assert_eq!(&src[unit_span.range()], u.word, "{src}");
            assert_eq!(e.span.range(), 0..src.len(), "{src}");
        }
    }
}

#[test]
fn every_unit_works_inside_a_declaration() {
    for u in UNITS {
        let src = format!("param p = {{ a = 12 {}, b = 1.5k {} }}", u.word, u.word);
        let f = common::parse_ok(&src);
        common::SpanCheck::run(&src, &f).assert_ok();
    }
}

#[test]
fn magnitudes_scale_the_number() {
    assert_eq!(sx("32k"), "32000");
    assert_eq!(sx("32Ki"), "32768");
    assert_eq!(sx("2M"), "2000000");
    assert_eq!(sx("2Mi"), "2097152");
    assert_eq!(sx("1G"), "1000000000");
    assert_eq!(sx("1Gi"), "1073741824");
    assert_eq!(sx("1.5k"), "1500");
    assert_eq!(sx("32k tokens"), "32000tokens");
    assert_eq!(sx("8Ki tokens"), "8192tokens");
    for (m, scale) in MAGNITUDES {
        let ExprKind::Number(n) = expr(&format!("7{m}")).kind else { panic!("7{m}") };
        assert_eq!(n.value, 7.0 * scale, "7{m}");
        assert!(n.is_int, "7{m} is an integer");
        assert_eq!(n.text, format!("7{m}"), "the text is kept as written");
    }
}

#[test]
fn a_magnitude_is_not_a_unit_prefix() {
    // `MB`, `MiB`, `GiB` are units; `M`, `Mi`, `Gi` only magnitudes when nothing follows.
    assert_eq!(sx("3MB"), "3MB");
    assert_eq!(sx("3MiB"), "3MiB");
    assert_eq!(sx("80 GiB"), "80GiB");
    assert_eq!(sx("3 KB"), "3KB");
    assert_eq!(sx("2Mi B"), "2097152B");
    // `ms` is milliseconds, not a magnitude `M` (there is none called `m`).
    assert_eq!(sx("500ms"), "500ms");
}

#[test]
fn numbers() {
    assert_eq!(sx("1_000"), "1000");
    assert_eq!(sx("1e-5"), "0.00001");
    assert_eq!(sx("2.5E+3"), "2500");
    assert_eq!(sx("0.28"), "0.28");
    let ExprKind::Number(n) = expr("12").kind else { panic!() };
    assert!(n.is_int);
    let ExprKind::Number(n) = expr("1.0").kind else { panic!() };
    assert!(!n.is_int);
    assert_eq!(expr_codes("1e999"), ["E0105"]);
    assert_eq!(expr_codes("1e308G"), ["E0105"]);
    assert_eq!(expr_codes("1e999 tokens"), ["E0105"]);
    // A whole number past 2^53 is refused instead of becoming another number (it used to
    // pass as 1.8e19 and overflow the runtime's allocations).
    assert_eq!(expr_codes("18446744073709551616"), ["E0105"]);
    assert_eq!(expr_codes("99999999999999999999"), ["E0105"]);
    assert_eq!(expr_codes("10000000G"), ["E0105"]);
    assert!(expr_codes("9007199254740992").is_empty());
    assert!(expr_codes("1e30").is_empty(), "a float may be large");
}

#[test]
fn sizes() {
    assert_eq!(sx("1280 x 1000"), "1280x1000");
    assert_eq!(sx("1280x 1000"), "1280x1000");
    assert_eq!(expr_codes("1280 x1000"), ["E0103"]);
    // Without the space, `x1000` is read as a unit word (E0103); the docs write sizes spaced.
    assert_eq!(expr_codes("1280x1000"), ["E0103"]);
    assert_eq!(sx("[1280 x 1000, 640 x 480]"), "[1280x1000 640x480]");
}

#[test]
fn unit_words_are_checked() {
    assert_eq!(expr_codes("32k tokenz"), ["E0103"]);
    assert_eq!(expr_codes("3 parsecs"), ["E0103"]);
    let err = wrl_syntax::parse_expr(F, "32k tokenz").unwrap_err();
    assert_eq!(err[0].help.as_deref(), Some("did you mean `tokens`?"));
    assert_eq!(err[0].labels[0].span.range(), 4..10);
}

#[test]
fn a_unit_must_sit_on_the_number_s_line() {
    // On the next line, the word is the next block item (a flag), not a unit.
    let f = common::parse_ok("param p = { a = 3\n  steps }");
    let wrl_syntax::ast::ItemKind::Decl(d) = &f.items[0].kind else { panic!() };
    assert_eq!(common::sexpr(&d.value), "{a=3 steps}");
}

#[test]
fn strings_and_escapes() {
    assert_eq!(sx(r#""a\n\t\r\\\"\0\u{e9}""#), "\"a\\n\\t\\r\\\\\\\"\\0é\"");
    assert_eq!(sx("\"\""), "\"\"");
    assert_eq!(sx("\"naïve ☃\""), "\"naïve ☃\"");
    for bad in [r#""\d""#, r#""\u{110000}""#, r#""\u{zz}""#, r#""\u12""#, r#""\x41""#] {
        assert_eq!(expr_codes(bad), ["E0102"], "{bad}");
    }
    assert_eq!(expr_codes("\"open"), ["E0101"]);
    assert_eq!(expr_codes("\"line\nbreak\""), ["E0101"]);
}

#[test]
fn text_blocks_are_verbatim() {
    let src = "\"\"\"\n  Answer \"yes\" or \"no\".\\n\n\"\"\"";
    let ExprKind::Text(t) = expr(src).kind else { panic!() };
    assert_eq!(t, "\n  Answer \"yes\" or \"no\".\\n\n");
}
