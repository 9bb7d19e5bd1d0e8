//! Episodes: an isolated browser context with its tabs, driven step by step by an agent.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use std::sync::Arc;
//! use wrl_browser::{BrowserPool, EpisodeCfg, EpisodeSpec, PoolCfg, terse};
//! let sandbox = Arc::new(wrl_sandbox::Sandbox::start(7, 0).await?);
//! let task = wrl_sandbox::generate(sandbox.content(), wrl_sandbox::Split::Train, 1, 7).remove(0);
//! let pool = BrowserPool::launch(PoolCfg::default()).await?;
//! let mut ep = pool.episode(EpisodeSpec::sandbox_task(&sandbox, &task), EpisodeCfg::default()).await?;
//! let obs = ep.observe(false).await.map_err(|e| anyhow::anyhow!("{e:?}"))?;
//! println!("{}", obs.text());
//! let step = ep.act(&[terse::parse("click 1")?]).await;
//! println!("{}", step.feedback);
//! let outcome = ep.finish().await;
//! println!("{} {:?}", outcome.reason.name(), outcome.verdict);
//! # Ok(()) }
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use chromiumoxide::cdp::browser_protocol::network::CookieParam;
use serde::{Deserialize, Serialize};
use tokio::sync::OwnedSemaphorePermit;
use wrl_sandbox::{CheckInput, Checker, Sandbox, Task, Verdict};

use crate::action::Action;
use crate::allow::origin;
use crate::cdp;
use crate::drive::{Driver, Stop};
use crate::failure::{AgentError, EndReason, StepResult};
use crate::pool::{BrowserPool, PoolError};
use crate::snapshot::{Snapshot, dom_diff};
pub use crate::tabs::TabInfo;
use crate::tabs::Tabs;

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

/// What the agent sees.
#[derive(Debug, Clone)]
pub struct Observation {
    /// The goal.
    pub goal: String,
    /// Active tab URL.
    pub url: String,
    /// Tabs.
    pub tabs: Vec<TabInfo>,
    /// Viewport in CSS pixels.
    pub viewport: (u32, u32),
    /// Device scale factor.
    pub scale: f64,
    /// Interactive elements and text of the active page.
    pub snapshot: Snapshot,
    /// Feedback of the last step (empty before the first).
    pub feedback: String,
    /// PNG screenshot of the viewport, when asked for.
    pub screenshot: Option<Vec<u8>>,
    /// Steps taken so far.
    pub step: u32,
    /// What [`Observation::text`] shows (the episode's `observe`).
    pub view: TextView,
}

impl Observation {
    /// The compact text observation for text policies: task, URL (path only for loopback
    /// sites), elements with ids, feedback — those of them its [`TextView`] shows. A few
    /// hundred bytes on sandbox pages.
    pub fn text(&self) -> String {
        let view = &self.view;
        let local = self.local_origin();
        let url = match &local {
            Some(_) => wrl_sandbox::checker::url_path(&self.url).to_string(),
            None => self.url.clone(),
        };
        let mut out = format!("task: {}\n", self.goal);
        if view.url {
            out.push_str(&format!("url: {url}\n"));
        }
        if view.tabs && self.tabs.len() > 1 {
            let active = self.tabs.iter().position(|t| t.active).unwrap_or(0);
            out.push_str(&format!("tabs: {} (active {active})\n", self.tabs.len()));
        }
        if let Some(max) = view.elements {
            out.push_str(&self.snapshot.render_items_max(max));
        }
        if view.feedback && !self.feedback.is_empty() {
            let feedback = self.without_local_origin(&self.feedback);
            out.push_str(&format!("feedback: {}\n", feedback.replace('\n', "; ")));
        }
        out
    }

    /// The page's origin (`http://127.0.0.1:PORT`) when it is a loopback site. Loopback sites
    /// are shown and recorded by path alone: their port changes from run to run, and a policy
    /// trained on one run's demonstrations must see the same text in the next.
    pub fn local_origin(&self) -> Option<String> {
        origin(&self.url)
            .filter(|o| o.host == "127.0.0.1" || o.host == "localhost")
            .and_then(|_| self.url.find("://").map(|i| i + 3))
            .map(|i| {
                let end = self.url[i..].find('/').map_or(self.url.len(), |j| i + j);
                self.url[..end].to_string()
            })
    }

    /// `text` (a URL or feedback) with this page's loopback origin removed, as trajectories
    /// record it: `http://127.0.0.1:8123/shop/` becomes `/shop/`.
    pub fn without_local_origin(&self, text: &str) -> String {
        match self.local_origin() {
            Some(o) => text.replace(o.as_str(), ""),
            None => text.to_string(),
        }
    }
}

