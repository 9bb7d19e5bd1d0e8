//! In-training validation (`validate = validation(tasks) { every = N iters, … }`): after every
//! N-th iteration of a stage (counted across its phases), and once before its first with
//! `before_training`, the policy being trained runs the validation tasks with the validation's
//! own decoding and step budget; its judge (`training`: the stage's reward) scores them, and
//! the success rate is logged as an eval line named `validation:PHASE` (`after` = the stage's
//! iteration), with each subset's rate and Wilson interval when it splits its tasks by a column
//! (`by`, as an evaluation does: `subsets.rs`). Validation episodes train nothing and are not
//! logged as trajectories.

use std::sync::{Arc, Mutex};

use wrl_plan::Node;
use wrl_plan::params::{self, Metric, OrHorizon, OrNone, OrTraining, ValidationMetric};
use wrl_sandbox::Task;
use wrl_trainer::Trainer;

use super::tally::Counted;
use super::{Data, Executor};
use crate::agent::AgentCfg;
use crate::env::Env;
use crate::error::{Fault, RunError};
use crate::reward::RewardExpr;
use crate::reward::judges::Judges;
use crate::rollout::{RolloutCfg, Scoring, rollout};
use crate::rundir::records::{EvalLine, MetricLine};

/// What one validation pass runs with, besides the validation's own fields.
pub(super) struct Pass<'x> {
    pub env: &'x Arc<dyn Env>,
    /// The stage's agent, for a validation in another env (`env = other`).
    pub agent: &'x AgentCfg,
    pub trainer: &'x Arc<Mutex<Trainer>>,
    /// The training rollouts' configuration (graph, env settings), re-decoded here.
    pub cfg: &'x RolloutCfg,
    pub reward: &'x RewardExpr,
    pub horizon: u32,
    pub max_turns: u32,
    /// The stage's iteration the pass follows (0: before training).
    pub iter: u64,
    /// The stage's iterations, over all its phases.
    pub stage_iters: u64,
}

/// Whether a pass follows the stage's iteration `global` (1-based, across phases).
pub(super) fn due(v: &params::Validation, global: u64) -> bool {
    v.every.0 > 0 && global.is_multiple_of(v.every.0)
}

impl<'a> Executor<'a> {
    /// The iterations of the stage before this phase: its earlier phases'.
    pub(super) fn iters_before(&self, node: &Node, run: &params::PhaseRun) -> u64 {
        self.plan
            .nodes
            .iter()
            .filter_map(|(n, p)| match p {
                params::Params::RlPhase(r) if n.id != node.id => (r.run.stage == run.stage
                    && r.run.phase < run.phase)
                    .then_some(r.run.iters.0.max(1)),
                _ => None,
            })
            .sum()
    }

    /// The stage's iterations over all its phases (a phase of 0 iterations counts as 1, as in
    /// [`Self::iters_before`]).
    pub(super) fn stage_iters(&self, run: &params::PhaseRun) -> u64 {
        self.plan
            .nodes
            .iter()
            .filter_map(|(_, p)| match p {
                params::Params::RlPhase(r) if r.run.stage == run.stage => {
                    Some(r.run.iters.0.max(1))
                }
                _ => None,
            })
            .sum()
    }

