//! The wrl runtime: executes a plan produced by `wrl-plan`. It never sees syntax. This crate
//! holds the pieces of `wrlc run` that do not drive a browser or a model themselves: the run
//! directory with its append-only logs and crash-safe commits, and the HTML report.

pub mod brains;
pub mod env_cfg;
pub mod exec;
pub mod graph;
pub mod judge;
pub mod judges;
pub mod policy;
pub mod preflight;
pub mod process;
pub mod report;
pub mod reward;
pub mod rl_cfg;
pub mod rollout;
pub mod rundir;
pub mod search_env;
pub mod serve;

pub use exec::{EvalResult, Executor, RunError, RunOptions, Subject, Summary};
pub use preflight::{check_out, preflight};
pub use rundir::{Committed, RunDir, RunDirError};
