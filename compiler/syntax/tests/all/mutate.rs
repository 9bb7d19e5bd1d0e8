//! A deterministic mutation test: thousands of seeded byte- and token-level mutations of real
//! `.wrl` files (the hand-written corpus in `tests/corpus/` and `tests/ui/ok/`, plus `recipes/`
//! and `stdlib/`). Every mutant must parse without a panic, every rejection must carry a
//! registered code and a span inside the file, and the AST that survives must have sound spans.
//! A failure prints the seed and the mutant, so it can be turned into a regression test.
//!
//! `WRL_MUTATIONS=<n>` changes the number of mutants (default 4,000); `WRL_SEED=<n>` changes
//! the seed.

use crate::common;

use std::panic::{AssertUnwindSafe, catch_unwind};

use common::{F, Rng, SpanCheck};

/// Splits text into tokens: words, numbers, strings, whitespace runs, comments, single chars.
/// Rough on purpose: it only needs to give mutations plausible pieces to move around.
fn tokens(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let len = if c.is_ascii_alphanumeric() || c == '_' {
            rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
                .unwrap_or(rest.len())
        } else if c.is_whitespace() {
            rest.find(|c: char| !c.is_whitespace()).unwrap_or(rest.len())
        } else if rest.starts_with("//") {
            rest.find('\n').unwrap_or(rest.len())
        } else if let Some(body) = rest.strip_prefix("\"\"\"") {
            body.find("\"\"\"").map_or(rest.len(), |e| e + 6)
        } else if c == '"' {
            rest[1..].find(['"', '\n']).map_or(rest.len(), |e| e + 2).min(rest.len())
        } else if rest.starts_with("->") || rest.starts_with("..") || rest.starts_with("::") {
            2
        } else {
            c.len_utf8()
        };
        let (tok, tail) = rest.split_at(len.max(c.len_utf8()));
        out.push(tok);
        rest = tail;
    }
    out
}

/// Pieces worth inserting: the grammar's punctuation and words, and troublemakers.
const PIECES: &[&str] = &[
    "{", "}", "(", ")", "[", "]", ",", ":", "::", "=", "==", "->", "..", ".", "-", "not", "if",
    "then", "else", "and", "or", "when", "limit", "module", "tool", "use", "extends", "profile",
    "builtin", "model", "stage", "param", "\"", "\"\"\"", "///", "//", "\n", "\r\n", "\0",
    "\u{feff}", "32k", "1e999", "1_000", "x", "%", "tokens", "parsecs", "\\", "\\u{", "'", "|",
    "☃", "\t",
];

fn mutate(rng: &mut Rng, text: &str, donors: &[&str]) -> String {
    let toks = tokens(text);
    match rng.below(10) {
        // Byte-level: the result may not be UTF-8, so it goes through a lossy decode, as an
        // editor would present it.
        0 | 1 => {
            let mut b = text.as_bytes().to_vec();
            if b.is_empty() {
                return String::new();
            }
            for _ in 0..=rng.below(4) {
                let i = rng.below(b.len().max(1));
                match rng.below(5) {
                    0 => b[i] = rng.next() as u8,
                    1 => {
                        let end = (i + 1 + rng.below(16)).min(b.len());
                        b.drain(i..end);
                    }
                    2 => {
                        let end = (i + 1 + rng.below(32)).min(b.len());
                        let dup: Vec<u8> = b[i..end].to_vec();
                        b.splice(i..i, dup);
                    }
                    3 => b.insert(i, *rng.pick(b"{}[]()\"\n-.:=,/\\\0x ")),
                    _ => b.truncate(i),
                }
                if b.is_empty() {
                    break;
                }
            }
            String::from_utf8_lossy(&b).into_owned()
        }
        // Token-level.
        _ => {
            let mut t: Vec<&str> = toks;
            if t.is_empty() {
                return (*rng.pick(PIECES)).to_string();
            }
            for _ in 0..=rng.below(3) {
                let n = t.len().max(1);
                let i = rng.below(n);
                match rng.below(7) {
                    0 if !t.is_empty() => {
                        t.remove(i.min(t.len() - 1));
                    }
                    1 if !t.is_empty() => {
                        let tok = t[i.min(t.len() - 1)];
                        t.insert(i, tok);
                    }
                    2 if t.len() > 1 => {
                        let j = rng.below(t.len());
                        let k = i.min(t.len() - 1);
                        t.swap(k, j);
                    }
                    3 => t.insert(i.min(t.len()), *rng.pick(PIECES)),
                    4 => {
                        let donor_text: &str = donors[rng.below(donors.len())];
                        let donor = tokens(donor_text);
                        if !donor.is_empty() {
                            let tok = donor[rng.below(donor.len())];
                            if !t.is_empty() {
                                let k = i.min(t.len() - 1);
                                t[k] = tok;
                            }
                        }
                    }
                    5 => t.truncate(i),
                    _ => {
                        // Repeat a run of tokens a few times (unbalanced nesting, long chains).
                        if !t.is_empty() {
                            let s = i.min(t.len() - 1);
                            let e = (s + 1 + rng.below(6)).min(t.len());
                            let run: Vec<&str> = t[s..e].to_vec();
                            for _ in 0..rng.below(40) {
                                t.splice(s..s, run.iter().copied());
                            }
                        }
                    }
                }
            }
            t.concat()
        }
    }
}

