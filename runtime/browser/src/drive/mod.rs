//! Driving an episode's tabs with the agent's actions: a [`Driver`] borrows the tabs for one
//! turn and runs actions of any tool set on them, each answering with a feedback line or a
//! [`Stop`]. The episode owns the turn (its budget, timeout and feedback); the driver knows only
//! the tabs.
//!
//! - `ops`: what the driver can do to a page, with its feedback line;
//! - `tools`: each tool set's actions as those operations.

mod ops;
mod tools;

pub(crate) use ops::{Driver, Stop};
