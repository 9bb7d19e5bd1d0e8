//! RL phase nodes: each iteration rolls out a batch of tasks (a group of episodes per task, in
//! the agent's environment), scores them, refills uninformative groups when the algorithm
//! samples dynamically, updates the policy (or each role's copy), logs every episode and the
//! iteration's metrics, and commits a resumable checkpoint.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use wrl_plan::Node;
use wrl_plan::params::{Refills, RewardRef, RlPhase};
use wrl_sandbox::Task;
use wrl_trainer::{Metrics, OptimConfig, SampleParams, Trainer};

use super::progress::Progress;
use super::settings::{self, PhaseSettings, phase_settings};
use super::validate;
use super::{Data, Executor, Roles};
use crate::agent::AgentCfg;
use crate::env::Env;
use crate::error::{Fault, RunError};
use crate::reward::judges::Judges;
use crate::reward::{RewardExpr, Rewards};
use crate::rollout::{Episode, RolloutCfg, Scoring, informative_groups, rollout, samples};
use crate::rollout::{generated, replay};

impl<'a> Executor<'a> {
    /// The reward a stage or eval names.
    pub(super) fn reward_of(&self, r: &RewardRef) -> Result<RewardExpr, RunError> {
        match r {
            RewardRef::Inline(e) => Ok(e.clone()),
            RewardRef::Node(n) => self
                .built
                .rewards
                .get(n.id())
                .cloned()
                .ok_or_else(|| RunError::plan(format!("no reward `{n}` comes before its use"))),
        }
    }

    /// Runs RL phase `node`: set up once, then each iteration rolls out, updates, logs and
    /// commits (resuming after the last committed iteration).
    pub(super) async fn rl_phase(&mut self, node: &Node, phase: &RlPhase) -> Result<(), RunError> {
        let agent = self.agent_cfg(phase.run.agent.id())?;
        let p = phase_settings(phase, agent.max_response);
        let tasks = self.phase_tasks(node, &p)?;
        let start = self.phase_start(node);
        let (trainer, roles) = self.phase_weights(node, &p, &agent, start)?;
        let mut ph = self.phase_setup(node, p, agent, tasks, trainer, roles).await?;
        if let Some(v) = ph.p.validate
            && v.before_training
            && ph.before == 0
            && start == 0
        {
            self.validate(node, v, ph.pass(0)).await?;
        }
        let iters = ph.p.iters;
        let words = node_words(&node.id);
        let progress =
            Progress::new(self.opts.progress, !self.opts.json_lines, &words, iters, "iters");
        progress.advance(start, "");
        for iter in (start + 1)..=iters {
            self.rl_iteration(&mut ph, iter, &progress).await?;
        }
        progress.finish();
        self.built.trainers.insert(node.id.clone(), ph.trainer);
        self.cursor.phase = None;
        self.mark_done(&node.id);
        self.commit(None, false)
    }

    /// The phase's tasks: not empty, and as many as the planner counted `iters = N epochs`
    /// from (the dataset's declared size).
    fn phase_tasks(&self, node: &Node, p: &PhaseSettings<'_>) -> Result<Vec<Task>, RunError> {
        let Some(Data::Tasks(all)) = self.built.data.get(p.run.tasks.id()).cloned() else {
            return Err(super::needs(node, "tasks"));
        };
        if all.is_empty() {
            return Err(RunError::new(
                Fault::Data,
                format!("stage `{}`: its task dataset `{}` is empty", node.decl, p.run.tasks),
            )
            .help(
                "give the dataset at least one task (for the sandbox, at least one of its sites)",
            ));
        }
        let drop = p.run.last_batch.drops();
        if drop && all.len() < p.prompts {
            return Err(RunError::new(
                Fault::Data,
                format!(
                    "stage `{}`: `last_batch = drop` over {} tasks, fewer than one batch of {}: \
                     no batch is whole",
                    node.decl,
                    all.len(),
                    p.prompts
                ),
            )
            .help("give the stage more tasks, lower `prompts`, or keep the partial batch (`last_batch = keep`)")
            .at(node, Some("last_batch"), "a pass is whole batches only"));
        }
        if let Some(e) = p.run.epochs.map(|e| e.0) {
            let n = all.len() as u64;
            let want = wrl_plan::iters_for(u64::from(e), n, p.prompts as u64, drop);
            if want != p.iters {
                return Err(RunError::new(
                    Fault::Data,
                    format!(
                        "stage `{}`: `iters = {e} epoch(s)` was planned as {} iterations from \
                         the declared size of `{}`, but it holds {n} tasks ({want} iterations)",
                        node.decl, p.iters, p.run.tasks
                    ),
                )
                .help("set the dataset's `count` to its number of records, or write the iterations (`iters = N`)")
                .at(node, Some("phases"), "the phase given in epochs"));
            }
        }
        Ok(all)
    }

