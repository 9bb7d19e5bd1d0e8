//! What to run (a goal and a start URL, optionally a sandbox task) and within which limits
//! (steps, timeouts, what the text observation shows).

use std::sync::Arc;
use std::time::Duration;

use wrl_sandbox::{Checker, Sandbox, Task};

/// Per-episode limits.
#[derive(Debug, Clone)]
pub struct EpisodeCfg {
    /// Step budget (one `act` call = one step).
    pub max_steps: u32,
    /// Wall-clock limit of one step; passing it is an environment error.
    pub step_timeout: Duration,
    /// Wall-clock limit of the whole episode; passing it is an infrastructure timeout.
    pub task_timeout: Duration,
    /// Consecutive steps with agent errors that end the episode as `agent_error`.
    pub max_agent_errors: u32,
    /// Longest wait for a free slot of the pool; passing it is an infrastructure error.
    pub acquire_timeout: Duration,
    /// Run only the first action of a turn (`per_turn = one`); the rest are reported, not run.
    pub one_action_per_turn: bool,
    /// What the text observation shows (`observe`).
    pub view: TextView,
}

/// Which parts of a page the text observation shows: a browser env's `observe` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextView {
    /// The active tab's URL (`url()`).
    pub url: bool,
    /// The number of tabs and the active one, when several are open (`tabs()`).
    pub tabs: bool,
    /// Interactive elements with ids, at most this many, and the page's text lines
    /// (`elements(max: N)`); `None` shows no page content.
    pub elements: Option<usize>,
    /// The page as simplified HTML, at most this many elements (`html(max: N)`).
    pub html: Option<usize>,
    /// The feedback of the last action (`feedback()`).
    pub feedback: bool,
    /// The feedback's `DOM changes: …` line (`feedback(detail: dom_diff)`).
    pub dom_diff: bool,
}

impl Default for TextView {
    /// Everything: URL, tabs, every element, feedback with its DOM diff.
    fn default() -> Self {
        TextView {
            url: true,
            tabs: true,
            elements: Some(usize::MAX),
            html: None,
            feedback: true,
            dom_diff: true,
        }
    }
}

impl Default for EpisodeCfg {
    fn default() -> Self {
        EpisodeCfg {
            max_steps: 10,
            step_timeout: Duration::from_secs(20),
            task_timeout: Duration::from_secs(300),
            max_agent_errors: 3,
            acquire_timeout: Duration::from_secs(600),
            one_action_per_turn: false,
            view: TextView::default(),
        }
    }
}

/// A sandbox task bound to a running sandbox, so the episode can reset state and check.
#[derive(Debug, Clone)]
pub struct SandboxBinding {
    /// The sandbox serving the task.
    pub sandbox: Arc<Sandbox>,
    /// The checker to run at the end.
    pub checker: Checker,
}

/// What to run: a goal and a start URL, optionally a sandbox task.
#[derive(Debug, Clone)]
pub struct EpisodeSpec {
    /// The instruction shown in observations.
    pub goal: String,
    /// First URL.
    pub start_url: String,
    /// Sandbox binding (state reset + checker).
    pub sandbox: Option<SandboxBinding>,
}

impl EpisodeSpec {
    /// A plain episode at `url`.
    pub fn url(goal: impl Into<String>, url: impl Into<String>) -> EpisodeSpec {
        EpisodeSpec { goal: goal.into(), start_url: url.into(), sandbox: None }
    }

    /// An episode for a sandbox task.
    pub fn sandbox_task(sandbox: &Arc<Sandbox>, task: &Task) -> EpisodeSpec {
        EpisodeSpec {
            goal: task.goal.clone(),
            start_url: format!("{}{}", sandbox.base_url(), task.start_path),
            sandbox: Some(SandboxBinding {
                sandbox: sandbox.clone(),
                checker: task.checker.clone(),
            }),
        }
    }
}
