//! Eval nodes: the held-out tasks attempted by the agent with the stage's checkpoint (or its
//! declared models), `k` times each for pass@k and `mean_reward`, with the eval's own decoding
//! (`max_response`, `repetition_penalty`), scored by its `judge` (solved: a reward above 0) or,
//! without one, by the tasks' checkers (`mean_reward`: every episode's reward averaged); the
//! report's chosen episodes keep a screenshot of every step, and the result is logged beside
//! the paper's figures (`published`).

use std::sync::{Arc, Mutex};

use wrl_plan::Node;
use wrl_plan::params::{self, Agent, Metric, OrAgent, Params};
use wrl_sandbox::Task;
use wrl_trainer::{OptimConfig, SampleParams, Trainer};

use super::{Data, Executor};
use crate::agent::hermes::Hermes;
use crate::agent::prompt::Window;
use crate::error::{Fault, RunError};
use crate::reward::judges::Judges;
use crate::reward::{RewardExpr, RewardValue};
use crate::rollout::{Episode, RolloutCfg, Scoring, rollout};
use crate::rundir::records::{EvalLine, EvalResult, MetricLine, PublishedFigure};

/// Episodes of each evaluation whose pages are captured (held in memory until the report's
/// chosen episodes are known; only theirs are written): a bound on memory for large evals.
const SCREENED_EPISODES: usize = 64;

