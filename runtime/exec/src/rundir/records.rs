//! What a run directory holds, as types: the lines of `metrics.jsonl` and `trajectories.jsonl`,
//! the executor's cursor in `state.json`, and `summary.json`. The executor writes them and the
//! report and the tests read them back through these same types.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use wrl_sandbox::{Ending, Trajectory};

/// One line of `metrics.jsonl`, tagged by `kind`.
// One per logged line, written or read one at a time: the size of the largest variant does
// not matter, and boxing it would change every reader's pattern.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum MetricLine {
    /// One SFT optimiser step.
    Sft(SftStep),
    /// One RL iteration.
    Rl(RlIter),
    /// One held-out evaluation.
    Eval(EvalLine),
}

/// One SFT optimiser step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SftStep {
    /// The stage's declaration and its node.
    pub stage: String,
    pub node: String,
    pub step: u64,
    pub loss: f64,
    pub lr: f64,
    pub grad_norm: f64,
    /// The epoch the step belongs to (0-based).
    pub epoch: Option<u64>,
    /// Training steps of the whole run so far, this one included (SFT steps and RL
    /// iterations of every stage); the x axis of every series. Set by `RunDir::log_metrics`.
    #[serde(default)]
    pub global_step: u64,
    /// The RL phase (1-based); `None` outside phased RL.
    #[serde(default)]
    pub phase: Option<u64>,
    /// When the line was written: Unix time in seconds.
    #[serde(default)]
    pub time: f64,
    /// What the step held (a measurement, like `time`).
    #[serde(default, skip_serializing_if = "StepMemory::is_empty")]
    pub memory: StepMemory,
}

/// One RL iteration: its rollouts and its update.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RlIter {
    pub stage: String,
    pub node: String,
    /// The iteration within its phase (1-based).
    pub iter: u64,
    /// Mean reward of the episodes not excluded.
    pub reward: f64,
    /// Fraction of episodes that succeeded.
    pub success: f64,
    /// Groups whose rewards were all equal.
    pub uniform_groups: usize,
    pub loss: f64,
    pub lr: f64,
    pub grad_norm: f64,
    pub clip_frac: Option<f64>,
    /// Tasks of the batch that were replayed from the stage's buffer (`replay`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replayed: Option<usize>,
    /// Trajectories of the batch that branched from another (`branching`), of its
    /// `prompts` × `group`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branches: Option<usize>,
    /// Samples left out past the iteration's last whole mini-batch (`mini_batch_rest = drop`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trimmed: Option<usize>,
    /// Tasks generated from failures (`generate`): drawn into the batch, made, kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated: Option<crate::rollout::generated::GenStats>,
    /// PPO with a critic: the critic's clipped value loss.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_loss: Option<f64>,
    /// PPO with a critic: the critic's learning rate (its `schedule` at this iteration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critic_lr: Option<f64>,
    /// GiGPO: the mean |step-level advantage| of the update's samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_advantage: Option<f64>,
    /// RL samples the update trained on.
    pub samples: usize,
    /// Screenshots the iteration's trained turns showed the policy as images (a
    /// vision-language policy's, a ReAct agent's or a graph module's), each carried to the
    /// update with its sample; absent when none did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<usize>,
    pub rollout_s: f64,
    pub update_s: f64,
    /// Episode attempts run again after an environment error or timeout.
    pub retried: usize,
    /// Episodes left out of the loss, by class (`judge_error`, `judge_timeout`, `env_error`,
    /// an `exclude`d ending, `reward_error`, a reward endpoint's `reward_timeout`, …); absent
    /// when none were.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub excluded: BTreeMap<String, usize>,
    /// The mean of each component reward endpoints answered, over the episodes that answered
    /// it (`std::rewards::endpoint`'s `components`); absent without one.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub components: BTreeMap<String, f64>,
    /// Per graph role, when roles train separate weights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roles: Option<BTreeMap<String, RoleUpdate>>,
    /// As [`SftStep::global_step`].
    #[serde(default)]
    pub global_step: u64,
    /// The phase of the stage (1-based), from the node `stage:<name>/phase:<n>`.
    #[serde(default)]
    pub phase: Option<u64>,
    /// When the line was written: Unix time in seconds.
    #[serde(default)]
    pub time: f64,
    /// What the update held (the largest of its roles' updates).
    #[serde(default, skip_serializing_if = "StepMemory::is_empty")]
    pub memory: StepMemory,
}

