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

use super::tally::{Counted, distinct_goals, mean_reward};
use super::{Data, Executor};
use crate::agent::api_policy::ApiRun;
use crate::agent::prompt::Window;
use crate::error::{Fault, RunError};
use crate::reward::client::{JudgeClient, JudgeConfig};
use crate::reward::judges::Judges;
use crate::reward::{RewardExpr, RewardValue};
use crate::rollout::{Episode, RolloutCfg, Scoring, rollout};
use crate::rundir::records::{EvalLine, EvalResult, MetricLine, PublishedFigure, Repeats};

/// A trainer shared by the episodes that sample from it.
type Shared = Arc<Mutex<Trainer>>;

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
        let agent = self.agent_cfg(agent.id())?.acting_in(env.value(), self.plan);
        let Some(Data::Tasks(tasks)) = self.built.data.get(tasks.id()).cloned() else {
            return Err(super::needs(node, "tasks"));
        };
        let ckpt = checkpoint.as_ref().map(|c| c.id().to_string());
        let (trainer, api) = self.policies(node, e, ckpt.as_deref(), agent.graph.is_some())?;
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
        if let Some(goals) = distinct_goals(&tasks) {
            // Said before the episodes run: the evidence is less than the tasks suggest.
            self.say(&format!(
                "eval {}: {} tasks on {goals} distinct goals; a repeated goal adds less than a \
                 new one, and the result counts what the tasks are worth",
                node.decl,
                tasks.len()
            ));
        }
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
            api,
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
        let counted = Counted::new(*metric, &episodes, &tasks, judged);
        let (solved, out_of) = counted.tally();
        let repeats = counted.repeats();
        let subsets =
            labels.as_ref().map(|l| super::subsets::split(&counted, l)).unwrap_or_default();
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
        self.say(&said(&node.decl, &after, (solved, out_of), mean, &published, repeats));
        for (name, r) in &subsets {
            self.say(&super::subsets::said(&format!("eval {}", node.decl), name, r));
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
            repeats,
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

/// `eval NAME after STAGE: 38/64 solved (59.4%)` (`after start` for an evaluation that follows
/// no stage, whose records name it by itself), the mean reward where it is the metric, and the
/// paper's figures beside it.
fn said(
    decl: &str,
    after: &str,
    (solved, out_of): (usize, usize),
    mean: Option<f64>,
    published: &[PublishedFigure],
    repeats: Option<Repeats>,
) -> String {
    let rate = if out_of == 0 { 0.0 } else { solved as f64 / out_of as f64 };
    let paper: String = published
        .iter()
        .map(|p| format!("; paper {}: {:.1}% ({})", p.model, p.value * 100.0, p.source))
        .collect();
    let mean_said = mean.map(|m| format!(", mean reward {m:.3}")).unwrap_or_default();
    let after = if after == decl { "start" } else { after };
    let goals = repeats
        .map(|r| format!(" on {} goals, worth {} independent", r.goals, r.worth))
        .unwrap_or_default();
    format!(
        "eval {decl} after {after}: {solved}/{out_of} solved ({:.1}%){goals}{mean_said}{paper}",
        rate * 100.0
    )
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
impl Executor<'_> {
    /// What an evaluation's episodes sample from: a local trainer ([`Self::eval_policy`]) or a
    /// served policy ([`Self::api_policy`]).
    fn policies(
        &mut self,
        node: &Node,
        e: &params::Evaluate,
        ckpt: Option<&str>,
        graph: bool,
    ) -> Result<(Option<Shared>, Option<ApiRun>), RunError> {
        match self.api_policy(node, e, ckpt)? {
            Some(api) => Ok((None, Some(api))),
            None => Ok((self.eval_policy(node, e, ckpt, graph)?, None)),
        }
    }

    /// The `api(…)` model a ReAct agent's policy is, when the evaluation runs it as declared
    /// (no checkpoint: a served model is never trained).
    fn api_policy(
        &self,
        node: &Node,
        e: &params::Evaluate,
        ckpt: Option<&str>,
    ) -> Result<Option<ApiRun>, RunError> {
        let (None, Some(Params::Agent(Agent::React(r)))) = (ckpt, self.plan.get(e.agent.id()))
        else {
            return Ok(None);
        };
        let Some(api) = self.built.apis.get(r.policy.id()) else { return Ok(None) };
        let client = JudgeClient::new(JudgeConfig::for_api(api)).map_err(|why| {
            RunError::new(
                Fault::Service,
                format!("eval `{}`: its policy's client: {why}", node.decl),
            )
            .at(node, Some("agent"), "the agent whose policy is served")
        })?;
        let (context, image_tokens) = (api.context.0 as usize, api.image_tokens.0 as usize);
        Ok(Some(ApiRun { client, context, image_tokens }))
    }

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
