//! What an RL phase's fields mean to verl, section by section (`run`, `rollout`, `update`,
//! `algo`): each section is destructured without `..`, so a field added to one does not compile
//! until it is mapped here (to a key of the phase's verl run or of its agent-loop entry) or said
//! to be not mapped. A knob an algorithm does not have (DAPO's KL estimator, PPO's loss
//! aggregation) is written at its verl key with the value the plan's `Algo` gives it, the one
//! the candle trainer runs with too, without a report entry (there is no field to account for).

use serde_json::{Value as Json, json};
use wrl_plan::Node;
use wrl_plan::params::{
    self, Algo, Async, Dapo, Grpo, PhaseRun, PolicyLoss, Ppo, RewardRef, RlPhase, Rollout, Update,
};

use crate::ctx::{Ctx, E_UNMAPPED, Run};

/// A phase being lowered: its node, its run, its config and its agent-loop entry.
pub(crate) struct Ph<'a, 'p> {
    pub c: &'a mut Ctx<'p>,
    pub n: &'p Node,
    pub cfg: &'a mut Json,
    pub al: &'a mut Json,
    pub run: &'a Run,
    /// The agent's `max_turns` (the horizon is capped by it).
    pub max_turns: Option<u32>,
    /// The weights the stage starts from (its first phase's `init`).
    pub start: params::NodeRef,
}

pub(crate) const A: &str = "actor_rollout_ref.actor";
pub(crate) const R: &str = "actor_rollout_ref.rollout";

pub(crate) fn k(prefix: &str, key: &str) -> String {
    format!("{prefix}.{key}")
}

impl Ph<'_, '_> {
    fn al_label(&self) -> String {
        format!("agent_loops.yaml: {}.", self.run_name())
    }

    fn run_name(&self) -> String {
        format!("wrl_{}", self.run.name.replace('-', "_"))
    }

    pub(crate) fn map(&mut self, field: &str, keys: &[(&str, Json)]) -> &mut crate::report::Entry {
        self.c.map(self.cfg, self.n, field, keys)
    }

    pub(crate) fn al(&mut self, field: &str, keys: &[(&str, Json)]) -> &mut crate::report::Entry {
        let label = self.al_label();
        self.c.wrl_in(self.al, &label, self.n, field, keys)
    }

    /// Maps `field` where the phase's constructor has it (its entry, to add a note to);
    /// writes the value an algorithm without it runs with otherwise.
    fn knob(&mut self, field: &str, key: &str, v: Json) -> Option<&mut crate::report::Entry> {
        if self.n.params.contains_key(field) {
            Some(self.map(field, &[(key, v)]))
        } else {
            crate::ctx::set(self.cfg, key, v);
            None
        }
    }

    /// What the phase runs and where it sits: `init`, `tasks`, `agent`, `iters` (and the
    /// `epochs` they were written as), `horizon`, `lr`, its place in the stage, `seed` and
    /// `checkpoint_every`.
    fn run_section(&mut self, r: &PhaseRun) {
        let PhaseRun {
            // The run's model path, train file and agent loop (`self.run`, `stages.rs`).
            init: _,
            tasks: _,
            agent: _,
            iters,
            epochs,
            last_batch,
            horizon,
            lr,
            seed,
            checkpoint_every,
            // The run's name and its place in launch.sh's order.
            stage: _,
            phase: _,
            phases: _,
            resume: _,
            binds: _,
            published_cost: _,
        } = r;
        self.c.implied(
            self.n,
            "published_cost",
            "the source's cost figures, read only by `wrlc estimate` (beside its own)",
        );
        let run = self.run.clone();
        self.start(&run);
        self.map("iters", &[("trainer.total_training_steps", json!(run.last_step))]).note(format!(
            "absolute: verl counts steps from the resumed one, so this run does {} steps after \
             step {}",
            iters.0,
            run.last_step.saturating_sub(iters.0)
        ));
        if let Some(e) = epochs {
            self.c.implied(
                self.n,
                "epochs",
                format!("{e} over the task set, written as `iters` ({} steps)", iters.0),
            );
        }
        self.last_batch(*last_batch, epochs.is_some());
        let turns = self.max_turns.map_or(horizon.0, |t| t.min(horizon.0));
        let label = self.al_label();
        self.c.rewrite(self.al, self.n, "horizon", &[("max_steps", json!(turns))]);
        self.map("horizon", &[(&k(R, "multi_turn.max_assistant_turns"), json!(turns))])
            .also(format!("{label}max_steps"), json!(turns))
            .note("capped by the agent's `max_turns`; the env service ends the episode there too");
        self.map("lr", &[(&k(A, "optim.lr"), json!(lr))]);
        self.place(&run);
        self.map("seed", &[("data.seed", json!(seed)), (&k(A, "data_loader_seed"), json!(seed))])
            .note(
                "verl seeds its data order; rollouts are not seeded per episode as in `wrlc run`",
            );
        self.checkpoints(checkpoint_every.0);
    }

