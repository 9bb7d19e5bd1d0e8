//! Turning scored episodes into what the update trains on: per-turn samples carrying their
//! episode's reward (plus the step's process reward), and the group statistics GRPO and DAPO's
//! dynamic sampling look at.

use std::collections::BTreeMap;

use wrl_trainer::Sample;

use super::Episode;
use crate::reward::RewardValue;

/// Per-turn RL samples: each turn of an episode carries the episode's reward. With `role`, only
/// the turns that role's weights sampled (a graph whose roles train separate weights).
pub fn samples(episodes: &[Episode], first_trajectory_id: u64, role: Option<&str>) -> Vec<Sample> {
    let mut out = Vec::new();
    for (i, ep) in episodes.iter().enumerate() {
        let (reward, excluded) = match &ep.reward {
            RewardValue::Value(v) => (*v as f32, false),
            RewardValue::Excluded(_) => (0.0, true),
        };
        for turn in ep.turns.iter().filter(|t| role.is_none_or(|r| t.role == r)) {
            let process = ep.process.get(turn.step).copied().unwrap_or(0.0) as f32;
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
            });
        }
    }
    out
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