    pub(super) async fn validate(
        &mut self,
        node: &Node,
        v: &params::Validation,
        pass: Pass<'_>,
    ) -> Result<(), RunError> {
        let Some(Data::Tasks(tasks)) = self.built.data.get(v.tasks.id()).cloned() else {
            return Err(super::needs(node, "validate.tasks"));
        };
        let steps = match v.max_steps {
            OrHorizon::Horizon => pass.horizon,
            OrHorizon::Value(s) => s.0,
        };
        let tasks: Vec<Task> = tasks
            .iter()
            .map(|t| {
                let mut t = t.clone();
                t.max_steps = wrl_plan::turns_cap(t.max_steps.min(steps), pass.max_turns);
                t
            })
            .collect();
        let k = match v.metric {
            ValidationMetric::PassAtK => v.k.max(1) as usize,
            ValidationMetric::Success => 1,
        };
        let mut cfg = pass.cfg.clone();
        cfg.group = k;
        cfg.process = None;
        cfg.exclude = Vec::new();
        cfg.screens_for = 0;
        // Validation's `k` episodes are independent samples, never a branching tree.
        cfg.branching = None;
        cfg.sample.entropy_tokens = 0;
        cfg.sample.temperature = v.temperature as f32;
        cfg.sample.top_p = v.top_p as f32;
        cfg.sample.top_k = v.top_k as usize;
        cfg.sample.repetition_penalty = v.repetition_penalty as f32;
        if let Some(t) = v.max_response.value() {
            cfg.sample.max_tokens = t.0 as usize;
        }
        let id = format!("validation:{}", node.id);
        cfg.seed = Some(self.stream(&id, pass.iter));
        let reward = match &v.judge {
            OrTraining::Training => pass.reward.clone(),
            OrTraining::Value(r) => self.reward_of(r)?,
        };
        let rewards = self.built.rewards.clone();
        let judges = Judges::for_reward(&reward, &rewards, &self.built.apis).map_err(|e| {
            RunError::new(Fault::Service, format!("cannot set up the judges: {e}")).at(
                node,
                Some("validate"),
                "this validation's judge",
            )
        })?;
        let scoring = Scoring { reward: &reward, rewards: &rewards, judges: &judges };
        // Each task's subset, read before any episode runs (E0528 at the first pass).
        let labels = match &v.by {
            OrNone::Value(by) => Some(self.subsets_of(node, v.tasks.id(), &tasks, by)?),
            OrNone::Nothing => None,
        };
        // A validation in another env (`env = other`), as an evaluation's (eval.rs): the agent
        // acts there, with that env's settings and (a ReAct agent) its tool set.
        let agent = pass.agent.clone().acting_in(v.env.value(), self.plan);
        let elsewhere = if agent.env == pass.agent.env {
            None
        } else {
            let (env, episode, retries) = self.env_for(&agent).await?;
            cfg.hermes = agent.hermes;
            cfg.episode = episode;
            cfg.retries = retries;
            Some(env)
        };
        let env = elsewhere.as_ref().unwrap_or(pass.env);
        // An env's curriculum (a simulated engine's noise) at the iteration the pass follows.
        env.at_iteration(Some((pass.iter, pass.stage_iters)));
        let episodes = rollout(env, &tasks, Some(pass.trainer), &cfg, scoring).await;
        // Solved: any of a task's `k` episodes scored above 0 by the judge, as an evaluation's
        // pass@k (and success, with one) counts it.
        let metric = match v.metric {
            ValidationMetric::PassAtK => Metric::PassAtK,
            ValidationMetric::Success => Metric::Success,
        };
        let counted = Counted::new(metric, &episodes, &tasks, true);
        let (solved, _) = counted.tally();
        let rate = if tasks.is_empty() { 0.0 } else { solved as f64 / tasks.len() as f64 };
        let subsets = labels.map(|l| super::subsets::split(&counted, &l)).unwrap_or_default();
        let after = format!("{} iter {}", node.decl, pass.iter);
        self.say(&format!(
            "validation of {} after iter {}: {solved}/{} solved ({:.1}%)",
            node.decl,
            pass.iter,
            tasks.len(),
            rate * 100.0
        ));
        let what = format!("validation of {} after iter {}", node.decl, pass.iter);
        for (name, r) in &subsets {
            self.say(&super::subsets::said(&what, name, r));
        }
        let line = EvalLine {
            stage: node.decl.clone(),
            node: id,
            after,
            success: rate,
            mean_reward: None,
            episodes: episodes.len(),
            subsets,
            global_step: 0,
            phase: None,
            time: 0.0,
        };
        self.run.log_metrics(vec![MetricLine::Eval(line)])?;
        Ok(())
    }
}
