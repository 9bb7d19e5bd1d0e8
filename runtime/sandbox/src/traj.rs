//! Trajectory JSONL records: one line per episode (task, steps, outcome), see `docs/sandbox.md`.

use serde::{Deserialize, Serialize};

use crate::Ending;

/// One agent turn of a trajectory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrajStep {
    /// The text observation the agent saw before acting (the compact rendering).
    pub observation: String,
    /// The actions of the turn, in terse syntax (`click 7`, `type 3 blue mug`).
    pub actions: Vec<String>,
    /// Feedback after the actions ran.
    pub feedback: String,
    /// URL of the active tab after the actions.
    pub url: String,
    /// The screenshot the agent saw with the observation: a PNG's path, relative to the folder
    /// of the JSONL file that holds the record (a vision-language policy's SFT reads it; absent
    /// where none was taken).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshot: Option<String>,
    /// Where the elements the step's actions name stood in that screenshot, so a coordinate
    /// tool set's demonstration clicks them there (absent in records written before, and where
    /// none was taken).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boxes: Option<StepBoxes>,
    /// The reply as the policy wrote it, where the environment ran other text (an
    /// instruction-tuned policy's calls read into the terse `actions`, a tag-style reply into
    /// its one call): format rewards (`format_ok`, `tags_ok`) read it. Absent where `actions`
    /// are what the agent wrote (the expert, the tiny policy) and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub said: Option<String>,
    /// The turn was no turn of the tool set (text that does not parse, a call the tool set
    /// lacks or with arguments it refuses): a format error, counted toward the agent's
    /// `max_parse_failures`. Absent (false) in older records.
    #[serde(default, skip_serializing_if = "is_false")]
    pub malformed: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl TrajStep {
    /// What the agent wrote this turn: the reply as written where it was recorded, else the
    /// actions, one a line.
    pub fn written(&self) -> std::borrow::Cow<'_, str> {
        match &self.said {
            Some(said) => std::borrow::Cow::Borrowed(said),
            None => std::borrow::Cow::Owned(self.actions.join("\n")),
        }
    }
}

/// The boxes of the elements a step acts on, as its screenshot shows them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepBoxes {
    /// The viewport the screenshot shows, in CSS pixels: `[width, height]`.
    pub viewport: [u32; 2],
    /// Each named element's border box in viewport CSS pixels, `[left, top, width, height]`,
    /// by element id.
    pub elements: std::collections::BTreeMap<u32, [i32; 4]>,
}

/// How an episode ended, plus the checker's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrajOutcome {
    /// How the episode ended (saved as its word: [`Ending`]).
    pub reason: Ending,
    /// The reason's message (empty for `completed`).
    pub message: String,
    /// The terminal answer, if any.
    pub answer: Option<String>,
    /// Checker verdict (false when the episode did not complete).
    pub success: bool,
    /// Checker detail line.
    pub detail: String,
    /// The reward an environment server gave the episode (`env_server`: its steps' rewards
    /// summed); absent for other environments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward: Option<f64>,
}

/// One line of trajectory JSONL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trajectory {
    /// Task id.
    pub task_id: String,
    /// Task template.
    pub template: String,
    /// Task goal.
    pub goal: String,
    /// Who acted: `expert` or a policy name.
    pub agent: String,
    /// Turns, in order.
    pub steps: Vec<TrajStep>,
    /// Outcome.
    pub outcome: TrajOutcome,
    /// Wall time of the episode in milliseconds.
    pub elapsed_ms: u64,
}