    /// The last iteration of `node` a resumed run committed with its weights (0: none).
    fn phase_start(&self, node: &Node) -> u64 {
        match &self.cursor.phase {
            Some((id, it))
                if *id == node.id
                    && self.cursor.checkpoint_of.as_deref() == Some(node.id.as_str()) =>
            {
                *it
            }
            _ => 0,
        }
    }

    /// The weights the phase trains from `start`: the resumed trainer, or a fresh one from its
    /// `init`; PPO's critic at a stage's start; the frozen parts; each role's copy; the KL's
    /// reference (`reference = phase`).
    fn phase_weights(
        &mut self,
        node: &Node,
        p: &PhaseSettings<'_>,
        agent: &AgentCfg,
        start: u64,
    ) -> Result<(Arc<Mutex<Trainer>>, Roles), RunError> {
        let optim = optim_at(p, start + 1);
        let trainer = match self.built.trainers.get(&node.id).cloned() {
            Some(t) if start > 0 => t,
            _ => self.trainer_from(p.run.init.id(), optim.clone())?,
        };
        // PPO's critic starts with the stage, from its own `init`; later phases and a resumed
        // phase keep the one the trainer carries (checkpoints hold it). A stage without one
        // drops any an earlier stage left on the shared trainer.
        if start == 0 && p.run.phase == 1 {
            // A new stage's replay buffer and pool of generated tasks start empty.
            self.cursor.replay.remove(&node.decl);
            self.cursor.generated.remove(&node.decl);
            let critic = match p.critic {
                Some(c) => {
                    // Not locked across `critic_from`: its init may be this very trainer.
                    let shape = {
                        let t = trainer.lock().map_err(|_| RunError::poisoned())?;
                        (t.model().vocab(), t.model().context())
                    };
                    Some(self.critic_from(node, c, shape)?)
                }
                None => None,
            };
            trainer.lock().map_err(|_| RunError::poisoned())?.set_critic(critic);
        }
        // The stage's adapters, set when it starts; later phases and a resume keep them.
        if start == 0 && p.run.phase == 1 {
            let (spec, from) = settings::lora(p.lora);
            trainer
                .lock()
                .map_err(|_| RunError::poisoned())?
                .set_lora(spec.as_ref(), &from, p.run.seed)
                .map_err(|e| RunError::model(&format!("stage `{}`: `lora`", node.decl), e))?;
        }
        // The phase's `frozen` parts get no gradient and no optimiser state; others thaw.
        trainer.lock().map_err(|_| RunError::poisoned())?.set_frozen(&p.frozen).map_err(|e| {
            RunError::model(&format!("stage `{}`: cannot freeze `frozen`", node.decl), e)
        })?;
        let roles = match self.built.roles.get(&node.id).cloned() {
            Some(r) if start > 0 => r,
            _ => self.fork_roles(agent, node, p, &trainer, optim)?,
        };
        // `reference = phase`: from the second phase on, the KL's reference is the weights the
        // phase starts from (the first phase's is the stage's start, taken at its first update).
        if start == 0
            && p.run.phase > 1
            && p.reference == wrl_plan::params::Reference::Phase
            && p.rl.kl_coef().is_some()
        {
            for t in std::iter::once(&trainer).chain(roles.values()) {
                t.lock()
                    .map_err(|_| RunError::poisoned())?
                    .set_reference_to_current()
                    .map_err(|e| RunError::model("cannot take the phase's KL reference", e))?;
            }
        }
        Ok((trainer, roles))
    }

