//! The knobs RL phases share, as verl keys: clipping, KL, PPO epochs and mini-batches, sampling,
//! level, schedule, optimiser, checkpoints, validation, masks and frozen parts. `phase.rs`
//! destructures each section of a phase and calls these.

use serde_json::{Value as Json, json};
use wrl_plan::params::{self, BatchSize, KlEstimator, Level, Optimizer, Range, Schedule};

use crate::ctx::E_UNMAPPED;
use crate::phase::{A, Ph, R, k};

impl Ph<'_, '_> {
    pub(crate) fn clip(&mut self, clip: &Range<f64>) {
        self.map(
            "clip.lo",
            &[(&k(A, "clip_ratio_low"), json!(clip.lo)), (&k(A, "clip_ratio"), json!(clip.lo))],
        );
        self.map("clip.hi", &[(&k(A, "clip_ratio_high"), json!(clip.hi))]);
    }

    /// The KL and its estimator: `mapped` where the phase has a `kl_estimator` field, written
    /// at its key without an entry where the algorithm fixes it.
    pub(crate) fn kl(&mut self, kl: f64, kl_in: params::KlIn, e: KlEstimator, mapped: bool) {
        let word = |e: KlEstimator| match e {
            KlEstimator::K1 => "k1",
            KlEstimator::K2 => "k2",
            KlEstimator::K3 => "low_var_kl",
        };
        match kl_in {
            params::KlIn::Loss => {
                self.map(
                    "kl",
                    &[
                        (&k(A, "use_kl_loss"), json!(kl > 0.0)),
                        (&k(A, "kl_loss_coef"), json!(kl)),
                        ("algorithm.use_kl_in_reward", json!(false)),
                    ],
                )
                .note(
                    "a KL loss term, as the candle trainer applies it; no reference model when 0",
                );
                self.map("kl_in", &[(&k(A, "use_kl_loss"), json!(kl > 0.0))]);
                if mapped {
                    self.map("kl_estimator", &[(&k(A, "kl_loss_type"), json!(word(e)))]);
                } else {
                    crate::ctx::set(self.cfg, &k(A, "kl_loss_type"), json!(word(e)));
                }
            }
            params::KlIn::Reward => {
                self.map(
                    "kl",
                    &[
                        (&k(A, "use_kl_loss"), json!(false)),
                        ("algorithm.use_kl_in_reward", json!(kl > 0.0)),
                        ("algorithm.kl_ctrl.type", json!("fixed")),
                        ("algorithm.kl_ctrl.kl_coef", json!(kl)),
                    ],
                )
                .note("a per-token penalty on the reward (fixed coefficient); no reference model when 0");
                self.map("kl_in", &[("algorithm.use_kl_in_reward", json!(kl > 0.0))]);
                // verl's reward penalty names its estimators `kl` (k1), `mse` (k2), `low_var_kl` (k3).
                let penalty = |e: KlEstimator| match e {
                    KlEstimator::K1 => "kl",
                    KlEstimator::K2 => "mse",
                    KlEstimator::K3 => "low_var_kl",
                };
                if mapped {
                    self.map("kl_estimator", &[("algorithm.kl_penalty", json!(penalty(e)))]);
                } else {
                    crate::ctx::set(self.cfg, "algorithm.kl_penalty", json!(penalty(e)));
                }
            }
        }
    }

    pub(crate) fn ppo_epochs_and_batch(
        &mut self,
        ppo_epochs: u32,
        mini_batch: BatchSize,
        prompts: u32,
        group: u32,
    ) {
        self.map("ppo_epochs", &[(&k(A, "ppo_epochs"), json!(ppo_epochs))]);
        let key = k(A, "ppo_mini_batch_size");
        // verl counts mini-batches in prompts: a count of prompts is written as it is.
        let n = match mini_batch {
            BatchSize::Prompts(p) => {
                self.map("mini_batch", &[(&key, json!(p))])
                    .note("verl counts mini-batches in prompts, each with its n rows");
                return;
            }
            BatchSize::Trajectories(n) | BatchSize::Turns(n) | BatchSize::Samples(n) => n,
        };
        let exact = n as f64 / group.max(1) as f64;
        // At most a batch, where the recipe says how large one is.
        let prompts_known = !self.c.d.is_unknown(&self.n.id, "prompts");
        let most = if prompts_known { prompts.max(1) } else { u32::MAX };
        let v = (exact.round() as u32).clamp(1, most);
        let e = self.map("mini_batch", &[(&key, json!(v))]);
        if (v as f64 - exact).abs() > 1e-9 {
            e.note(format!(
                "verl counts mini-batches in prompts (× n rows each) and at most a batch: \
                 {mini_batch} / group {group} ≈ {exact:.2}, written {v}"
            ));
        } else {
            e.note(format!(
                "verl counts mini-batches in prompts, each with its n rows: {mini_batch} / group \
                 {group}"
            ));
        }
    }

