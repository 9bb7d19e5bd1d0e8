//! One integration-test binary for wrl-trainer (one link instead of one per file).

// Test helpers outside #[test] functions unwrap too: a failing test should fail loudly.
#![allow(clippy::unwrap_used)]

mod common;
mod config;
mod cpu_independent;
mod decode;
mod decode_qwen;
mod fused;
mod gigpo;
mod grads;
mod hf;
mod lora;
mod memory_plan;
mod mrope;
mod ppo_critic;
mod precision;
mod qwen;
mod recompute;
mod resume;
mod rl_loss;
mod rl_train;
mod sample;
mod sft;
mod vision;
mod vision_decode;
mod vision_model;
mod vision_qwen25;
mod vision_resume;
mod vision_sft;
mod vision_tower;
