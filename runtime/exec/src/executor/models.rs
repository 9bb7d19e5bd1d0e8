//! Model nodes and the trainers built from them: a tiny transformer's or a Hugging Face model's
//! configuration (built into a policy when a stage first trains it), an `api(…)` model recorded for the graph modules and
//! judges that call it.

use std::sync::{Arc, Mutex};

use wrl_plan::Node;
use wrl_plan::params::{self, Model};
use wrl_trainer::{Critic, OptimConfig, PolicyConfig, Trainer, TrainerConfig};

use super::Executor;
use crate::error::{Fault, RunError};

impl<'a> Executor<'a> {
    pub(super) fn load_model(&mut self, node: &Node, m: &Model) -> Result<(), RunError> {
        match m {
            Model::Api(api) => {
                self.built.frozen.add_api(&node.id, api);
                self.built.apis.insert(node.id.clone(), api.clone());
            }
            Model::Tiny(t) => {
                let policy = crate::preflight::footprint::tiny_config(t);
                let cfg = TrainerConfig {
                    policy: PolicyConfig::Tiny(policy),
                    optim: OptimConfig::default(),
                    seed: self.seed(t.seed),
                    device: crate::preflight::device_choice(t.device),
                };
                self.built.models.insert(node.id.clone(), cfg);
            }
            Model::Hf(h) => {
                // The preflight refused what this would; the first reason, should files change.
                let policy = super::hf::policy_of(node, h).map_err(|mut e| e.remove(0))?;
                let cfg = TrainerConfig {
                    policy,
                    optim: OptimConfig::default(),
                    // A pretrained model's weights are its own; the seed is the sampler's.
                    seed: self.seed(0),
                    device: crate::preflight::device_choice(h.device),
                };
                let dtype = cfg.policy.precision();
                if dtype != wrl_trainer::precision::Precision::F32 && cfg.device.is_cpu() {
                    self.say(&format!(
                        "note: model `{m}` trains in {d} on the CPU, where every {d} product is \
                         widened to f32 (2.5–8× slower than f32, docs/benchmarks.md); \
                         `--set '{m}.dtype=f32'` trains in f32",
                        m = node.decl,
                        d = dtype.name()
                    ));
                }
                self.built.models.insert(node.id.clone(), cfg);
            }
        }
        Ok(())
    }

    /// The trainer a node starts from: a checkpoint's, or a fresh one from a model node, with
    /// `optim`.
    pub(super) fn trainer_from(
        &mut self,
        input: &str,
        optim: OptimConfig,
    ) -> Result<Arc<Mutex<Trainer>>, RunError> {
        if let Some(t) = self.built.trainers.get(input) {
            t.lock().map_err(|_| RunError::poisoned())?.set_optim(optim);
            return Ok(t.clone());
        }
        let Some(mut cfg) = self.built.models.get(input).cloned() else {
            return Err(RunError::plan(format!("nothing produced `{input}`")));
        };
        cfg.optim = optim;
        let t = Trainer::new(cfg).map_err(|e| RunError::model("cannot build the policy", e))?;
        Ok(Arc::new(Mutex::new(t)))
    }
}

impl Executor<'_> {
    /// PPO's critic for the stage `node` trains: a copy of the weights `critic.init` names (a
    /// trainer already built for it is read, never changed) with a fresh value head, checked
    /// against the policy it scores (`(vocabulary, context)`): the same vocabulary and at least
    /// its context.
    pub(super) fn critic_from(
        &mut self,
        node: &Node,
        critic: &params::Critic,
        (pv, pc): (usize, usize),
    ) -> Result<Critic, RunError> {
        // Its `schedule` sets the rate each iteration (`rl.rs`); this is the first's.
        let params::Critic { init, lr, schedule: _, value_clip: _, warmup: _, optimizer } = critic;
        let optim = super::settings::optim(
            *lr,
            optimizer,
            &params::Schedule::Constant { warmup: params::Ratio(0.0) },
            0,
        );
        let critic = match self.built.trainers.get(init.id()) {
            Some(t) => Critic::from_policy(&*t.lock().map_err(|_| RunError::poisoned())?, optim),
            // A model node: the network its trainer would start from (the same seed).
            None => {
                let Some(cfg) = self.built.models.get(init.id()).cloned() else {
                    return Err(RunError::plan(format!("nothing produced `{init}`")));
                };
                Trainer::new(cfg).and_then(|t| Critic::from_trainer(t, optim))
            }
        }
        .map_err(|e| RunError::model("cannot build the critic", e))?;
        let (cv, cc) = (critic.model().vocab(), critic.model().context());
        if cv != pv || cc < pc {
            let what = if cv != pv {
                format!("a vocabulary of {cv} tokens, the policy's has {pv}")
            } else {
                format!("a context of {cc} tokens, shorter than the policy's {pc}")
            };
            return Err(RunError::new(
                Fault::Model,
                format!("stage `{}`: the critic's network `{init}` has {what}", node.decl),
            )
            .help("initialise the critic from the policy's model or one of its stages (`critic = critic(policy)`), so it reads the policy's tokens")
            .at(node, Some("critic"), "scores the policy's tokens"));
        }
        Ok(critic)
    }
}
