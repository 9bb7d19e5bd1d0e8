//! Branching rollouts: ARPO's entropy-guided tree sampling (`branching = entropy(…)`). Each
//! prompt's `group` is its budget of samples. `initial` full samples run first; after each tool
//! result (every turn after an episode's first), the entropy of the policy's next turn
//! (`Turn::entropy`, over its first `tokens` tokens) is compared with the sample's root's first
//! turn's, and with U uniform the sample branches when clip(U − `weight`·ΔH, 0, 1) ≤
//! `threshold`: `beam` copies replay its turns before that one token for token
//! (`TrainerPolicy::with_replay`) and sample on from there. The episode's state is the
//! conversation (the checker allows only `search_api` envs), so the replay reaches the parent's
//! state, and the decoder's prefix cache reuses the parent's prefill of that turn's prompt.
//!
//! ARPO decides while sampling; here a wave of episodes runs to its end and its branch points
//! are then taken in ARPO's order — by turn, then by sample, so earlier rounds spend the budget
//! first, as its synchronous rounds do — until the budget is spent; each wave's branches form
//! the next wave. A tree that ends below the budget is filled with full samples (which do not
//! branch), so every group holds `group` trajectories and group advantages span the whole
//! tree. Each decision's U is drawn from the batch's seed, the group, the sample and the turn,
//! so it does not depend on the order episodes finish in. ARPO's released code keeps each
//! sample's initial entropy in a dict it never clears between batches; here it is the root's,
//! read afresh every batch.

use std::sync::{Arc, Mutex};

use wrl_plan::params::Branching;
use wrl_sandbox::Task;
use wrl_trainer::Trainer;

use super::{Episode, Job, RolloutCfg, Scoring, run_jobs};
use crate::env::Env;
use crate::rundir::records::Branch;

/// A prompt's tree of `cfg.group` samples per task, wave by wave; its episodes by group, then
/// by sample.
pub(super) async fn rollout_tree(
    env: &Arc<dyn Env>,
    tasks: &[Task],
    trainer: Option<&Arc<Mutex<Trainer>>>,
    cfg: &RolloutCfg,
    scoring: Scoring<'_>,
    b: &Branching,
) -> Vec<Episode> {
    let budget = cfg.group.max(1);
    let initial = (b.initial as usize).clamp(1, budget);
    let mut used = vec![initial; tasks.len()];
    let mut wave: Vec<Job> =
        (0..tasks.len()).flat_map(|g| (0..initial).map(move |s| root(g, s, budget))).collect();
    let mut done: Vec<Episode> = Vec::new();
    while !wave.is_empty() {
        let ran = run_jobs(env, tasks, trainer, cfg, scoring, wave).await;
        let first = done.len();
        done.extend(ran);
        wave = Vec::new();
        for (g, used) in used.iter_mut().enumerate() {
            let new: Vec<&Episode> = done[first..].iter().filter(|e| e.group == g).collect();
            let roots = |s: usize| root_entropy(&done, g, s);
            wave.extend(branches(&new, &roots, b, cfg.seed.unwrap_or(0), budget, used));
        }
    }
    // The rest of each budget: full samples.
    let fill: Vec<Job> = used
        .iter()
        .enumerate()
        .flat_map(|(g, &n)| (n..budget).map(move |s| root(g, s, budget)))
        .collect();
    done.extend(run_jobs(env, tasks, trainer, cfg, scoring, fill).await);
    done.sort_by_key(|e| (e.group, e.branch.map_or(0, |b| b.sample)));
    done
}

/// Full sample `s` of group `g`: its stream is the one sample `s` has without branching.
fn root(g: usize, s: usize, budget: usize) -> Job {
    Job { branch: Some(Branch { sample: s, parent: None, at: 0 }), ..Job::full(g, g * budget + s) }
}

/// The first turn's entropy of the root of sample `s` of group `g` (its initial entropy).
fn root_entropy(done: &[Episode], g: usize, s: usize) -> Option<f32> {
    let mut s = s;
    for _ in 0..=done.len() {
        let e = done.iter().find(|e| e.group == g && e.branch.is_some_and(|b| b.sample == s))?;
        match e.branch.and_then(|b| b.parent) {
            Some(p) => s = p,
            None => return e.turns.first().and_then(|t| t.entropy),
        }
    }
    None
}