    pub(crate) fn sampling(&mut self, temperature: f64, top_p: f64) {
        self.map("temperature", &[(&k(R, "temperature"), json!(temperature))]);
        self.map("top_p", &[(&k(R, "top_p"), json!(top_p)), (&k(R, "top_k"), json!(-1))])
            .note("top_k -1: the whole distribution, as `wrlc run` samples");
    }

    pub(crate) fn level(&mut self, l: Level) {
        let (w, note) = match l {
            Level::Turn => (
                "turn",
                "one training row per turn (the agent loop returns a list of outputs, each turn's prompt rebuilt as the agent sees it); verl copies the trajectory's reward to every row and computes GRPO advantages per trajectory",
            ),
            Level::Trajectory => (
                "trajectory",
                "one row per episode: assistant tokens trained, observation tokens masked",
            ),
        };
        self.al("level", &[("level", json!(w))]).note(note);
    }

    pub(crate) fn schedule(&mut self, s: &Schedule, iters: u64) {
        let later = self.run.resumes.is_some();
        let keys = schedule_keys(A, s, iters);
        let cosine = matches!(s, Schedule::Cosine { .. });
        let keys: Vec<(&str, Json)> = keys.iter().map(|(a, b)| (a.as_str(), b.clone())).collect();
        let e = self.map("schedule", &keys);
        e.note("warm-up in RL steps of this phase, as wrl counts it");
        if later && cosine {
            e.note("verl's cosine decays over the run's absolute total_training_steps, so a resumed phase's decay starts part-way: an approximation of wrl's per-phase cosine");
        }
    }

    pub(crate) fn optimizer(&mut self, o: &Optimizer) {
        let Optimizer { beta1, beta2, weight_decay, grad_clip } = o;
        let betas = json!([beta1, beta2]);
        self.map("optimizer.beta1", &[(&k(A, "optim.betas"), betas.clone())]);
        self.map("optimizer.beta2", &[(&k(A, "optim.betas"), betas)]);
        self.map("optimizer.weight_decay", &[(&k(A, "optim.weight_decay"), json!(weight_decay))]);
        let clip = if *grad_clip > 0.0 { *grad_clip } else { 1e9 };
        let e = self.map("optimizer.grad_clip", &[(&k(A, "optim.clip_grad"), json!(clip))]);
        if *grad_clip <= 0.0 {
            e.note("0 means no clipping in wrl; verl always clips, so a bound no gradient reaches");
        }
    }

    /// The KL reference's weights, task replay and generated tasks: verl's reference is the
    /// model the stage's runs load, and its dataloader reads the dataset's tasks in order.
    pub(crate) fn reference_and_replay(
        &mut self,
        reference: params::Reference,
        replay: &params::OrOff<params::ReplayObj>,
        generate: &params::OrOff<params::GenerationObj>,
    ) {
        match generate {
            params::OrOff::Off => {
                self.c.implied(self.n, "generate", "the dataset's tasks only");
            }
            params::OrOff::Value(_) => {
                self.c
                    .not_mapped(
                        self.n,
                        "generate",
                        "verl's dataloader reads a fixed parquet file of tasks; nothing in its trainer makes new tasks from failed ones or scores them with the critic",
                        "nothing: the job would train on the dataset's tasks only, so it is refused",
                    )
                    .refuse(E_UNMAPPED);
            }
        }
        match (reference, self.run.phase) {
            (params::Reference::Init, _) | (params::Reference::Phase, 1) => {
                self.c.implied(self.n, "reference", "verl's reference model is the one the stage starts from (actor_rollout_ref.model.path)");
            }
            (params::Reference::Phase, _) => {
                self.c
                    .not_mapped(
                        self.n,
                        "reference",
                        "verl loads the reference from the stage's starting model in every run; this job does not write the previous phase's weights in Hugging Face layout for it",
                        "nothing: the KL would be to the wrong weights, so it is refused",
                    )
                    .refuse(E_UNMAPPED);
            }
        }
        match replay {
            params::OrOff::Off => {
                self.c.implied(self.n, "replay", "fresh tasks only, in the dataset's order");
            }
            params::OrOff::Value(_) => {
                self.c
                    .not_mapped(
                        self.n,
                        "replay",
                        "verl's dataloader reads each run's tasks in order; it has no buffer of earlier tasks",
                        "nothing: the job would train on fresh tasks only, so it is refused",
                    )
                    .refuse(E_UNMAPPED);
            }
        }
    }