    /// A pass's last partial batch: verl's train dataloader always drops it
    /// (`StatefulDataLoader(…, drop_last=True)`, verl/trainer/ppo/ray_trainer.py:352 at
    /// b178a3c), so `drop` needs no key. `keep` with `iters = N epochs` would count iterations
    /// verl's N epochs do not run (ARPO-like: 42 where verl runs 40): refused; with the
    /// iterations written out verl runs as many, but a pass's leftover tasks are not drawn in it.
    fn last_batch(&mut self, last: params::LastBatch, in_epochs: bool) {
        const F: &str = "last_batch";
        if self.c.refused_if_unknown(self.n, F, "verl drops each pass's last partial batch") {
            return;
        }
        let why = "verl 0.9.1's train dataloader always drops a pass's last partial batch \
                   (drop_last=True, ray_trainer.py:352)";
        match last {
            params::LastBatch::Drop => {
                self.c.implied(self.n, F, why);
            }
            params::LastBatch::Keep if in_epochs => {
                self.c
                    .not_mapped(self.n, F, why, "each epoch is ⌊tasks / prompts⌋ steps")
                    .refuse(E_UNMAPPED);
            }
            params::LastBatch::Keep => {
                self.c.not_mapped(
                    self.n,
                    F,
                    why,
                    "as many steps, each pass drawing whole batches only (its leftover tasks are \
                     not drawn in it)",
                );
            }
        }
    }

    /// `init`, `tasks` and `agent`: where the run starts and what it runs.
    fn start(&mut self, run: &Run) {
        match &run.resumes {
            None => {
                let e =
                    self.map("init", &[("actor_rollout_ref.model.path", json!(run.model_path))]);
                match &run.needs_model {
                    Some(why) => e.note(format!(
                        "`???`: {why}; give those weights in Hugging Face layout at launch \
                         (launch.sh: MODEL=DIR)"
                    )),
                    None => e.note("the model the stage starts from"),
                };
            }
            Some((from, step)) => {
                let path = format!("checkpoints/{from}/global_step_{step}");
                self.map(
                    "init",
                    &[
                        ("actor_rollout_ref.model.path", json!(run.model_path)),
                        ("trainer.resume_from_path", json!(path)),
                    ],
                )
                .note(format!(
                    "resumed from run `{from}`'s last checkpoint (step {step}); the model path \
                     only gives the architecture and tokenizer"
                ));
            }
        }
        self.map("tasks", &[("data.train_files", json!(run.train_file))])
            .note("one row per task, `agent_name` set to this run's agent loop");
        let name = self.run_name();
        self.map("agent", &[(&k(R, "agent.default_agent_loop"), json!(name))])
            .note("the wrl agent loop (integrations/verl), entry of agent_loops.yaml");
    }