/// Memory one training step or update held, as the trainer measured it.
pub use wrl_trainer::memory::StepMemory;

/// One role's part of an RL iteration's update.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleUpdate {
    pub samples: usize,
    pub loss: f64,
    pub grad_norm: f64,
}

/// One held-out evaluation, as `metrics.jsonl` logs it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalLine {
    /// The eval declaration and its node.
    pub stage: String,
    pub node: String,
    /// The stage it ran after (the eval's own name when it follows none).
    pub after: String,
    pub success: f64,
    /// The mean reward of its episodes, for `metric = mean_reward` (see [`EvalResult`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_reward: Option<f64>,
    pub episodes: usize,
    /// Each subset's result, by its value of the evaluation's `by` column (absent without).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub subsets: BTreeMap<String, SubsetResult>,
    /// The global step of the weights it evaluated (training steps of the run before it).
    #[serde(default)]
    pub global_step: u64,
    /// Always `None`: an evaluation is not part of a phase.
    #[serde(default)]
    pub phase: Option<u64>,
    /// When the line was written: Unix time in seconds.
    #[serde(default)]
    pub time: f64,
}

impl MetricLine {
    /// Whether the line is a training step (it advances the global step).
    pub fn is_training(&self) -> bool {
        match self {
            MetricLine::Sft(_) | MetricLine::Rl(_) => true,
            MetricLine::Eval(_) => false,
        }
    }

    /// The global step and time of the line.
    pub fn stamp(&self) -> (u64, f64) {
        match self {
            MetricLine::Sft(s) => (s.global_step, s.time),
            MetricLine::Rl(r) => (r.global_step, r.time),
            MetricLine::Eval(e) => (e.global_step, e.time),
        }
    }

    /// Sets the global step, the phase (from the node id) and the time of the line.
    pub fn set_stamp(&mut self, global_step: u64, time: f64) {
        let phase_of = |node: &str| node.rsplit_once("/phase:").and_then(|(_, n)| n.parse().ok());
        match self {
            MetricLine::Sft(s) => {
                (s.global_step, s.time) = (global_step, time);
                s.phase = phase_of(&s.node);
            }
            MetricLine::Rl(r) => {
                (r.global_step, r.time) = (global_step, time);
                r.phase = phase_of(&r.node);
            }
            MetricLine::Eval(e) => {
                (e.global_step, e.time) = (global_step, time);
                e.phase = None;
            }
        }
    }
}

/// One held-out evaluation result, as the cursor and the summary keep it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalResult {
    /// The eval declaration.
    pub eval: String,
    /// The stage it ran after (the eval's own name when it follows none).
    pub after: String,
    pub success: f64,
    /// For `metric = mean_reward`: the mean of its episodes' rewards (the judge's, or without
    /// a judge the checker's verdict as 1 or 0; an episode whose judge failed is left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_reward: Option<f64>,
    pub episodes: usize,
    /// The figures the paper reports for this evaluation (the recipe's `published`), printed
    /// beside `success`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub published: Vec<PublishedFigure>,
    /// The column the evaluation splits its result by (`by`; absent without).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// Each subset's result, by its value of the `by` column (sorted).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub subsets: BTreeMap<String, SubsetResult>,
    /// Where some of its tasks share a goal (a held-out draw from a small pool): how many goals
    /// they hold and how many independent tasks they are worth (a study's intervals count
    /// these); absent when every goal is distinct.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<Repeats>,
}