    /// `branching` (ARPO's entropy-guided tree rollouts): verl 0.9.1's rollout samples `n`
    /// whole trajectories per prompt; ARPO's fork adds the tree in its own rollout worker.
    pub(crate) fn branching(&mut self, branching: &params::OrOff<params::BranchingObj>) {
        match branching {
            params::OrOff::Off => {
                self.c.implied(
                    self.n,
                    "branching",
                    "`group` whole trajectories per prompt (actor_rollout_ref.rollout.n)",
                );
            }
            params::OrOff::Value(_) => {
                self.c
                    .not_mapped(
                        self.n,
                        "branching",
                        "verl 0.9.1's rollout samples whole trajectories; entropy-guided branching is ARPO's fork's (actor_rollout_ref.rollout.initial_rollouts, beam_size, branch_probability, entropy_weight in its own vLLM rollout), which this lowering does not target",
                        "nothing: the job would sample `group` independent trajectories, so it is refused",
                    )
                    .refuse(E_UNMAPPED);
            }
        }
    }

    pub(crate) fn checkpoints(&mut self, every: u64) {
        let last = self.run.last_step;
        let freq = if every > 0 { every } else { last };
        self.map("checkpoint_every", &[("trainer.save_freq", json!(freq)), ("trainer.default_local_dir", json!(format!("checkpoints/{}", self.run.name)))])
            .note("verl also saves the last step whenever save_freq > 0, which the next phase resumes from (with -1 it saves nothing)");
    }

    pub(crate) fn validate(&mut self, v: Option<&params::Validation>) {
        match v {
            None => {
                self.c.implied(self.n, "validate", "no validation during the phase; evaluations after the stage run at its end (trainer.test_freq)");
            }
            Some(v) => {
                let vk = "actor_rollout_ref.rollout.val_kwargs";
                let tk = if v.top_k == 0 { -1 } else { i64::from(v.top_k) };
                let (t, p, k, do_sample, topk, n) = (
                    format!("{vk}.temperature"),
                    format!("{vk}.top_p"),
                    format!("{vk}.top_k"),
                    format!("{vk}.do_sample"),
                    tk,
                    format!("{vk}.n"),
                );
                self.map(
                    "validate",
                    &[
                        ("trainer.test_freq", json!(v.every.0)),
                        ("trainer.val_before_train", json!(v.before_training)),
                        ("data.val_files", json!(v.tasks.id())),
                        (&t, json!(v.temperature)),
                        (&do_sample, json!(v.temperature > 0.0)),
                        (&p, json!(v.top_p)),
                        (&k, json!(topk)),
                        (&n, json!(v.k)),
                    ],
                )
                .note("every N steps (absolute; verl also validates at the last step) on the validation tasks; verl reports its own metrics (val-core/…), and its val_kwargs have no response budget or repetition penalty of their own: validation replies get the rollout's response length and no penalty");
                // verl groups validation metrics by each row's `data_source`, which this
                // lowering sets to the dataset's name (tasks.rs), as for an evaluation's `by`.
                if let params::OrNone::Value(col) = &v.by {
                    let why = format!(
                        "verl's validation reports per `data_source` (val-core/<data_source>/…), \
                         which this lowering sets to the validation dataset's name; its rows do \
                         not carry the file's `{col}` column that `by` splits on"
                    );
                    self.c
                        .not_mapped(self.n, "validate", why, "one result for the whole validation")
                        .refuse(E_UNMAPPED);
                }
            }
        }
    }