    /// `stage`, `phase`, `phases`, `resume` and `binds`: the run's place in the job.
    fn place(&mut self, run: &Run) {
        for f in ["stage", "phase", "phases"] {
            self.c.implied(
                self.n,
                f,
                format!("the run's name `{}` and its place in launch.sh's order", run.name),
            );
        }
        if run.resumes.is_none() {
            self.map("resume", &[("trainer.resume_mode", json!("auto"))])
                .note("fresh: nothing to resume on the first launch; a relaunch continues the run's own last checkpoint");
        } else {
            self.map(
                "resume",
                &[
                    ("trainer.resume_mode", json!("resume_path")),
                    (&k(A, "checkpoint.load_contents"), json!(["model", "optimizer"])),
                ],
            )
            .note(
                "weights and optimiser state of the previous run, its learning-rate scheduler \
                 not loaded so this phase's `lr` applies; the dataloader continues where the \
                 previous run stopped (wrl restarts the task order each phase); launch.sh \
                 switches to `auto` when this run has checkpoints of its own",
            );
        }
        self.c.implied(self.n, "binds", "the agent's policy is the model verl trains");
    }

    /// How episodes are sampled and scored: `prompts`, `group`, sampling, `reward`, exclusions,
    /// replay and generated tasks.
    fn rollout_section(&mut self, r: &Rollout, reference: params::Reference) {
        let Rollout {
            prompts,
            group,
            temperature,
            top_p,
            reward,
            exclude,
            warn_excluded: _,
            stop_excluded: _,
            replay,
            generate,
            shuffle,
        } = r;
        self.reference_and_replay(reference, replay, generate);
        self.map("shuffle", &[("data.shuffle", json!(shuffle))])
            .note("the order tasks are drawn in: the file's, or shuffled each pass by `data.seed`");
        self.map("prompts", &[("data.train_batch_size", json!(prompts))]);
        self.map("group", &[(&k(R, "n"), json!(group))]);
        let which = match reward {
            RewardRef::Node(r) => r.id().to_string(),
            RewardRef::Inline(_) => format!("{} (inline)", self.n.id),
        };
        self.c
            .wrl(self.n, "reward", &[("env service: POST /v1/episodes/{id}/end", json!(which))])
            .note("the env service scores each episode with the recipe's reward (judges included); the agent loop sets reward_score, so verl's reward loop is skipped");
        self.c.not_mapped(
            self.n,
            "warn_excluded",
            "verl's trainer counts no excluded episodes to warn about",
            "no warning; excluded episodes still get no gradient (`exclude`)",
        );
        self.c.not_mapped(
            self.n,
            "stop_excluded",
            "verl's trainer keeps no fault budget: it trains on what an iteration leaves",
            "no stop; excluded episodes still get no gradient (`exclude`)",
        );
        let classes: Vec<&str> = exclude.iter().map(|c| c.word()).collect();
        self.c
            .wrl(self.n, "exclude", &[("env service: excluded classes", json!(classes))])
            .note("an excluded episode's rows get response_mask 0 (no gradient); its reward 0 still enters its group's mean and std in verl's GRPO");
        self.sampling(*temperature, *top_p);
    }

    /// How the policy is updated: clipping, KL, PPO epochs and mini-batches, schedule,
    /// optimiser, frozen parts and masks (`reference` is the rollout's, with replay).
    fn update_section(&mut self, u: &Update, r: &Rollout, algo: &Algo, iters: u64) {
        let Update {
            advantage,
            clip,
            kl,
            kl_in,
            ppo_epochs,
            mini_batch,
            mini_batch_rest,
            frozen,
            lora,
            mask,
            reference: _,
            schedule,
            optimizer,
        } = u;
        self.advantage(advantage);
        self.clip(clip);
        let mapped = self.n.params.contains_key("kl_estimator");
        self.kl(*kl, *kl_in, algo.kl_estimator(*kl_in), mapped);
        self.ppo_epochs_and_batch(*ppo_epochs, *mini_batch, r.prompts, r.group);
        self.mini_batch_rest(*mini_batch_rest);
        self.schedule(schedule, iters);
        self.optimizer(optimizer);
        self.frozen(frozen);
        self.lora(lora);
        self.mask(mask);
    }

    /// The samples past an iteration's last whole mini-batch: verl trains them (`drop`, slime's
    /// trimming, is refused).
    fn mini_batch_rest(&mut self, rest: params::MiniBatchRest) {
        const F: &str = "mini_batch_rest";
        if self.c.refused_if_unknown(self.n, F, "every sample of the batch trains") {
            return;
        }
        match rest {
            params::MiniBatchRest::Train => {
                let note = "verl splits each batch it trains into mini-batches of \
                            ppo_mini_batch_size prompts";
                self.c.implied(self.n, F, note);
            }
            params::MiniBatchRest::Drop => {
                let why = "verl 0.9.1 has no switch that trims a batch's samples to a multiple \
                           of its mini-batch";
                self.c
                    .not_mapped(self.n, F, why, "every sample of the batch trains")
                    .refuse(E_UNMAPPED);
            }
        }
    }

