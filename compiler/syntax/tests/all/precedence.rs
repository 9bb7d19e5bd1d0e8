//! Operator precedence and associativity, checked by tree equivalence: an expression parses to
//! the same tree (spans and parentheses ignored) as its fully parenthesised reading, and that
//! tree is also spelled out once, so that two equally wrong parses cannot agree.

use crate::common;

use common::{expr_codes, sx};

/// `a` and `b` parse to the same tree, and that tree is `tree`.
#[track_caller]
fn same(a: &str, b: &str, tree: &str) {
    assert_eq!(sx(a), sx(b), "`{a}` and `{b}` differ");
    assert_eq!(sx(a), tree, "`{a}`");
}

#[test]
fn boolean_operators() {
    same("a or b and c", "a or (b and c)", "(or a (and b c))");
    same("a and b or c", "(a and b) or c", "(or (and a b) c)");
    same("a or b or c", "(a or b) or c", "(or (or a b) c)");
    same("a and b and c", "(a and b) and c", "(and (and a b) c)");
}

#[test]
fn not_binds_looser_than_comparison_and_tighter_than_and() {
    same("not a == b", "not (a == b)", "(not (== a b))");
    same("not a and b", "(not a) and b", "(and (not a) b)");
    same("not a or not b", "(not a) or (not b)", "(or (not a) (not b))");
    same("not not a", "not (not a)", "(not (not a))");
    same("a and not b < c", "a and (not (b < c))", "(and a (not (< b c)))");
}

#[test]
fn comparison_sits_between_boolean_and_arithmetic() {
    same("a + b < c * d", "(a + b) < (c * d)", "(< (+ a b) (* c d))");
    same("a < b and c >= d", "(a < b) and (c >= d)", "(and (< a b) (>= c d))");
    for op in ["==", "!=", "<", "<=", ">", ">="] {
        let src = format!("x {op} y + 1");
        assert_eq!(sx(&src), format!("({op} x (+ y 1))"), "{src}");
    }
}

#[test]
fn arithmetic_is_left_associative_with_the_usual_levels() {
    same("a - b - c", "(a - b) - c", "(- (- a b) c)");
    same("a / b / c", "(a / b) / c", "(/ (/ a b) c)");
    same("a - b + c", "(a - b) + c", "(+ (- a b) c)");
    same("a * b / c", "(a * b) / c", "(/ (* a b) c)");
    same("a + b * c", "a + (b * c)", "(+ a (* b c))");
    same("a * b + c * d", "(a * b) + (c * d)", "(+ (* a b) (* c d))");
    same("a - b * c - d", "(a - (b * c)) - d", "(- (- a (* b c)) d)");
}

#[test]
fn negation_binds_tighter_than_multiplication() {
    same("-x * y", "(-x) * y", "(* (neg x) y)");
    same("-2 * 3", "(-2) * 3", "(* (neg 2) 3)");
    same("a - -b", "a - (-b)", "(- a (neg b))");
    same("- - x", "-(-x)", "(neg (neg x))");
    same("-a + b", "(-a) + b", "(+ (neg a) b)");
}

#[test]
fn postfix_binds_tightest() {
    same("-f(x)", "-(f(x))", "(neg (call f x))");
    same("-a.b", "-(a.b)", "(neg (. a b))");
    same("not a[0]", "not (a[0])", "(not ([] a 0))");
    same("a.b(c).d[0]", "((a.b)(c)).d[0]", "([] (. (call (. a b) c) d) 0)");
    same("x * f(y) + z.w", "(x * (f(y))) + (z.w)", "(+ (* x (call f y)) (. z w))");
    same("hf(\"m\") { c = 1 }.x", "(hf(\"m\") { c = 1 }).x", "(. (cfg (call hf \"m\") {c=1}) x)");
    same("f(a)(b)", "(f(a))(b)", "(call (call f a) b)");
}

#[test]
fn range_is_the_loosest_operator() {
    same("a + 1 .. b * 2", "(a + 1) .. (b * 2)", "(.. (+ a 1) (* b 2))");
    same("a or b .. c", "(a or b) .. c", "(.. (or a b) c)");
    same("0.2 .. 0.28", "(0.2) .. (0.28)", "(.. 0.2 0.28)");
    same("-1 .. 1", "(-1) .. 1", "(.. (neg 1) 1)");
}

#[test]
fn if_branches_extend_as_far_right_as_possible() {
    same("if a then b else c + d", "if a then b else (c + d)", "(if a b (+ c d))");
    same("if a then b else c or d", "if a then b else (c or d)", "(if a b (or c d))");
    same("1 + if a then b else c * 2", "1 + (if a then b else (c * 2))", "(+ 1 (if a b (* c 2)))");
    same(
        "if a then if b then c else d else e",
        "if a then (if b then c else d) else e",
        "(if a (if b c d) e)",
    );
    same(
        "if a then b else if c then d else e",
        "if a then b else (if c then d else e)",
        "(if a b (if c d e))",
    );
    same("if a or b then c else d", "if (a or b) then c else d", "(if (or a b) c d)");
}

#[test]
fn the_brief_s_reward_parses_as_a_researcher_reads_it() {
    same(
        "if ended(format_error) then -1 else format_ok * judge(model: \"gpt-4.1\", screenshots: 3)",
        "if (ended(format_error)) then (-1) else (format_ok * (judge(model: \"gpt-4.1\", screenshots: 3)))",
        "(if (call ended format_error) (neg 1) (* format_ok (call judge model:\"gpt-4.1\" screenshots:3)))",
    );
    same(
        "0.7 * a - 0.01 * turns + b",
        "((0.7 * a) - (0.01 * turns)) + b",
        "(+ (- (* 0.7 a) (* 0.01 turns)) b)",
    );
}

#[test]
fn comparisons_and_ranges_do_not_chain() {
    for src in ["a < b < c", "a == b == c", "a <= b > c", "a != b == c", "a .. b .. c"] {
        assert_eq!(expr_codes(src), ["E0108"], "{src}");
    }
    // Parenthesised or joined with `and`, they are fine.
    for src in ["(a < b) == c", "a < b and b < c", "(a .. b)", "x == (a < b)"] {
        assert_eq!(expr_codes(src), Vec::<&str>::new(), "{src}");
    }
}

#[test]
fn parentheses_are_transparent_but_kept_in_the_tree() {
    let e = common::expr("(a)");
    assert!(matches!(e.kind, wrl_syntax::ast::ExprKind::Paren(_)), "{e:?}");
    assert_eq!(sx("((((a))))"), "a");
}
