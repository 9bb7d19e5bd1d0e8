//! The parser never panics and never overflows its stack, whatever the input: runaway nesting of
//! every kind becomes `E0104`, NUL bytes and control characters become `E0100`, and very large
//! inputs parse. Each input is parsed on a thread with a 2 MiB stack (Rust's default for spawned
//! threads), since an editor or language server will call `parse` from such a thread.

use crate::common;

use common::{F, show};
use wrl_syntax::Parsed;

/// Parses `src` on a fresh 2 MiB thread; a panic or a stack overflow fails the test.
fn parse_small_stack(src: String) -> (String, Parsed) {
    let handle = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let p = wrl_syntax::parse(F, &src);
            (src, p)
        })
        .expect("spawn");
    handle.join().expect("the parser panicked")
}

fn codes(p: &Parsed) -> Vec<&'static str> {
    p.diagnostics.iter().map(|d| d.code).collect()
}

/// Every diagnostic has a registered code and a primary span inside the text.
fn assert_sound(src: &str, p: &Parsed) {
    for d in &p.diagnostics {
        assert!(wrl_diagnostics::lookup(d.code).is_some(), "unregistered {}", d.code);
        let sp = d.primary_span().unwrap_or_else(|| panic!("{} has no label", d.code));
        assert!(sp.start <= sp.end && sp.end as usize <= src.len(), "{} span {sp:?}", d.code);
    }
}

#[test]
fn ten_thousand_nested_brackets_of_each_kind() {
    for (open, close) in [("(", ")"), ("[", "]"), ("{ a = ", "}"), ("f(", ")")] {
        let src =
            format!("param p = {}1{}\nparam q = 2\n", open.repeat(10_000), close.repeat(10_000));
        let (src, p) = parse_small_stack(src);
        assert_sound(&src, &p);
        assert_eq!(codes(&p), ["E0104"], "{open}: {}", show(&p.diagnostics, &src[..200]));
        assert_eq!(p.file.items.len(), 1, "{open}: the next declaration still parses");
        // Unclosed, too.
        let (src, p) = parse_small_stack(format!("param p = {}", open.repeat(10_000)));
        assert_sound(&src, &p);
        assert!(codes(&p).contains(&"E0104"), "{open} unclosed");
    }
}

#[test]
fn nesting_right_at_the_limits_parses_on_a_small_stack() {
    let n = wrl_syntax::MAX_NESTING;
    let cases = [
        format!("param p = {}1{}", "(".repeat(n), ")".repeat(n)),
        format!("param p = {}1{}", "[".repeat(n), "]".repeat(n)),
        format!("param p = {}1{}", "{ a = ".repeat(n), "}".repeat(n)),
        format!("param p = {}1{}", "f(".repeat(n), ")".repeat(n)),
        format!("param p = {}1{}", "[-(not ".repeat(n / 2), ")]".repeat(n / 2)),
        // Every kind of nesting at once: brackets, `if`s and prefix operators.
        format!(
            "reward r = {}{}1{}",
            "[if c then 1 else -(".repeat(n / 2),
            "-".repeat(wrl_syntax::MAX_PREFIX_RUN),
            ")]".repeat(n / 2)
        ),
        format!("reward r = {}0", "if c then 1 else ".repeat(wrl_syntax::MAX_IFS_PER_ITEM)),
        format!("reward r = {}0{}", "if c then (".repeat(n), ") else 1".repeat(n)),
        format!("param p = {}1", "-".repeat(wrl_syntax::MAX_PREFIX_RUN)),
        format!("param p = {}1", "not ".repeat(wrl_syntax::MAX_PREFIX_RUN)),
    ];
    for src in cases {
        let (src, p) = parse_small_stack(src);
        assert_sound(&src, &p);
        // Deep but legal: at most an expression-depth error, never a crash.
        assert!(
            p.diagnostics.iter().all(|d| d.code == "E0104"),
            "{}…: {}",
            &src[..60.min(src.len())],
            show(&p.diagnostics, &src)
        );
    }
}

#[test]
fn one_past_each_limit_is_e0104() {
    let n = wrl_syntax::MAX_NESTING + 1;
    for src in [
        format!("param p = {}1{}", "[".repeat(n), "]".repeat(n)),
        format!("param p = {}1", "-".repeat(wrl_syntax::MAX_PREFIX_RUN + 1)),
        format!("param p = {}1", "not ".repeat(wrl_syntax::MAX_PREFIX_RUN + 1)),
        format!("reward r = {}0", "if c then 1 else ".repeat(wrl_syntax::MAX_IFS_PER_ITEM + 1)),
        format!("param p = 1{}", " + 1".repeat(wrl_syntax::MAX_DEPTH as usize + 1)),
        format!("param p = x{}", ".a".repeat(wrl_syntax::MAX_DEPTH as usize + 1)),
    ] {
        let (src, p) = parse_small_stack(src);
        assert_sound(&src, &p);
        assert_eq!(codes(&p), ["E0104"], "{}…", &src[..40]);
    }
}

#[test]
fn a_hundred_thousand_dashes() {
    for src in [
        format!("param p = {}1", "-".repeat(100_000)),
        format!("param p = {}", "-".repeat(100_000)),
        "-".repeat(100_000),
        format!("param p = 1 {}", "- ".repeat(100_000)),
        format!("param p = {}1", "- ".repeat(100_000)),
        format!("param p = {}1", "-\n".repeat(100_000)),
        format!("param p = {}1", "not ".repeat(100_000)),
    ] {
        let (src, p) = parse_small_stack(src);
        assert_sound(&src, &p);
        assert!(!p.diagnostics.is_empty(), "{}…", &src[..30]);
    }
}

