//! Checkpoints: `model.safetensors`, `optimizer.safetensors`, optional `reference.safetensors`
//! and `trainer_state.json` (config, step, optimiser count, RNG state, data cursor); a Hugging
//! Face policy's is also a model directory (`hf::save`). Loading one continues the run
//! bit-identically on the same device.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Result, TrainerError};
use crate::optim::AdamW;
use crate::rng::{RngState, rng_restore, rng_state};
use crate::trainer::{DataCursor, Trainer, TrainerConfig};

/// Format version written to `trainer_state.json`.
pub const FORMAT_VERSION: u32 = 1;

/// The JSON part of a checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainerState {
    /// [`FORMAT_VERSION`].
    pub format: u32,
    /// The trainer configuration.
    pub config: TrainerConfig,
    /// Optimiser steps taken.
    pub step: u64,
    /// AdamW update count (bias correction).
    pub optimizer_t: u64,
    /// RNG state.
    pub rng: RngState,
    /// SFT data cursor.
    pub cursor: DataCursor,
    /// Whether `reference.safetensors` is present.
    pub has_reference: bool,
}

impl Trainer {
    /// Write a checkpoint into `dir` (created if needed). `trainer_state.json` is written last,
    /// so a directory without it is an incomplete checkpoint.
    pub fn save(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir)?;
        match &self.model {
            crate::models::Model::Tiny(m) => m.params.save(&dir.join("model.safetensors"))?,
            // A Hugging Face model directory of its own (`hf::save`).
            crate::models::Model::Qwen(m) => crate::hf::save::write_model_dir(m, dir)?,
        }
        self.optimizer.save(&dir.join("optimizer.safetensors"))?;
        if let Some(r) = &self.reference {
            r.params().save(&dir.join("reference.safetensors"))?;
        }
        let state = TrainerState {
            format: FORMAT_VERSION,
            config: self.config.clone(),
            step: self.step,
            optimizer_t: self.optimizer.t,
            rng: rng_state(&self.rng),
            cursor: self.cursor,
            has_reference: self.reference.is_some(),
        };
        let tmp = dir.join("trainer_state.json.tmp");
        std::fs::write(&tmp, serde_json::to_string_pretty(&state)?)?;
        std::fs::rename(&tmp, dir.join("trainer_state.json"))?;
        Ok(())
    }

    /// An independent copy, as [`Trainer::save`] then [`Trainer::load`] would make it but in
    /// memory: its own weights, the same optimiser moments, RNG, step and data cursor. Training
    /// one never moves the other (the frozen KL reference is shared: nothing updates it).
    pub fn duplicate(&self) -> Result<Trainer> {
        Ok(Trainer {
            config: self.config.clone(),
            model: self.model.with_params(self.model.params().deep_copy()?)?,
            tokenizer: self.tokenizer.clone(),
            optimizer: self.optimizer.clone(),
            rng: self.rng.clone(),
            step: self.step,
            cursor: self.cursor,
            reference: self.reference.clone(),
        })
    }

    /// Rebuild a trainer from a checkpoint written by [`Trainer::save`].
    pub fn load(dir: &Path) -> Result<Trainer> {
        let state: TrainerState =
            serde_json::from_str(&std::fs::read_to_string(dir.join("trainer_state.json"))?)?;
        if state.format != FORMAT_VERSION {
            return Err(TrainerError::Checkpoint(format!(
                "checkpoint format {} is not {FORMAT_VERSION}",
                state.format
            )));
        }
        // A Hugging Face policy's checkpoint is a model directory: it is built from there.
        let own = !matches!(state.config.policy, crate::PolicyConfig::Tiny(_))
            && dir.join("config.json").is_file();
        let mut t = Trainer::new_at(state.config.clone(), own.then_some(dir))?;
        if !own {
            t.model.params().load_into(&dir.join("model.safetensors"))?;
        }
        let device = t.device();
        t.optimizer = AdamW::load(
            state.config.optim.clone(),
            state.optimizer_t,
            &dir.join("optimizer.safetensors"),
            &device,
        )?;
        t.rng = rng_restore(&state.rng)?;
        t.step = state.step;
        t.cursor = state.cursor;
        if state.has_reference {
            let r = t.model.with_params(t.model.params().deep_copy()?)?;
            r.params().load_into(&dir.join("reference.safetensors"))?;
            t.reference = Some(r);
        }
        Ok(t)
    }
}
