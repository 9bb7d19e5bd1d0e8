//! Every kind of top-level item and block item parses into the AST node it should, doc comments
//! attach to the item right below them, and the file-level oddities (empty file, comments only,
//! CRLF line endings, a byte-order mark) parse like ordinary text.

use crate::common;

use common::{F, SpanCheck, block, params, parse_ok, sexpr};
use wrl_syntax::ast::*;

fn only_item(src: &str) -> Item {
    let mut f = parse_ok(src);
    assert_eq!(f.items.len(), 1, "{src}");
    f.items.remove(0)
}

fn names(ids: &[Ident]) -> Vec<&str> {
    ids.iter().map(|i| i.name.as_str()).collect()
}

#[test]
fn use_items() {
    let ItemKind::Use(Use::Path { segments, group }) = only_item("use std::tools::browser").kind
    else {
        panic!("not a path use")
    };
    assert_eq!(names(&segments), ["std", "tools", "browser"]);
    assert_eq!(group, None);

    let ItemKind::Use(Use::Path { segments, group }) =
        only_item("use std::rewards::{format_ok, judge,}").kind
    else {
        panic!("not a group use")
    };
    assert_eq!(names(&segments), ["std", "rewards"]);
    assert_eq!(names(&group.unwrap()), ["format_ok", "judge"]);

    let ItemKind::Use(Use::File { path, alias }) = only_item("use \"common.wrl\" as c").kind else {
        panic!("not a file use")
    };
    assert_eq!(path.value, "common.wrl");
    assert_eq!(alias.unwrap().name, "c");

    let ItemKind::Use(Use::File { alias, .. }) = only_item("use \"common.wrl\"").kind else {
        panic!("not a file use")
    };
    assert_eq!(alias, None);
}

#[test]
fn extends_items() {
    let ItemKind::Extends(e) = only_item("extends \"base.wrl\"").kind else { panic!() };
    assert_eq!(e.path.value, "base.wrl");
    assert!(e.overrides.is_none());
    let ItemKind::Extends(e) =
        only_item("extends \"base.wrl\" { online.phases[1].lr = 1e-7, web.target = w }").kind
    else {
        panic!()
    };
    assert_eq!(block(&e.overrides.unwrap()), "{online.phases[1].lr=0.0000001 web.target=w}");
}

#[test]
fn profile_items() {
    let ItemKind::Profile(p) = only_item("profile smoke { policy = std::models::tiny }").kind
    else {
        panic!()
    };
    assert_eq!(p.name.name, "smoke");
    assert_eq!(p.kind, wrl_syntax::ast::ProfileKind::Profile);
    assert_eq!(block(&p.overrides), "{policy=std::models::tiny}");
}

#[test]
fn variant_items() {
    let ItemKind::Profile(p) = only_item("variant flat { online.phases[0].iters = 4 }").kind else {
        panic!()
    };
    assert_eq!((p.kind, p.name.name.as_str()), (wrl_syntax::ast::ProfileKind::Variant, "flat"));
    assert_eq!(block(&p.overrides), "{online.phases[0].iters=4}");
    // `variant` is a keyword only where an item starts: a name everywhere else.
    let ItemKind::Decl(d) = only_item("param variant = 3").kind else { panic!() };
    assert_eq!(d.name.name, "variant");
}

#[test]
fn builtin_items() {
    let src = "builtin grpo(init: model, tasks: dataset(tasks), n: int = 5) -> stage {\n  group: int = 5, clip: range = 0.2 .. 0.28\n}";
    let ItemKind::Builtin(b) = only_item(src).kind else { panic!() };
    assert_eq!(b.name.name, "grpo");
    assert_eq!(params(&b.params), "init:model,tasks:(call dataset tasks),n:int=5");
    assert_eq!(sexpr(&b.returns), "stage");
    assert_eq!(params(&b.fields), "group:int=5,clip:range=(.. 0.2 0.28)");

    let ItemKind::Builtin(b) = only_item("builtin jsonl(path: str) -> dataset(trajectories)").kind
    else {
        panic!()
    };
    assert_eq!(sexpr(&b.returns), "(call dataset trajectories)");
    assert!(b.fields.is_empty());
}

#[test]
fn every_declaration_kind() {
    for word in wrl_syntax::tokens::DECL_KINDS {
        let src = format!("{word} thing = 1");
        let ItemKind::Decl(d) = only_item(&src).kind else { panic!("{src}") };
        assert_eq!(d.kind.word(), *word);
        assert_eq!(DeclKind::from_word(word), Some(d.kind));
        assert_eq!(d.name.name, "thing");
        assert_eq!(sexpr(&d.value), "1");
    }
}

#[test]
fn declaration_kinds_and_contextual_keywords_are_names_elsewhere() {
    let f = parse_ok(
        "param model = stage.eval + profile.tool\nparam limit = { module = 1, tool = 2, as = 3, extends = 4 }",
    );
    assert_eq!(f.items.len(), 2);
    for kw in wrl_syntax::tokens::KEYWORDS {
        let p = wrl_syntax::parse(F, &format!("param {kw} = 1"));
        assert!(!p.diagnostics.is_empty(), "`{kw}` is reserved but accepted as a name");
    }
}

