//! Error recovery: one run reports an error in every broken top-level declaration, each error
//! lies inside its own declaration, a broken declaration never hides the errors of the next,
//! and the good declarations around broken ones still reach the AST.

use crate::common;

use common::{F, show};
use wrl_syntax::ast::ItemKind;

/// The line (0-based) of each diagnostic's primary label, with its code.
fn lines_of(src: &str) -> Vec<(usize, &'static str)> {
    let p = wrl_syntax::parse(F, src);
    p.diagnostics
        .iter()
        .map(|d| {
            let at = d.primary_span().expect("every syntax diagnostic has a label").start as usize;
            (src[..at].matches('\n').count(), d.code)
        })
        .collect()
}

fn decl_names(src: &str) -> Vec<String> {
    wrl_syntax::parse(F, src)
        .file
        .items
        .iter()
        .filter_map(|i| match &i.kind {
            ItemKind::Decl(d) => Some(d.name.name.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn three_broken_declarations_give_three_errors_each_in_its_own() {
    let src = "model policy = hf(\"Qwen\" \"VL\")\n\
               param fine = 1\n\
               stage warmup = sft(policy demos) { epochs = 3 }\n\
               param also_fine = [1, 2, 3]\n\
               reward outcome = judge(model: \"gpt-4.1\",, screenshots: 3)\n";
    assert_eq!(
        lines_of(src),
        [(0, "E0100"), (2, "E0100"), (4, "E0100")],
        "{}",
        show(&wrl_syntax::parse(F, src).diagnostics, src)
    );
    assert_eq!(decl_names(src), ["fine", "also_fine"]);
}

#[test]
fn broken_declarations_spread_over_lines() {
    let src = "stage a = sft(p, d) {\n  epochs = 3\n  lr = = 1e-5\n}\n\
               stage b = sft(p, d) {\n  epochs = [1, 2\n}\n\
               param ok = 1\n\
               stage c = sft(p, d) {\n  x = 1 +\n}\n";
    let got = lines_of(src);
    assert_eq!(got.len(), 3, "{got:?}\n{}", show(&wrl_syntax::parse(F, src).diagnostics, src));
    assert!((0..4).contains(&got[0].0), "{got:?}");
    assert!((4..7).contains(&got[1].0), "{got:?}");
    assert!((8..11).contains(&got[2].0), "{got:?}");
    assert_eq!(decl_names(src), ["ok"]);
}

#[test]
fn a_broken_item_does_not_hide_other_kinds_of_error_in_the_next() {
    // E0100, then a lexical error (E0101), a conversion error (E0103), a nesting error (E0104),
    // each in a later declaration.
    let src = format!(
        "param a = ]\nparam b = \"open\nparam c = 3 parsecs\nparam d = {}1{}\nparam e = 1 + ]\nparam f = 2\n",
        "[".repeat(80),
        "]".repeat(80)
    );
    let got = lines_of(&src);
    assert_eq!(
        got,
        [(0, "E0100"), (1, "E0101"), (2, "E0103"), (3, "E0104"), (4, "E0100")],
        "{}",
        show(&wrl_syntax::parse(F, &src).diagnostics, &src)
    );
    assert_eq!(decl_names(&src), ["c", "f"]);
}

#[test]
fn conversion_errors_keep_the_rest_of_the_file() {
    let src = "param a = 3 parsecs\nparam b = \"\\q\"\nparam c = f(x: 1, 2)\nparam d = 1 < 2 < 3\nparam e = 1e999\nparam ok = 1\n";
    let got = lines_of(src);
    assert_eq!(got, [(0, "E0103"), (1, "E0102"), (2, "E0107"), (3, "E0108"), (4, "E0105")]);
    // Value-level errors keep their declaration (with an error node) in the AST.
    assert_eq!(decl_names(src), ["a", "b", "c", "d", "e", "ok"]);
}

/// Regression: the lexer swallowed the newline after an unterminated string, so the next line
/// was not seen as an item start and the declaration on it was silently dropped.
#[test]
fn an_unterminated_string_does_not_hide_the_next_declaration() {
    let src = "param b = \"open\nparam c = 3 parsecs\nparam d = 1\n";
    assert_eq!(lines_of(src), [(0, "E0101"), (1, "E0103")]);
    assert_eq!(decl_names(src), ["c", "d"]);
}

/// Regression: declaration words are not reserved and layout does not matter, so an unfinished
/// value runs on into the next line's declaration (`1 +` takes `param` as its operand, an
/// unclosed `{` takes `dataset demos = …` as a flag and a field). The broken item now ends
/// where the lexer sees the next item start, and the error is reported in it.
#[test]
fn an_unfinished_value_does_not_swallow_the_next_declaration() {
    let src = "param e = 1 +\nparam f = 2\n";
    assert_eq!(lines_of(src), [(0, "E0100")]);
    assert_eq!(decl_names(src), ["f"]);
    let src = "model policy = hf(\"q\") {\n  context = 32k tokens\n\ndataset demos = jsonl(\"d\")\nparam p = ]\n";
    let got = lines_of(src);
    assert!(got.iter().any(|(l, _)| *l < 3), "the unclosed block is reported in its item: {got:?}");
    assert!(got.iter().any(|(l, _)| *l == 4), "the error on line 5 is still reported: {got:?}");
    assert!(decl_names(src).contains(&"demos".to_string()));
}

/// Regression: after a broken item, parsing resumed only at lines that *look* like a whole item
/// head (`model name`, `use `, `extends "`, …), so a malformed head (`model` alone, `profile {`,
/// `use` at the end of a line, `extends 3`) was skipped without an error. Recovery now resumes
/// at any line that begins with an item word.
#[test]
fn malformed_item_heads_after_a_broken_item_are_reported() {
    for head in ["model", "profile { }", "use", "extends 3", "builtin (x) -> y", "stage = 1"] {
        let src = format!("param a = ]\n{head}\nparam ok = 1\n");
        let got = lines_of(&src);
        assert!(got.iter().any(|(l, _)| *l == 1), "`{head}` is not reported: {got:?}");
        assert_eq!(decl_names(&src), ["ok"], "{head}");
    }
}

#[test]
fn every_diagnostic_has_a_registered_code_a_label_and_a_message() {
    let src = "param a = ]\nparam b = 'x'\nmodel\nstage s = sft(p, d) { a: 1 }\nprofile { }\nuse\nextends 3\nbuiltin f( -> x\n}\n";
    let p = wrl_syntax::parse(F, src);
    assert!(p.diagnostics.len() >= 4, "{}", show(&p.diagnostics, src));
    for d in &p.diagnostics {
        assert!(wrl_diagnostics::lookup(d.code).is_some(), "{}", d.code);
        let sp = d.primary_span().expect("a primary label");
        assert!(sp.end as usize <= src.len());
        assert!(!d.message.is_empty() && !d.message.ends_with('.'), "{}", d.message);
        assert!(d.labels.iter().all(|l| !l.message.is_empty()), "{}", d.message);
        assert_eq!(d.message, d.message.trim());
        assert!(!d.message.contains("Rule::"), "{}", d.message);
    }
}

#[test]
fn expected_lists_use_user_words_not_rule_names() {
    let src = "model policy = hf(\"q\") { context: 32k tokens }\nparam x = if a b\nparam y = [1 2]\nparam z =\n";
    let p = wrl_syntax::parse(F, src);
    let rules = [
        "ident",
        "expr",
        "primary",
        "op_",
        "kw_",
        "decl_kind",
        "call_args",
        "block_item",
        "rbrace",
        "lbrace",
        "EOI",
        "WHITESPACE",
    ];
    for d in &p.diagnostics {
        for r in rules {
            assert!(!d.message.contains(r), "rule name `{r}` in: {}", d.message);
        }
        assert!(
            d.message.starts_with("expected ") || d.message.starts_with("unexpected "),
            "{}",
            d.message
        );
    }
    let first = &p.diagnostics[0];
    assert!(first.message.contains("`=`"), "{}", first.message);
    assert!(first.message.ends_with("found `:`"), "{}", first.message);
    assert!(first.help.as_deref().unwrap_or("").contains("name = value"));
    assert!(
        p.diagnostics.iter().any(|d| d.message.contains("`then`")),
        "{}",
        show(&p.diagnostics, src)
    );
}
