//! The `browser` environment: sandbox tasks in real Chromium, on the run's browser pool. An
//! [`Agent`] acts through `wrl-browser`'s runner, which reads each turn as terse actions (an
//! agent that read its turn itself hands it over as malformed); a vision-language policy gets
//! each step's screenshot.

use std::sync::Arc;

use futures::future::BoxFuture;
use wrl_browser::runner::{TextPolicy, run_task_with_screenshots};
use wrl_browser::{AgentTurn, BrowserPool, EpisodeCfg, Observation};
use wrl_sandbox::{Sandbox, Task};

use super::{Agent, Env, EpisodeRun};

/// The browser pool and the sandbox web its tasks run on.
#[derive(Clone, Debug)]
pub struct BrowserEnv {
    pub pool: BrowserPool,
    pub sandbox: Arc<Sandbox>,
}

/// An agent as the browser runner's policy: it reads the observation as text.
struct AsPolicy<'a>(&'a mut dyn Agent);

impl TextPolicy for AsPolicy<'_> {
    fn act(&mut self, task: &Task, obs: &Observation, history: &[String]) -> AgentTurn {
        self.0.act_seeing(task, &obs.text(), history, obs.screenshot.as_deref())
    }

    fn name(&self) -> &str {
        self.0.name()
    }

    fn sees_screens(&self) -> bool {
        self.0.sees_screens()
    }
}

impl Env for BrowserEnv {
    fn run<'a>(
        &'a self,
        task: &'a Task,
        agent: &'a mut dyn Agent,
        keep_screens: usize,
        cfg: &'a EpisodeCfg,
    ) -> BoxFuture<'a, Result<EpisodeRun, String>> {
        Box::pin(async move {
            let mut policy = AsPolicy(agent);
            let (trajectory, screenshots) = run_task_with_screenshots(
                &self.pool,
                &self.sandbox,
                task,
                &mut policy,
                keep_screens,
                cfg,
            )
            .await
            .map_err(|e| e.to_string())?;
            Ok(EpisodeRun { trajectory, screenshots })
        })
    }
}
