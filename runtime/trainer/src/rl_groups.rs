//! DAPO's dynamic sampling as a buffer: groups are offered as they are scored, those whose
//! rewards are all equal (or that have no active sample) are dropped, until enough informative
//! groups are in.

use crate::rl::{RlConfig, Sample, constant_groups, is_active, shaped_rewards};

/// Collects groups for DAPO dynamic sampling: push groups as they are scored; groups whose
/// rewards are all equal are dropped; `is_full` says when enough informative groups are in.
#[derive(Debug, Clone, Default)]
pub struct GroupBuffer {
    /// How many informative groups to collect.
    pub target_groups: usize,
    /// Collected samples.
    pub samples: Vec<Sample>,
    /// Informative groups collected.
    pub groups: usize,
    /// Groups dropped for equal rewards.
    pub dropped: usize,
}

impl GroupBuffer {
    /// A buffer that wants `target_groups` informative groups.
    pub fn new(target_groups: usize) -> Self {
        GroupBuffer { target_groups, ..Default::default() }
    }

    /// Offer one group (all samples of one prompt). Returns whether it was kept.
    pub fn push_group(&mut self, group: Vec<Sample>, cfg: &RlConfig) -> bool {
        let rewards = shaped_rewards(&group, cfg);
        let has_active = group.iter().any(|s| is_active(s, cfg));
        if !has_active || !constant_groups(&group, &rewards, cfg).is_empty() {
            self.dropped += 1;
            return false;
        }
        self.samples.extend(group);
        self.groups += 1;
        true
    }

    /// Whether enough informative groups were collected.
    pub fn is_full(&self) -> bool {
        self.groups >= self.target_groups
    }
}
