//! One integration-test binary for wrl-plan: one link instead of one per file (CI's build time
//! and disk). Every file in this folder is a module here; wrl-tests's `test_layout.rs` checks it.

mod contract;
mod lower;
mod params;
mod studied;
