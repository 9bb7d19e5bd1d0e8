//! One integration-test binary for wrl-check: one link instead of one per file (CI's build time
//! and disk). Every file in this folder is a module here; wrl-tests's `test_layout.rs` checks it.

mod common;
mod no_panic;
mod rules;
mod slice;
mod stdlib;
mod stdlib_doc;
mod study_variants;
mod suggest;
