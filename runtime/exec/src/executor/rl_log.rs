//! The record of an RL iteration: its progress line, its episodes in `trajectories.jsonl`,
//! the episodes left out of the loss (warned above `warn_excluded`) and its metrics line.

use std::collections::BTreeMap;

use wrl_plan::Node;
use wrl_trainer::Metrics;

use super::Executor;
use super::faults::exclusions;
use super::progress::Progress;
use super::rl::{Done, Phase, node_words};
use crate::error::RunError;
use crate::reward::{Exclusion, RewardValue};
use crate::rollout::{Episode, uniform_groups};
use crate::rundir::records::{MetricLine, RlIter, RoleUpdate, Scored, TrajectoryLine};

impl Executor<'_> {
    /// The iteration's progress line, its episodes, exclusions (warned above `warn_excluded`)
    /// and metrics.
    pub(super) fn log_iteration(
        &mut self,
        ph: &Phase<'_>,
        done: &Done<'_>,
        (rollout_s, update_s): (f64, f64),
        progress: &Progress,
    ) -> Result<(), RunError> {
        let (node, iter, episodes) = (ph.node, done.iter, done.episodes);
        let metrics = mean_metrics(done.per_role);
        let (mean, success) = reward_stats(episodes);
        let line = format!(
            "{} iter {iter}/{}: reward {mean:.3}, success {:.1}%, {}, loss {:.4} (rollouts {rollout_s:.0} s, update {update_s:.0} s)",
            node_words(&node.id),
            ph.p.iters,
            success * 100.0,
            signal(done, &metrics),
            metrics.loss
        );
        progress.println(&line, |l| self.say(l));
        progress.advance(iter, &format!("reward {mean:.3}, success {:.1}%", success * 100.0));
        self.log_episodes(node, iter, episodes)?;
        let excluded = exclusions(episodes);
        let left_out: usize = excluded.values().sum();
        for (k, v) in &excluded {
            *self.cursor.excluded.entry(k.clone()).or_default() += *v as u64;
        }
        // The records keep a reward endpoint's failure class; the first failure's own words
        // (which component was missing, which status) go to the console, for whoever writes
        // the server.
        let unscored = episodes.iter().filter_map(|e| match &e.reward {
            RewardValue::Excluded(Exclusion::Endpoint(why)) => Some(why),
            RewardValue::Excluded(Exclusion::Class(_) | Exclusion::Unscorable(_))
            | RewardValue::Value(_) => None,
        });
        if let Some(first) = unscored.clone().next() {
            let n = unscored.count();
            self.say(&format!(
                "stage {} iter {iter}: the reward endpoint left {} unscored (the first: {}: {first})",
                node.decl,
                counted(n, "episode", "episodes"),
                first.word()
            ));
        }
        if !episodes.is_empty() && left_out as f64 > ph.p.warn_excluded * episodes.len() as f64 {
            let classes: Vec<String> = excluded.iter().map(|(k, v)| format!("{v} {k}")).collect();
            let warning = format!(
                "stage {} iter {iter}: {left_out} of {} episodes left out of the loss ({}), over `warn_excluded` = {}",
                node.decl,
                episodes.len(),
                classes.join(", "),
                ph.p.warn_excluded
            );
            self.say(&format!("warning: {warning}"));
            self.cursor.warnings.push(warning);
        }
        let line = RlIter {
            stage: node.decl.clone(),
            node: node.id.clone(),
            iter,
            reward: mean,
            success,
            uniform_groups: uniform_groups(episodes),
            loss: metrics.loss,
            lr: metrics.lr,
            grad_norm: metrics.grad_norm,
            clip_frac: metrics.clip_frac,
            replayed: done.replayed,
            branches: episodes.iter().any(|e| e.branch.is_some()).then(|| {
                episodes.iter().filter(|e| e.branch.is_some_and(|b| b.parent.is_some())).count()
            }),
            trimmed: metrics.trimmed,
            generated: done.generation,
            value_loss: metrics.value_loss,
            critic_lr: metrics.critic_lr,
            step_advantage: metrics.step_advantage,
            samples: done.per_role.iter().map(|(_, n, _)| n).sum(),
            images: Some(episodes.iter().flat_map(|e| &e.turns).map(|t| t.images.len()).sum())
                .filter(|n: &usize| *n > 0),
            rollout_s,
            update_s,
            retried: episodes.iter().map(|e| e.retried).sum(),
            excluded,
            components: mean_components(episodes),
            roles: (!ph.roles.is_empty()).then(|| {
                let update = |m: &Metrics, n: usize| RoleUpdate {
                    samples: n,
                    loss: m.loss,
                    grad_norm: m.grad_norm,
                };
                done.per_role.iter().map(|(r, n, m)| (r.clone(), update(m, *n))).collect()
            }),
            global_step: 0,
            phase: None,
            time: 0.0,
            memory: metrics.memory,
        };
        Ok(self.run.log_metrics(vec![MetricLine::Rl(line)])?)
    }

    /// Appends each episode to `trajectories.jsonl` (with its screenshots, when it kept them);
    /// an RL phase's episodes are counted by how they ended.
    pub(super) fn log_episodes(
        &mut self,
        node: &Node,
        iter: u64,
        episodes: &[Episode],
    ) -> Result<(), RunError> {
        let mut lines = Vec::new();
        for ep in episodes {
            if node.kind == wrl_plan::NodeKind::RlPhase {
                *self.cursor.failures.entry(ep.end_reason()).or_default() += 1;
            }
            let reward = match &ep.reward {
                RewardValue::Value(v) => Scored::Value(*v),
                RewardValue::Excluded(why) => Scored::Excluded { excluded: why.to_string() },
            };
            let mut screenshots = None;
            if !ep.screens.is_empty() {
                let mut paths = Vec::new();
                for (i, png) in ep.screens.iter().enumerate() {
                    let path = format!("screens/{}-{i}.png", self.trajectory_ids);
                    self.run.write_file(&path, png)?;
                    paths.push(path);
                }
                screenshots = Some(paths);
            }
            lines.push(TrajectoryLine {
                id: self.trajectory_ids,
                node: node.id.clone(),
                iter,
                group: ep.group,
                reward,
                components: ep.components.clone(),
                trajectory: ep.trajectory.clone(),
                branch: ep.branch,
                screenshots,
                sequence: ep.sequence.clone(),
            });
            self.trajectory_ids += 1;
        }
        Ok(self.run.append_trajectories(&lines)?)
    }
}

