//! Changing the optimiser between stages: SFT, then RL phases with their own learning rates
//! and schedules, continue the same weights and Adam moments under new settings.

use crate::optim::OptimConfig;
use crate::trainer::Trainer;

impl Trainer {
    /// Replaces the optimiser's settings (learning rate, betas, weight decay, clipping and
    /// schedule) and keeps its moment estimates. A schedule's steps count from the trainer's
    /// current step, so a new stage's warm-up starts where the stage starts.
    pub fn set_optim(&mut self, mut config: OptimConfig) {
        if let Some(w) = config.schedule.warmup_steps.as_mut() {
            *w += self.step;
        }
        if let Some(t) = config.schedule.total_steps.as_mut() {
            *t += self.step;
        }
        if config.schedule.warmup_ratio.is_some() {
            // A ratio of the stage's steps, counted from the stage's first step.
            let ratio = config.schedule.warmup_ratio.take().unwrap_or(0.0);
            let stage_total = config.schedule.total_steps.map_or(0, |t| t - self.step);
            config.schedule.warmup_steps =
                Some(self.step + (ratio * stage_total as f64).round() as u64);
        }
        self.config.optim = config.clone();
        self.optimizer.config = config;
    }
}
