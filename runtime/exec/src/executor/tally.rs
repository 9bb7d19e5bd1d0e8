//! What an evaluation counts and which of its units are solved: each task (its attempts, for
//! pass@k and cons@k) or, for `mean_reward`, each episode, by its judge's reward or its task's
//! checker. Shared by the whole evaluation (`eval.rs`), its subsets (`subsets.rs`) and an RL
//! stage's validation (`validate.rs`).

use std::collections::BTreeMap;

use wrl_plan::params::Metric;
use wrl_sandbox::Task;

use crate::reward::RewardValue;
use crate::rollout::Episode;
use crate::rundir::records::Repeats;

/// What an evaluation counts, each with whether it was solved: every episode for `mean_reward`
/// (its task's group), every task for the others (pass@k and success solve a task when any
/// attempt succeeds, cons@k when the most common answer is a successful attempt's).
fn units(metric: Metric, episodes: &[Episode], tasks: usize, judged: bool) -> Vec<(usize, bool)> {
    match metric {
        Metric::MeanReward => episodes.iter().map(|e| (e.group, solved(e, judged))).collect(),
        Metric::Success | Metric::PassAtK | Metric::ConsAtK => (0..tasks)
            .map(|g| {
                let attempts: Vec<&Episode> = episodes.iter().filter(|e| e.group == g).collect();
                let ok = match metric {
                    Metric::ConsAtK => consensus_solved(&attempts, judged),
                    Metric::Success | Metric::PassAtK | Metric::MeanReward => {
                        attempts.iter().any(|e| solved(e, judged))
                    }
                };
                (g, ok)
            })
            .collect(),
    }
}

/// An evaluation's units with whether each was solved, and its tasks' goals: computed once, read
/// by its tally, its repeats and its subsets.
pub(super) struct Counted<'t> {
    pub units: Vec<(usize, bool)>,
    pub tasks: &'t [Task],
    pub keys: Vec<String>,
}

impl<'t> Counted<'t> {
    pub fn new(metric: Metric, episodes: &[Episode], tasks: &'t [Task], judged: bool) -> Self {
        let units = units(metric, episodes, tasks.len(), judged);
        Counted { units, tasks, keys: goal_keys(tasks) }
    }

    /// Units solved and units tried: tasks, or for `mean_reward` episodes (each task's k
    /// attempts averaged).
    pub fn tally(&self) -> (usize, usize) {
        (self.units.iter().filter(|u| u.1).count(), self.units.len())
    }

    /// Where some tasks share a goal (the same instruction, start and check): the distinct
    /// goals, and how many independent tasks the units are worth (each goal's units solved and
    /// tried as one cluster, within its template; for `mean_reward`, whose units are episodes,
    /// scaled to tasks); `None` when every goal is distinct.
    pub fn repeats(&self) -> Option<Repeats> {
        self.repeats_within(&|_| true)
    }

    /// [`Counted::repeats`] of the tasks `within` keeps (a subset).
    pub fn repeats_within(&self, within: &dyn Fn(usize) -> bool) -> Option<Repeats> {
        repeats_of(&self.units, self.tasks, &self.keys, within)
    }
}

/// How many distinct goals `tasks` hold, where that is fewer than the tasks.
pub(super) fn distinct_goals(tasks: &[Task]) -> Option<usize> {
    let keys = goal_keys(tasks);
    let distinct = keys.iter().collect::<std::collections::BTreeSet<_>>().len();
    (distinct < tasks.len()).then_some(distinct)
}

/// Each task's goal: what the agent is asked, where it starts and what is checked (its id aside).
fn goal_keys(tasks: &[Task]) -> Vec<String> {
    tasks.iter().map(|t| format!("{}\u{1f}{}\u{1f}{:?}", t.goal, t.start_path, t.checker)).collect()
}

/// The distinct goals among the tasks `within` keeps and what their `units` are worth, from the
/// tasks' [`goal_keys`]; `None` when every kept goal is distinct.
fn repeats_of(
    units: &[(usize, bool)],
    tasks: &[Task],
    keys: &[String],
    within: &dyn Fn(usize) -> bool,
) -> Option<Repeats> {
    let kept: Vec<usize> = (0..tasks.len()).filter(|&t| within(t)).collect();
    let distinct = kept.iter().map(|&t| &keys[t]).collect::<std::collections::BTreeSet<_>>();
    if distinct.len() == kept.len() {
        return None;
    }
    // Each goal's units solved and tried, by template (a stratum) and goal.
    let mut goals: BTreeMap<(&str, &str), (u64, u64)> = BTreeMap::new();
    let mut tried = 0usize;
    for &(task, ok) in units.iter().filter(|u| within(u.0)) {
        let template = tasks.get(task).map_or("", |t| t.template.as_str());
        let g = goals.entry((template, keys.get(task).map_or("", String::as_str))).or_default();
        g.0 += u64::from(ok);
        g.1 += 1;
        tried += 1;
    }
    let mut strata: BTreeMap<&str, Vec<(u64, u64)>> = BTreeMap::new();
    for ((template, _), counts) in goals {
        strata.entry(template).or_default().push(counts);
    }
    let strata: Vec<Vec<(u64, u64)>> = strata.into_values().collect();
    // In tasks: `mean_reward` counts episodes, k a task.
    let worth =
        crate::study::stats::worth(&strata) as f64 * kept.len() as f64 / tried.max(1) as f64;
    Some(Repeats { goals: distinct.len() as u64, worth: (worth.round() as u64).max(1) })
}