#[test]
fn long_flat_sequences_are_not_recursion() {
    // Wide is fine; only depth is limited.
    let n = 5_000;
    for src in [
        format!("param p = [{}]", "1, ".repeat(n)),
        format!("param p = f({})", "a: 1, ".repeat(n)),
        format!("param p = {{ {} }}", "a = 1\n".repeat(n)),
        format!("agent g = graph {{ {} }}", "a -> b\n".repeat(n)),
        "param p = 1\n".repeat(n),
    ] {
        let (src, p) = parse_small_stack(src);
        assert!(p.diagnostics.is_empty(), "{}", show(&p.diagnostics, &src));
    }
}

#[test]
fn nul_bytes_and_control_characters() {
    for src in [
        "\0".to_string(),
        "\0\0\0\0".to_string(),
        "param p = 1\0".to_string(),
        "param p\0 = 1\nparam q = 2".to_string(),
        "param p = \"a\0b\"".to_string(),
        "// comment \0 here\nparam p = 1".to_string(),
        "param p = \u{7}\u{1b}[31m".to_string(),
        "\u{feff}\u{feff}param p = 1".to_string(),
        "param p = \u{202e}1".to_string(),
    ] {
        let (src, p) = parse_small_stack(src);
        assert_sound(&src, &p);
    }
    let (src, p) = parse_small_stack("param p = 1\0\nparam q = 2".to_string());
    assert_eq!(codes(&p), ["E0100"], "{}", show(&p.diagnostics, &src));
    assert!(p.diagnostics[0].message.contains("U+0000"), "{}", p.diagnostics[0].message);
    assert_eq!(p.diagnostics[0].primary_span().unwrap().range(), 11..12);
    // A NUL inside a string is just a character; inside a comment it is ignored.
    assert!(parse_small_stack("param p = \"a\0b\"".into()).1.diagnostics.is_empty());
    assert!(parse_small_stack("// \0\nparam p = 1".into()).1.diagnostics.is_empty());
}

#[test]
fn truncations_of_a_recipe_never_panic() {
    let (_, text) =
        common::corpus().into_iter().find(|(n, _)| n.ends_with("openwebrl.wrl")).unwrap();
    for end in (0..=text.len()).step_by(3).filter(|i| text.is_char_boundary(*i)) {
        let p = wrl_syntax::parse(F, &text[..end]);
        assert_sound(&text[..end], &p);
    }
}

/// A file of 50 MB: a realistic head, then a body that is cheap to parse (one text block) so
/// the test stays fast in a debug build; the release benchmark covers large realistic files.
#[test]
fn fifty_megabytes() {
    let head = common::corpus().into_iter().map(|(_, t)| t).find(|t| t.contains("grpo")).unwrap();
    let mut src = head.clone();
    src.push_str("\nparam prompt = \"\"\"\n");
    let line = "The agent reads the page, plans a step, and acts; this line is filler text.\n";
    while src.len() < 50 << 20 {
        src.push_str(line);
    }
    src.push_str("\"\"\"\nparam after = 1 parsecs\n");
    let t = std::time::Instant::now();
    let (src, p) = parse_small_stack(src);
    assert_sound(&src, &p);
    assert_eq!(codes(&p), ["E0103"], "{}", show(&p.diagnostics, &src));
    assert!(t.elapsed().as_secs() < 20, "50 MB took {:?}", t.elapsed());
}

/// The lexer's limits must hold however the parts are separated: by byte-order marks (which
/// the grammar skips as whitespace), comments, doc comments or line breaks.
#[test]
fn limits_hold_across_every_kind_of_trivia() {
    for sep in ["\u{feff}", " // c\n", "\n/// d\n", "\r\n", "\t"] {
        let n = 1_000;
        for src in [
            format!("param p = {}1", format!("-{sep}").repeat(n)),
            format!("param p = {}1", format!("not{sep}").repeat(n)),
            format!("reward r = {}0", format!("if{sep}c then 1 else{sep}").repeat(n)),
            format!("reward r = {}0", format!("if{sep}").repeat(n)),
            format!("param p = {}1", format!("[{sep}").repeat(n)),
        ] {
            let (src, p) = parse_small_stack(src);
            assert_sound(&src, &p);
            assert!(codes(&p).contains(&"E0104"), "{sep:?}: {}", show(&p.diagnostics, &src));
        }
    }
}

/// When pest's own stack guard trips (a caller with a tiny stack), the result is `E0104`, not
/// a crash or a misleading "unexpected …". (The conversion after pest needs about 2 MiB in a
/// debug build for the deepest legal input; see `nesting_right_at_the_limits…`.)
#[test]
fn a_tiny_stack_gives_e0104_not_a_crash() {
    let n = wrl_syntax::MAX_NESTING;
    let src = format!("reward r = {}1{}", "[if c then 1 else -(".repeat(n / 2), ")]".repeat(n / 2));
    let handle = std::thread::Builder::new()
        .stack_size(128 << 10)
        .spawn(move || {
            let p = wrl_syntax::parse(F, &src);
            p.diagnostics.iter().map(|d| (d.code, d.message.clone())).collect::<Vec<_>>()
        })
        .expect("spawn");
    let diags = handle.join().expect("the parser crashed");
    assert!(diags.iter().all(|(c, _)| *c == "E0104"), "{diags:?}");
}