    /// What every iteration of the phase shares: its env and rollout settings, its reward and
    /// judges, its seed and its place among the stage's iterations.
    async fn phase_setup<'p>(
        &mut self,
        node: &'p Node,
        p: PhaseSettings<'p>,
        agent: AgentCfg,
        tasks: Vec<Task>,
        trainer: Arc<Mutex<Trainer>>,
        roles: Roles,
    ) -> Result<Phase<'p>, RunError> {
        let reward = self.reward_of(p.reward)?;
        let process = p.process_reward.map(|r| self.reward_of(r)).transpose()?;
        let (env, episode, retries) = self.env_for(&agent).await?;
        let graph =
            self.graph_of(&node.decl, &agent, &p.run.binds, p.trainable, Some(&trainer), &roles)?;
        let cfg = RolloutCfg {
            group: p.group,
            concurrency: self.concurrency(),
            sample: SampleParams {
                temperature: p.rl.temperature,
                top_p: p.top_p,
                max_tokens: agent.max_response,
                // Branching reads each turn's entropy over its first `tokens` tokens.
                entropy_tokens: p.branching.map_or(0, |b| b.tokens.0 as usize),
                ..SampleParams::default()
            },
            history: agent.history,
            window: agent.window,
            hermes: agent.hermes.clone(),
            tags: agent.tags.clone(),
            exclude: p.exclude.clone(),
            process,
            graph,
            // A trained policy is sampled here (the checker refuses training an `api(…)` model).
            api: None,
            screens_for: 0,
            episode,
            retries,
            seed: None,
            branching: p.branching,
        };
        let rewards = self.built.rewards.clone();
        let judges = Judges::for_reward(&reward, &rewards, &self.built.apis).map_err(|e| {
            RunError::new(Fault::Service, format!("cannot set up the judges: {e}")).at(
                node,
                Some("reward"),
                "this reward's judges",
            )
        })?;
        Ok(Phase {
            // Every batch samples from its own streams of the stage's seed, so a run's rollouts
            // do not depend on the order its concurrent episodes happen to run in.
            stage_seed: self.stream(&node.id, p.run.seed),
            // In-training validation: iterations count across the stage's phases.
            before: self.iters_before(node, p.run),
            stage_iters: self.stage_iters(p.run),
            node,
            p,
            agent,
            tasks,
            trainer,
            roles,
            env,
            cfg,
            reward,
            rewards,
            judges,
        })
    }

    /// One iteration: its batch, rollouts (and refills), replay and generated tasks, the
    /// update, the logs, validation when due, and a committed checkpoint.
    async fn rl_iteration(
        &mut self,
        ph: &mut Phase<'_>,
        iter: u64,
        progress: &Progress,
    ) -> Result<(), RunError> {
        let node = ph.node;
        for t in std::iter::once(&ph.trainer).chain(ph.roles.values()) {
            t.lock().map_err(|_| RunError::poisoned())?.set_optim(optim_at(&ph.p, iter));
        }
        if let Some(c) = ph.p.critic {
            let lr = settings::lr_at(c.lr, &c.schedule, iter, ph.p.iters);
            ph.trainer.lock().map_err(|_| RunError::poisoned())?.set_critic_lr(lr);
        }
        let (batch, replayed, mut generation) = self.batch(ph, iter);
        let t0 = Instant::now();
        let (episodes, rolled) = roll_out(ph, iter, batch).await;
        let rollout_s = t0.elapsed().as_secs_f64();
        super::faults::budget(node, iter, &episodes, ph.p.stop_excluded)?;
        if let Some(r) = ph.p.replay {
            // Generated tasks are trained once: a failed one seeds new tasks instead.
            let by_id = ph.by_id();
            let groups: Vec<(String, f64)> = replay::group_success(&episodes)
                .into_iter()
                .filter(|(t, _)| by_id.contains_key(t.as_str()))
                .collect();
            let buffer = self.cursor.replay.entry(node.decl.clone()).or_default();
            replay::record(r, buffer, &groups);
        }
        if let (Some(g), Some(stats)) = (ph.p.generate, generation.as_mut()) {
            self.generate_from_failures(node, g, &ph.trainer, &episodes, &rolled, iter, stats)
                .await?;
        }
        let t1 = Instant::now();
        let per_role = self.update(ph, &episodes)?;
        let update_s = t1.elapsed().as_secs_f64();
        let done = Done { iter, episodes: &episodes, per_role: &per_role, replayed, generation };
        self.log_iteration(ph, &done, (rollout_s, update_s), progress)?;
        self.built.trainers.insert(node.id.clone(), ph.trainer.clone());
        if !ph.roles.is_empty() {
            self.built.roles.insert(node.id.clone(), ph.roles.clone());
        }
        if let Some(v) = ph.p.validate.filter(|v| validate::due(v, ph.before + iter)) {
            self.validate(node, v, ph.pass(ph.before + iter)).await?;
        }
        self.cursor.phase = Some((node.id.clone(), iter));
        let name = format!("{}-iter-{iter}", node.id.replace([':', '/'], "-"));
        self.save_and_commit(&node.id, &name)
    }

    /// Iteration `iter`'s tasks: replayed tasks first (the buffer's oldest), then generated
    /// ones (the pool's oldest, each trained once), then fresh ones in their places; how many
    /// were replayed and drawn.
    fn batch(
        &mut self,
        ph: &Phase<'_>,
        iter: u64,
    ) -> (Vec<Task>, Option<usize>, Option<generated::GenStats>) {
        let prompts = ph.p.prompts;
        let mut batch = ph.tasks_of(iter - 1);
        let mut replayed = None;
        if let Some(r) = ph.p.replay {
            let buffer = self.cursor.replay.get(&ph.node.decl).cloned().unwrap_or_default();
            let n = replay::replayed(r, prompts, &buffer);
            let by_id = ph.by_id();
            let again: Vec<Task> = buffer[..n]
                .iter()
                .filter_map(|id| by_id.get(id.as_str()))
                .map(|t| ph.capped(t))
                .collect();
            replayed = Some(again.len());
            batch.truncate(prompts - again.len());
            batch.splice(0..0, again);
        }
        let mut generation = None;
        if let Some(g) = ph.p.generate {
            let pool = self.cursor.generated.entry(ph.node.decl.clone()).or_default();
            let at = replayed.unwrap_or(0);
            let n = generated::drawn(g, prompts, prompts - at, pool);
            let new: Vec<Task> = pool.drain(..n).map(|t| ph.capped(&t)).collect();
            batch.truncate(prompts - n);
            batch.splice(at..at, new);
            generation = Some(generated::GenStats { drawn: n, ..Default::default() });
        }
        (batch, replayed, generation)
    }

    /// One update of the shared policy, or one per role on the turns that role sampled: each
    /// role's name (empty for the shared one), its sample count and metrics.
    fn update(
        &mut self,
        ph: &Phase<'_>,
        episodes: &[Episode],
    ) -> Result<Vec<(String, usize, Metrics)>, RunError> {
        let updates: Vec<(String, &Arc<Mutex<Trainer>>)> = if ph.roles.is_empty() {
            vec![(String::new(), &ph.trainer)]
        } else {
            ph.roles.iter().map(|(r, t)| (r.clone(), t)).collect()
        };
        let mut per_role = Vec::new();
        for (role, t) in updates {
            let only = (!role.is_empty()).then_some(role.as_str());
            let samples = samples(episodes, self.trajectory_ids, only, ph.p.anchor);
            let mut t = t.lock().map_err(|_| RunError::poisoned())?;
            let m = t
                .rl_update(&samples, &ph.p.rl)
                .map_err(|e| RunError::model("RL update failed", e))?;
            per_role.push((role, samples.len(), m));
        }
        Ok(per_role)
    }
}

