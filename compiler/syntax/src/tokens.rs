//! The one list of keywords, declaration kinds and units. The grammar (`wrl.pest`), the editor
//! grammars under `editors/` and the docs must agree with it; tests in this crate and in
//! `tests/` compare them.

/// Reserved words: never names.
pub const KEYWORDS: &[&str] =
    &["and", "else", "false", "if", "not", "or", "then", "true", "unknown", "use", "when"];

/// Words that are keywords only where the grammar expects them.
pub const CONTEXTUAL_KEYWORDS: &[&str] =
    &["as", "builtin", "extends", "limit", "module", "profile", "tool", "variant"];

/// The kind words of declarations, in the order the docs list them.
pub const DECL_KINDS: &[&str] =
    &["model", "dataset", "env", "tools", "agent", "reward", "stage", "eval", "param", "claim"];

/// What a quantity measures. Quantities of different dimensions never mix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Dimension {
    Tokens,
    Steps,
    Turns,
    Iters,
    Epochs,
    Samples,
    /// Prompts (task groups of an RL batch: `64 prompts` is 64 × `group` trajectories).
    Prompts,
    Trajectories,
    Calls,
    Images,
    Pixels,
    Time,
    Bytes,
    Ratio,
}

impl Dimension {
    /// The canonical unit word, used when printing normalised values.
    pub fn canonical_unit(self) -> &'static str {
        match self {
            Dimension::Tokens => "tokens",
            Dimension::Steps => "steps",
            Dimension::Turns => "turns",
            Dimension::Iters => "iters",
            Dimension::Epochs => "epochs",
            Dimension::Samples => "samples",
            Dimension::Prompts => "prompts",
            Dimension::Trajectories => "trajectories",
            Dimension::Calls => "calls",
            Dimension::Images => "images",
            Dimension::Pixels => "px",
            Dimension::Time => "s",
            Dimension::Bytes => "B",
            Dimension::Ratio => "%",
        }
    }

    /// The name used in messages (`a duration`, `a number of steps`).
    pub fn describe(self) -> &'static str {
        match self {
            Dimension::Tokens => "tokens",
            Dimension::Steps => "steps",
            Dimension::Turns => "turns",
            Dimension::Iters => "iterations",
            Dimension::Epochs => "epochs",
            Dimension::Samples => "samples",
            Dimension::Prompts => "prompts",
            Dimension::Trajectories => "trajectories",
            Dimension::Calls => "calls",
            Dimension::Images => "images",
            Dimension::Pixels => "pixels",
            Dimension::Time => "a duration",
            Dimension::Bytes => "a size in bytes",
            Dimension::Ratio => "a percentage",
        }
    }
}

/// One unit word: its dimension and how many canonical units it is.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct UnitDef {
    pub word: &'static str,
    pub dim: Dimension,
    /// Canonical units per one of this unit (`min` = 60 s; `%` = 0.01; `GiB` = 2^30 B).
    pub scale: f64,
}

const fn u(word: &'static str, dim: Dimension, scale: f64) -> UnitDef {
    UnitDef { word, dim, scale }
}

const KI: f64 = 1024.0;

/// Every unit word. Counts accept singular and plural.
pub const UNITS: &[UnitDef] = &[
    u("token", Dimension::Tokens, 1.0),
    u("tokens", Dimension::Tokens, 1.0),
    u("step", Dimension::Steps, 1.0),
    u("steps", Dimension::Steps, 1.0),
    u("turn", Dimension::Turns, 1.0),
    u("turns", Dimension::Turns, 1.0),
    u("iter", Dimension::Iters, 1.0),
    u("iters", Dimension::Iters, 1.0),
    u("epoch", Dimension::Epochs, 1.0),
    u("epochs", Dimension::Epochs, 1.0),
    u("sample", Dimension::Samples, 1.0),
    u("samples", Dimension::Samples, 1.0),
    u("prompt", Dimension::Prompts, 1.0),
    u("prompts", Dimension::Prompts, 1.0),
    u("trajectory", Dimension::Trajectories, 1.0),
    u("trajectories", Dimension::Trajectories, 1.0),
    u("call", Dimension::Calls, 1.0),
    u("calls", Dimension::Calls, 1.0),
    u("image", Dimension::Images, 1.0),
    u("images", Dimension::Images, 1.0),
    u("px", Dimension::Pixels, 1.0),
    u("ms", Dimension::Time, 0.001),
    u("s", Dimension::Time, 1.0),
    u("min", Dimension::Time, 60.0),
    u("h", Dimension::Time, 3600.0),
    u("B", Dimension::Bytes, 1.0),
    u("KB", Dimension::Bytes, 1e3),
    u("MB", Dimension::Bytes, 1e6),
    u("GB", Dimension::Bytes, 1e9),
    u("TB", Dimension::Bytes, 1e12),
    u("KiB", Dimension::Bytes, KI),
    u("MiB", Dimension::Bytes, KI * KI),
    u("GiB", Dimension::Bytes, KI * KI * KI),
    u("TiB", Dimension::Bytes, KI * KI * KI * KI),
    u("%", Dimension::Ratio, 0.01),
];

/// Number magnitudes written right after the digits: `32k` = 32,000 (SI), `32Ki` = 32,768.
pub const MAGNITUDES: &[(&str, f64)] =
    &[("Ki", KI), ("Mi", KI * KI), ("Gi", KI * KI * KI), ("k", 1e3), ("M", 1e6), ("G", 1e9)];

pub fn unit(word: &str) -> Option<&'static UnitDef> {
    UNITS.iter().find(|u| u.word == word)
}

pub fn is_keyword(word: &str) -> bool {
    KEYWORDS.contains(&word)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The quoted words of a `name = @{ ("a" | "b") ~ … }` rule in the grammar.
    fn grammar_words(rule: &str) -> Vec<String> {
        let g = include_str!("wrl.pest");
        let line = g
            .lines()
            .find(|l| l.starts_with(&format!("{rule} ")))
            .unwrap_or_else(|| panic!("rule {rule} not in grammar"));
        let mut words: Vec<String> = line.split('"').skip(1).step_by(2).map(String::from).collect();
        words.sort();
        words
    }

    #[test]
    fn keyword_lists_match_the_grammar() {
        let mut kws: Vec<String> = KEYWORDS.iter().map(|s| s.to_string()).collect();
        kws.sort();
        assert_eq!(grammar_words("keyword"), kws);
        let mut kinds: Vec<String> = DECL_KINDS.iter().map(|s| s.to_string()).collect();
        kinds.sort();
        assert_eq!(grammar_words("decl_kind"), kinds);
        for kw in CONTEXTUAL_KEYWORDS {
            assert!(include_str!("wrl.pest").contains(&format!("kw_{kw} ")), "{kw}");
        }
    }

    #[test]
    fn magnitudes_match_the_grammar() {
        let g = include_str!("wrl.pest");
        for (m, _) in MAGNITUDES {
            assert!(g.contains(&format!("\"{m}\"")), "{m}");
        }
    }

    #[test]
    fn unit_words_are_unique() {
        for (i, a) in UNITS.iter().enumerate() {
            assert!(UNITS[i + 1..].iter().all(|b| b.word != a.word), "{}", a.word);
        }
    }
}
