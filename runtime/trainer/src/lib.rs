//! wrl-trainer: the candle trainer used by the wrl runtime — policies (`std::models::tiny`,
//! Qwen2/Qwen3), SFT, GRPO / DAPO / PPO updates, checkpoints with exact resume.
//!
//! ```no_run
//! use wrl_trainer::{Trainer, TrainerConfig, SampleParams, Sample, RlConfig, render_prompt, Segment, Role};
//! # fn main() -> wrl_trainer::Result<()> {
//! let config: TrainerConfig = serde_json::from_str(
//!     r#"{ "policy": { "family": "tiny", "layers": 2, "d_model": 64 }, "optim": { "lr": 1e-3 }, "seed": 7 }"#,
//! )?;
//! let mut trainer = Trainer::new(config)?;
//! let prompt = render_prompt(trainer.tokenizer(), &[Segment::new(Role::User, "hi")])?;
//! let outs = trainer.sample(&[prompt.clone()], &SampleParams { n: 4, max_tokens: 16, ..Default::default() })?;
//! let samples: Vec<Sample> = outs.iter().enumerate().map(|(i, c)| Sample {
//!     prompt_tokens: prompt.clone(), completion_tokens: c.tokens.clone(), old_logprobs: c.logprobs.clone(),
//!     completion_mask: None, reward: c.text.len() as f32, advantage: None, group_id: 0,
//!     trajectory_id: i as u64, excluded: false, truncated: false, step: None, images: Vec::new(),
//! }).collect();
//! let metrics = trainer.rl_update(&samples, &RlConfig::default())?;
//! trainer.save(std::path::Path::new("/tmp/ckpt"))?;
//! let resumed = wrl_trainer::Trainer::load(std::path::Path::new("/tmp/ckpt"))?;
//! # let _ = (metrics, resumed); Ok(()) }
//! ```

pub mod batch;
pub mod chat;
pub mod checkpoint;
pub mod critic;
mod critic_trainer;
pub mod data;
pub mod decode;
pub mod device;
pub mod draw;
pub mod error;
pub mod example;
pub mod footprint;
pub mod gae;
pub mod gigpo;
mod grads;
pub mod hf;
pub mod lora;
mod lora_trainer;
pub mod memory;
pub mod memory_probe;
pub mod metrics;
pub mod minibatch;
pub mod models;
pub mod ops;
pub mod optim;
pub mod params;
pub mod precision;
mod prepared;
pub mod rl;
mod rl_advantage;
mod rl_groups;
pub mod rl_update;
pub mod rng;
pub mod sample;
mod stage;
pub mod threads;
pub mod tokenizer;
pub mod trainer;
pub mod vision;

pub use critic::Critic;
pub use data::{
    Dataset, Example, Mixture, MixtureWeights, ObservationHistory, Segment, Trajectory, per_turn,
    render, render_prompt, render_prompt_with,
};
pub use device::{CUDA_BUILT, DeviceChoice};
pub use draw::{ENTROPY_TOP, top_entropy};
pub use error::{Result, TrainerError};
pub use gae::Advantage;
pub use lora_trainer::LoraStart;
pub use metrics::Metrics;
pub use minibatch::MiniBatchUnit;
pub use models::{PolicyConfig, Positions, PretrainedSource, TinyConfig};
pub use ops::OpsMode;
pub use optim::{OptimConfig, Schedule, ScheduleKind};
pub use rl::{
    KlConfig, KlEstimator, LossAggregation, OverlongShaping, PolicyLoss, RlConfig, Sample,
    SampleLevel,
};
pub use rl_groups::GroupBuffer;
pub use sample::{Completion, FinishReason, SampleParams, Sampler, TokenEvent};
pub use tokenizer::{Role, Tokenizer};
pub use trainer::{DataCursor, SftConfig, Trainer, TrainerConfig};
