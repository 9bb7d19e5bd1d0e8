//! One integration-test binary for wrl-serve: one link instead of one per file (CI's build time
//! and disk). Every file in this folder is a module here; wrl-tests's `test_layout.rs` checks it.

mod adapter;
mod base_model;
mod limits;
mod serve;
mod vision;
