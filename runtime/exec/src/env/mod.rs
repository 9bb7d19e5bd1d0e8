//! Environments and the agents that act in them, as two interfaces: an [`Env`] runs one episode
//! of a task with an [`Agent`], whatever the environment is (real Chromium on the browser pool,
//! a search API over HTTP, or an environment server's API), so a rollout has one way to run
//! every episode.

pub mod browser;
pub mod search;
pub mod server;
pub mod settings;
pub mod simulated;

use futures::future::BoxFuture;
use wrl_browser::{AgentError, AgentTurn, EpisodeCfg};
use wrl_sandbox::{Task, Trajectory};

pub use browser::BrowserEnv;
pub use search::SearchEnv;
pub use server::ServerEnv;

/// Something that writes an episode's turns: a trained policy, a module graph, an expert.
pub trait Agent: Send {
    /// The next turn, given the observation as text (`task: …` first, then the page or the
    /// last tool response) and the turns so far: text for the env to read, text the agent
    /// found malformed itself, or why it could not write one.
    fn act(&mut self, task: &Task, observation: &str, history: &[String]) -> AgentTurn;
    /// The name written in trajectories.
    fn name(&self) -> &str;
    /// Whether it reads screenshots (a vision-language policy whose env observes them): a
    /// browser then takes one each step and hands it to [`Agent::act_seeing`].
    fn sees_screens(&self) -> bool {
        false
    }
    /// [`Agent::act`] with the page's screenshot (PNG), when the env took one.
    fn act_seeing(
        &mut self,
        task: &Task,
        observation: &str,
        history: &[String],
        _screenshot: Option<&[u8]>,
    ) -> AgentTurn {
        self.act(task, observation, history)
    }
}

/// A turn of a text episode, as the agent wrote it (trimmed).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Written {
    /// The observation the agent saw.
    pub observation: String,
    pub text: String,
    /// The reply as written, where `text` is what the agent read from it (its calls).
    pub said: Option<String>,
    /// Why the text is no turn of the agent's tool set, when the agent read it itself.
    pub malformed: Option<AgentError>,
}

/// How a text episode ended before a turn, and the step that recorded it (if one did).
pub(crate) type Ended = (wrl_browser::EndReason, Option<wrl_sandbox::TrajStep>);

/// The next turn of a text episode (a search API's, an environment server's): the step budget
/// and the task's time are checked first, then the agent writes the turn seeing `observation`
/// (`task: …`, then the last response). `Err`: the episode ends there, with the step that
/// recorded why the agent gave up or what it writes with broke down, if either happened.
pub(crate) fn text_turn(
    task: &Task,
    agent: &mut dyn Agent,
    cfg: &EpisodeCfg,
    (started, done): (std::time::Instant, usize),
    observation: String,
    history: &[String],
) -> Result<Written, Box<Ended>> {
    use wrl_browser::EndReason;
    if done >= task.max_steps as usize {
        return Err(Box::new((EndReason::MaxSteps, None)));
    }
    if started.elapsed() > cfg.task_timeout {
        let message = format!("the task took over {:.0?}", cfg.task_timeout);
        return Err(Box::new((EndReason::InfraTimeout { message }, None)));
    }
    let (text, said, malformed) = match agent.act(task, &observation, history) {
        AgentTurn::Text(text) => (text, None, None),
        AgentTurn::Read { lines, said } => (lines, Some(said), None),
        AgentTurn::Malformed { text, error } => (text, None, Some(error)),
        // The agent could not write the turn (a prompt past its context, a graph stuck).
        AgentTurn::GaveUp(message) => {
            let step = wrl_sandbox::TrajStep {
                observation,
                actions: Vec::new(),
                feedback: message.clone(),
                url: String::new(),
                screenshot: None,
                boxes: None,
                said: None,
                malformed: false,
            };
            return Err(Box::new((EndReason::AgentError { message }, Some(step))));
        }
        // What the agent writes with broke down (a frozen model's endpoint).
        AgentTurn::Failed(b) => {
            let step = wrl_sandbox::TrajStep {
                observation,
                actions: Vec::new(),
                feedback: format!("error: {}", b.message()),
                url: String::new(),
                screenshot: None,
                boxes: None,
                said: None,
                malformed: false,
            };
            return Err(Box::new((b.end(), Some(step))));
        }
    };
    Ok(Written { observation, text: text.trim().to_string(), said, malformed })
}

/// A finished episode: its trajectory and the screenshots it kept (oldest first, the final
/// page last).
#[derive(Clone, Debug)]
pub struct EpisodeRun {
    pub trajectory: Trajectory,
    pub screenshots: Vec<Vec<u8>>,
}

/// An environment that runs episodes.
pub trait Env: Send + Sync {
    /// Runs one episode of `task` with `agent`, keeping the last `keep_screens` screenshots (0:
    /// none), with `cfg`'s timeouts and error limit (the step budget is the task's). An error is
    /// an episode that could not start.
    fn run<'a>(
        &'a self,
        task: &'a Task,
        agent: &'a mut dyn Agent,
        keep_screens: usize,
        cfg: &'a EpisodeCfg,
    ) -> BoxFuture<'a, Result<EpisodeRun, String>>;

    /// Where the next episodes run among an RL stage's iterations: iteration `i` (1-based) of
    /// `n`, or `None` outside training. An env whose responses follow a curriculum reads it
    /// (a simulated search engine's share of noisy documents); others ignore it.
    fn at_iteration(&self, _at: Option<(u64, u64)>) {}
}