/// What every iteration of an RL phase shares.
pub(super) struct Phase<'p> {
    pub(super) node: &'p Node,
    pub(super) p: PhaseSettings<'p>,
    pub(super) agent: AgentCfg,
    /// The phase's task set, in order.
    pub(super) tasks: Vec<Task>,
    pub(super) trainer: Arc<Mutex<Trainer>>,
    pub(super) roles: Roles,
    pub(super) env: Arc<dyn Env>,
    /// The rollouts' settings; each batch sets its own `seed`.
    pub(super) cfg: RolloutCfg,
    pub(super) reward: RewardExpr,
    pub(super) rewards: Rewards,
    pub(super) judges: Judges,
    pub(super) stage_seed: u64,
    /// The stage's iterations before this phase.
    pub(super) before: u64,
    /// The stage's iterations, over all its phases.
    pub(super) stage_iters: u64,
}

impl Phase<'_> {
    /// A task with this phase's step budget.
    fn capped(&self, t: &Task) -> Task {
        let mut t = t.clone();
        t.max_steps = wrl_plan::turns_cap(t.max_steps.min(self.p.horizon), self.agent.max_turns);
        t
    }

    /// Iteration `iter`'s (from 0) fresh tasks: in the task set's order, cycling, or shuffled
    /// on each pass by the stage's seed (`draw.rs`).
    fn tasks_of(&self, iter: u64) -> Vec<Task> {
        self.draw().indices(iter).into_iter().map(|i| self.capped(&self.tasks[i])).collect()
    }

    /// `prompts` tasks from position `offset` of the endless stream of passes (a refill's).
    fn tasks_from(&self, offset: usize) -> Vec<Task> {
        let at = self.draw().stream(offset as u64);
        at.into_iter().map(|i| self.capped(&self.tasks[i])).collect()
    }

    fn draw(&self) -> super::draw::Draw {
        super::draw::Draw {
            tasks: self.tasks.len(),
            prompts: self.p.prompts,
            drop: self.p.run.last_batch.drops(),
            shuffle: self.p.shuffle.then_some(self.stage_seed),
        }
    }

    /// The task set by id.
    fn by_id(&self) -> BTreeMap<&str, &Task> {
        self.tasks.iter().map(|t| (t.id.as_str(), t)).collect()
    }

    /// A validation pass at the stage's iteration `iter`.
    fn pass(&self, iter: u64) -> validate::Pass<'_> {
        validate::Pass {
            env: &self.env,
            agent: &self.agent,
            trainer: &self.trainer,
            cfg: &self.cfg,
            reward: &self.reward,
            horizon: self.p.horizon,
            max_turns: self.agent.max_turns,
            iter,
            stage_iters: self.stage_iters,
        }
    }
}

