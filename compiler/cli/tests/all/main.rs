//! One integration-test binary for wrl-cli: one link instead of one per file (CI's build time
//! and disk). Every file in this folder is a module here; wrl-tests's `test_layout.rs` checks it.

mod env_serve;
mod kill_resume;
mod run_lock;
mod sandbox_qa;
mod serve;
