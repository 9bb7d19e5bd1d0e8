//! How an RL update's batch is cut into mini-batches (one optimiser step each): by a count of
//! loss samples, or so that all the samples of N trajectories or N prompt groups step together
//! (verl's `ppo_mini_batch_size` counts prompts), whatever the number of turns they hold.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What `RlConfig::mini_batch` counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MiniBatchUnit {
    /// Loss samples at the config's level: turns at `level = turn`, trajectories at
    /// `level = trajectory`.
    #[default]
    Samples,
    /// Whole trajectories: every turn of N trajectories.
    Trajectories,
    /// Whole prompt groups: every trajectory (and turn) of N groups.
    Groups,
}

/// The mini-batches of one epoch, each a list of indices into `units` (the loss samples, in
/// batch order), with `key[u]` the trajectory and group of unit `u`'s first sample. `n` = 0
/// means `minibatches` equal splits of the units instead. With `drop_rest`, a last mini-batch
/// of fewer than `n` (samples, trajectories or groups) is left out (slime's trimming,
/// `mini_batch_rest = drop`); otherwise it trains as a shorter one (verl's split).
pub(crate) fn split(
    units: usize,
    key: impl Fn(usize) -> (u64, u64),
    (n, unit): (usize, MiniBatchUnit),
    minibatches: usize,
    drop_rest: bool,
) -> Vec<Vec<usize>> {
    let (mut out, last_holds) = cut(units, key, (n, unit), minibatches);
    if drop_rest && n > 0 && last_holds < n {
        out.pop();
    }
    out
}

/// The mini-batches, and how many samples, trajectories or groups the last one holds.
fn cut(
    units: usize,
    key: impl Fn(usize) -> (u64, u64),
    (n, unit): (usize, MiniBatchUnit),
    minibatches: usize,
) -> (Vec<Vec<usize>>, usize) {
    let all: Vec<usize> = (0..units).collect();
    let by = |size: usize| -> (Vec<Vec<usize>>, usize) {
        let out: Vec<Vec<usize>> = all.chunks(size.max(1)).map(<[usize]>::to_vec).collect();
        let last = out.last().map_or(0, Vec::len);
        (out, last)
    };
    if n == 0 {
        return by(units.div_ceil(minibatches.max(1)));
    }
    let pick: fn((u64, u64)) -> u64 = match unit {
        MiniBatchUnit::Samples => return by(n),
        MiniBatchUnit::Trajectories => |(t, _)| t,
        MiniBatchUnit::Groups => |(_, g)| g,
    };
    // Trajectories (or groups) in the order they first appear; every `n` of them make one
    // mini-batch with all their units, wherever those sit in the batch.
    let mut block: BTreeMap<u64, usize> = BTreeMap::new();
    let mut out: Vec<Vec<usize>> = Vec::new();
    for u in all {
        let k = pick(key(u));
        let seen = block.len();
        let b = *block.entry(k).or_insert(seen / n);
        if b == out.len() {
            out.push(Vec::new());
        }
        out[b].push(u);
    }
    let last = match block.len() % n {
        0 if block.is_empty() => 0,
        0 => n,
        r => r,
    };
    (out, last)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (trajectory, group) of six turns: trajectory 0 (group 0) has three, 1 (group 0) one,
    /// 2 (group 1) two, interleaved as concurrent episodes finish.
    const KEYS: [(u64, u64); 6] = [(0, 0), (2, 1), (0, 0), (1, 0), (2, 1), (0, 0)];

    fn cut(n: usize, unit: MiniBatchUnit) -> Vec<Vec<usize>> {
        split(KEYS.len(), |u| KEYS[u], (n, unit), 1, false)
    }

    #[test]
    fn samples_are_counted_in_order() {
        assert_eq!(cut(4, MiniBatchUnit::Samples), vec![vec![0, 1, 2, 3], vec![4, 5]]);
        assert_eq!(
            split(5, |_| (0, 0), (0, MiniBatchUnit::Groups), 2, false),
            vec![vec![0, 1, 2], vec![3, 4]]
        );
    }

    #[test]
    fn a_group_steps_with_all_its_turns() {
        assert_eq!(cut(1, MiniBatchUnit::Groups), vec![vec![0, 2, 3, 5], vec![1, 4]]);
        assert_eq!(cut(2, MiniBatchUnit::Groups), vec![vec![0, 1, 2, 3, 4, 5]]);
    }

    #[test]
    fn a_trajectory_steps_with_all_its_turns() {
        assert_eq!(cut(1, MiniBatchUnit::Trajectories), vec![vec![0, 2, 5], vec![1, 4], vec![3]]);
        assert_eq!(cut(2, MiniBatchUnit::Trajectories), vec![vec![0, 1, 2, 4, 5], vec![3]]);
    }

    /// `mini_batch_rest = drop`: a last mini-batch short of `n` samples, trajectories or groups
    /// is left out; a whole one stays; without `n` (equal splits) nothing is dropped.
    #[test]
    fn the_rest_is_dropped_only_when_short() {
        let drop = |n, unit| split(KEYS.len(), |u| KEYS[u], (n, unit), 1, true);
        assert_eq!(drop(4, MiniBatchUnit::Samples), vec![vec![0, 1, 2, 3]]);
        assert_eq!(drop(3, MiniBatchUnit::Samples), cut(3, MiniBatchUnit::Samples));
        // Three trajectories in twos: trajectory 1 alone is the rest.
        assert_eq!(drop(2, MiniBatchUnit::Trajectories), vec![vec![0, 1, 2, 4, 5]]);
        assert_eq!(drop(1, MiniBatchUnit::Groups), cut(1, MiniBatchUnit::Groups));
        assert!(drop(3, MiniBatchUnit::Groups).is_empty(), "two groups are short of three");
        assert_eq!(split(5, |_| (0, 0), (0, MiniBatchUnit::Samples), 2, true).len(), 2);
    }
}