/// What an iteration did, for its logs.
pub(super) struct Done<'e> {
    pub(super) iter: u64,
    pub(super) episodes: &'e [Episode],
    pub(super) per_role: &'e [(String, usize, Metrics)],
    pub(super) replayed: Option<usize>,
    pub(super) generation: Option<generated::GenStats>,
}

/// The optimiser of iteration `iter` (1-based): the phase's schedule advances per iteration.
fn optim_at(p: &PhaseSettings<'_>, iter: u64) -> OptimConfig {
    let lr = settings::lr_at(p.run.lr, &p.schedule, iter, p.iters);
    settings::optim(lr, &p.optimizer, &p.schedule, 0)
}

/// Rolls out iteration `iter`'s batch, then, with dynamic sampling, replaces groups whose
/// rewards were all equal with groups of further tasks (taken from past the last iteration's),
/// up to the phase's refills (`unlimited`: until the batch is whole, at most once through the
/// task set). The episodes, and every task rolled out.
async fn roll_out(ph: &mut Phase<'_>, iter: u64, batch: Vec<Task>) -> (Vec<Episode>, Vec<Task>) {
    let prompts = ph.p.prompts;
    let scoring = Scoring { reward: &ph.reward, rewards: &ph.rewards, judges: &ph.judges };
    // A curriculum of the env's (a simulated engine's noise) follows the stage's iterations.
    ph.env.at_iteration(Some((ph.before + iter, ph.stage_iters)));
    ph.cfg.seed = Some(wrl_trainer::rng::mix(ph.stage_seed, iter << 8));
    let mut episodes = rollout(&ph.env, &batch, Some(&ph.trainer), &ph.cfg, scoring).await;
    let mut rolled = batch;
    let max_refills = match ph.p.refills {
        Refills::Unlimited => ph.tasks.len().div_ceil(prompts.max(1)),
        Refills::AtMost(n) => n as usize,
    };
    let mut refill = 0;
    while ph.p.rl.dynamic_sampling
        && refill < max_refills
        && informative_groups(&episodes) < prompts
    {
        refill += 1;
        let offset = (ph.p.iters as usize * prompts) * refill + (iter as usize - 1) * prompts;
        let more = ph.tasks_from(offset);
        ph.cfg.seed = Some(wrl_trainer::rng::mix(ph.stage_seed, (iter << 8) + refill as u64));
        let extra = rollout(&ph.env, &more, Some(&ph.trainer), &ph.cfg, scoring).await;
        rolled.extend(more);
        episodes.extend(extra.into_iter().map(|mut e| {
            e.group += refill * prompts;
            e
        }));
    }
    (episodes, rolled)
}

/// `stage:online/phase:2` → `stage online, phase 2`: a node id as words for progress lines.
pub(super) fn node_words(id: &str) -> String {
    id.split('/').map(|part| part.replacen(':', " ", 1)).collect::<Vec<_>>().join(", ")
}
