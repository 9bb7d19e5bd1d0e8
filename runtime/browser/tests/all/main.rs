//! One integration-test binary for wrl-browser: one link instead of one per file (CI's build time
//! and disk). Every file in this folder is a module here; wrl-tests's `test_layout.rs` checks it.

mod actions;
mod cli;
mod common;
mod egress;
mod expert;
mod failures;
mod isolation;
mod orphans;
mod remote;
