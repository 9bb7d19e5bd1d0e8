//! What an RL phase's fields mean to verl: each of `grpo`, `dapo` and `ppo` is destructured
//! without `..`, so a field added to a phase type does not compile until it is mapped here (to a
//! key of the phase's verl run or of its agent-loop entry) or said to be not mapped. Knobs an
//! algorithm does not have (DAPO's KL estimator, PPO's loss aggregation) are written as the
//! candle trainer fixes them (`wrl-exec`'s `executor::settings`).

use serde_json::{Value as Json, json};
use wrl_plan::Node;
use wrl_plan::params::{self, Async, PolicyLoss, RewardRef, RlPhase};

use crate::ctx::{Ctx, E_UNMAPPED, Run};
use crate::groups::{drop_groups, dynamic, overlong_shaping, refill_groups};

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

    pub(crate) fn map(&mut self, field: &str, keys: &[(&str, Json)]) -> &mut crate::Entry {
        self.c.map(self.cfg, self.n, field, keys)
    }

    pub(crate) fn al(&mut self, field: &str, keys: &[(&str, Json)]) -> &mut crate::Entry {
        let label = self.al_label();
        self.c.wrl_in(self.al, &label, self.n, field, keys)
    }

    /// `iters = N epochs`: the planner wrote the iterations; say so beside them.
    fn epochs(&mut self, epochs: Option<params::Epochs>, iters: u64) {
        if let Some(e) = epochs {
            self.c.implied(
                self.n,
                "epochs",
                format!("{e} over the task set, written as `iters` ({iters} steps)"),
            );
        }
    }

    /// The fields every RL phase has.
    #[allow(clippy::too_many_arguments)]
    fn common(
        &mut self,
        iters: u64,
        horizon: u32,
        lr: f64,
        prompts: u32,
        group: u32,
        reward: &RewardRef,
        exclude: &[params::FailureClass],
        seed: u64,
    ) {
        let run = self.run.clone();
        let first = run.resumes.is_none();
        // `init`, `tasks`, `agent`: where the run starts and what it runs.
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
        self.map("iters", &[("trainer.total_training_steps", json!(run.last_step))]).note(format!(
            "absolute: verl counts steps from the resumed one, so this run does {iters} \
                 steps after step {}",
            run.last_step.saturating_sub(iters)
        ));
        let turns = self.max_turns.map_or(horizon, |t| t.min(horizon));
        let label = self.al_label();
        self.c.rewrite(self.al, self.n, "horizon", &[("max_steps", json!(turns))]);
        self.map("horizon", &[(&k(R, "multi_turn.max_assistant_turns"), json!(turns))])
            .also(format!("{label}max_steps"), json!(turns))
            .note("capped by the agent's `max_turns`; the env service ends the episode there too");
        self.map("lr", &[(&k(A, "optim.lr"), json!(lr))]);
        for f in ["stage", "phase", "phases"] {
            self.c.implied(
                self.n,
                f,
                format!("the run's name `{}` and its place in launch.sh's order", run.name),
            );
        }
        let resume = if first {
            self.map("resume", &[("trainer.resume_mode", json!("auto"))])
                .note("fresh: nothing to resume on the first launch; a relaunch continues the run's own last checkpoint")
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
            )
        };
        let _ = resume;
        self.c.implied(self.n, "binds", "the agent's policy is the model verl trains");
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
        let classes: Vec<&str> = exclude.iter().map(|c| c.word()).collect();
        self.c
            .wrl(self.n, "exclude", &[("env service: excluded classes", json!(classes))])
            .note("an excluded episode's rows get response_mask 0 (no gradient); its reward 0 still enters its group's mean and std in verl's GRPO");
        self.map("seed", &[("data.seed", json!(seed)), (&k(A, "data_loader_seed"), json!(seed))])
            .note(
                "verl seeds its data order; rollouts are not seeded per episode as in `wrlc run`",
            );
    }
}

impl crate::Entry {
    /// Adds a place the field is written to besides its verl keys.
    pub fn also(&mut self, key: String, v: Json) -> &mut crate::Entry {
        self.keys.push((key, v));
        self
    }
}

