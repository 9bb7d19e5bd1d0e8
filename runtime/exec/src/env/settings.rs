//! An environment's settings as an episode runs them: its timeouts, how many of a turn's actions
//! run, what the text observation shows, and how often a failed episode is run again. Which of
//! the env's fields the runtime honours and which it refuses is decided field by field in
//! `preflight::refusals`, whose exhaustive destructuring keeps the two in step.

use wrl_browser::EpisodeCfg;
use wrl_browser::episode::TextView;
use wrl_plan::params::{self, FeedbackDetail, Observation, PerTurn};

/// The episodes of `env` (the defaults when there is none), for an agent that gives up after
/// `max_parse_failures` malformed turns in a row.
pub fn episode_cfg(env: Option<&params::Env>, max_parse_failures: Option<u32>) -> EpisodeCfg {
    let d = EpisodeCfg::default();
    let errors = max_parse_failures.unwrap_or(d.max_agent_errors).max(1);
    match env {
        None => EpisodeCfg { max_agent_errors: errors, ..d },
        Some(params::Env::Browser(b)) => EpisodeCfg {
            step_timeout: b.timeout.step.duration(),
            task_timeout: b.timeout.task.duration(),
            acquire_timeout: b.timeout.acquire.duration(),
            max_agent_errors: errors,
            one_action_per_turn: match b.per_turn {
                PerTurn::One => true,
                PerTurn::Many => false,
            },
            view: view(&b.observe),
            ..d
        },
        Some(params::Env::SearchApi(s)) => EpisodeCfg {
            step_timeout: s.timeout.step.duration(),
            task_timeout: s.timeout.task.duration(),
            max_agent_errors: errors,
            ..d
        },
        Some(params::Env::EnvServer(s)) => EpisodeCfg {
            step_timeout: s.timeout.step.duration(),
            task_timeout: s.timeout.task.duration(),
            max_agent_errors: errors,
            ..d
        },
    }
}

/// The observations of `observe` a text policy reads.
pub fn view(observe: &[Observation]) -> TextView {
    let mut v = TextView {
        url: false,
        tabs: false,
        elements: None,
        html: None,
        feedback: false,
        dom_diff: false,
    };
    for o in observe {
        match o {
            Observation::Url => v.url = true,
            Observation::Tabs => v.tabs = true,
            Observation::Elements { max } => v.elements = Some((*max).max(1) as usize),
            Observation::Html { max } => v.html = Some((*max).max(1) as usize),
            Observation::Feedback { detail } => {
                v.feedback = true;
                v.dom_diff = match detail {
                    FeedbackDetail::Plain => false,
                    FeedbackDetail::DomDiff => true,
                };
            }
            // Screenshots go to judges and process rewards, never into a text policy's prompt
            // (refused when a policy would need them); `a11y_tree` is refused.
            Observation::Screenshot { .. } | Observation::A11yTree => {}
        }
    }
    v
}

/// How often an episode that ended in an environment error or timeout is run again before it
/// counts (`retries`; a search API and an environment server declare none).
pub fn retries(env: Option<&params::Env>) -> usize {
    match env {
        Some(params::Env::Browser(b)) => b.retries as usize,
        Some(params::Env::SearchApi(_) | params::Env::EnvServer(_)) | None => 0,
    }
}

/// The largest concurrency of the run's envs (one browser pool serves them all).
pub fn concurrency<'e>(envs: impl Iterator<Item = &'e params::Env>) -> usize {
    envs.map(|e| match e {
        params::Env::Browser(b) => b.concurrency as usize,
        params::Env::SearchApi(s) => s.concurrency as usize,
        params::Env::EnvServer(s) => s.concurrency as usize,
    })
    .max()
    .unwrap_or(4)
}
