//! What runs each module of a graph agent: the stage's trained policy for the modules a stage
//! or eval binds (`binds = ["modules.grounder.model", …]`), and for every other module its own
//! model, frozen: a local candle policy built once per model node, or an OpenAI-compatible
//! endpoint for `api(…)` models (key read from the environment variable the recipe names).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use wrl_plan::params;
use wrl_trainer::{Trainer, TrainerConfig};

use super::graph::{Brain, GraphSpec};
use crate::reward::client::{JudgeClient, JudgeConfig};

/// Frozen models, built on first use and shared by every episode.
#[derive(Default)]
pub struct Frozen {
    locals: BTreeMap<String, Arc<Mutex<Trainer>>>,
    /// Each `api(…)` model's client settings and context in tokens.
    apis: BTreeMap<String, (JudgeConfig, usize)>,
}

impl Frozen {
    /// Records the `api(model)` model of node `id`. Its `context` sizes the module prompts it
    /// reads (and the checker's E0404, with `image_tokens`); `temperature` is sent with every
    /// call.
    pub fn add_api(&mut self, id: &str, api: &params::Api) {
        let cfg = JudgeConfig::for_api(api);
        self.apis.insert(id.to_string(), (cfg, api.context.0 as usize));
    }

    /// The brain of every module of `spec`: for the modules `binds` names, its role's own
    /// trained weights in `roles` (a graph with `weights = per_role`) or else `trained` (when
    /// there is a trained policy); every other module runs its own model, frozen.
    pub fn brains(
        &mut self,
        spec: &GraphSpec,
        binds: &[String],
        trained: Option<&Arc<Mutex<Trainer>>>,
        roles: &BTreeMap<String, Arc<Mutex<Trainer>>>,
        models: &BTreeMap<String, TrainerConfig>,
    ) -> Result<Arc<BTreeMap<String, Brain>>, String> {
        let mut out = BTreeMap::new();
        for m in spec.modules.values() {
            let bound = binds.iter().any(|b| *b == format!("modules.{}.model", m.name));
            let brain = match roles.get(&m.role).or(trained) {
                Some(t) if bound => Brain::Local(t.clone()),
                _ => self.own(&m.model, models)?,
            };
            out.insert(m.name.clone(), brain);
        }
        Ok(Arc::new(out))
    }

    fn own(
        &mut self,
        model: &str,
        models: &BTreeMap<String, TrainerConfig>,
    ) -> Result<Brain, String> {
        if let Some((cfg, context)) = self.apis.get(model) {
            return JudgeClient::new(cfg.clone())
                .map(|c| Brain::Api(c, *context))
                .map_err(|e| format!("cannot reach `{model}`: {e}"));
        }
        if let Some(t) = self.locals.get(model) {
            return Ok(Brain::Local(t.clone()));
        }
        let cfg = models.get(model).ok_or_else(|| format!("nothing builds `{model}`"))?;
        let t = Trainer::new(cfg.clone()).map_err(|e| format!("cannot build `{model}`: {e}"))?;
        let t = Arc::new(Mutex::new(t));
        self.locals.insert(model.to_string(), t.clone());
        Ok(Brain::Local(t))
    }
}
