//! A stage's LoRA adapters on the trainer (`lora.rs`): attached fresh or from a PEFT directory,
//! continued from the stage before, or merged into the weights when a stage trains without
//! them; saved with a checkpoint and restored by a resume.

use std::path::{Path, PathBuf};

use crate::error::{Result, config_err};
use crate::lora::{self, LoraSpec};
use crate::models::{Model, PolicyConfig};
use crate::trainer::Trainer;

/// Where a stage's adapters start.
#[derive(Debug, Clone, PartialEq)]
pub enum LoraStart {
    /// New adapters (A drawn from the seed, B zero) over the current weights, the adapters
    /// there before merged into them.
    Fresh,
    /// The adapters the model holds (same rank and targets).
    Init,
    /// The adapters of a PEFT directory, over the current weights.
    Saved(PathBuf),
}

impl Trainer {
    /// The policy's adapters from now on: `None` merges any into the weights and trains every
    /// unfrozen parameter; `Some` trains the adapters only, starting as `start` says. Adapter
    /// draws use `seed`, so a stage's adapters do not depend on what ran before it.
    pub fn set_lora(
        &mut self,
        spec: Option<&LoraSpec>,
        start: &LoraStart,
        seed: u64,
    ) -> Result<()> {
        let Model::Qwen(m) = &mut self.model else {
            return match spec {
                Some(_) => Err(config_err("LoRA adapters need a Hugging Face (`hf`) policy")),
                None => Ok(()),
            };
        };
        let before: Vec<String> = m.params.iter().map(|(n, _)| n.clone()).collect();
        match (spec, &m.lora) {
            (Some(s), Some(cur)) if *start == LoraStart::Init => {
                if cur.rank != s.rank || cur.targets != s.targets {
                    return Err(config_err(format!(
                        "LoRA `start = init`: the adapters there have rank {} on [{}], the stage's rank {} on [{}]",
                        cur.rank,
                        cur.targets.join(", "),
                        s.rank,
                        s.targets.join(", ")
                    )));
                }
            }
            (Some(_), None) if *start == LoraStart::Init => {
                return Err(config_err("LoRA `start = init`: the weights there have no adapters"));
            }
            (new, cur) => {
                if let Some(cur) = cur {
                    lora::merge_away(&mut m.params, cur)?;
                    // New adapters under the same names start with no moments of the old.
                    let old: Vec<String> =
                        before.iter().filter(|n| lora::is_adapter(n)).cloned().collect();
                    self.optimizer.forget(&old);
                }
                if let Some(s) = new {
                    let mut rng = crate::rng::rng_from_seed(crate::rng::mix(seed, 0x10_2A));
                    lora::attach(&mut m.params, &m.config, s, &mut rng)?;
                    if let LoraStart::Saved(dir) = start {
                        lora::load_peft(dir, &m.params, s)?;
                    }
                }
            }
        }
        let attached_at = m.lora.as_ref().map(|l| l.base_step);
        let keep = *start == LoraStart::Init;
        let step = self.step;
        let spec = spec.map(|s| LoraSpec {
            base_step: if keep { attached_at.unwrap_or(step) } else { step },
            ..s.clone()
        });
        let spec = spec.as_ref();
        m.lora = spec.cloned();
        if spec.is_some() {
            lora::freeze_base(&mut m.params)?;
        }
        // No optimiser state for what no longer trains, or is gone.
        let idle: Vec<String> =
            before.into_iter().filter(|n| !m.params.contains(n) || m.params.is_frozen(n)).collect();
        self.optimizer.forget(&idle);
        match &mut self.config.policy {
            PolicyConfig::Qwen2(src) | PolicyConfig::Qwen3(src) | PolicyConfig::Qwen3Vl(src) => {
                src.lora = spec.cloned()
            }
            PolicyConfig::Tiny(_) => {}
        }
        *self.decode.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
        Ok(())
    }

    /// The policy's adapters, if it has any.
    pub fn lora(&self) -> Option<&LoraSpec> {
        match &self.model {
            Model::Qwen(m) => m.lora.as_ref(),
            Model::Tiny(_) => None,
        }
    }

    /// Writes the adapters into checkpoint `dir`: PEFT's layout under `adapter/` (the base model
    /// named by the policy's source) and the adapted layers' own weights.
    pub(crate) fn save_lora(&self, dir: &Path) -> Result<()> {
        let (
            Model::Qwen(m),
            PolicyConfig::Qwen2(src) | PolicyConfig::Qwen3(src) | PolicyConfig::Qwen3Vl(src),
        ) = (&self.model, &self.config.policy)
        else {
            return Ok(());
        };
        let Some(spec) = &m.lora else { return Ok(()) };
        // Over the source model, its path; over trained weights, the checkpoint of that step
        // holds them merged (`wrl_base_step` in the config says which).
        let base = src.path.display().to_string();
        lora::save_peft(&dir.join(lora::ADAPTER_DIR), &m.params, spec, &base)?;
        lora::save_base(&dir.join(lora::BASE_FILE), &m.params)
    }

    /// Restores the adapters and the adapted layers' own weights a checkpoint holds (the model
    /// was built from its merged weights with the adapters attached).
    pub(crate) fn load_lora(&mut self, dir: &Path) -> Result<()> {
        let Model::Qwen(m) = &mut self.model else { return Ok(()) };
        let Some(spec) = &m.lora else { return Ok(()) };
        lora::load_base(&dir.join(lora::BASE_FILE), &m.params)?;
        lora::load_peft(&dir.join(lora::ADAPTER_DIR), &m.params, spec)
    }
}