/// Cons@k: the attempts' answers (trimmed, lower-cased, whitespace collapsed) are counted, and
/// the task is solved when an attempt giving the most common one was solved; a tie goes to the
/// answer given first. Attempts without an answer do not vote; with no answer at all the task
/// is not solved.
fn consensus_solved(attempts: &[&Episode], judged: bool) -> bool {
    let norm = |e: &Episode| {
        let a = e.trajectory.outcome.answer.as_deref()?;
        let a = a.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
        (!a.is_empty()).then_some(a)
    };
    let answers: Vec<Option<String>> = attempts.iter().map(|e| norm(e)).collect();
    let mut best: Option<(&str, usize)> = None;
    for a in answers.iter().flatten() {
        let n = answers.iter().flatten().filter(|b| *b == a).count();
        if best.is_none_or(|(_, m)| n > m) {
            best = Some((a, n));
        }
    }
    let Some((majority, _)) = best else { return false };
    attempts.iter().zip(&answers).any(|(e, a)| a.as_deref() == Some(majority) && solved(e, judged))
}

/// `metric = mean_reward`: the mean of the episodes' rewards; with a judge its reward, without
/// one the task's checker as 1 (solved) or 0. An episode whose judge failed has no reward and
/// is left out; with none left the mean is 0.
pub(super) fn mean_reward(episodes: &[Episode], judged: bool) -> f64 {
    let rewards: Vec<f64> = episodes
        .iter()
        .filter_map(|e| match (&e.reward, judged) {
            (RewardValue::Value(v), true) => Some(*v),
            (RewardValue::Value(_), false) => Some(if e.success() { 1.0 } else { 0.0 }),
            (RewardValue::Excluded(_), _) => None,
        })
        .collect();
    if rewards.is_empty() { 0.0 } else { rewards.iter().sum::<f64>() / rewards.len() as f64 }
}

pub(super) fn solved(e: &Episode, judged: bool) -> bool {
    if !judged {
        return e.success();
    }
    match &e.reward {
        RewardValue::Value(v) => *v > 0.0,
        RewardValue::Excluded(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(answer: Option<&str>, reward: f64) -> Episode {
        let trajectory = serde_json::from_value(serde_json::json!({
            "task_id": "t", "template": "x", "goal": "g", "agent": "policy", "steps": [],
            "outcome": {"reason": "completed", "message": "", "answer": answer,
                        "success": reward > 0.0, "detail": ""},
            "elapsed_ms": 1
        }))
        .unwrap();
        Episode {
            group: 0,
            trajectory,
            turns: Vec::new(),
            reward: RewardValue::Value(reward),
            process: Vec::new(),
            screens: Vec::new(),
            retried: 0,
            branch: None,
            sequence: None,
            components: Default::default(),
        }
    }

    #[test]
    fn cons_at_k_follows_the_most_common_answer() {
        let (a, b) = (attempt(Some("Paris"), 1.0), attempt(Some(" paris "), 1.0));
        let wrong = attempt(Some("Lyon"), 0.0);
        let none = attempt(None, 0.0);
        // Two of three say Paris, which is right: solved (pass@k would be too).
        assert!(consensus_solved(&[&a, &wrong, &b], true));
        // Two of three say Lyon: not solved, though one attempt was right.
        let (w2, w3) = (attempt(Some("lyon"), 0.0), attempt(Some("LYON"), 0.0));
        assert!(!consensus_solved(&[&a, &w2, &w3], true));
        // A tie goes to the answer given first; attempts without an answer do not vote.
        assert!(consensus_solved(&[&a, &wrong, &none], true));
        assert!(!consensus_solved(&[&wrong, &a, &none], true));
        assert!(!consensus_solved(&[&none, &none], true));
        // Without a judge the checker's verdict decides.
        assert!(consensus_solved(&[&a], false));
    }

    #[test]
    fn mean_reward_averages_the_judges_rewards_or_the_checkers_verdicts() {
        let eps = [attempt(Some("a"), 0.75), attempt(Some("b"), 0.25), attempt(None, 0.0)];
        assert!((mean_reward(&eps, true) - (0.75 + 0.25) / 3.0).abs() < 1e-12);
        // Without a judge: the checker's verdict (here: reward > 0 made `success`) as 1 or 0.
        assert!((mean_reward(&eps, false) - 2.0 / 3.0).abs() < 1e-12);
        // An episode whose judge failed is left out.
        let mut failed = attempt(None, 0.0);
        failed.reward =
            RewardValue::Excluded(crate::reward::classes::Exclusion::Unscorable("no".into()));
        assert!((mean_reward(&[attempt(None, 1.0), failed], true) - 1.0).abs() < 1e-12);
        assert_eq!(mean_reward(&[], true), 0.0);
    }

    fn task(goal: &str, start: &str) -> Task {
        serde_json::from_value(serde_json::json!({
            "id": format!("{goal}{start}"), "split": "test", "template": "x", "site": "shop",
            "goal": goal, "start_path": start, "checker": {"kind": "answer", "expected": "1", "mode": "text"},
            "params": {}, "max_steps": 5, "content_seed": 0
        }))
        .unwrap()
    }

    #[test]
    fn distinct_goals_are_said_only_where_tasks_repeat_one() {
        let tasks = [task("a", "/"), task("a", "/"), task("b", "/"), task("a", "/other")];
        // The same instruction from another page is another goal.
        assert_eq!(distinct_goals(&tasks), Some(3));
        assert_eq!(distinct_goals(&tasks[1..]), None);
        assert_eq!(distinct_goals(&[]), None);
    }
}