    /// verl's multi-turn `response_mask` trains the model's replies only.
    pub(crate) fn mask(&mut self, mask: &[params::MaskPart]) {
        let missing = params::MaskPart::left_out(mask);
        if missing.is_empty() {
            self.c.implied(self.n, "mask", "verl's response_mask trains the replies only");
        } else {
            let what = format!(
                "verl's multi-turn loss trains the model's replies only; it cannot train {}",
                missing.join(", ")
            );
            self.c.not_mapped(self.n, "mask", &what, "the replies only").refuse(E_UNMAPPED);
        }
    }

    pub(crate) fn frozen(&mut self, frozen: &[params::FrozenPart]) {
        if frozen.is_empty() {
            self.c.implied(self.n, "frozen", "nothing frozen: verl trains every parameter");
        } else {
            self.c.not_mapped(self.n, "frozen", "verl 0.9.1's FSDP engine trains every parameter: `actor.freeze_vision_tower` is declared in its config but never read", "the whole model is trained").refuse(E_UNMAPPED);
        }
    }
    /// A stage's LoRA adapters: rank, alpha and targets to verl's model keys (PEFT's
    /// `LoraConfig`, which verl builds without a dropout: 0), a saved adapter to
    /// `lora_adapter_path`; a dropout, or the adapters of the stage before, refused.
    pub(crate) fn lora(&mut self, lora: &params::OrOff<params::LoraObj>) {
        const M: &str = "actor_rollout_ref.model";
        let Some(l) = lora.value().map(params::LoraObj::get) else {
            self.map("lora", &[(&format!("{M}.lora_rank"), json!(0))]);
            return;
        };
        let targets: Vec<&str> = l.targets.iter().map(|t| t.word()).collect();
        let mut keys = vec![
            (format!("{M}.lora_rank"), json!(l.rank)),
            (format!("{M}.lora_alpha"), json!(l.alpha)),
            (format!("{M}.target_modules"), json!(targets)),
        ];
        if let params::OrNone::Value(dir) = &l.adapter {
            keys.push((format!("{M}.lora_adapter_path"), json!(dir)));
        }
        let keys: Vec<(&str, Json)> = keys.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        self.map("lora", &keys);
        if l.dropout != 0.0 {
            let why = "verl 0.9.1 builds PEFT's LoraConfig without `lora_dropout` (0)";
            self.c
                .not_mapped(self.n, "lora", why, "adapters trained without dropout")
                .refuse(E_UNMAPPED);
        }
        if l.start == params::LoraStart::Init {
            let why = "verl 0.9.1 starts a job's adapters fresh or from `lora_adapter_path`, not from the adapters of the stage before";
            self.c
                .not_mapped(self.n, "lora", why, "fresh adapters over the merged weights")
                .refuse(E_UNMAPPED);
        }
    }
}

/// A learning-rate schedule over a phase's `iters` RL steps as the keys of the optimiser under
/// `prefix` (the actor's, or `critic`): verl's scheduler type, warm-up steps and cosine floor.
pub(crate) fn schedule_keys(prefix: &str, s: &Schedule, iters: u64) -> Vec<(String, Json)> {
    let warm = |w: f64| if w > 0.0 { ((w * iters as f64).round() as i64).max(1) } else { -1 };
    let (kind, warmup, floor) = match s {
        Schedule::Constant { warmup } => ("constant", warmup.0, None),
        Schedule::Cosine { warmup, floor } => ("cosine", warmup.0, Some(*floor)),
    };
    let mut keys = vec![
        (k(prefix, "optim.lr_scheduler_type"), json!(kind)),
        (k(prefix, "optim.lr_warmup_steps"), json!(warm(warmup))),
        (k(prefix, "optim.lr_warmup_steps_ratio"), json!(0.0)),
    ];
    if let Some(f) = floor {
        keys.push((k(prefix, "optim.min_lr_ratio"), json!(f)));
    }
    keys
}