/// The distinct goals of an evaluation's tasks and what its tasks are worth as independent ones
/// (`study::stats::worth`, in tasks: a study's intervals count `worth` where they would count
/// the tasks).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Repeats {
    pub goals: u64,
    pub worth: u64,
}

/// One subset's result in an evaluation split by a column (`by`): what was solved out of what
/// was tried (tasks; episodes for `metric = mean_reward`), the rate and its 95 % Wilson interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubsetResult {
    pub solved: u64,
    pub out_of: u64,
    pub success: f64,
    pub low: f64,
    pub high: f64,
    /// Where the subset's tasks repeat goals: the independent tasks they are worth, which the
    /// interval counts in place of `out_of` (absent when every goal is distinct).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worth: Option<u64>,
}

/// A paper's figure for one evaluation: its model, its value (a fraction) and its source.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublishedFigure {
    pub model: String,
    pub value: f64,
    pub source: String,
}

/// How an episode was scored: a reward, or why it left the loss.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Scored {
    Value(f64),
    Excluded { excluded: String },
}

/// One line of `trajectories.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrajectoryLine {
    /// Consecutive over the whole run, from 0.
    pub id: u64,
    pub node: String,
    /// The RL iteration (0 for evaluations).
    pub iter: u64,
    /// The task's index in its batch (its GRPO group).
    pub group: usize,
    pub reward: Scored,
    /// The components its reward endpoints answered; absent without one.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub components: BTreeMap<String, f64>,
    pub trajectory: Trajectory,
    /// Where the trajectory sits in its prompt's tree (`branching`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<Branch>,
    /// Screenshots of each step and the final page, relative to the run directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshots: Option<Vec<String>>,
    /// A tag-style agent's episode as the one sequence the policy generated (`calls = tags()`),
    /// after its prompt: the policy's text and the env's results inline, each part saying
    /// whether it is in the loss (the results are not); absent for other agents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence: Option<Vec<SeqPart>>,
}

/// A part of a tag-style episode's sequence: text the policy wrote (`loss = true`, trained) or
/// the env's response in its result tags (`loss = false`, masked out of the loss).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeqPart {
    pub text: String,
    pub loss: bool,
}

/// A trajectory of a branching rollout (`branching = entropy(…)`): its index among its
/// group's samples, and, for a branch, the sample it was copied from and the turn it branched
/// at (its turns and steps before it are its parent's, replayed token for token).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Branch {
    pub sample: usize,
    /// The parent's `sample`; `None` for a full sample (one of the `initial`, or a fill).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<usize>,
    /// The first turn the branch sampled itself (0 for a full sample).
    pub at: usize,
}

/// Where the executor stands: written with every commit (`state.json`'s `cursor`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cursor {
    /// Nodes finished, in order.
    pub done: Vec<String>,
    /// The RL phase in progress and its last finished iteration.
    pub phase: Option<(String, u64)>,
    pub evals: Vec<EvalResult>,
    /// Episodes of RL iterations by how they ended.
    pub failures: BTreeMap<Ending, u64>,
    /// Which node's trainer the committed checkpoint holds.
    pub checkpoint_of: Option<String>,
    pub wall_s: f64,
    /// Episodes of RL iterations left out of the loss, by class.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub excluded: BTreeMap<String, u64>,
    /// Warnings the run raised (too many exclusions in an iteration).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Each RL stage's replay buffer (`replay`): task ids, oldest first.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub replay: BTreeMap<String, Vec<String>>,
    /// Each RL stage's pool of tasks generated from its failures (`generate`), oldest first.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub generated: BTreeMap<String, Vec<wrl_sandbox::Task>>,
}

