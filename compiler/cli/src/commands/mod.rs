//! One module per subcommand, each with a `run` function.

pub mod check;
pub mod diff;
pub mod env;
pub mod estimate;
pub mod fmt;
pub mod footprint;
pub mod lock;
pub mod lower;
pub mod lsp;
pub mod migrate;
pub mod plan;
pub mod planned;
pub mod report;
pub mod rewrite;
pub mod run;
pub mod run_errors;
pub mod run_one;
pub mod seeds;
pub mod serve;
pub mod set;
pub mod variants;
