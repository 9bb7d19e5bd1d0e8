//! Eval nodes: the held-out tasks attempted by the agent with the stage's checkpoint (or its
//! declared models), `k` times each for pass@k, scored by the tasks' checkers; the first
//! episodes keep a screenshot of every step for the report.

use wrl_plan::Node;
use wrl_plan::params::{self, Metric};
use wrl_sandbox::Task;
use wrl_trainer::SampleParams;

use super::{Data, Executor, stream_of};
use crate::error::RunError;
use crate::reward::judges::Judges;
use crate::reward::{RewardExpr, Rewards};
use crate::rollout::{RolloutCfg, Scoring, rollout};
use crate::rundir::records::{EvalLine, EvalResult, MetricLine};

/// Episodes of each evaluation that keep a screenshot per step, for the report.
const SAMPLE_EPISODES: usize = 2;

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
            max_steps,
            // Episodes are scored by the tasks' own checkers: a judge gives the success of tasks
            // without one, which sandbox tasks do not need.
            judge: _,
            count,
            // The preflight refuses `non_aborted`.
            denominator: _,
            after,
            checkpoint,
            binds,
        } = e;
        let agent = self.agent_cfg(agent.id())?;
        let Some(Data::Tasks(tasks)) = self.built.data.get(tasks.id()).cloned() else {
            return Err(super::needs(node, "tasks"));
        };
        let ckpt = checkpoint.as_ref().map(|c| c.id().to_string());
        let trainer = ckpt.as_ref().and_then(|c| self.built.trainers.get(c).cloned());
        let roles =
            ckpt.as_ref().and_then(|c| self.built.roles.get(c).cloned()).unwrap_or_default();
        if trainer.is_none() && agent.graph.is_none() {
            return Err(RunError::plan(format!(
                "eval `{}`: nothing produced `{}`",
                node.decl,
                ckpt.as_deref().unwrap_or("a policy")
            )));
        }
        // pass@k: every task k times (sampled), solved when any attempt succeeds.
        let k = match metric {
            Metric::PassAtK => (*k).max(1) as usize,
            // The preflight refuses `mean_reward`.
            Metric::Success | Metric::MeanReward => 1,
        };
        let count = count.map_or(tasks.len(), |c| c as usize).min(tasks.len());
        let tasks: Vec<Task> = tasks[..count]
            .iter()
            .map(|t| {
                let mut t = t.clone();
                t.max_steps = t.max_steps.min(max_steps.0).min(agent.max_turns);
                t
            })
            .collect();
        let (env, episode, retries) = self.env_for(&agent).await?;
        let cfg = RolloutCfg {
            group: k,
            concurrency: self.concurrency(),
            sample: SampleParams {
                temperature: *temperature as f32,
                top_p: *top_p as f32,
                top_k: *top_k as usize,
                max_tokens: agent.max_response,
                ..SampleParams::default()
            },
            history: agent.history,
            exclude: Vec::new(),
            process: None,
            graph: self.graph_of(&node.decl, &agent, binds, &[], trainer.as_ref(), &roles)?,
            // The report shows the first episodes of each evaluation with their pages.
            screens_for: SAMPLE_EPISODES,
            episode,
            retries,
            seed: Some(stream_of(&node.id, 0)),
        };
        let (none, zero, judges) =
            (Rewards::new(), RewardExpr::Const { value: 0.0 }, Judges::default());
        let scoring = Scoring { reward: &zero, rewards: &none, judges: &judges };
        let episodes = rollout(&env, &tasks, trainer.as_ref(), &cfg, scoring).await;
        self.log_episodes(node, 0, &episodes)?;
        let solved = (0..tasks.len())
            .filter(|&g| episodes.iter().any(|e| e.group == g && e.success()))
            .count();
        let rate = if tasks.is_empty() { 0.0 } else { solved as f64 / tasks.len() as f64 };
        let after = after.clone().unwrap_or_else(|| node.decl.clone());
        self.say(&format!(
            "eval {} after {after}: {solved}/{} solved ({:.1}%)",
            node.decl,
            tasks.len(),
            rate * 100.0
        ));
        let line = EvalLine {
            stage: node.decl.clone(),
            node: node.id.clone(),
            after: after.clone(),
            success: rate,
            episodes: episodes.len(),
            global_step: 0,
            phase: None,
            time: 0.0,
        };
        self.run.log_metrics(vec![MetricLine::Eval(line)])?;
        self.cursor.evals.push(EvalResult {
            eval: node.decl.clone(),
            after,
            success: rate,
            episodes: episodes.len(),
        });
        self.mark_done(&node.id);
        self.commit(None, false)
    }
}
