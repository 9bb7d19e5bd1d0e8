//! The `browser` environment: sandbox tasks in real Chromium, on the run's browser pool. An
//! [`Agent`] acts through `wrl-browser`'s runner, which reads each turn as terse actions (an
//! agent that read its turn itself hands it over as malformed); a vision-language policy gets
//! each step's screenshot. The tools of its tool set an MCP server serves (docs/mcp.md) are
//! the runner's side tools: a turn's `<tool_call>{…}</tool_call>` line runs in its place among
//! the page actions, through [`McpSide`], and its reply is that line's feedback.

use std::sync::Arc;

use futures::future::BoxFuture;
use wrl_browser::runner::{TextPolicy, run_task_with_side_tools};
use wrl_browser::{
    AgentTurn, BrowserPool, EpisodeCfg, NoSideTools, Observation, SideCall, SideReply, SideTools,
};
use wrl_sandbox::{Sandbox, Task};

use super::{Agent, Env, EpisodeRun};
use crate::mcp::{EpisodeCalls, McpTools};

/// The browser pool and the sandbox web its tasks run on; the MCP servers of its tool set,
/// when it has some.
#[derive(Clone, Debug)]
pub struct BrowserEnv {
    pub pool: BrowserPool,
    pub sandbox: Arc<Sandbox>,
    mcp: Option<Arc<McpTools>>,
}

impl BrowserEnv {
    /// Episodes on `pool` over `sandbox`, with the page's tools only.
    pub fn new(pool: BrowserPool, sandbox: Arc<Sandbox>) -> BrowserEnv {
        BrowserEnv { pool, sandbox, mcp: None }
    }

    /// The same env calling the tools `mcp` serves there.
    pub fn with_mcp(self, mcp: Option<Arc<McpTools>>) -> BrowserEnv {
        BrowserEnv { mcp, ..self }
    }

    /// The MCP tools it calls, with their counts.
    pub fn mcp(&self) -> Option<&McpTools> {
        self.mcp.as_deref()
    }
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

/// One episode's MCP tools as the runner's side tools: each call held to its tool's
/// `max_calls` for this episode, its reply cut and its failure told as `McpTools::call` does
/// for a search episode, so both envs answer a call alike and count it in one place.
pub struct McpSide<'a> {
    tools: &'a McpTools,
    calls: EpisodeCalls,
}

impl<'a> McpSide<'a> {
    /// A fresh episode's calls of `tools`.
    pub fn new(tools: &'a McpTools) -> McpSide<'a> {
        McpSide { tools, calls: EpisodeCalls::default() }
    }
}

impl SideTools for McpSide<'_> {
    fn serves(&self, name: &str) -> bool {
        self.tools.serves(name)
    }

    fn call(&mut self, call: SideCall) -> BoxFuture<'_, SideReply> {
        Box::pin(async move {
            let reply = self.tools.call(&call.name, call.arguments, &mut self.calls).await;
            SideReply { text: reply.text, end: reply.end }
        })
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
            let mut side: Box<dyn SideTools + '_> = match &self.mcp {
                Some(m) => Box::new(McpSide::new(m)),
                None => Box::new(NoSideTools),
            };
            let (trajectory, screenshots) = run_task_with_side_tools(
                &self.pool,
                &self.sandbox,
                task,
                &mut policy,
                keep_screens,
                cfg,
                side.as_mut(),
            )
            .await
            .map_err(|e| e.to_string())?;
            Ok(EpisodeRun { trajectory, screenshots })
        })
    }
}