#[test]
fn block_items_of_every_kind() {
    let src = r#"agent g = graph {
  module planner = llm(frontier) { emits = [done, go_on] }
  start -> planner
  planner -> grounder -> planner when go_on | replan limit 3
  planner -> end when done
  max_turns = 25
  trainable
  phases[0].lr = 1e-6
}"#;
    let ItemKind::Decl(d) = only_item(src).kind else { panic!() };
    assert_eq!(
        sexpr(&d.value),
        "(cfg graph {module planner=(cfg (call llm frontier) {emits=[done go_on]}) start->planner \
         planner->grounder->planner|go_on,replan#3 planner->end|done max_turns=25 trainable \
         phases[0].lr=0.000001})"
    );
    let tools = r#"tools t = toolset {
  tool click(point: point, clicks: int = 1)
  tool done(answer: str) { terminal }
}"#;
    let ItemKind::Decl(d) = only_item(tools).kind else { panic!() };
    assert_eq!(
        sexpr(&d.value),
        "(cfg toolset {tool click(point:point,clicks:int=1) tool done(answer:str){terminal}})"
    );
}

#[test]
fn records_lists_calls_and_literals() {
    let f = parse_ok(
        "param p = [ { a = 1, b = \"x\\n\" }, (1), true, false, unknown, 1280 x 1000, \"\"\"raw \\n \"quoted\"\n\"\"\" ]",
    );
    let ItemKind::Decl(d) = &f.items[0].kind else { panic!() };
    assert_eq!(
        sexpr(&d.value),
        "[{a=1 b=\"x\\n\"} 1 true false unknown 1280x1000 text\"raw \\\\n \\\"quoted\\\"\\n\"]"
    );
    let f = parse_ok("param c = f(1, 2, k: 3, j: [],)");
    let ItemKind::Decl(d) = &f.items[0].kind else { panic!() };
    assert_eq!(sexpr(&d.value), "(call f 1 2 k:3 j:[])");
}

#[test]
fn doc_comments_attach_to_the_item_below() {
    let src = "/// The policy.\n/// Four billion parameters.\nmodel policy = hf(\"q\")\n\n/// Separated by a blank line.\n\nparam a = 1\n// plain\nparam b = 2\n/// doc\n// plain between\nparam c = 3\n//// four slashes\nparam d = 4\n  ///   indented doc\nparam e = 5\n";
    let f = parse_ok(src);
    let docs: Vec<Option<&str>> = f.items.iter().map(|i| i.doc.as_deref()).collect();
    assert_eq!(
        docs,
        [
            Some("The policy.\nFour billion parameters."),
            None,
            None,
            None,
            None,
            Some("  indented doc"),
        ]
    );
}

#[test]
fn empty_and_comment_only_files_have_no_items() {
    for src in [
        "",
        "\n\n",
        "   \t  ",
        "// only a comment",
        "/// a doc with nothing below\n",
        "\u{feff}",
        "//\n//\n",
    ] {
        let p = wrl_syntax::parse(F, src);
        assert!(p.diagnostics.is_empty(), "{src:?}: {:?}", p.diagnostics);
        assert!(p.file.items.is_empty(), "{src:?}");
    }
    assert_eq!(wrl_syntax::parse(F, "// a\n/// b\n").comments.len(), 2);
}

#[test]
fn crlf_and_bom_parse_like_lf() {
    let lf = "/// Doc.\nmodel policy = hf(\"q\") {\n  context = 32k tokens\n  frozen = [a, b]\n}\nparam x = 1 // c\n";
    let crlf = lf.replace('\n', "\r\n");
    let bom = format!("\u{feff}{crlf}");
    let want = parse_ok(lf);
    for src in [crlf.as_str(), bom.as_str()] {
        let got = parse_ok(src);
        assert_eq!(got.items.len(), want.items.len());
        for (g, w) in got.items.iter().zip(&want.items) {
            assert_eq!(g.doc, w.doc, "doc comments keep no `\\r`");
            let (ItemKind::Decl(g), ItemKind::Decl(w)) = (&g.kind, &w.kind) else { panic!() };
            assert_eq!(sexpr(&g.value), sexpr(&w.value));
        }
        SpanCheck::run(src, &got).assert_ok();
    }
    assert_eq!(want.items[0].doc.as_deref(), Some("Doc."));
}

#[test]
fn layout_does_not_matter() {
    let one_line = "stage s = sft(p, d) { epochs = 3, lr = 1e-5, batch = 16 }";
    let spread = "stage s =\n  sft(\n    p,\n    d,\n  )\n  {\n    epochs = 3\n    lr = 1e-5,\n    batch = 16\n  }";
    let a = parse_ok(one_line);
    let b = parse_ok(spread);
    let (ItemKind::Decl(a), ItemKind::Decl(b)) = (&a.items[0].kind, &b.items[0].kind) else {
        panic!()
    };
    assert_eq!(sexpr(&a.value), sexpr(&b.value));
}

#[test]
fn the_corpus_parses_cleanly_with_sound_spans() {
    for (name, text) in common::corpus() {
        let p = wrl_syntax::parse(F, &text);
        assert!(p.diagnostics.is_empty(), "{name}:\n{}", common::show(&p.diagnostics, &text));
        let check = SpanCheck::run(&text, &p.file);
        assert!(check.problems.is_empty(), "{name}:\n{}", check.problems.join("\n"));
        assert!(p.file.items.is_empty() || check.seen > 0, "{name}: no spans visited");
    }
}