impl<'a> Executor<'a> {
    pub(super) async fn eval(&mut self, node: &Node, e: &params::Evaluate) -> Result<(), RunError> {
        let params::Evaluate {
            agent,
            tasks,
            metric,
            k,
            temperature,
            top_p,
            top_k,
            max_response,
            trajectory_tokens,
            repetition_penalty,
            max_steps,
            env,
            judge,
            count,
            by,
            // The preflight refuses `non_aborted`.
            denominator: _,
            published,
            after,
            checkpoint,
            binds,
        } = e;
        let mut agent = self.agent_cfg(agent.id())?;
        // An evaluation in another env: the agent acts there, with that env's settings and (a
        // ReAct agent) its tool set; a graph's modules keep the tools they declare.
        if let Some(other) = env.value().map(|e| e.id().to_string())
            && other != agent.env
        {
            if agent.graph.is_none() {
                agent.hermes = Hermes::of_env(&other, self.plan).map(Arc::new);
            }
            agent.env = other;
        }
        let Some(Data::Tasks(tasks)) = self.built.data.get(tasks.id()).cloned() else {
            return Err(super::needs(node, "tasks"));
        };
        let ckpt = checkpoint.as_ref().map(|c| c.id().to_string());
        let trainer = self.eval_policy(node, e, ckpt.as_deref(), agent.graph.is_some())?;
        let roles =
            ckpt.as_ref().and_then(|c| self.built.roles.get(c).cloned()).unwrap_or_default();
        // pass@k and cons@k: every task k times (sampled); solved when any attempt succeeds,
        // or when the most common answer is a successful attempt's.
        // mean_reward: k attempts per task (one by default), every episode counted alike.
        let k = match metric {
            Metric::PassAtK | Metric::ConsAtK | Metric::MeanReward => (*k).max(1) as usize,
            Metric::Success => 1,
        };
        let count = count.map_or(tasks.len(), |c| c as usize).min(tasks.len());
        let by = match by {
            params::OrNone::Value(by) => Some(by.clone()),
            params::OrNone::Nothing => None,
        };
        let labels = match &by {
            Some(by) => Some(self.subsets_of(node, e.tasks.id(), &tasks[..count], by)?),
            None => None,
        };
        let tasks = capped(&tasks[..count], max_steps.0, agent.max_turns);
        let (env, episode, retries) = self.env_for(&agent).await?;
        let cfg = RolloutCfg {
            group: k,
            concurrency: self.concurrency(),
            sample: SampleParams {
                temperature: *temperature as f32,
                top_p: *top_p as f32,
                top_k: *top_k as usize,
                max_tokens: max_response.value().map_or(agent.max_response, |t| t.0 as usize),
                repetition_penalty: *repetition_penalty as f32,
                ..SampleParams::default()
            },
            history: agent.history,
            // The evaluation's own episode budget, or the agent's.
            window: Window {
                reply_budget: match trajectory_tokens {
                    OrAgent::Value(t) => Some(t.0 as usize),
                    OrAgent::Agent => agent.window.reply_budget,
                },
                ..agent.window
            },
            hermes: agent.hermes.clone(),
            tags: agent.tags.clone(),
            exclude: Vec::new(),
            process: None,
            graph: self.graph_of(&node.decl, &agent, binds, &[], trainer.as_ref(), &roles)?,
            // The report shows the chosen episodes of each evaluation with their pages.
            screens_for: SCREENED_EPISODES,
            episode,
            retries,
            seed: Some(self.stream(&node.id, 0)),
            // An evaluation samples its `k` episodes independently.
            branching: None,
        };
        let (reward, judges) = self.judged_by(node, judge.as_ref())?;
        let rewards = self.built.rewards.clone();
        let scoring = Scoring { reward: &reward, rewards: &rewards, judges: &judges };
        let mut episodes = rollout(&env, &tasks, trainer.as_ref(), &cfg, scoring).await;
        keep_chosen_pages(&mut episodes);
        self.log_episodes(node, 0, &episodes)?;
        let judged = judge.is_some();
        let (solved, out_of) = tally(*metric, &episodes, tasks.len(), judged);
        let subsets = labels
            .as_ref()
            .map(|l| super::subsets::split(*metric, &episodes, l, judged))
            .unwrap_or_default();
        let rate = if out_of == 0 { 0.0 } else { solved as f64 / out_of as f64 };
        let mean = match metric {
            Metric::MeanReward => Some(mean_reward(&episodes, judged)),
            Metric::Success | Metric::PassAtK | Metric::ConsAtK => None,
        };
        let after = after.clone().unwrap_or_else(|| node.decl.clone());
        let published: Vec<PublishedFigure> = published
            .iter()
            .map(|p| PublishedFigure {
                model: p.model.clone(),
                value: p.value.0,
                source: p.source.clone(),
            })
            .collect();
        self.say(&said(&node.decl, &after, (solved, out_of), mean, &published));
        for (name, r) in &subsets {
            self.say(&super::subsets::said(&node.decl, name, r));
        }
        let line = EvalLine {
            stage: node.decl.clone(),
            node: node.id.clone(),
            after: after.clone(),
            success: rate,
            mean_reward: mean,
            episodes: episodes.len(),
            subsets: subsets.clone(),
            global_step: 0,
            phase: None,
            time: 0.0,
        };
        self.run.log_metrics(vec![MetricLine::Eval(line)])?;
        self.cursor.evals.push(EvalResult {
            eval: node.decl.clone(),
            after,
            success: rate,
            mean_reward: mean,
            episodes: episodes.len(),
            published,
            by,
            subsets,
        });
        self.mark_done(&node.id);
        self.commit(None, false)
    }
}

/// The tasks an evaluation runs, each cut to the evaluation's `max_steps` and the agent's turns.
fn capped(tasks: &[Task], max_steps: u32, max_turns: u32) -> Vec<Task> {
    tasks
        .iter()
        .map(|t| {
            let mut t = t.clone();
            t.max_steps = wrl_plan::turns_cap(t.max_steps.min(max_steps), max_turns);
            t
        })
        .collect()
}

impl Executor<'_> {
    /// An evaluation's reward and judges: with a `judge`, its reward scores each episode;
    /// without one, the tasks' checkers do.
    fn judged_by(
        &self,
        node: &Node,
        judge: Option<&params::RewardRef>,
    ) -> Result<(RewardExpr, Judges), RunError> {
        let reward = match judge {
            Some(j) => self.reward_of(j)?,
            None => RewardExpr::Const { value: 0.0 },
        };
        let judges =
            Judges::for_reward(&reward, &self.built.rewards, &self.built.apis).map_err(|e| {
                RunError::new(Fault::Service, format!("cannot set up the judges: {e}")).at(
                    node,
                    Some("judge"),
                    "this evaluation's judge",
                )
            })?;
        Ok((reward, judges))
    }
}

