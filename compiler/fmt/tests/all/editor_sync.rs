//! The editor grammars under `editors/` must agree with the one word list in
//! `compiler/syntax/src/tokens.rs` (keywords, contextual keywords, declaration kinds, units,
//! magnitudes) and with the keyword rules of the pest grammar. A disagreement fails here.
//!
//! `WRL_BLESS=1 cargo test -p wrl-fmt --test all editor_sync` rewrites the word lists in the editor
//! files from tokens.rs (the generator); review the diff, then rerun without it.
#![allow(clippy::unwrap_used)] // test helpers fail loudly, like the tests they serve

use std::collections::BTreeSet;
use std::path::PathBuf;

use wrl_syntax::tokens::{CONTEXTUAL_KEYWORDS, DECL_KINDS, KEYWORDS, MAGNITUDES, UNITS};

type Words = BTreeSet<String>;

fn editors() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../editors")
}

fn set<'a>(words: impl IntoIterator<Item = &'a str>) -> Words {
    words.into_iter().map(String::from).collect()
}

fn units() -> Words {
    set(UNITS.iter().map(|u| u.word))
}

fn magnitudes() -> Words {
    set(MAGNITUDES.iter().map(|(m, _)| *m))
}

/// Every `(a|b|c)` or `(?:a|b|c)` group of plain words in a regex (TextMate or Vim `\v`), with
/// its text (the part between the parentheses, without `?:`).
fn groups(re: &str) -> Vec<(String, Words)> {
    let mut out = Vec::new();
    for (i, _) in re.match_indices('(') {
        let rest = &re[i + 1..];
        let rest = rest.strip_prefix("?:").unwrap_or(rest);
        let Some(end) = rest.find(')') else { continue };
        let body = &rest[..end];
        let words: Vec<&str> = body.split('|').collect();
        let plain = |w: &&str| {
            let w = w.trim_start_matches('\\');
            !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '%')
        };
        if words.iter().all(plain) {
            out.push((
                body.to_string(),
                words.iter().map(|w| w.trim_start_matches('\\').to_string()).collect(),
            ));
        }
    }
    out
}

/// The quoted words of `const NAME = [ … ];` (grammar.js) or `NAME[] = { … };` (scanner.c).
fn array(text: &str, name: &str) -> (String, Words) {
    let start = text.find(name).unwrap_or_else(|| panic!("{name} not found"));
    let after = start + name.len();
    let open = after + text[after..].find(['[', '{']).unwrap();
    let close = open + text[open..].find([']', '}']).unwrap();
    let body = &text[open + 1..close];
    let words = body.split(['\'', '"']).skip(1).step_by(2).map(String::from).collect();
    (body.to_string(), words)
}

struct Check {
    errors: Vec<String>,
    bless: bool,
}

impl Check {
    /// `actual` must equal `expected`; when blessing, `old_text` in `file` becomes `new_text`.
    fn eq(
        &mut self,
        what: &str,
        file: &str,
        actual: &Words,
        expected: &Words,
        old_text: &str,
        new_text: &str,
    ) {
        if actual == expected {
            return;
        }
        let missing: Vec<_> = expected.difference(actual).collect();
        let extra: Vec<_> = actual.difference(expected).collect();
        if self.bless && !old_text.is_empty() {
            let path = editors().join(file);
            let text = std::fs::read_to_string(&path).unwrap();
            std::fs::write(&path, text.replacen(old_text, new_text, 1)).unwrap();
            eprintln!("blessed {what} in {file}");
        } else {
            self.errors.push(format!(
                "{file}: {what} disagree with tokens.rs: missing {missing:?}, extra {extra:?}; expected `{new_text}`"
            ));
        }
    }
}

/// A regex alternation of words, longest first (so no word shadows a longer one).
fn alternation(words: &Words, escape_percent: bool) -> String {
    let mut w: Vec<&String> = words.iter().collect();
    w.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    let w: Vec<String> = w
        .iter()
        .map(|s| if escape_percent && *s == "%" { "\\%".to_string() } else { s.to_string() })
        .collect();
    w.join("|")
}

fn quoted_list(words: &[&str], quote: char) -> String {
    words.iter().map(|w| format!("{quote}{w}{quote}")).collect::<Vec<_>>().join(", ")
}

/// The best-matching group for `expected` among `groups`: (its text, its words).
fn best(groups: &[(String, Words)], expected: &Words) -> (String, Words) {
    groups
        .iter()
        .max_by_key(|(_, w)| {
            w.intersection(expected).count() * 1000 / (w.union(expected).count().max(1))
        })
        .cloned()
        .unwrap_or_default()
}

