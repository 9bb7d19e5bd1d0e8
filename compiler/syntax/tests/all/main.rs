//! One integration-test binary for wrl-syntax: one link instead of one per file (CI's build time
//! and disk). Every file in this folder is a module here; wrl-tests's `test_layout.rs` checks it.

mod common;
mod items;
mod literals;
mod mutate;
mod never_panic;
mod precedence;
mod recovery;
mod spans;
