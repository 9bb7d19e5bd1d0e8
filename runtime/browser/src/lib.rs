//! wrl-browser: real Chromium over CDP (chromiumoxide) for wrl episodes.
//!
//! - [`BrowserPool`]: launches the system Chromium (or connects to remote CDP URLs), bounds
//!   concurrent episodes with a semaphore, restarts crashed browsers, enforces the
//!   [`AllowList`] by sending every browser context through its [`proxy`] (request
//!   interception reports what was blocked) and keeps the host [`Blacklist`].
//! - [`Episode`]: an isolated browser context; [`Episode::observe`], [`Episode::act`] with
//!   [`Action`]s of the OpenWebRL, OpAgent or element-id tool sets, [`Episode::finish`] with
//!   an [`EndReason`] and, for sandbox tasks, the checker's verdict.
//! - [`terse`]: the compact action syntax for text policies; [`Observation::text`] is the
//!   matching compact observation.
//! - [`expert`]: the scripted expert for sandbox tasks; [`cli`]: `wrlc sandbox …`.
//! - [`side`]: tools a turn calls beside the page's, served by the env around the browser
//!   (`wrl_exec`'s MCP servers) through the [`side::SideTools`] hook.

pub mod action;
pub mod allow;
pub mod blacklist;
mod cdp;
pub mod cli;
mod drive;
pub mod episode;
pub mod expert;
pub mod failure;
pub mod ground;
pub mod intercept;
pub mod js;
pub mod keys;
pub mod launch;
mod navwatch;
pub mod pool;
pub mod process;
pub mod proxy;
pub mod runner;
pub mod side;
pub mod snapshot;
mod tabs;
pub mod terse;

pub use action::{Action, Direction, Elem, MouseButton, OpAgent, OpenWebRl, ToolSet};
pub use allow::AllowList;
pub use blacklist::Blacklist;
pub use episode::{
    Episode, EpisodeCfg, EpisodeError, EpisodeSpec, Observation, Outcome, SandboxBinding, TabInfo,
};
pub use failure::{AgentError, Breakdown, EndReason, StepResult};
pub use launch::{LaunchError, find_chromium};
pub use pool::{BrowserPool, PoolCfg, PoolError};
pub use process::settle;
pub use runner::AgentTurn;
pub use side::{NoSideTools, SideCall, SideReply, SideTools, TurnLine};
pub use snapshot::{Item, Snapshot};