/// What `summary.json` holds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    pub status: String,
    /// The recipe's identity (absent in runs written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<wrl_plan::Identity>,
    pub wall_s: f64,
    pub evals: Vec<EvalResult>,
    pub trajectories: u64,
    /// Episodes of RL iterations by how they ended.
    pub failures: BTreeMap<Ending, u64>,
    /// Episodes of RL iterations left out of the loss, by class.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub excluded: BTreeMap<String, u64>,
    /// Warnings the run raised.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The recipe's claims decided from this run's evaluations (over episodes only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<crate::study::verdict::ClaimResult>,
}

impl Summary {
    /// The figures of the run in one line: held-out success after each stage.
    pub fn describe(&self) -> String {
        let evals: Vec<String> = self
            .evals
            .iter()
            .map(|e| {
                let rate = match e.mean_reward {
                    Some(m) => format!("{:.1}% (mean reward {m:.3})", e.success * 100.0),
                    None => format!("{:.1}%", e.success * 100.0),
                };
                // An eval that follows no stage is named by itself; two evals after the same
                // stage are told apart by name.
                if e.after == e.eval {
                    return format!("{}: {rate}", e.eval);
                }
                let shared = self.evals.iter().filter(|o| o.after == e.after).count() > 1;
                let name = if shared { format!("{} ", e.eval) } else { String::new() };
                format!("{name}after {}: {rate}", e.after)
            })
            .collect();
        let figures = if evals.is_empty() {
            "no evaluations".to_string()
        } else {
            format!("held-out success {}", evals.join(", "))
        };
        let excluded: u64 = self.excluded.values().sum();
        let left_out = if excluded > 0 {
            let classes: Vec<String> =
                self.excluded.iter().map(|(k, v)| format!("{v} {k}")).collect();
            format!("; {excluded} episodes left out of the loss ({})", classes.join(", "))
        } else {
            String::new()
        };
        format!("finished in {:.0} s; {figures}{left_out}", self.wall_s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run directories written while endings were words read back as they were written: a
    /// `trajectories.jsonl` line of every ending, and `summary.json` / `state.json`'s counts
    /// keyed by every word, spelt out here rather than produced by the types.
    #[test]
    fn old_run_directories_read_with_every_ending_word() {
        let words = [
            "completed",
            "agent_error",
            "max_steps",
            "env_error",
            "infra_timeout",
            "truncated",
            "aborted",
        ];
        for (i, word) in words.iter().enumerate() {
            let line = format!(
                r#"{{"id":{i},"node":"stage:online/phase:1","iter":1,"group":0,"reward":{{"excluded":"{word}"}},"trajectory":{{"task_id":"t","template":"x","goal":"g","agent":"policy","steps":[],"outcome":{{"reason":"{word}","message":"","answer":null,"success":false,"detail":""}},"elapsed_ms":3}}}}"#
            );
            let read: TrajectoryLine = serde_json::from_str(&line).unwrap();
            assert_eq!(read.trajectory.outcome.reason.word(), *word);
            assert_eq!(serde_json::to_string(&read).unwrap(), line, "written back as read");
        }
        let counts: Vec<String> =
            words.iter().enumerate().map(|(i, w)| format!(r#""{w}":{}"#, i + 1)).collect();
        let mut sorted = counts.clone();
        sorted.sort();
        let summary = format!(
            r#"{{"status":"finished","wall_s":1.0,"evals":[],"trajectories":28,"failures":{{{}}}}}"#,
            counts.join(",")
        );
        let read: Summary = serde_json::from_str(&summary).unwrap();
        assert_eq!(read.failures.len(), words.len());
        assert_eq!(read.failures[&Ending::InfraTimeout], 5);
        let again = serde_json::to_string(&read).unwrap();
        assert!(again.contains(&format!(r#""failures":{{{}}}"#, sorted.join(","))), "{again}");
        let cursor = format!(
            r#"{{"done":[],"phase":null,"evals":[],"failures":{{{}}},"checkpoint_of":null,"wall_s":1.0}}"#,
            counts.join(",")
        );
        let read: Cursor = serde_json::from_str(&cursor).unwrap();
        assert_eq!(read.failures[&Ending::Aborted], 7);
    }
}
