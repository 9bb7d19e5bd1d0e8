//! Tasks generated from an RL stage's failures (`generate = from_failures(per_task) { … }`):
//! which of an iteration's tasks seed new ones, how the critic scores a new task at its first
//! state, and the pool the next iterations draw from (kept in the run's cursor, oldest first).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use wrl_plan::params::{Generation, OrOff};
use wrl_sandbox::{Content, Task};
use wrl_trainer::Trainer;

use super::Episode;
use super::replay::group_success;

/// What generation did in one iteration, for the progress line, metrics and the report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenStats {
    /// Generated tasks the batch took from the pool.
    pub drawn: usize,
    /// New tasks made from this iteration's failures.
    pub made: usize,
    /// Of those, the ones that joined the pool (within `critic_score`, or all without it).
    pub kept: usize,
    /// Of those made, the ones the critic could not score: the failed task's first prompt did
    /// not hold its instruction's tokens to swap for the new one (they are not kept).
    pub unscored: usize,
    /// Tasks waiting in the pool after the iteration.
    pub pool: usize,
}

/// How many of an iteration's `prompts` tasks come from the pool: `fraction` of them, rounded
/// down, no more than `room` (what replay left) and no more than the pool holds.
pub fn drawn(g: &Generation, prompts: usize, room: usize, pool: &[Task]) -> usize {
    ((g.fraction.0 * prompts as f64).floor() as usize).min(room).min(pool.len())
}

/// The tasks (of those rolled out, `tasks`) no episode of whose group succeeded, each with the
/// first prompt one of its episodes was sampled from (groups left out of the loss, and
/// episodes that sampled nothing, do not count).
pub fn failures<'t>(episodes: &'t [Episode], tasks: &'t [Task]) -> Vec<(&'t Task, &'t [u32])> {
    let failed: BTreeSet<String> =
        group_success(episodes).into_iter().filter(|(_, r)| *r == 0.0).map(|(t, _)| t).collect();
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for e in episodes {
        let id = &e.trajectory.task_id;
        if failed.contains(id)
            && let (Some(task), Some(turn)) = (tasks.iter().find(|t| &t.id == id), e.turns.first())
            && seen.insert(id.clone())
        {
            out.push((task, turn.prompt_tokens.as_slice()));
        }
    }
    out
}

/// `prompt` with the first run of `old` replaced by `new`; `None` when `old` is not in it.
pub fn swapped(prompt: &[u32], old: &[u32], new: &[u32]) -> Option<Vec<u32>> {
    if old.is_empty() || old.len() > prompt.len() {
        return None;
    }
    let at = prompt.windows(old.len()).position(|w| w == old)?;
    Some([&prompt[..at], new, &prompt[at + old.len()..]].concat())
}

/// Whether a critic value lies in the band (bounds included).
pub fn in_band(g: &Generation, value: f32) -> bool {
    match g.critic_score {
        OrOff::Off => true,
        OrOff::Value(r) => f64::from(value) >= r.lo.0 && f64::from(value) <= r.hi.0,
    }
}

/// New tasks for every failure: `per_task` sandbox variants of each, task `k` of the failure of
/// task `t` in iteration `iter` having id `{t}~g{iter}-{k}`.
pub fn variants_of(
    g: &Generation,
    content: &Content,
    failures: &[(&Task, &[u32])],
    iter: u64,
    seed: u64,
) -> Vec<Vec<Task>> {
    failures
        .iter()
        .map(|(t, _)| {
            let prefix = format!("{}~g{iter}", t.id);
            wrl_sandbox::variants(content, t, g.per_task as usize, seed, &prefix)
        })
        .collect()
}

/// The new tasks that join the pool, and how many were made and scored: with `critic_score`,
/// each new task's first state is its failure's first prompt with the failed instruction's
/// tokens swapped for the new one's (a variant starts on the same page), and the trainer's
/// critic scores it; without, every new task joins.
pub fn kept(
    g: &Generation,
    trainer: &Trainer,
    failures: &[(&Task, &[u32])],
    made: Vec<Vec<Task>>,
) -> Result<(Vec<Task>, GenStats), String> {
    let mut stats = GenStats { made: made.iter().map(Vec::len).sum(), ..GenStats::default() };
    if matches!(g.critic_score, OrOff::Off) {
        let all: Vec<Task> = made.into_iter().flatten().collect();
        stats.kept = all.len();
        return Ok((all, stats));
    }
    let tok = trainer.tokenizer();
    // The instruction as the prompt holds it: after a newline or a space.
    let in_prompt = |prompt: &[u32], old: &str, new: &str| -> Result<Option<Vec<u32>>, String> {
        for lead in ["", " "] {
            let enc = |s: &str| tok.encode(&format!("{lead}{s}")).map_err(|e| e.to_string());
            if let Some(p) = swapped(prompt, &enc(old)?, &enc(new)?) {
                return Ok(Some(p));
            }
        }
        Ok(None)
    };
    let mut scored = Vec::new();
    let mut prompts = Vec::new();
    for ((failed, prompt), tasks) in failures.iter().zip(made) {
        for t in tasks {
            match in_prompt(prompt, &failed.goal, &t.goal)? {
                Some(p) => {
                    prompts.push(p);
                    scored.push(t);
                }
                None => stats.unscored += 1,
            }
        }
    }
    let values = trainer
        .prompt_values(&prompts)
        .map_err(|e| e.to_string())?
        .ok_or("`critic_score` reads a critic, and this stage's trainer has none")?;
    let kept: Vec<Task> =
        scored.into_iter().zip(values).filter(|(_, v)| in_band(g, *v)).map(|(t, _)| t).collect();
    stats.kept = kept.len();
    Ok((kept, stats))
}

