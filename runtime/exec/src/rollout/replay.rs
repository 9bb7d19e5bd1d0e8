//! Task replay inside an RL stage (`replay(fraction) { keep, size }`): which earlier tasks an
//! iteration sees again, and how its groups' success updates the buffer. The buffer is a list of
//! task ids, oldest first, kept in the run's cursor so a resumed run replays the same tasks.

use std::collections::BTreeMap;

use wrl_plan::params::{Replay, ReplayKeep};

use super::Episode;

/// How many of an iteration's `prompts` tasks are replayed: `fraction` of them, rounded down,
/// and no more than the buffer holds.
pub fn replayed(r: &Replay, prompts: usize, buffer: &[String]) -> usize {
    ((r.fraction.0 * prompts as f64).floor() as usize).min(prompts).min(buffer.len())
}

/// Each group's task and the fraction of its episodes that succeeded (episodes left out of
/// the loss do not count; a group with none left has no rate).
pub fn group_success(episodes: &[Episode]) -> Vec<(String, f64)> {
    let mut by: BTreeMap<usize, (String, usize, usize)> = BTreeMap::new();
    for e in episodes {
        let slot = by.entry(e.group).or_insert_with(|| (e.trajectory.task_id.clone(), 0, 0));
        if matches!(e.reward, crate::reward::RewardValue::Value(_)) {
            slot.1 += 1;
            slot.2 += usize::from(e.success());
        }
    }
    by.into_values().filter(|(_, n, _)| *n > 0).map(|(t, n, s)| (t, s as f64 / n as f64)).collect()
}

/// Whether a group of this success rate is one `keep` replays.
fn kept(keep: ReplayKeep, rate: f64) -> bool {
    match keep {
        ReplayKeep::Unsolved => rate == 0.0,
        ReplayKeep::Informative => rate > 0.0 && rate < 1.0,
        ReplayKeep::Solved => rate == 1.0,
    }
}

/// The buffer after an iteration: each group's task joins the end (or moves there) when `keep`
/// selects it and leaves otherwise; the oldest leave beyond `size`.
pub fn record(r: &Replay, buffer: &mut Vec<String>, groups: &[(String, f64)]) {
    for (task, rate) in groups {
        buffer.retain(|t| t != task);
        if kept(r.keep, *rate) {
            buffer.push(task.clone());
        }
    }
    let over = buffer.len().saturating_sub(r.size.max(1) as usize);
    buffer.drain(..over);
}

#[cfg(test)]
mod tests {
    use super::*;
    use wrl_plan::params::Ratio;

    fn r(keep: ReplayKeep, size: u32) -> Replay {
        Replay { fraction: Ratio(0.5), keep, size }
    }

    #[test]
    fn the_buffer_keeps_what_keep_selects_oldest_first() {
        let mut b = Vec::new();
        let groups = |v: &[(&str, f64)]| -> Vec<(String, f64)> {
            v.iter().map(|(t, x)| (t.to_string(), *x)).collect()
        };
        record(&r(ReplayKeep::Unsolved, 3), &mut b, &groups(&[("a", 0.0), ("b", 0.5), ("c", 0.0)]));
        assert_eq!(b, ["a", "c"]);
        // `a` solved now: it leaves; `d` and `e` join; at most 3 stay, the oldest leaving.
        record(&r(ReplayKeep::Unsolved, 3), &mut b, &groups(&[("a", 1.0), ("d", 0.0), ("e", 0.0)]));
        assert_eq!(b, ["c", "d", "e"]);
        record(&r(ReplayKeep::Unsolved, 3), &mut b, &groups(&[("c", 0.0), ("f", 0.0)]));
        assert_eq!(b, ["e", "c", "f"], "a task seen again moves to the end");
        let mut i = Vec::new();
        record(
            &r(ReplayKeep::Informative, 9),
            &mut i,
            &groups(&[("a", 0.0), ("b", 0.5), ("c", 1.0)]),
        );
        assert_eq!(i, ["b"]);
        assert_eq!(replayed(&r(ReplayKeep::Unsolved, 3), 5, &b), 2, "half of 5, rounded down");
        assert_eq!(replayed(&r(ReplayKeep::Unsolved, 3), 5, &b[..1]), 1, "no more than it holds");
    }
}
