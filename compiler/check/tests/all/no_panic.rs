//! The checker never panics, whatever it is given: valid recipes are mutated at the token level
//! (tokens deleted, duplicated, swapped, replaced by other tokens), with a fixed seed, and every
//! mutant is checked. Mutants that still parse exercise the checker and the rules.

use std::panic::{AssertUnwindSafe, catch_unwind};

use wrl_check::{MemLoader, check_source};

const CASES: usize = 2000;

/// xorshift64*: small, seeded, deterministic.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Splits a text into tokens: words, numbers, strings, single punctuation, whitespace runs.
fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let start = i;
        if c.is_alphanumeric()
            || c == '_'
            || c == '.' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit())
        {
            while i < chars.len()
                && (chars[i].is_alphanumeric()
                    || chars[i] == '_'
                    || chars[i] == '.' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit()))
            {
                i += 1;
            }
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' && chars[i] != '\n' {
                i += 1;
            }
            i = (i + 1).min(chars.len());
        } else if c.is_whitespace() {
            while i < chars.len() && chars[i].is_whitespace() {
                i += 1;
            }
        } else {
            i += 1;
        }
        out.push(chars[start..i].iter().collect());
    }
    out
}

fn seeds() -> Vec<String> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let mut out =
        vec![std::fs::read_to_string(format!("{root}/recipes/quickstart.wrl")).unwrap_or_default()];
    let dir = format!("{root}/tests/ui/check");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    for n in names.iter().filter(|n| n.starts_with("E04") && n.ends_with(".wrl")) {
        out.push(std::fs::read_to_string(format!("{dir}/{n}")).unwrap_or_default());
    }
    for (_, _, text) in wrl_check::STDLIB_MODULES {
        out.push((*text).to_string());
    }
    out.retain(|s| !s.is_empty());
    out
}

#[test]
fn the_checker_never_panics_on_mutated_recipes() {
    let seeds: Vec<Vec<String>> = seeds().iter().map(|s| tokens(s)).collect();
    assert!(seeds.len() > 10, "too few seed recipes");
    let pool: Vec<String> =
        seeds.iter().flatten().filter(|t| !t.trim().is_empty()).cloned().collect();
    let mut rng = Rng(0x5eed_0fc0_ffee);
    let loader = MemLoader::default();
    let mut parsed_clean = 0;
    let mut failures = Vec::new();
    for case in 0..CASES {
        let mut toks = seeds[rng.below(seeds.len())].clone();
        for _ in 0..1 + rng.below(3) {
            let n = toks.len();
            match rng.below(5) {
                0 if n > 0 => {
                    toks.remove(rng.below(n));
                }
                1 if n > 0 => {
                    let t = toks[rng.below(n)].clone();
                    toks.insert(rng.below(n), t);
                }
                2 if n > 1 => toks.swap(rng.below(n), rng.below(n)),
                3 if n > 0 => toks[rng.below(n)] = pool[rng.below(pool.len())].clone(),
                _ => toks.insert(rng.below(n + 1), pool[rng.below(pool.len())].clone()),
            }
        }
        let text: String = toks.concat();
        let result = catch_unwind(AssertUnwindSafe(|| check_source("mutant.wrl", &text, &loader)));
        match result {
            Ok((_, checked)) => {
                if !checked.diagnostics.iter().any(|d| d.code.starts_with("E01")) {
                    parsed_clean += 1;
                }
            }
            Err(_) => failures.push(format!("case {case}:\n{text}")),
        }
    }
    assert!(failures.is_empty(), "{} panics; first:\n{}", failures.len(), failures[0]);
    assert!(
        parsed_clean > CASES / 5,
        "only {parsed_clean} mutants parsed: the test exercises too little"
    );
}