/// What the iteration's groups said: groups of equal rewards where advantages are
/// group-relative, the value loss with a critic; then replayed and generated tasks. An
/// iteration whose episodes left no turn to train says so (a graph whose trainable module the
/// walk never reached: its loss of 0 is no result).
fn signal(done: &Done<'_>, metrics: &Metrics) -> String {
    let mut signal = match metrics.value_loss {
        Some(v) => format!("value loss {v:.4}"),
        None => counted(uniform_groups(done.episodes), "uniform group", "uniform groups"),
    };
    if !done.episodes.is_empty() && done.per_role.iter().all(|(_, n, _)| *n == 0) {
        signal.push_str(", no turn to train (no episode reached a trainable turn)");
    }
    if let Some(n) = done.replayed {
        signal.push_str(&format!(", {} replayed", counted(n, "task", "tasks")));
    }
    if let Some(g) = done.generation {
        signal.push_str(&format!(
            ", {} drawn, {} of {} new kept",
            counted(g.drawn, "generated task", "generated tasks"),
            g.kept,
            g.made
        ));
    }
    signal
}

/// The metrics of one RL iteration's updates (one per role, or one): loss, gradient norm and
/// clip fraction averaged with each update's sample count as its weight.
fn mean_metrics(updates: &[(String, usize, Metrics)]) -> Metrics {
    let total: usize = updates.iter().map(|(_, n, _)| n).sum();
    let w = |n: usize| {
        if total == 0 { 1.0 / updates.len().max(1) as f64 } else { n as f64 / total as f64 }
    };
    let mut out = updates.first().map(|(_, _, m)| m.clone()).unwrap_or_default();
    if updates.len() > 1 {
        out.loss = updates.iter().map(|(_, n, m)| w(*n) * m.loss).sum();
        out.grad_norm = updates.iter().map(|(_, n, m)| w(*n) * m.grad_norm).sum();
        out.clip_frac =
            Some(updates.iter().map(|(_, n, m)| w(*n) * m.clip_frac.unwrap_or(0.0)).sum());
        out.value_loss = out
            .value_loss
            .map(|_| updates.iter().map(|(_, n, m)| w(*n) * m.value_loss.unwrap_or(0.0)).sum());
        out.step_advantage = out
            .step_advantage
            .map(|_| updates.iter().map(|(_, n, m)| w(*n) * m.step_advantage.unwrap_or(0.0)).sum());
        // Samples left out past the last whole mini-batch: every role's together.
        out.trimmed = out.trimmed.map(|_| updates.iter().filter_map(|(_, _, m)| m.trimmed).sum());
        // Memory: the largest any role's update held.
        out.memory = updates.iter().fold(out.memory, |acc, (_, _, m)| acc.max(m.memory));
    }
    out
}

/// The mean reward of the scored episodes and the fraction that succeeded.
fn reward_stats(episodes: &[Episode]) -> (f64, f64) {
    let vals: Vec<f64> = episodes
        .iter()
        .filter_map(|e| match e.reward {
            RewardValue::Value(v) => Some(v),
            RewardValue::Excluded(_) => None,
        })
        .collect();
    let mean = if vals.is_empty() { 0.0 } else { vals.iter().sum::<f64>() / vals.len() as f64 };
    let success = if episodes.is_empty() {
        0.0
    } else {
        episodes.iter().filter(|e| e.success()).count() as f64 / episodes.len() as f64
    };
    (mean, success)
}

/// Each component's mean over the episodes whose reward endpoint answered it.
fn mean_components(episodes: &[Episode]) -> BTreeMap<String, f64> {
    let mut sums: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    for (name, v) in episodes.iter().flat_map(|e| &e.components) {
        let slot = sums.entry(name.clone()).or_default();
        slot.0 += v;
        slot.1 += 1;
    }
    sums.into_iter().map(|(k, (sum, n))| (k, sum / n as f64)).collect()
}

/// `1 uniform group`, `3 uniform groups`.
fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An iteration that left no turn to train says so beside its loss of 0; one that trained
    /// any says nothing of it.
    #[test]
    fn an_iteration_without_a_turn_to_train_says_so() {
        let content = wrl_sandbox::Content::new(0);
        let task = &wrl_sandbox::generate_qa(&content, wrl_sandbox::Split::Train, 1, 0)[0];
        let episodes = vec![Episode::unrunnable(0, task, "x"), Episode::unrunnable(1, task, "x")];
        let none = [("grounder".to_string(), 0, Metrics::default())];
        let done = Done {
            iter: 1,
            episodes: &episodes,
            per_role: &none,
            replayed: None,
            generation: None,
        };
        let said = signal(&done, &Metrics::default());
        assert!(
            said.ends_with(", no turn to train (no episode reached a trainable turn)"),
            "{said}"
        );
        let some = [("grounder".to_string(), 3, Metrics::default())];
        let done = Done { per_role: &some, ..done };
        assert!(!signal(&done, &Metrics::default()).contains("no turn"));
    }
}