    /// The knobs `grpo` and `dapo` have and `ppo` fixes, and `grpo`'s that the others fix;
    /// then what only one algorithm has.
    fn algo_section(&mut self, algo: &Algo, iters: u64) {
        self.knob("entropy", &k(A, "entropy_coeff"), json!(algo.entropy()));
        let agg = match algo.loss_agg() {
            params::LossAgg::TokenMean => "token-mean",
            params::LossAgg::SeqMeanTokenMean => "seq-mean-token-mean",
            params::LossAgg::SeqMeanTokenSum => "seq-mean-token-sum",
        };
        self.knob("loss_agg", &k(A, "loss_agg_mode"), json!(agg));
        if self.n.params.contains_key("level") {
            self.level(algo.level());
        } else {
            crate::ctx::set(self.al, "level", json!("turn"));
        }
        let norm = json!(algo.std_normalize());
        self.knob("std_normalize", "algorithm.norm_adv_by_std_in_grpo", norm);
        let c = algo.dual_clip();
        if let Some(e) = self.knob("dual_clip", &k(A, "clip_ratio_c"), json!(c.unwrap_or(1e9)))
            && c.is_none()
        {
            e.note("no dual clip: verl always applies one, so a bound no ratio reaches");
        }
        let mode = match algo.policy_loss() {
            PolicyLoss::Clip => "vanilla",
            PolicyLoss::KlCov => "kl_cov",
        };
        if !self.n.params.contains_key("policy_loss") {
            crate::ctx::set(self.cfg, &k(A, "policy_loss.loss_mode"), json!(mode));
        }
        if self.n.params.contains_key("validate") {
            self.validate(algo.validate());
        }
        match algo {
            Algo::Grpo(g) => self.grpo(g),
            Algo::Dapo(d) => self.dapo(d),
            Algo::Ppo(p) => self.ppo(p, iters),
        }
    }

    /// `grpo`'s own fields (those `algo_section` wrote are named).
    fn grpo(&mut self, g: &Grpo) {
        let Grpo {
            process_reward,
            process_mix: _,
            dual_clip: _,
            kl_estimator: _,
            entropy: _,
            drop,
            refill,
            std_normalize: _,
            loss_agg: _,
            policy_loss,
            kl_cov_ratio,
            ppo_kl_coef,
            level: _,
            trainable,
            asynchronous,
            validate: _,
            branching,
        } = g;
        self.branching(branching);
        match process_reward {
            None => {
                self.c.implied(self.n, "process_reward", "none");
                self.c.implied(self.n, "process_mix", "no process reward");
            }
            Some(_) => {
                self.c.not_mapped(self.n, "process_reward", "verl gives every turn of a trajectory the final turn's reward, so a step's process reward cannot reach the turns of its step", "the env service adds the episode's process rewards to its reward").refuse(E_UNMAPPED);
                self.c.implied(self.n, "process_mix", "see `process_reward`");
            }
        }
        self.drop_groups(*drop);
        self.refill_groups(refill, *drop);
        let mut keys = vec![(
            k(A, "policy_loss.loss_mode"),
            json!(match policy_loss {
                PolicyLoss::Clip => "vanilla",
                PolicyLoss::KlCov => "kl_cov",
            }),
        )];
        if *policy_loss == PolicyLoss::KlCov {
            keys.push((k(A, "policy_loss.ppo_kl_coef"), json!(ppo_kl_coef)));
        }
        let keys: Vec<(&str, Json)> = keys.iter().map(|(a, b)| (a.as_str(), b.clone())).collect();
        self.map("policy_loss", &keys);
        self.map("kl_cov_ratio", &[(&k(A, "policy_loss.kl_cov_ratio"), json!(kl_cov_ratio))]);
        if *policy_loss == PolicyLoss::KlCov {
            let key = k(A, "policy_loss.ppo_kl_coef");
            self.c.wrl(self.n, "ppo_kl_coef", &[(&key, json!(ppo_kl_coef))]);
        } else {
            self.c.implied(self.n, "ppo_kl_coef", "used only by `policy_loss = kl_cov`");
        }
        if trainable.is_empty() {
            self.c.implied(self.n, "trainable", "every trainable module: the ReAct agent's policy");
        } else {
            self.c
                .not_mapped(
                    self.n,
                    "trainable",
                    "verl trains one policy; these are roles of a module graph",
                    "the job trains the one policy verl loads",
                )
                .refuse(E_UNMAPPED);
        }
        self.asynchronous(asynchronous);
    }