/// The end of an episode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    /// Why it ended (`max_steps` if `finish` was called while still running).
    pub reason: EndReason,
    /// The terminal answer, if any.
    pub answer: Option<String>,
    /// Steps taken.
    pub steps: u32,
    /// Active tab URL at the end.
    pub final_url: String,
    /// Checker verdict for sandbox tasks (always unsuccessful unless the episode completed).
    pub verdict: Option<Verdict>,
    /// Wall time in milliseconds.
    pub elapsed_ms: u64,
}

impl Outcome {
    /// Whether the checker accepted the episode.
    pub fn success(&self) -> bool {
        self.verdict.as_ref().is_some_and(|v| v.success)
    }
}

/// A running episode. Holds one slot of the pool's semaphore until finished or dropped.
pub struct Episode {
    tabs: Tabs,
    id: String,
    cfg: EpisodeCfg,
    spec: EpisodeSpec,
    steps: u32,
    agent_errors: u32,
    end: Option<EndReason>,
    started: Instant,
    last: Option<Snapshot>,
    feedback: String,
    _permit: OwnedSemaphorePermit,
}

impl std::fmt::Debug for Episode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Episode")
            .field("id", &self.id)
            .field("steps", &self.steps)
            .field("end", &self.end)
            .finish()
    }
}

