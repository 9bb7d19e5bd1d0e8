//! Turning scored episodes into what the update trains on: per-turn samples carrying their
//! episode's reward (plus the step's process reward), and the group statistics GRPO and DAPO's
//! dynamic sampling look at.

use std::collections::BTreeMap;

use wrl_plan::params::AnchorKey;
use wrl_sandbox::Trajectory;
use wrl_trainer::Sample;
use wrl_trainer::gigpo::Step;

use super::Episode;
use crate::agent::sample::Turn;
use crate::reward::RewardValue;

/// Per-turn RL samples: each turn of an episode carries the episode's reward. With `role`, only
/// the turns that role's weights sampled (a graph whose roles train separate weights). With
/// `anchor` (GiGPO), each also carries its step: the state it was sampled in, keyed as the
/// recipe says, and its step's reward — the step's process reward, and on the episode's last
/// sample the outcome too.
pub fn samples(
    episodes: &[Episode],
    first_trajectory_id: u64,
    role: Option<&str>,
    anchor: Option<AnchorKey>,
) -> Vec<Sample> {
    let mut out = Vec::new();
    for (i, ep) in episodes.iter().enumerate() {
        let (reward, excluded) = match &ep.reward {
            RewardValue::Value(v) => (*v as f32, false),
            RewardValue::Excluded(_) => (0.0, true),
        };
        let turns: Vec<_> = ep.turns.iter().filter(|t| role.is_none_or(|r| t.role == r)).collect();
        let first = out.len();
        for (k, turn) in turns.iter().enumerate() {
            let process = ep.process.get(turn.step).copied().unwrap_or(0.0) as f32;
            let last = k + 1 == turns.len();
            // A tag-style turn continues its episode's one sample: the env's response (its
            // `lead`) joins the completion masked out of the loss, the turn's own tokens in it.
            if turn.continues
                && out.len() > first
                && let Some(s) = out.last_mut()
            {
                continue_sample(s, turn, process, last.then_some(reward));
                continue;
            }
            let step = anchor.map(|key| Step {
                anchor: anchor_of(&ep.trajectory, turn.step, key),
                reward: process + if last { reward } else { 0.0 },
            });
            out.push(Sample {
                prompt_tokens: turn.prompt_tokens.clone(),
                completion_tokens: turn.completion_tokens.clone(),
                old_logprobs: turn.logprobs.clone(),
                completion_mask: None,
                reward: reward + process,
                advantage: None,
                group_id: ep.group as u64,
                trajectory_id: first_trajectory_id + i as u64,
                excluded,
                truncated: turn.truncated,
                step,
                images: turn.images.clone(),
            });
        }
    }
    out
}

/// `s` (a tag-style episode's sample so far) continued by `turn`: its `lead` (the env's
/// response) masked out of the loss with log-probs of 0, which no loss reads, then its own
/// tokens; the turn's process reward added, and the outcome's to the step when it is the last.
fn continue_sample(s: &mut Sample, turn: &Turn, process: f32, outcome: Option<f32>) {
    let mut mask =
        s.completion_mask.take().unwrap_or_else(|| vec![true; s.completion_tokens.len()]);
    s.completion_tokens.extend_from_slice(&turn.lead);
    s.old_logprobs.extend(std::iter::repeat_n(0.0, turn.lead.len()));
    mask.extend(std::iter::repeat_n(false, turn.lead.len()));
    s.completion_tokens.extend_from_slice(&turn.completion_tokens);
    s.old_logprobs.extend_from_slice(&turn.logprobs);
    mask.extend(std::iter::repeat_n(true, turn.completion_tokens.len()));
    s.completion_mask = Some(mask);
    s.reward += process;
    s.truncated = turn.truncated;
    if let Some(step) = s.step.as_mut() {
        step.reward += process + outcome.unwrap_or(0.0);
    }
}

/// The state environment step `step` of `traj` was sampled in, as `key` names it: the text
/// observation with runs of whitespace made one space and its ends trimmed, or the page's URL
/// before the step (the previous step's; empty for the first, which every episode of a group
/// starts from the task's start).
pub fn anchor_of(traj: &Trajectory, step: usize, key: AnchorKey) -> String {
    match key {
        AnchorKey::Observation => traj
            .steps
            .get(step)
            .map(|s| s.observation.split_whitespace().collect::<Vec<_>>().join(" "))
            .unwrap_or_default(),
        AnchorKey::Url => step
            .checked_sub(1)
            .and_then(|p| traj.steps.get(p))
            .map(|s| s.url.clone())
            .unwrap_or_default(),
    }
}

/// Groups whose rewards are all equal carry no signal (GRPO advantage 0).
pub fn uniform_groups(episodes: &[Episode]) -> usize {
    group_rewards(episodes).values().filter(|rs| rs.windows(2).all(|w| w[0] == w[1])).count()
}

/// Groups whose rewards differ: the ones GRPO learns from.
pub fn informative_groups(episodes: &[Episode]) -> usize {
    group_rewards(episodes).values().filter(|rs| rs.windows(2).any(|w| w[0] != w[1])).count()
}

/// The scored (not excluded) rewards of each group.
fn group_rewards(episodes: &[Episode]) -> BTreeMap<usize, Vec<f64>> {
    let mut by_group: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for e in episodes {
        if let RewardValue::Value(v) = e.reward {
            by_group.entry(e.group).or_default().push(v);
        }
    }
    by_group
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reward::RewardValue;

    #[test]
    fn a_tag_style_episode_is_one_sample_with_the_results_masked() {
        let traj: Trajectory = serde_json::from_value(serde_json::json!({
            "task_id": "t", "template": "qa", "goal": "g", "agent": "policy", "steps": [],
            "outcome": {"reason": "completed", "message": "", "answer": "a", "success": true,
                        "detail": ""},
            "elapsed_ms": 1
        }))
        .expect("a trajectory");
        let turn = |step: usize, completion: Vec<u32>, lead: Vec<u32>| Turn {
            prompt_tokens: vec![1, 2],
            logprobs: vec![-0.5; completion.len()],
            completion_tokens: completion,
            step,
            continues: step > 0,
            lead,
            ..Turn::default()
        };
        let ep = Episode {
            group: 0,
            trajectory: traj,
            turns: vec![turn(0, vec![10, 11], vec![]), turn(1, vec![12], vec![90, 91, 92])],
            reward: RewardValue::Value(1.0),
            process: Vec::new(),
            screens: Vec::new(),
            retried: 0,
            branch: None,
            sequence: None,
            components: Default::default(),
        };
        let out = samples(&[ep], 0, None, None);
        assert_eq!(out.len(), 1);
        let s = &out[0];
        assert_eq!(s.prompt_tokens, [1, 2]);
        assert_eq!(s.completion_tokens, [10, 11, 90, 91, 92, 12]);
        assert_eq!(
            s.completion_mask.as_deref(),
            Some(&[true, true, false, false, false, true][..])
        );
        assert_eq!(s.old_logprobs, [-0.5, -0.5, 0.0, 0.0, 0.0, -0.5]);
        assert_eq!(s.reward, 1.0);
    }
}