/// What must hold for any input. Returns whether the input was rejected, and the problems.
fn check(src: &str) -> (bool, Vec<String>) {
    let p = wrl_syntax::parse(F, src);
    let mut problems = Vec::new();
    for d in &p.diagnostics {
        if wrl_diagnostics::lookup(d.code).is_none() {
            problems.push(format!("unregistered code {}", d.code));
        }
        match d.primary_span() {
            None => problems.push(format!("{} has no label", d.code)),
            Some(sp) => {
                if src.get(sp.range()).is_none() {
                    problems.push(format!("{} span {:?} is outside the text", d.code, sp.range()));
                }
            }
        }
        if d.message.is_empty() || d.labels.iter().any(|l| l.message.is_empty()) {
            problems.push(format!("{} has an empty message or label", d.code));
        }
    }
    let spans = SpanCheck::run(src, &p.file);
    problems.extend(spans.problems);
    (!p.diagnostics.is_empty(), problems)
}

/// Pieces of the corpus to mutate: runs of one to three consecutive top-level items (with the
/// comments above them), so that each parse is small. The parser is compiled without
/// optimisation in tests and parses about 250 kB/s there; whole files would make the test slow.
fn snippets(corpus: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (_, text) in corpus {
        let mut chunks: Vec<String> = Vec::new();
        let mut cur = String::new();
        let mut in_text_block = false;
        for line in text.split_inclusive('\n') {
            let starts_item = !in_text_block
                && line.starts_with(|c: char| c.is_ascii_alphabetic())
                && !cur.lines().all(|l| l.trim().is_empty() || l.trim_start().starts_with("//"));
            if starts_item {
                chunks.push(std::mem::take(&mut cur));
            }
            if line.matches("\"\"\"").count() % 2 == 1 {
                in_text_block = !in_text_block;
            }
            cur.push_str(line);
        }
        chunks.push(cur);
        for n in 1..=3 {
            for w in chunks.windows(n) {
                let s = w.concat();
                if !s.trim().is_empty() && s.len() <= 1_500 {
                    out.push(s);
                }
            }
        }
    }
    out
}

#[test]
fn thousands_of_mutants_never_panic_and_report_registered_codes_with_spans() {
    let count: usize =
        std::env::var("WRL_MUTATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(4_000);
    let seed: u64 = std::env::var("WRL_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(2026);
    let corpus = common::corpus();
    let pieces = snippets(&corpus);
    assert!(pieces.len() >= 50, "only {} snippets", pieces.len());
    let donors: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let mut rng = Rng::new(seed);
    let mut rejected = 0usize;
    let mut failures = Vec::new();
    // A few whole files first (recovery across many items), then thousands of snippets.
    let whole: Vec<&str> =
        corpus.iter().map(|(_, t)| t.as_str()).filter(|t| t.len() < 8_000).collect();
    for k in 0..count {
        let case_seed = rng.next();
        let mut case_rng = Rng::new(case_seed);
        let base =
            if k < 2 * whole.len() { whole[k % whole.len()] } else { *case_rng.pick(&donors) };
        let mutant = mutate(&mut case_rng, base, &donors);
        match catch_unwind(AssertUnwindSafe(|| check(&mutant))) {
            Ok((rej, problems)) => {
                rejected += usize::from(rej);
                if !problems.is_empty() {
                    failures.push(format!(
                        "#{k} (WRL_SEED={seed}, case seed {case_seed}): {}\n--- mutant ---\n{}",
                        problems.join("; "),
                        excerpt(&mutant)
                    ));
                }
            }
            Err(_) => failures.push(format!(
                "#{k} (WRL_SEED={seed}, case seed {case_seed}): PANIC\n--- mutant ---\n{}",
                excerpt(&mutant)
            )),
        }
        if failures.len() >= 5 {
            break;
        }
    }
    assert!(failures.is_empty(), "{} mutants failed:\n\n{}", failures.len(), failures.join("\n\n"));
    // The mutations must break things most of the time, or the test proves little.
    assert!(rejected * 2 > count, "only {rejected} of {count} mutants were rejected");
}

fn excerpt(s: &str) -> String {
    if s.len() <= 2_000 {
        return format!("{s:?}");
    }
    let mut end = 2_000;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{:?}… ({} bytes)", &s[..end], s.len())
}

#[test]
fn the_tokenizer_round_trips() {
    for (_, text) in common::corpus() {
        assert_eq!(tokens(&text).concat(), text);
    }
}

#[test]
fn snippets_are_small_and_cover_the_corpus() {
    let corpus = common::corpus();
    let pieces = snippets(&corpus);
    assert!(pieces.iter().all(|p| p.len() <= 1_500));
    // Every single-item snippet of a clean file parses cleanly: the split is at item boundaries.
    for p in pieces.iter().filter(|p| p.len() < 400) {
        let parsed = wrl_syntax::parse(F, p);
        assert!(parsed.diagnostics.is_empty(), "{p:?}: {:?}", parsed.diagnostics.first());
    }
}