#[test]
fn editor_grammars_agree_with_tokens_rs() {
    let bless = std::env::var_os("WRL_BLESS").is_some();
    let mut c = Check { errors: Vec::new(), bless };
    let keywords = set(KEYWORDS.iter().copied());
    let decl_kinds = set(DECL_KINDS.iter().copied());
    let contextual = set(CONTEXTUAL_KEYWORDS.iter().copied());

    // The pest grammar has no keyword rule the list lacks.
    for line in wrl_syntax::GRAMMAR.lines() {
        if let Some(rest) = line.strip_prefix("kw_") {
            let word = rest.split_whitespace().next().unwrap();
            assert!(
                keywords.contains(word) || contextual.contains(word),
                "wrl.pest has kw_{word}, tokens.rs does not"
            );
        }
    }

    // VS Code / TextMate.
    let tm_file = "vscode/syntaxes/wrl.tmLanguage.json";
    let tm: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(editors().join(tm_file)).unwrap()).unwrap();
    let repo = &tm["repository"];
    let tm_groups =
        |entry: &str| groups(repo[entry]["match"].as_str().unwrap_or_else(|| panic!("no {entry}")));
    let tm_keywords: Words = ["keyword-control", "keyword-logical", "constant-language", "use"]
        .iter()
        .flat_map(|e| tm_groups(e).into_iter().flat_map(|(_, w)| w))
        .collect();
    c.eq(
        "keywords",
        tm_file,
        &tm_keywords,
        &keywords,
        "",
        "(split over keyword-control, keyword-logical, constant-language, use)",
    );
    let (text, words) = best(&tm_groups("declaration"), &decl_kinds);
    c.eq("declaration kinds", tm_file, &words, &decl_kinds, &text, &DECL_KINDS.join("|"));
    let (text, words) = best(&tm_groups("number"), &units());
    c.eq("units", tm_file, &words, &units(), &text, &alternation(&units(), false));
    let (text, words) = best(&tm_groups("number"), &magnitudes());
    let mags: Vec<&str> = MAGNITUDES.iter().map(|(m, _)| *m).collect();
    c.eq("magnitudes", tm_file, &words, &magnitudes(), &text, &mags.join("|"));
    for kw in CONTEXTUAL_KEYWORDS {
        let found = repo.as_object().unwrap().values().any(|e| {
            e["match"]
                .as_str()
                .is_some_and(|m| groups(m).iter().any(|(_, w)| w.len() == 1 && w.contains(*kw)))
        });
        if !found {
            c.errors.push(format!("{tm_file}: no pattern for the contextual keyword `{kw}`"));
        }
    }

    // Tree-sitter.
    let ts_file = "tree-sitter-wrl/grammar.js";
    let js = std::fs::read_to_string(editors().join(ts_file)).unwrap();
    for (name, list) in [
        ("const KEYWORDS", KEYWORDS),
        ("const CONTEXTUAL_KEYWORDS", CONTEXTUAL_KEYWORDS),
        ("const DECL_KINDS", DECL_KINDS),
    ] {
        let (text, words) = array(&js, name);
        c.eq(name, ts_file, &words, &set(list.iter().copied()), &text, &quoted_list(list, '\''));
    }
    for kw in KEYWORDS.iter().chain(CONTEXTUAL_KEYWORDS) {
        if js.matches(&format!("'{kw}'")).count() < 2 {
            c.errors.push(format!("{ts_file}: `{kw}` is listed but no rule uses it"));
        }
    }
    let sc_file = "tree-sitter-wrl/src/scanner.c";
    let scanner = std::fs::read_to_string(editors().join(sc_file)).unwrap();
    let unit_words: Vec<&str> = UNITS.iter().map(|u| u.word).collect();
    let (text, words) = array(&scanner, "UNITS[]");
    c.eq(
        "units",
        sc_file,
        &words,
        &units(),
        &text,
        &format!("\n    {},\n", quoted_list(&unit_words, '"')),
    );
    let (text, words) = array(&scanner, "MAGNITUDES[]");
    c.eq("magnitudes", sc_file, &words, &magnitudes(), &text, &quoted_list(&mags, '"'));

    // Vim.
    let vim_file = "vim/syntax/wrl.vim";
    let vim = std::fs::read_to_string(editors().join(vim_file)).unwrap();
    let vim_keywords: Words = vim
        .lines()
        .filter(|l| l.starts_with("syn keyword wrlKw"))
        .flat_map(|l| l.split_whitespace().skip(3).map(String::from))
        .collect();
    c.eq("keywords", vim_file, &vim_keywords, &keywords, "", "(the `syn keyword wrlKw…` lines)");
    let line_of = |group: &str| {
        vim.lines()
            .find(|l| l.starts_with(&format!("syn match {group} ")))
            .unwrap_or_else(|| panic!("{vim_file}: no {group}"))
    };
    let (text, words) = best(&groups(line_of("wrlDeclKind")), &decl_kinds);
    c.eq("declaration kinds", vim_file, &words, &decl_kinds, &text, &DECL_KINDS.join("|"));
    let (text, words) = best(&groups(line_of("wrlUnit")), &units());
    c.eq("units", vim_file, &words, &units(), &text, &alternation(&units(), true));
    for kw in CONTEXTUAL_KEYWORDS {
        if !vim.lines().any(|l| {
            l.starts_with("syn ") && groups(l).iter().any(|(_, w)| w.len() == 1 && w.contains(*kw))
        }) {
            c.errors.push(format!("{vim_file}: no pattern for the contextual keyword `{kw}`"));
        }
    }

    assert!(c.errors.is_empty(), "{}\n(WRL_BLESS=1 rewrites the lists)", c.errors.join("\n"));
}
