//! Which episodes of an evaluation the report shows, and how an episode is classed. One rule
//! for both sides: the evaluation keeps the pages of exactly the episodes this picks, and the
//! report picks the same ones again from `trajectories.jsonl`.

use std::fmt;

use wrl_sandbox::{Ending, Trajectory};

/// How an episode ended, for the report's tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// The checker said yes.
    Solved,
    /// It completed (it answered), and the checker said no.
    WrongAnswer,
    /// It did not complete: its ending (`max_steps`, `agent_error`, `env_error`, …).
    Ended(Ending),
}

impl Class {
    /// The word the report's tables head its column with.
    pub fn word(self) -> &'static str {
        match self {
            Class::Solved => "solved",
            Class::WrongAnswer => "wrong_answer",
            Class::Ended(e) => e.word(),
        }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
}

/// The class of an episode: `solved`, `wrong_answer` (it answered, the checker said no), or
/// how it ended otherwise.
pub fn class(t: &Trajectory) -> Class {
    if t.outcome.success {
        return Class::Solved;
    }
    match t.outcome.reason {
        Ending::Completed => Class::WrongAnswer,
        e @ (Ending::AgentError
        | Ending::MaxSteps
        | Ending::EnvError
        | Ending::InfraTimeout
        | Ending::Truncated
        | Ending::Aborted) => Class::Ended(e),
    }
}

/// One episode as the choice sees it.
#[derive(Clone, Copy, Debug)]
pub struct Candidate<'a> {
    /// Its reward; `None` when it left the loss.
    pub reward: Option<f64>,
    pub trajectory: &'a Trajectory,
    /// Whether its pages were captured (ties go to an episode whose pages can be shown).
    pub screened: bool,
}

/// The episodes to show, in order, each with why: `best` (`best (none solved)` when no
/// episode solved its task), `worst`, then the first episode of
/// each failure class (sorted by class) not already shown. An episode picked twice carries
/// both labels (`worst · max_steps`).
pub fn choose(c: &[Candidate<'_>]) -> Vec<(usize, Vec<String>)> {
    if c.is_empty() {
        return Vec::new();
    }
    let reward = |i: usize| c[i].reward.unwrap_or(f64::NEG_INFINITY);
    let steps = |i: usize| c[i].trajectory.steps.len();
    let solved = |i: usize| c[i].trajectory.outcome.success;
    // Best: solved first, then the highest reward, the fewest steps, pages kept, the earliest.
    let best = (0..c.len()).min_by(|&a, &b| {
        solved(b)
            .cmp(&solved(a))
            .then(reward(b).total_cmp(&reward(a)))
            .then(steps(a).cmp(&steps(b)))
            .then(c[b].screened.cmp(&c[a].screened))
            .then(a.cmp(&b))
    });
    // Worst: unsolved first, then the lowest reward, the most steps, pages kept, the earliest.
    let worst = (0..c.len()).min_by(|&a, &b| {
        solved(a)
            .cmp(&solved(b))
            .then(reward(a).total_cmp(&reward(b)))
            .then(steps(b).cmp(&steps(a)))
            .then(c[b].screened.cmp(&c[a].screened))
            .then(a.cmp(&b))
    });
    let mut out: Vec<(usize, Vec<String>)> = Vec::new();
    let add = |i: usize, label: String, out: &mut Vec<(usize, Vec<String>)>| match out
        .iter_mut()
        .find(|(j, _)| *j == i)
    {
        Some((_, labels)) => labels.push(label),
        None => out.push((i, vec![label])),
    };
    if let Some(b) = best {
        let label = if solved(b) { "best" } else { "best (none solved)" };
        add(b, label.into(), &mut out);
    }
    if let Some(w) = worst.filter(|&w| Some(w) != best) {
        add(w, "worst".into(), &mut out);
    }
    let mut classes: Vec<&str> = c
        .iter()
        .map(|x| class(x.trajectory))
        .filter(|k| *k != Class::Solved)
        .map(Class::word)
        .collect();
    classes.sort_unstable();
    classes.dedup();
    for k in classes {
        let of = |i: &usize| class(c[*i].trajectory).word() == k;
        // An episode already shown stands for its class; else the first, pages kept first.
        if let Some(&(i, _)) = out.iter().find(|(i, _)| of(i)) {
            add(i, k.to_string(), &mut out);
            continue;
        }
        let first = (0..c.len()).filter(of).min_by_key(|&i| (!c[i].screened, i));
        if let Some(i) = first {
            add(i, k.to_string(), &mut out);
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use wrl_sandbox::{TrajOutcome, TrajStep};

    /// An episode of `template` that ended for `reason` after `steps` empty steps.
    pub(crate) fn episode(template: &str, reason: &str, success: bool, steps: usize) -> Trajectory {
        let step = TrajStep {
            observation: String::new(),
            actions: vec![],
            feedback: String::new(),
            url: String::new(),
            screenshot: None,
            boxes: None,
            said: None,
            malformed: false,
        };
        Trajectory {
            task_id: String::new(),
            template: template.into(),
            goal: String::new(),
            agent: "policy".into(),
            steps: vec![step; steps],
            outcome: TrajOutcome {
                reason: reason.parse().expect("an ending's word"),
                message: String::new(),
                answer: None,
                success,
                detail: String::new(),
                reward: None,
            },
            elapsed_ms: 0,
        }
    }

    fn traj(reason: &str, success: bool, steps: usize) -> Trajectory {
        episode("t", reason, success, steps)
    }

    #[test]
    fn picks_best_worst_and_one_of_each_failure_class() {
        let ts = [
            traj("completed", false, 2),
            traj("completed", true, 5),
            traj("max_steps", false, 6),
            traj("completed", true, 3),
            traj("agent_error", false, 1),
            traj("max_steps", false, 6),
        ];
        let c: Vec<Candidate> = ts
            .iter()
            .map(|t| Candidate {
                reward: Some(if t.outcome.success { 1.0 } else { 0.0 }),
                trajectory: t,
                screened: true,
            })
            .collect();
        let got = choose(&c);
        let want: Vec<(usize, Vec<String>)> = vec![
            (3, vec!["best".into()]),
            (2, vec!["worst".into(), "max_steps".into()]),
            (4, vec!["agent_error".into()]),
            (0, vec!["wrong_answer".into()]),
        ];
        assert_eq!(got, want);
        assert_eq!(class(&ts[0]), Class::WrongAnswer);
        assert_eq!(class(&ts[1]), Class::Solved);
    }

    #[test]
    fn ties_go_to_episodes_whose_pages_were_kept() {
        let ts = [traj("max_steps", false, 4), traj("max_steps", false, 4)];
        let c = [
            Candidate { reward: Some(0.0), trajectory: &ts[0], screened: false },
            Candidate { reward: Some(0.0), trajectory: &ts[1], screened: true },
        ];
        assert_eq!(choose(&c)[0].0, 1);
        let one = vec![(0, vec!["best (none solved)".to_string(), "max_steps".to_string()])];
        assert_eq!(choose(&[c[0]]), one);
        assert!(choose(&[]).is_empty());
    }
}
