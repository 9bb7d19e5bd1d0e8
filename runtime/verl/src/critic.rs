//! An RL phase's `advantage` and a `ppo` phase's `critic` as verl keys:
//! `algorithm.adv_estimator` (`grpo`, or `gae` with `gamma` and `lam`; GiGPO refused, naming
//! verl-agent's keys) and verl's critic worker (its model, optimiser, value
//! clipping and warm-up), or the critic switched off.

use serde_json::json;
use wrl_plan::params::{self, OrGrpo, OrNone, OrOff};

use crate::ctx::E_UNMAPPED;
use crate::phase::Ph;

impl Ph<'_, '_> {
    pub(crate) fn advantage(&mut self, advantage: &OrGrpo<params::AdvantageObj>) {
        match advantage {
            OrGrpo::Grpo => {
                self.map("advantage", &[("algorithm.adv_estimator", json!("grpo"))]);
            }
            OrGrpo::Value(params::AdvantageObj::Gigpo(g)) => {
                let params::Gigpo { gamma, step_weight, norm, key: _ } = *g;
                let mode = match norm {
                    params::GigpoNorm::MeanNorm => "mean_norm",
                    params::GigpoNorm::MeanStdNorm => "mean_std_norm",
                };
                self.c
                    .not_mapped(
                        self.n,
                        "advantage",
                        "verl 0.9.1 has no step-level estimator: GiGPO is verl-agent's \
                         (`algorithm.adv_estimator=gigpo`), a fork of verl this lowering does not \
                         target",
                        format!(
                            "nothing: the job would train with episode-level advantages only, so it \
                             is refused; in verl-agent say `algorithm.adv_estimator=gigpo \
                             algorithm.gamma={gamma} algorithm.gigpo.step_advantage_w={step_weight} \
                             algorithm.gigpo.mode={mode}`"
                        ),
                    )
                    .refuse(E_UNMAPPED);
            }
            OrGrpo::Value(params::AdvantageObj::Gae(a)) => {
                let params::Gae { gamma, lambda } = *a;
                self.map(
                    "advantage",
                    &[
                        ("algorithm.adv_estimator", json!("gae")),
                        ("algorithm.gamma", json!(gamma)),
                        ("algorithm.lam", json!(lambda)),
                    ],
                )
                .note("verl's GAE over the response tokens, observation tokens skipped, whitened over the batch");
            }
        }
    }

    /// A critic started from the weights the stage starts from reads the actor's model path
    /// (later phases resume both from the previous run's checkpoint).
    pub(crate) fn critic(&mut self, critic: &OrNone<params::CriticObj>, iters: u64) {
        let Some(c) = critic.value().map(params::CriticObj::get) else {
            self.map("critic", &[("critic.enable", json!(false))]);
            return;
        };
        let params::Critic { init: from, lr, schedule, value_clip, warmup, optimizer } = c;
        let path = if *from == self.start {
            Some(json!("${actor_rollout_ref.model.path}"))
        } else {
            match self.c.d.get(from.id()) {
                Some(params::Params::Model(params::Model::Hf(h))) => Some(json!(h.id)),
                _ => None,
            }
        };
        let Some(path) = path else {
            self.c
                .not_mapped(
                    self.n,
                    "critic",
                    format!(
                        "the critic starts from `{from}`, which is neither the stage's own `init` \
                         nor a Hugging Face model: this job produces no weights verl could load \
                         for it"
                    ),
                    "nothing: the job would train without the critic, so it is refused",
                )
                .refuse(E_UNMAPPED);
            return;
        };
        let params::Optimizer { beta1, beta2, weight_decay, grad_clip } = optimizer;
        let clip = match value_clip {
            OrOff::Value(c) => *c,
            OrOff::Off => 1e9,
        };
        let grad = if *grad_clip > 0.0 { *grad_clip } else { 1e9 };
        let mut keys: Vec<(String, serde_json::Value)> = vec![
            ("critic.enable".into(), json!(true)),
            ("critic.model.path".into(), path),
            ("critic.optim.lr".into(), json!(lr)),
            ("critic.optim.betas".into(), json!([beta1, beta2])),
            ("critic.optim.weight_decay".into(), json!(weight_decay)),
            ("critic.optim.clip_grad".into(), json!(grad)),
            ("critic.cliprange_value".into(), json!(clip)),
            ("trainer.critic_warmup".into(), json!(warmup.0)),
        ];
        keys.extend(crate::knobs::schedule_keys("critic", schedule, iters));
        let keys: Vec<(&str, serde_json::Value)> =
            keys.iter().map(|(a, b)| (a.as_str(), b.clone())).collect();
        let e = self.map("critic", &keys);
        e.note(
            "verl's critic worker (a value head on the model), with the actor's ppo_epochs, \
             mini-batches and loss aggregation; value_clip off is a bound no value reaches",
        );
    }
}