/// Maps every field of RL phase `p` (node `ph.n`) into its run's config and agent-loop entry.
pub(crate) fn map_phase(ph: &mut Ph<'_, '_>, p: &RlPhase) {
    let fixed = |ph: &mut Ph<'_, '_>, key: &str, v: Json| crate::ctx::set(ph.cfg, key, v);
    match p {
        RlPhase::Grpo(g) => {
            let params::GrpoPhase {
                init: _,
                tasks: _,
                agent: _,
                epochs,
                iters,
                horizon,
                lr,
                stage: _,
                phase: _,
                phases: _,
                resume: _,
                binds: _,
                prompts,
                group,
                reward,
                process_reward,
                clip,
                dual_clip,
                kl,
                kl_in,
                kl_estimator,
                entropy,
                ppo_epochs,
                mini_batch,
                temperature,
                top_p,
                drop,
                std_normalize,
                loss_agg,
                policy_loss,
                kl_cov_ratio,
                level,
                exclude,
                warn_excluded: _,
                schedule,
                optimizer,
                trainable,
                asynchronous,
                process_mix,
                refill,
                ppo_kl_coef,
                frozen,
                mask,
                validate,
                checkpoint_every,
                reference,
                replay,
                generate,
                seed,
            } = g;
            ph.reference_and_replay(*reference, replay, generate);
            ph.common(iters.0, horizon.0, *lr, *prompts, *group, reward, exclude, *seed);
            ph.epochs(*epochs, iters.0);
            match process_reward {
                None => {
                    ph.c.implied(ph.n, "process_reward", "none");
                }
                Some(_) => {
                    ph.c.not_mapped(ph.n, "process_reward", "verl gives every turn of a trajectory the final turn's reward, so a step's process reward cannot reach the turns of its step", "the env service adds the episode's process rewards to its reward").refuse(E_UNMAPPED);
                }
            }
            ph.clip(clip);
            let c = dual_clip.unwrap_or(1e9);
            let e = ph.map("dual_clip", &[(&k(A, "clip_ratio_c"), json!(c))]);
            if dual_clip.is_none() {
                e.note("no dual clip: verl always applies one, so a bound no ratio reaches");
            }
            ph.kl(*kl, *kl_in, Some(*kl_estimator));
            ph.map("entropy", &[(&k(A, "entropy_coeff"), json!(entropy))]);
            ph.ppo_epochs_and_batch(*ppo_epochs, *mini_batch, *prompts, *group);
            ph.sampling(*temperature, *top_p);
            drop_groups(ph, *drop);
            ph.map("std_normalize", &[("algorithm.norm_adv_by_std_in_grpo", json!(std_normalize))]);
            ph.loss_agg(*loss_agg);
            let (mode, coef) = match policy_loss {
                PolicyLoss::Clip => ("vanilla", None),
                PolicyLoss::KlCov => ("kl_cov", Some(*ppo_kl_coef)),
            };
            let mut keys = vec![(k(A, "policy_loss.loss_mode"), json!(mode))];
            if let Some(c) = coef {
                keys.push((k(A, "policy_loss.ppo_kl_coef"), json!(c)));
            }
            let keys: Vec<(&str, Json)> =
                keys.iter().map(|(a, b)| (a.as_str(), b.clone())).collect();
            ph.map("policy_loss", &keys);
            ph.map("kl_cov_ratio", &[(&k(A, "policy_loss.kl_cov_ratio"), json!(kl_cov_ratio))]);
            if *policy_loss == PolicyLoss::KlCov {
                ph.c.wrl(
                    ph.n,
                    "ppo_kl_coef",
                    &[(&k(A, "policy_loss.ppo_kl_coef"), json!(ppo_kl_coef))],
                );
            } else {
                ph.c.implied(ph.n, "ppo_kl_coef", "used only by `policy_loss = kl_cov`");
            }
            match (process_reward, process_mix) {
                (None, _) => ph.c.implied(ph.n, "process_mix", "no process reward"),
                (Some(_), _) => ph.c.implied(ph.n, "process_mix", "see `process_reward`"),
            };
            refill_groups(ph, refill, *drop);
            ph.level(*level);
            ph.schedule(schedule, iters.0);
            ph.optimizer(optimizer);
            if trainable.is_empty() {
                ph.c.implied(ph.n, "trainable", "every trainable module: the ReAct agent's policy");
            } else {
                ph.c.not_mapped(
                    ph.n,
                    "trainable",
                    "verl trains one policy; these are roles of a module graph",
                    "the job trains the one policy verl loads",
                )
                .refuse(E_UNMAPPED);
            }
            let Async { staleness, sync_every, partial_rollout } = asynchronous;
            if *partial_rollout {
                ph.c.not_mapped(ph.n, "async.partial_rollout", "verl 0.9.1's synchronous and separate-async trainers finish every rollout with the weights it started with", "episodes interrupted by a sync restart with the new weights").refuse(E_UNMAPPED);
            } else {
                ph.c.implied(
                    ph.n,
                    "async.partial_rollout",
                    "off: an episode runs on the weights it started with",
                );
            }
            if staleness.0 == 0.0 {
                ph.map("async.staleness", &[("trainer.v1.trainer_mode", json!("sync"))]);
            } else {
                ph.c.not_mapped(ph.n, "async.staleness", "verl 0.9.1's asynchronous trainers bound off-policy data by steps (v1.sampler.max_off_policy_threshold), not by a fraction of the batch", "nothing: set `staleness = 0%` for a synchronous run").refuse(E_UNMAPPED);
            }
            if *sync_every == 1 {
                ph.map("async.sync_every", &[("trainer.v1.trainer_mode", json!("sync"))])
                    .note("weights reach the rollout after every step");
            } else {
                ph.map(
                    "async.sync_every",
                    &[
                        ("trainer.v1.trainer_mode", json!("separate_async")),
                        ("trainer.v1.separate_async.parameter_sync_step", json!(sync_every)),
                    ],
                )
                .note("verl's separate-async trainer syncs the rollout's weights every N steps");
            }
            ph.validate(validate);
            ph.frozen(frozen);
            ph.mask(mask);
            ph.checkpoints(checkpoint_every.0);
        }
        RlPhase::Dapo(d) => {
            let params::DapoPhase {
                init: _,
                tasks: _,
                agent: _,
                epochs,
                iters,
                horizon,
                lr,
                stage: _,
                phase: _,
                phases: _,
                resume: _,
                binds: _,
                prompts,
                group,
                reward,
                clip,
                kl,
                kl_in,
                entropy,
                ppo_epochs,
                mini_batch,
                temperature,
                top_p,
                dynamic_sampling,
                overlong,
                loss_agg,
                level,
                exclude,
                warn_excluded: _,
                schedule,
                optimizer,
                frozen,
                mask,
                validate,
                checkpoint_every,
                reference,
                replay,
                generate,
                seed,
            } = d;
            ph.reference_and_replay(*reference, replay, generate);
            ph.common(iters.0, horizon.0, *lr, *prompts, *group, reward, exclude, *seed);
            ph.epochs(*epochs, iters.0);
            ph.clip(clip);
            fixed(ph, &k(A, "clip_ratio_c"), json!(1e9));
            ph.kl(*kl, *kl_in, None);
            ph.map("entropy", &[(&k(A, "entropy_coeff"), json!(entropy))]);
            ph.ppo_epochs_and_batch(*ppo_epochs, *mini_batch, *prompts, *group);
            ph.sampling(*temperature, *top_p);
            dynamic(ph, dynamic_sampling);
            overlong_shaping(ph, overlong);
            ph.loss_agg(*loss_agg);
            fixed(ph, "algorithm.norm_adv_by_std_in_grpo", json!(true));
            fixed(ph, &k(A, "policy_loss.loss_mode"), json!("vanilla"));
            ph.level(*level);
            ph.schedule(schedule, iters.0);
            ph.optimizer(optimizer);
            fixed(ph, "trainer.v1.trainer_mode", json!("sync"));
            ph.validate(validate);
            ph.frozen(frozen);
            ph.mask(mask);
            ph.checkpoints(checkpoint_every.0);
        }
        RlPhase::Ppo(p) => {
            let params::PpoPhase {
                init: _,
                tasks: _,
                agent: _,
                epochs,
                iters,
                horizon,
                lr,
                stage: _,
                phase: _,
                phases: _,
                resume: _,
                binds: _,
                prompts,
                group,
                reward,
                advantage,
                critic,
                clip,
                kl,
                kl_in,
                ppo_epochs,
                mini_batch,
                temperature,
                top_p,
                exclude,
                warn_excluded: _,
                schedule,
                optimizer,
                frozen,
                mask,
                checkpoint_every,
                reference,
                replay,
                generate,
                seed,
            } = p;
            ph.reference_and_replay(*reference, replay, generate);
            ph.common(iters.0, horizon.0, *lr, *prompts, *group, reward, exclude, *seed);
            ph.epochs(*epochs, iters.0);
            ph.clip(clip);
            // wrl's `ppo`: several epochs over old log-probs with GRPO or GAE advantages, no
            // dual clip, no entropy bonus, token-mean loss, one sample per turn.
            ph.advantage(advantage);
            ph.critic(critic);
            fixed(ph, &k(A, "clip_ratio_c"), json!(1e9));
            ph.kl(*kl, *kl_in, None);
            fixed(ph, &k(A, "entropy_coeff"), json!(0));
            ph.ppo_epochs_and_batch(*ppo_epochs, *mini_batch, *prompts, *group);
            ph.sampling(*temperature, *top_p);
            fixed(ph, "algorithm.filter_groups.enable", json!(false));
            fixed(ph, "algorithm.norm_adv_by_std_in_grpo", json!(true));
            fixed(ph, &k(A, "loss_agg_mode"), json!("token-mean"));
            fixed(ph, &k(A, "policy_loss.loss_mode"), json!("vanilla"));
            crate::ctx::set(ph.al, "level", json!("turn"));
            ph.schedule(schedule, iters.0);
            ph.optimizer(optimizer);
            fixed(ph, "trainer.v1.trainer_mode", json!("sync"));
            ph.frozen(frozen);
            ph.mask(mask);
            ph.checkpoints(checkpoint_every.0);
        }
    }
}