static EPISODE_COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Errors starting an episode (the start URL failing to load is not one: the episode is
/// returned already ended with `env_error`).
#[derive(Debug, thiserror::Error)]
pub enum EpisodeError {
    /// The pool could not provide a browser.
    #[error(transparent)]
    Pool(#[from] PoolError),
    /// The pool is shut down.
    #[error("the browser pool is closed")]
    Closed,
    /// No browser slot came free in time (`timeout.acquire`).
    #[error("no browser came free within {0:?}")]
    NoSlot(Duration),
}

impl BrowserPool {
    /// Starts an episode: waits for a free slot, opens an isolated browser context, resets the
    /// sandbox state (for sandbox tasks) and loads the start URL. If the browser is dead it is
    /// restarted first. A start URL that fails to load gives an episode that has already ended
    /// with `env_error` (its host blacklisted on DNS/connection errors).
    pub async fn episode(
        &self,
        spec: EpisodeSpec,
        cfg: EpisodeCfg,
    ) -> Result<Episode, EpisodeError> {
        let wait = cfg.acquire_timeout;
        let permit = tokio::time::timeout(wait, self.inner.sem.clone().acquire_owned())
            .await
            .map_err(|_| EpisodeError::NoSlot(wait))?
            .map_err(|_| EpisodeError::Closed)?;
        let slot = self.inner.next_slot();
        let id = format!("ep{}", EPISODE_COUNTER.fetch_add(1, std::sync::atomic::Ordering::SeqCst));
        let mut attempt = 0;
        loop {
            attempt += 1;
            let live = self.inner.live(slot).await?;
            match Tabs::open(&live, self, cfg.step_timeout).await {
                Ok(tabs) => {
                    let mut ep = Episode {
                        tabs,
                        id,
                        cfg,
                        spec,
                        steps: 0,
                        agent_errors: 0,
                        end: None,
                        started: Instant::now(),
                        last: None,
                        feedback: String::new(),
                        _permit: permit,
                    };
                    ep.start().await;
                    return Ok(ep);
                }
                Err(e) => {
                    // A dead browser is restarted once; a second failure is a pool error.
                    live.mark_dead();
                    if attempt >= 2 {
                        return Err(EpisodeError::Pool(PoolError::Cdp(e)));
                    }
                }
            }
        }
    }
}

impl Episode {
    /// The episode id (also the sandbox state key).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Steps taken.
    pub fn steps(&self) -> u32 {
        self.steps
    }

    /// How it ended, if it did.
    pub fn ended(&self) -> Option<&EndReason> {
        self.end.as_ref()
    }

    async fn start(&mut self) {
        let url = self.spec.start_url.clone();
        if let Some(b) = &self.spec.sandbox {
            b.sandbox.reset(&self.id);
            let mut cookie = CookieParam::new(wrl_sandbox::EPISODE_COOKIE, self.id.clone());
            cookie.url = Some(b.sandbox.base_url());
            if let Err(e) = self.tabs.page().set_cookie(cookie).await {
                self.end_env(format!("cannot set the episode cookie: {e}"));
                return;
            }
        }
        if let Some(o) = origin(&url)
            && self.tabs.blacklist().contains(&o.host)
        {
            self.end =
                Some(EndReason::EnvError { message: format!("host {} is blacklisted", o.host) });
            return;
        }
        if let Err(why) = self.tabs.check_url(&url) {
            self.end =
                Some(EndReason::EnvError { message: format!("start URL {url} is blocked: {why}") });
            return;
        }
        let res = tokio::time::timeout(self.cfg.step_timeout, async {
            self.tabs.watch().await;
            let r = self.tabs.navigate(&url).await;
            if r.is_ok() {
                self.tabs.settle(true, "about:blank", 2).await;
            }
            r
        })
        .await;
        match res {
            Ok(Ok(())) => {}
            Ok(Err(e)) => self.end_env(format!("cannot load start URL {url}: {e}")),
            Err(_) => self.end_env(format!(
                "start URL {url} did not load within {:?}",
                self.cfg.step_timeout
            )),
        }
    }

    fn end_env(&mut self, message: String) {
        if !self.tabs.is_alive() {
            self.end = Some(EndReason::EnvError { message: format!("browser crashed: {message}") });
        } else {
            self.end = Some(EndReason::EnvError { message });
        }
    }

    /// Evaluates a JavaScript expression in the active tab and returns its JSON value (for
    /// rewards that read page state, and for tests).
    /// The next observation takes a fresh snapshot (the script may have changed the page).
    pub async fn eval_js(&mut self, expr: &str) -> Result<serde_json::Value, String> {
        self.last = None;
        cdp::eval(self.tabs.page(), expr).await
    }

    /// Tabs with their titles.
    pub async fn tabs(&self) -> Vec<TabInfo> {
        self.tabs.infos().await
    }

    /// Observes the active tab: snapshot (ids), tabs, feedback of the last step, and a PNG
    /// screenshot when `screenshot` is true. Errors are environment errors (and end the
    /// episode).
    pub async fn observe(&mut self, screenshot: bool) -> Result<Observation, EndReason> {
        if let Some(EndReason::EnvError { .. } | EndReason::InfraTimeout { .. }) = &self.end {
            return Err(self.end.clone().unwrap_or(EndReason::MaxSteps));
        }
        let snap = match &self.last {
            Some(s) => s.clone(),
            None => match self.tabs.snapshot().await {
                Ok(s) => s,
                Err(e) => {
                    self.end_env(format!("observation failed: {e}"));
                    return Err(self.end.clone().unwrap_or(EndReason::MaxSteps));
                }
            },
        };
        self.last = Some(snap.clone());
        let shot = if screenshot {
            match cdp::screenshot_png(self.tabs.page()).await {
                Ok(png) => Some(png),
                Err(e) => {
                    self.end_env(format!("screenshot failed: {e}"));
                    return Err(self.end.clone().unwrap_or(EndReason::MaxSteps));
                }
            }
        } else {
            None
        };
        let tabs = if self.tabs.len() == 1 {
            vec![TabInfo {
                index: 0,
                url: snap.url.clone(),
                title: snap.title.chars().take(50).collect(),
                active: true,
            }]
        } else {
            self.tabs().await
        };
        Ok(Observation {
            goal: self.spec.goal.clone(),
            url: snap.url.clone(),
            tabs,
            viewport: self.tabs.viewport(),
            scale: self.tabs.scale(),
            snapshot: snap,
            feedback: self.feedback.clone(),
            screenshot: shot,
            step: self.steps,
            view: self.cfg.view.clone(),
        })
    }

    /// Runs a turn: the actions in order, stopping at the first failing or terminal one. Then
    /// settles, snapshots, and builds the feedback (per-action lines, blocked requests, DOM diff).
    pub async fn act(&mut self, actions: &[Action]) -> StepResult {
        if let Some(end) = &self.end {
            return StepResult {
                feedback: "the episode is over".into(),
                done: true,
                end: Some(end.clone()),
                agent_errors: vec![],
            };
        }
        if self.started.elapsed() > self.cfg.task_timeout {
            self.end = Some(EndReason::InfraTimeout {
                message: format!("task exceeded {:?}", self.cfg.task_timeout),
            });
            return StepResult {
                feedback: "task timed out".into(),
                done: true,
                end: self.end.clone(),
                agent_errors: vec![],
            };
        }
        self.steps += 1;
        // `per_turn = one`: the first action runs; the others are reported, not run.
        let dropped =
            if self.cfg.one_action_per_turn { actions.len().saturating_sub(1) } else { 0 };
        let actions = &actions[..actions.len() - dropped];
        // The clickable elements before the turn, for the DOM diff (when the view shows it).
        let before = match &self.last {
            _ if !self.cfg.view.dom_diff => Vec::new(),
            Some(s) => s.clickables(),
            None => self.tabs.snapshot().await.map(|s| s.clickables()).unwrap_or_default(),
        };
        let seq0 = self.tabs.seq();
        let timeout = self.cfg.step_timeout;
        let mut lines = Vec::new();
        let mut errors = Vec::new();
        // The answer of a terminal action, once one has run.
        let mut answer = None;
        let mut driver = Driver::new(&mut self.tabs, timeout);
        let ran = tokio::time::timeout(timeout, async {
            for a in actions {
                match driver.run(a).await {
                    Ok(line) => lines.push(line),
                    Err(Stop::Agent(e)) => {
                        lines.push(format!("error: {e}"));
                        errors.push(e);
                        break;
                    }
                    Err(Stop::Env(m)) => return Err(m),
                    Err(Stop::Terminal(ans)) => {
                        answer = Some(ans);
                        break;
                    }
                }
            }
            Ok(())
        })
        .await;
        if driver.changed() {
            self.last = None;
        }
        if let Some(answer) = answer {
            self.end = Some(EndReason::Completed { answer });
        }
        match ran {
            Ok(Ok(())) => {}
            Ok(Err(m)) => self.end_env(m),
            Err(_) => self.end_env(format!("step timed out after {timeout:?}")),
        }
        if self.end.as_ref().is_none_or(|e| matches!(e, EndReason::Completed { .. })) {
            match self.tabs.snapshot().await {
                Ok(after) => {
                    if self.cfg.view.dom_diff
                        && let Some(d) = dom_diff(&before, &after.clickables())
                    {
                        lines.push(d);
                    }
                    self.last = Some(after);
                }
                Err(e) => {
                    if self.end.is_none() {
                        self.end_env(format!("page unavailable after the action: {e}"));
                    }
                }
            }
        }
        for b in self.tabs.blocked_since(seq0) {
            lines.push(format!("blocked request to {} ({})", b.url, b.reason));
        }
        if dropped > 0 {
            lines.push(format!("{dropped} more action(s) not run: one action per turn"));
        }
        if errors.is_empty() {
            self.agent_errors = 0;
        } else {
            self.agent_errors += 1;
            if self.end.is_none() && self.agent_errors >= self.cfg.max_agent_errors {
                self.end = Some(EndReason::AgentError {
                    message: errors.last().map(|e| e.to_string()).unwrap_or_default(),
                });
            }
        }
        if self.end.is_none() && self.steps >= self.cfg.max_steps {
            self.end = Some(EndReason::MaxSteps);
        }
        self.feedback = lines.join("\n");
        StepResult {
            feedback: self.feedback.clone(),
            done: self.end.is_some(),
            end: self.end.clone(),
            agent_errors: errors,
        }
    }

    /// Records a turn whose text could not be turned into actions (parse error, unknown tool) as
    /// a step with an agent error, so it counts toward `max_agent_errors` and `max_steps`.
    pub fn reject(&mut self, e: AgentError) -> StepResult {
        if let Some(end) = &self.end {
            return StepResult {
                feedback: "the episode is over".into(),
                done: true,
                end: Some(end.clone()),
                agent_errors: vec![],
            };
        }
        self.steps += 1;
        self.agent_errors += 1;
        self.feedback = format!("error: {e}");
        if self.agent_errors >= self.cfg.max_agent_errors {
            self.end = Some(EndReason::AgentError { message: e.to_string() });
        } else if self.steps >= self.cfg.max_steps {
            self.end = Some(EndReason::MaxSteps);
        }
        StepResult {
            feedback: self.feedback.clone(),
            done: self.end.is_some(),
            end: self.end.clone(),
            agent_errors: vec![e],
        }
    }

    /// Ends the episode at once as an agent error (the policy gave up), as a step with `e`.
    pub fn give_up(&mut self, e: AgentError) -> StepResult {
        if self.end.is_none() {
            self.steps += 1;
            self.agent_errors += 1;
            self.feedback = format!("error: {e}");
            self.end = Some(EndReason::AgentError { message: e.to_string() });
        }
        StepResult {
            feedback: self.feedback.clone(),
            done: true,
            end: self.end.clone(),
            agent_errors: vec![e],
        }
    }

    /// Ends the episode: runs the checker (sandbox tasks), closes the context and frees the slot.
    pub async fn finish(self) -> Outcome {
        let reason = self.end.clone().unwrap_or(EndReason::MaxSteps);
        let answer = match &reason {
            EndReason::Completed { answer } => answer.clone(),
            _ => None,
        };
        let final_url = match &self.last {
            Some(s) => s.url.clone(),
            None => self.tabs.page().url().await.ok().flatten().unwrap_or_default(),
        };
        let verdict = self.spec.sandbox.as_ref().map(|b| {
            let state = b.sandbox.state(&self.id);
            let v = b.checker.check(CheckInput {
                answer: answer.as_deref(),
                final_url: &final_url,
                state: &state,
            });
            if matches!(reason, EndReason::Completed { .. }) {
                v
            } else {
                Verdict {
                    success: false,
                    detail: format!("episode ended with {}; {}", reason.name(), v.detail),
                }
            }
        });
        if let Some(b) = &self.spec.sandbox {
            b.sandbox.forget(&self.id);
        }
        self.tabs.close().await;
        Outcome {
            reason,
            answer,
            steps: self.steps,
            final_url,
            verdict,
            elapsed_ms: u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
        }
    }
}