    /// `grpo`'s `async`: verl's trainer modes.
    fn asynchronous(&mut self, a: &Async) {
        let Async { staleness, sync_every, partial_rollout } = a;
        if *partial_rollout {
            self.c.not_mapped(self.n, "async.partial_rollout", "verl 0.9.1's synchronous and separate-async trainers finish every rollout with the weights it started with", "episodes interrupted by a sync restart with the new weights").refuse(E_UNMAPPED);
        } else {
            self.c.implied(
                self.n,
                "async.partial_rollout",
                "off: an episode runs on the weights it started with",
            );
        }
        if staleness.0 == 0.0 {
            self.map("async.staleness", &[("trainer.v1.trainer_mode", json!("sync"))]);
        } else {
            self.c.not_mapped(self.n, "async.staleness", "verl 0.9.1's asynchronous trainers bound off-policy data by steps (v1.sampler.max_off_policy_threshold), not by a fraction of the batch", "nothing: set `staleness = 0%` for a synchronous run").refuse(E_UNMAPPED);
        }
        if *sync_every == 1 {
            self.map("async.sync_every", &[("trainer.v1.trainer_mode", json!("sync"))])
                .note("weights reach the rollout after every step");
        } else {
            self.map(
                "async.sync_every",
                &[
                    ("trainer.v1.trainer_mode", json!("separate_async")),
                    ("trainer.v1.separate_async.parameter_sync_step", json!(sync_every)),
                ],
            )
            .note("verl's separate-async trainer syncs the rollout's weights every N steps");
        }
    }

    /// `dapo`'s own fields: dynamic sampling and overlong shaping; a synchronous trainer.
    fn dapo(&mut self, d: &Dapo) {
        let Dapo {
            dynamic_sampling,
            overlong,
            entropy: _,
            loss_agg: _,
            level: _,
            validate: _,
            branching,
        } = d;
        self.branching(branching);
        self.dynamic(dynamic_sampling);
        self.overlong_shaping(overlong);
        crate::ctx::set(self.cfg, "trainer.v1.trainer_mode", json!("sync"));
    }

    /// `ppo`'s own fields: several epochs over old log-probs with GRPO or GAE advantages; no
    /// group filter; a synchronous trainer.
    fn ppo(&mut self, p: &Ppo, iters: u64) {
        // `entropy` is the `entropy` knob (`Algo::entropy`).
        // `advantage` is the update's (`update_section`).
        let Ppo { critic, entropy: _ } = p;
        self.critic(critic, iters);
        crate::ctx::set(self.cfg, "algorithm.filter_groups.enable", json!(false));
        crate::ctx::set(self.cfg, "trainer.v1.trainer_mode", json!("sync"));
    }
}

impl crate::report::Entry {
    /// Adds a place the field is written to besides its verl keys.
    pub fn also(&mut self, key: String, v: Json) -> &mut crate::report::Entry {
        self.keys.push((key, v));
        self
    }
}

/// Maps every field of RL phase `p` (node `ph.n`) into its run's config and agent-loop entry.
pub(crate) fn map_phase(ph: &mut Ph<'_, '_>, p: &RlPhase) {
    let RlPhase { run, rollout, update, algo } = p;
    ph.run_section(run);
    ph.rollout_section(rollout, update.reference);
    ph.update_section(update, rollout, algo, run.iters.0);
    ph.algo_section(algo, run.iters.0);
}
