//! A claim decided, as the run's `summary.json` and the study's `study.json` record it: its
//! verdict, difference and interval (the records hold these; `claims.rs` decides them).

use serde::{Deserialize, Serialize};

/// What the evidence says of a claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The interval's lower end is above the margin.
    Holds,
    /// The interval's upper end is below the margin.
    Fails,
    /// The interval covers the margin (or a figure is missing).
    Undecided,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Fails => "fails",
            Verdict::Undecided => "undecided",
        }
    }
}

/// One claim decided (keys in alphabetical order: the file is deterministic).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimResult {
    /// The margin, as a fraction.
    pub at_least: f64,
    /// The mean over seeds of the difference (`eval` − `over`).
    pub difference: f64,
    /// Tasks behind each side's figure, over all seeds, as its interval counts them: where an
    /// evaluation's tasks repeat goals, the independent tasks they are worth.
    pub eval_tasks: u64,
    pub high: f64,
    pub low: f64,
    pub name: String,
    pub over_tasks: u64,
    /// Across variants: how the two sides' seeds were compared — `seed` (the same seed of each
    /// variant paired, the evaluations' tasks being the same) or `unpaired` (other tasks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairing: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paper: Option<String>,
    /// The seeds that had both figures.
    pub seeds: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// What it states, in words.
    pub statement: String,
    pub verdict: Verdict,
}
