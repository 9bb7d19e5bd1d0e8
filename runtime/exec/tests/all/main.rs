//! One integration-test binary for wrl-exec: one link instead of one per file (CI's build time
//! and disk). Every file in this folder is a module here; wrl-tests's `test_layout.rs` checks it.

mod browser_mcp;
mod graph_vl;
mod grounded;
mod hermes_chat;
mod report_chromium;
mod search_env;
mod tag_sft;
