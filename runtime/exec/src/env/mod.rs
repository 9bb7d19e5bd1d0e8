//! Environments and the agents that act in them, as two interfaces: an [`Env`] runs one episode
//! of a task with an [`Agent`], whatever the environment is (real Chromium on the browser pool,
//! a search API over HTTP, or an environment server's API), so a rollout has one way to run
//! every episode.

pub mod browser;
pub mod search;
pub mod server;
pub mod settings;

use futures::future::BoxFuture;
use wrl_browser::EpisodeCfg;
use wrl_sandbox::{Task, Trajectory};

pub use browser::BrowserEnv;
pub use search::SearchEnv;
pub use server::ServerEnv;

/// Something that writes an episode's turns: a trained policy, a module graph, an expert.
pub trait Agent: Send {
    /// The next turn, given the observation as text (`task: …` first, then the page or the
    /// last tool response) and the turns so far.
    fn act(&mut self, task: &Task, observation: &str, history: &[String]) -> String;
    /// The name written in trajectories.
    fn name(&self) -> &str;
    /// Why the agent could not produce the turn `act` just returned, if it could not (a graph
    /// with no edge to follow): the episode then ends as an agent error with this message.
    fn gave_up(&mut self) -> Option<String> {
        None
    }
    /// Why the turn `act` just returned is not a turn of the tool set, when the agent read it
    /// itself (an instruction-tuned policy's calls checked against the schemas): the env then
    /// counts it as a malformed turn with this error, as it does a turn it cannot parse.
    fn malformed(&mut self) -> Option<wrl_browser::AgentError> {
        None
    }
}

/// How a text episode ended before a turn, and the step that recorded it (if one did).
pub(crate) type Ended = (wrl_browser::EndReason, Option<wrl_sandbox::TrajStep>);

/// The next turn of a text episode (a search API's, an environment server's): the step budget
/// and the task's time are checked first, then the agent writes the turn seeing `observation`
/// (`task: …`, then the last response). `Err`: the episode ends there, with the step that
/// recorded why the agent gave up, if it did.
pub(crate) fn text_turn(
    task: &Task,
    agent: &mut dyn Agent,
    cfg: &EpisodeCfg,
    (started, done): (std::time::Instant, usize),
    observation: String,
    history: &[String],
) -> Result<(String, String), Box<Ended>> {
    use wrl_browser::EndReason;
    if done >= task.max_steps as usize {
        return Err(Box::new((EndReason::MaxSteps, None)));
    }
    if started.elapsed() > cfg.task_timeout {
        let message = format!("the task took over {:.0?}", cfg.task_timeout);
        return Err(Box::new((EndReason::InfraTimeout { message }, None)));
    }
    let turn = agent.act(task, &observation, history).trim().to_string();
    // The agent could not write the turn (a prompt past its context, a graph stuck).
    if let Some(message) = agent.gave_up() {
        let step = wrl_sandbox::TrajStep {
            observation,
            actions: Vec::new(),
            feedback: message.clone(),
            url: String::new(),
        };
        return Err(Box::new((EndReason::AgentError { message }, Some(step))));
    }
    Ok((observation, turn))
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
}
