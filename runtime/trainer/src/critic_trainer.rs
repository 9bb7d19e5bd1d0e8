//! A trainer and its critic: a critic made from a trainer's policy (or from a whole trainer's
//! network), given to a trainer, and asked for the value of prompts. Apart from `critic.rs`,
//! so that the value network does not depend on the trainer that holds it.

use crate::batch::TokenBatch;
use crate::critic::Critic;
use crate::error::Result;
use crate::models::PolicyConfig;
use crate::optim::{AdamW, OptimConfig};
use crate::trainer::Trainer;

impl Critic {
    /// A critic whose network is a copy of `from`'s policy (its weights at this moment) with a
    /// zero value head, so every value starts at 0; `optim` is its own optimiser's.
    pub fn from_policy(from: &Trainer, optim: OptimConfig) -> Result<Critic> {
        let model = from.model.with_params(from.model.params().deep_copy()?)?;
        let optimizer = AdamW::for_precision(optim, from.config.policy.precision());
        Critic::over(model, from.config.policy.clone(), optimizer)
    }

    /// A critic whose network is `from`'s own (the trainer is used up: nothing is copied),
    /// with a zero value head.
    pub fn from_trainer(from: Trainer, optim: OptimConfig) -> Result<Critic> {
        let optimizer = AdamW::for_precision(optim, from.config.policy.precision());
        Critic::over(from.model, from.config.policy, optimizer)
    }

    /// Rebuilds a critic of architecture `policy` whose weights (head included) are read from
    /// `weights` afterwards by the caller.
    pub(crate) fn shell(
        policy: &PolicyConfig,
        optimizer: AdamW,
        device: crate::device::DeviceChoice,
    ) -> Result<Critic> {
        let config = crate::trainer::TrainerConfig {
            policy: policy.clone(),
            optim: optimizer.config.clone(),
            seed: 0,
            device,
        };
        let t = Trainer::new(config)?;
        Critic::over(t.model, t.config.policy, optimizer)
    }
}

impl Trainer {
    /// Gives this trainer a critic, or none (replacing any): PPO's `advantage = gae(…)`
    /// updates need one.
    pub fn set_critic(&mut self, critic: Option<Critic>) {
        self.critic = critic;
    }

    /// The critic's learning rate from now on (its schedule's value for this iteration); no
    /// effect without a critic.
    pub fn set_critic_lr(&mut self, lr: f64) {
        if let Some(c) = self.critic.as_mut() {
            c.optimizer.config.lr = lr;
        }
    }

    /// The trainer's critic, if it has one.
    pub fn critic(&self) -> Option<&Critic> {
        self.critic.as_ref()
    }

    /// The critic's value of the state each prompt ends in (before the first token of a
    /// response), in forward batches of 8; `None` without a critic.
    pub fn prompt_values(&self, prompts: &[Vec<u32>]) -> Result<Option<Vec<f32>>> {
        let Some(critic) = &self.critic else { return Ok(None) };
        let pad = self.tokenizer.pad_id();
        let device = critic.model.device();
        let mut out = Vec::with_capacity(prompts.len());
        for chunk in prompts.chunks(8) {
            // Each prompt and one pad: the target after the prompt selects its last state.
            let seqs: Vec<Vec<u32>> =
                chunk.iter().map(|p| p.iter().copied().chain([pad]).collect()).collect();
            let refs: Vec<&[u32]> = seqs.iter().map(Vec::as_slice).collect();
            let sel: Vec<Vec<usize>> = chunk.iter().map(|p| vec![p.len()]).collect();
            let batch = TokenBatch::new(&refs, &sel, pad, &device)?;
            out.extend(critic.values(&batch)?.detach().to_vec1::<f32>()?);
        }
        Ok(Some(out))
    }
}
