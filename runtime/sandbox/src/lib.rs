//! wrl-sandbox: the offline sandbox web (shop, forum, wiki, lab) served on 127.0.0.1 with axum,
//! with deterministic content from a seed, per-episode resettable state, task generators with
//! programmatic checkers and a train/test split, and the task and trajectory JSONL formats (and
//! a dataset's column mapping onto them).
//!
//! It does not depend on a browser; `wrl-browser` drives it through Chromium.
//!
//! ```no_run
//! # async fn demo() -> Result<(), wrl_sandbox::SandboxError> {
//! let sandbox = wrl_sandbox::Sandbox::start(7, 0).await?;
//! let tasks = wrl_sandbox::generate(sandbox.content(), wrl_sandbox::Split::Train, 10, 7);
//! println!("{} {}", sandbox.base_url(), tasks[0].goal);
//! # Ok(()) }
//! ```

pub mod augment;
pub mod checker;
pub mod columns;
pub mod content;
pub mod datafile;
pub mod ending;
mod forum;
pub mod hops;
pub mod html;
mod lab;
mod ranking;
pub mod retriever;
pub mod search_api;
pub mod server;
mod shop;
pub mod site;
pub mod state;
pub mod tasks;
pub mod traj;
pub mod variants;
mod wiki;

pub use augment::augment;
pub use checker::{AnswerMode, CheckInput, Checker, REFERENCE_SEPARATOR, Verdict};
pub use content::Content;
pub use ending::Ending;
pub use hops::{HOP_TEMPLATES, Question};
pub use search_api::{QA_TEMPLATES, generate_qa, generate_qa_of, is_qa_template};
pub use server::{Sandbox, SandboxError};
pub use state::{EPISODE_COOKIE, EpisodeState};
pub use tasks::{Split, TEMPLATES, Task, generate, generate_on, parse_jsonl, template_site};
pub use traj::{StepBoxes, TrajOutcome, TrajStep, Trajectory};
pub use variants::{can_vary, variants};