/// `eval NAME after STAGE: 38/64 solved (59.4%)`, the mean reward where it is the metric, and
/// the paper's figures beside it.
fn said(
    decl: &str,
    after: &str,
    (solved, out_of): (usize, usize),
    mean: Option<f64>,
    published: &[PublishedFigure],
) -> String {
    let rate = if out_of == 0 { 0.0 } else { solved as f64 / out_of as f64 };
    let paper: String = published
        .iter()
        .map(|p| format!("; paper {}: {:.1}% ({})", p.model, p.value * 100.0, p.source))
        .collect();
    let mean_said = mean.map(|m| format!(", mean reward {m:.3}")).unwrap_or_default();
    format!(
        "eval {decl} after {after}: {solved}/{out_of} solved ({:.1}%){mean_said}{paper}",
        rate * 100.0
    )
}

/// Tasks solved and tasks tried, or for `mean_reward` episodes solved and episodes (each task's
/// k attempts averaged): pass@k and success solve a task when any attempt succeeds, cons@k
/// when the most common answer is a successful attempt's.
fn tally(metric: Metric, episodes: &[Episode], tasks: usize, judged: bool) -> (usize, usize) {
    let units = units(metric, episodes, tasks, judged);
    (units.iter().filter(|u| u.1).count(), units.len())
}

/// What an evaluation counts, each with whether it was solved: every episode for `mean_reward`
/// (its task's group), every task for the others (pass@k and success solve a task when any
/// attempt succeeds, cons@k when the most common answer is a successful attempt's).
pub(super) fn units(
    metric: Metric,
    episodes: &[Episode],
    tasks: usize,
    judged: bool,
) -> Vec<(usize, bool)> {
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

/// Drops the pages of every episode but those the report shows ([`crate::report::chosen`]).
fn keep_chosen_pages(episodes: &mut [Episode]) {
    let candidates: Vec<crate::report::chosen::Candidate> = episodes
        .iter()
        .map(|e| crate::report::chosen::Candidate {
            reward: match &e.reward {
                RewardValue::Value(v) => Some(*v),
                RewardValue::Excluded(_) => None,
            },
            trajectory: &e.trajectory,
            screened: !e.screens.is_empty(),
        })
        .collect();
    let shown: Vec<usize> =
        crate::report::chosen::choose(&candidates).into_iter().map(|(i, _)| i).collect();
    for (i, e) in episodes.iter_mut().enumerate() {
        if !shown.contains(&i) {
            e.screens = Vec::new();
        }
    }
}

/// Whether an episode solved its task: by the judge's reward (above 0; an excluded episode,
/// whose judge failed, is not solved) or, without a judge, by the task's checker.
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
fn mean_reward(episodes: &[Episode], judged: bool) -> f64 {
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

fn solved(e: &Episode, judged: bool) -> bool {
    if !judged {
        return e.success();
    }
    match &e.reward {
        RewardValue::Value(v) => *v > 0.0,
        RewardValue::Excluded(_) => false,
    }
}

impl Executor<'_> {
    /// The trainer an evaluation samples from: the checkpoint's it runs after, or for `after =
    /// [start]` a ReAct agent's policy as declared (its pretrained weights, or the seeded initial
    /// ones), built fresh since no stage produced it. `None` for a module graph, whose modules
    /// bring their own; an error when nothing produced the policy.
    fn eval_policy(
        &mut self,
        node: &Node,
        e: &params::Evaluate,
        ckpt: Option<&str>,
        graph: bool,
    ) -> Result<Option<Arc<Mutex<Trainer>>>, RunError> {
        if let Some(t) = ckpt.and_then(|c| self.built.trainers.get(c).cloned()) {
            return Ok(Some(t));
        }
        if graph {
            return Ok(None);
        }
        match (ckpt, self.plan.get(e.agent.id())) {
            (None, Some(Params::Agent(Agent::React(r)))) => {
                let policy = r.policy.id().to_string();
                Ok(Some(self.trainer_from(&policy, OptimConfig::default())?))
            }
            _ => Err(RunError::plan(format!(
                "eval `{}`: nothing produced `{}`",
                node.decl,
                ckpt.unwrap_or("a policy")
            ))),
        }
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
}