/// The branches a wave's episodes of one group make: every turn after the first (after a
/// tool result) that an episode sampled itself is a branch point, taken by turn, then by
/// sample, while `used` is below `budget`.
pub(crate) fn branches(
    new: &[&Episode],
    root_entropy: &dyn Fn(usize) -> Option<f32>,
    b: &Branching,
    seed: u64,
    budget: usize,
    used: &mut usize,
) -> Vec<Job> {
    let mut points: Vec<(usize, usize, &Episode)> = Vec::new();
    for &e in new {
        let Some(me) = e.branch else { continue };
        // An episode the environment failed is not a state to branch from.
        if e.end_reason().is_infrastructure() {
            continue;
        }
        for t in (me.at + 1).max(1)..e.turns.len() {
            points.push((t, me.sample, e));
        }
    }
    points.sort_by_key(|&(t, s, _)| (t, s));
    let mut jobs = Vec::new();
    for (t, s, e) in points {
        if *used >= budget {
            break;
        }
        let (Some(now), Some(start)) = (e.turns[t].entropy, root_entropy(s)) else { continue };
        let u = uniform(seed, e.group, s, t);
        if !branches_at(u, f64::from(now - start), b) {
            continue;
        }
        for _ in 0..b.beam {
            if *used >= budget {
                break;
            }
            let branch = Branch { sample: *used, parent: Some(s), at: t };
            let index = e.group * budget + *used;
            let replay = e.turns[..t].to_vec();
            jobs.push(Job { group: e.group, index, replay, branch: Some(branch) });
            *used += 1;
        }
    }
    jobs
}

/// ARPO's rule: with ΔH the rise in entropy, branch when clip(U − weight·ΔH, 0, 1) ≤ threshold.
pub fn branches_at(u: f64, rise: f64, b: &Branching) -> bool {
    (u - b.weight * rise).clamp(0.0, 1.0) <= b.threshold
}

/// A uniform draw in [0, 1) for the decision at turn `t` of sample `s` of group `g`.
fn uniform(seed: u64, g: usize, s: usize, t: usize) -> f64 {
    use wrl_trainer::rng::mix;
    let x = mix(mix(mix(mix(seed, 0xA290), g as u64), s as u64), t as u64);
    (x >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use wrl_plan::params::Tokens;

    use super::*;
    use crate::agent::sample::Turn;
    use crate::reward::RewardValue;

    fn episode(group: usize, sample: usize, entropies: &[f32]) -> Episode {
        let trajectory = serde_json::from_value(serde_json::json!({
            "task_id": "t", "template": "x", "goal": "g", "agent": "policy", "steps": [],
            "outcome": {"reason": "completed", "message": "", "answer": null,
                        "success": false, "detail": ""},
            "elapsed_ms": 1
        }))
        .expect("a trajectory");
        let turns = entropies
            .iter()
            .enumerate()
            .map(|(i, &h)| Turn {
                completion_tokens: vec![i as u32],
                entropy: Some(h),
                ..Turn::default()
            })
            .collect();
        Episode {
            group,
            trajectory,
            turns,
            reward: RewardValue::Value(0.0),
            process: Vec::new(),
            screens: Vec::new(),
            retried: 0,
            branch: Some(Branch { sample, parent: None, at: 0 }),
            sequence: None,
            components: Default::default(),
        }
    }

    fn tree(beam: u32, threshold: f64, weight: f64) -> Branching {
        Branching { initial: 2, beam, threshold, weight, tokens: Tokens(20) }
    }

    /// Every turn after the first would branch (`threshold = 1`): branches are taken by turn,
    /// then by sample, `beam` at a time, and stop at the budget; each replays its parent's
    /// turns before the branch point.
    #[test]
    fn every_step_branching_stops_at_the_budget() {
        let (a, b) = (episode(0, 0, &[0.1, 0.5, 0.9]), episode(0, 1, &[0.2, 0.1, 0.1]));
        let mut used = 2;
        let jobs = branches(&[&a, &b], &|_| Some(0.1), &tree(2, 1.0, 0.2), 7, 5, &mut used);
        assert_eq!(used, 5);
        let at: Vec<(Option<usize>, usize, usize)> = jobs
            .iter()
            .map(|j| j.branch.map(|b| (b.parent, b.at, b.sample)).unwrap_or_default())
            .collect();
        assert_eq!(at, [(Some(0), 1, 2), (Some(0), 1, 3), (Some(1), 1, 4)]);
        assert!(
            jobs.iter().all(|j| j.replay.len() == 1 && Some(j.index) == j.branch.map(|b| b.sample))
        );
        // A budget already spent makes none.
        let mut full = 5;
        assert!(branches(&[&a], &|_| Some(0.1), &tree(2, 1.0, 0.2), 7, 5, &mut full).is_empty());
    }

    /// ARPO's rule: a rise in entropy makes branching likelier; `threshold = 0` with no weight
    /// never branches but for U = 0.
    #[test]
    fn the_rule_is_arpos_clipped_draw() {
        let b = tree(1, 0.5, 0.2);
        assert!(!branches_at(0.6, 0.0, &b));
        assert!(branches_at(0.6, 1.0, &b), "0.6 − 0.2 = 0.4 ≤ 0.5");
        assert!(branches_at(0.4, -0.4, &b), "0.48 ≤ 0.5");
        assert!(!branches_at(0.3, 0.0, &tree(1, 0.0, 0.0)));
        let draws: Vec<f64> = (0..100).map(|t| uniform(3, 0, 1, t)).collect();
        assert!(draws.iter().all(|u| (0.0..1.0).contains(u)));
        assert_eq!(draws, (0..100).map(|t| uniform(3, 0, 1, t)).collect::<Vec<_>>());
    }
}
