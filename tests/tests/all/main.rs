//! One integration-test binary for wrl-tests: one link instead of one per file (CI's build time
//! and disk). Every file in this folder is a module here; wrl-tests's `test_layout.rs` checks it.

mod cli_inputs;
mod codes;
mod env_server;
mod estimates;
mod golden_plans;
mod hf_parity;
mod identity;
mod json_stream;
mod plan_dot;
mod report_inputs;
mod run_api_policy;
mod run_e2e;
mod run_excluded;
mod run_hf;
mod run_opagent_vl;
mod run_preflight;
mod run_qwen25_vl;
mod run_simulated;
mod run_vl;
mod shipped_models;
mod test_layout;
mod ui;