/// The pool after an iteration: the kept tasks join its end; the oldest leave beyond `size`.
pub fn record(g: &Generation, pool: &mut Vec<Task>, kept: Vec<Task>) {
    pool.extend(kept);
    let over = pool.len().saturating_sub(g.size.max(1) as usize);
    pool.drain(..over);
}

#[cfg(test)]
mod tests {
    use super::*;
    use wrl_plan::params::{Generator, Range, Ratio};

    fn g(band: Option<(f64, f64)>, size: u32) -> Generation {
        Generation {
            per_task: 2,
            generator: Generator::Sandbox,
            critic_score: match band {
                Some((lo, hi)) => OrOff::Value(Range { lo: Ratio(lo), hi: Ratio(hi) }),
                None => OrOff::Off,
            },
            fraction: Ratio(0.5),
            size,
        }
    }

    #[test]
    fn the_band_the_swap_and_the_pool() {
        let band = g(Some((0.05, 0.75)), 3);
        assert!(in_band(&band, 0.05) && in_band(&band, 0.75) && in_band(&band, 0.4));
        assert!(!in_band(&band, 0.01) && !in_band(&band, 0.9) && !in_band(&band, -0.2));
        assert!(in_band(&g(None, 3), -5.0), "no band keeps all");
        assert_eq!(swapped(&[1, 2, 3, 4, 5], &[3, 4], &[9, 9, 9]), Some(vec![1, 2, 9, 9, 9, 5]));
        assert_eq!(swapped(&[1, 2, 3], &[4], &[9]), None);
        assert_eq!(swapped(&[1, 2], &[], &[9]), None);
        let c = Content::new(0);
        let tasks = wrl_sandbox::generate(&c, wrl_sandbox::Split::Train, 4, 1);
        let mut pool = Vec::new();
        record(&band, &mut pool, tasks[..2].to_vec());
        record(&band, &mut pool, tasks[2..].to_vec());
        let ids: Vec<&str> = pool.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, [&tasks[1].id, &tasks[2].id, &tasks[3].id], "the oldest leave first");
        assert_eq!(drawn(&band, 5, 5, &pool), 2, "half of 5, rounded down");
        assert_eq!(drawn(&band, 5, 1, &pool), 1, "no more than replay left");
        assert_eq!(drawn(&band, 5, 5, &pool[..1]), 1, "no more than the pool holds");
        let fails: Vec<(&Task, &[u32])> = vec![(&tasks[0], &[1u32][..])];
        let v = variants_of(&band, &c, &fails, 3, 7);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].len(), 2);
        assert_eq!(v[0][1].id, format!("{}~g3-1", tasks[0].id));
    }

    /// The critic scores a new task at its failure's first prompt with the instruction swapped:
    /// a zero value head scores 0, which `0% .. 75%` keeps and `5% .. 75%` drops; a prompt
    /// without the failed instruction leaves its new tasks unscored.
    #[test]
    fn the_critic_keeps_what_its_band_holds() {
        use wrl_trainer::{Critic, PolicyConfig, TinyConfig, TrainerConfig};
        let mut t = Trainer::new(TrainerConfig {
            policy: PolicyConfig::Tiny(TinyConfig::default()),
            optim: Default::default(),
            seed: 3,
            device: Default::default(),
        })
        .unwrap();
        let c = Critic::from_policy(&t, Default::default()).unwrap();
        t.set_critic(Some(c));
        let content = Content::new(0);
        let tasks = wrl_sandbox::generate_qa(&content, wrl_sandbox::Split::Train, 2, 1);
        let prompt =
            t.tokenizer().encode(&format!("Question: {}\nAnswer:", tasks[0].goal)).unwrap();
        let other = t.tokenizer().encode("Nothing to see here").unwrap();
        let fails: Vec<(&Task, &[u32])> = vec![(&tasks[0], &prompt), (&tasks[1], &other)];
        let made = || variants_of(&g(None, 8), &content, &fails, 1, 5);
        let (all, s) = kept(&g(Some((0.0, 0.75)), 8), &t, &fails, made()).unwrap();
        assert_eq!((s.made, s.kept, s.unscored), (4, 2, 2), "{s:?}");
        assert!(all.iter().all(|k| k.id.starts_with(&tasks[0].id)));
        let (none, s) = kept(&g(Some((0.05, 0.75)), 8), &t, &fails, made()).unwrap();
        assert!(none.is_empty() && s.kept == 0, "{s:?}");
        let (every, s) = kept(&g(None, 8), &t, &fails, made()).unwrap();
        assert_eq!((every.len(), s.unscored), (4, 0), "no band scores nothing");
        t.set_critic(None);
        let err = kept(&g(Some((0.0, 0.75)), 8), &t, &fails, made()).unwrap_err();
        assert!(err.contains("has none"), "{err}");
    }
}
