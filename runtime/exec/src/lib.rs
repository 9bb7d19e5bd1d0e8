//! The wrl runtime: executes a plan produced by `wrl-plan`, decoded once into its typed
//! parameters; it never sees syntax. Its rooms: the [`executor`] that walks the plan, the
//! [`preflight`] that refuses what it cannot run, [`env`]ironments (the browser pool, search
//! APIs) and the [`agent`]s acting in them, [`rollout`]s, [`reward`]s and judges, the
//! [`rundir`] with its typed records, the [`report`], and the [`study`] of a run over seeds.

pub mod agent;
pub mod env;
pub mod error;
pub mod executor;
pub mod inputs;
pub mod mcp;
pub mod preflight;
pub mod report;
pub mod reward;
pub mod rollout;
pub mod rundir;
pub mod study;

pub use error::{Fault, RunError, Subject};
pub use executor::{Executor, RunOptions};
pub use preflight::{check_out, preflight};
pub use rundir::records::{Branch, Cursor, EvalResult, MetricLine, Summary, TrajectoryLine};
pub use rundir::view::RunView;
pub use rundir::{Committed, RunDir, RunDirError};
