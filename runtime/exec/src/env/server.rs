//! The `env_server` environment: episodes run by an environment server over HTTP (the
//! create / reset / step / observe / close protocol AgentGym's servers speak, docs/sandbox.md):
//! the policy's turn goes to `step` as written, the server's observation comes back as the next
//! turn's text, and its `done` ends the episode with its rewards summed. Failures of the server
//! are the episode's `env_error` (a failed request, a 5xx, an answer that is not the protocol's)
//! or `infra_timeout` (a request past the step timeout), recorded like every other env's.
//! Tasks the server draws itself (`env_tasks`, [`env_drawn`]) are reset by their slot index and
//! take their goal from the reset's answer.

use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde_json::{Value as Json, json};
use wrl_browser::{Breakdown, EndReason, EpisodeCfg};
use wrl_sandbox::{Task, TrajOutcome, TrajStep, Trajectory};

use wrl_plan::params::Endpoints;

use super::search::{cut, observation};
use super::{Agent, Env, EpisodeRun};

/// One step's answer: the observation as the agent sees it (cut to the response budget).
#[derive(Debug, Clone, PartialEq)]
pub struct Stepped {
    pub observation: String,
    pub reward: f64,
    pub done: bool,
}

/// The template of a task slot the server draws itself (`env_tasks(count: N)`): its id is the
/// slot's index, and its goal is empty until the server's reset answers it.
pub const ENV_DRAWN: &str = "env_drawn";

/// The `count` task slots of `env_tasks(count)`, ids `0` to `count − 1`: each carries no goal
/// and no reference answer (the server draws both); the phase's horizon bounds its steps.
pub fn env_drawn(count: u64) -> Vec<Task> {
    (0..count)
        .map(|i| Task {
            id: i.to_string(),
            split: wrl_sandbox::Split::Train,
            template: ENV_DRAWN.into(),
            site: String::new(),
            start_path: String::new(),
            goal: String::new(),
            params: Default::default(),
            checker: wrl_sandbox::Checker::Answer {
                expected: String::new(),
                mode: wrl_sandbox::AnswerMode::Text,
            },
            max_steps: u32::MAX,
            content_seed: 0,
        })
        .collect()
}

/// Whether the server draws `task` itself (a slot of `env_tasks`).
pub fn is_env_drawn(task: &Task) -> bool {
    task.template == ENV_DRAWN
}

/// A new instance as the server reset it: its id, its first observation (cut to the response
/// budget) and the episode's goal (the task's own, or the one the server drew).
pub type Opened = (Json, String, String);

/// A client of one environment server.
#[derive(Clone, Debug)]
pub struct ServerEnv {
    base: String,
    endpoints: Endpoints,
    token: Option<String>,
    /// Bytes of each observation the agent sees.
    step_text: usize,
    http: reqwest::Client,
}

impl ServerEnv {
    /// A client of the server at `base`; each request times out after `step_timeout`.
    pub fn new(
        base: &str,
        endpoints: Endpoints,
        token: Option<String>,
        step_text: usize,
        step_timeout: Duration,
    ) -> Result<ServerEnv, String> {
        let http =
            reqwest::Client::builder().timeout(step_timeout).build().map_err(|e| e.to_string())?;
        let base = base.trim_end_matches('/').to_string();
        Ok(ServerEnv { base, endpoints, token, step_text: step_text.max(1), http })
    }

    /// The client of an `env_server` env: its endpoints and timeout, and the bearer token read
    /// from the variable `api_key_env` names (the preflight refuses an unset one).
    pub fn of(s: &wrl_plan::params::EnvServer) -> Result<ServerEnv, String> {
        let token =
            (!s.api_key_env.is_empty()).then(|| std::env::var(&s.api_key_env).ok()).flatten();
        ServerEnv::new(
            &s.base_url,
            s.endpoints.clone(),
            token,
            s.step_text.0 as usize,
            s.timeout.step.duration(),
        )
    }

    fn url(&self, endpoint: &str) -> String {
        format!("{}/{}", self.base, endpoint.trim_start_matches('/'))
    }

    /// Sends one request and reads its JSON answer.
    async fn send(&self, what: &str, req: reqwest::RequestBuilder) -> Result<Json, Breakdown> {
        let req = match &self.token {
            Some(t) => req.bearer_auth(t),
            None => req,
        };
        let resp = req.send().await.map_err(|e| {
            let timeout = e.is_timeout();
            let verb = if timeout { "timed out" } else { "failed" };
            let m = format!("`{what}` {verb}: {}", e.without_url());
            if timeout { Breakdown::Timeout(m) } else { Breakdown::Env(m) }
        })?;
        let status = resp.status();
        let body = resp.text().await.map_err(|e| Breakdown::Env(format!("`{what}`: {e}")))?;
        if !status.is_success() {
            let body: String = body.trim().chars().take(200).collect();
            return Err(Breakdown::Env(format!(
                "`{what}` answered HTTP {}: {body}",
                status.as_u16()
            )));
        }
        serde_json::from_str(&body).map_err(|e| {
            Breakdown::Env(format!("`{what}` answered something that is not JSON: {e}"))
        })
    }

    async fn post(&self, what: &str, endpoint: &str, body: Json) -> Result<Json, Breakdown> {
        self.send(what, self.http.post(self.url(endpoint)).json(&body)).await
    }

    /// A new instance: its id as the server gave it (a number or a string).
    async fn create(&self) -> Result<Json, Breakdown> {
        let v = self.post("create", &self.endpoints.create, json!({})).await?;
        match v.get("id").or_else(|| v.get("env_idx")) {
            Some(id @ (Json::Number(_) | Json::String(_))) => Ok(id.clone()),
            _ => Err(Breakdown::Env(format!("`create` answered no `id`: {}", brief(&v)))),
        }
    }

    /// Resets instance `id` to `task`: its first observation and the goal. A slot the server
    /// draws itself goes by its index (`{"id", "task": 3}`), and its goal is the answer's
    /// `goal` text, else the first observation (AgentGym's WebShop shows the instruction there).
    async fn reset(&self, id: &Json, task: &Task) -> Result<(String, String), Breakdown> {
        let drawn = is_env_drawn(task);
        let body = match drawn {
            true => {
                let slot: u64 = task.id.parse().map_err(|_| {
                    Breakdown::Env(format!("`reset`: task slot `{}` is not an index", task.id))
                })?;
                json!({ "id": id, "task": slot })
            }
            false => json!({ "id": id, "task": task.id, "goal": task.goal }),
        };
        let v = self.post("reset", &self.endpoints.reset, body).await?;
        let first = match self.endpoints.observe.is_empty() {
            true => text_of(&v, "reset")?,
            false => self.observe(id).await?,
        };
        let goal = match (drawn, v.get("goal")) {
            (false, _) => task.goal.clone(),
            (true, Some(Json::String(g))) if !g.trim().is_empty() => g.trim().to_string(),
            (true, Some(g)) if !g.is_null() => {
                return Err(Breakdown::Env(format!(
                    "`reset` answered a `goal` that is not text: {}",
                    brief(g)
                )));
            }
            (true, _) => first.trim().to_string(),
        };
        Ok((first, goal))
    }

    /// One turn: `action` to the server as written; its answer, the observation cut to the
    /// response budget.
    pub async fn step(&self, id: &Json, action: &str) -> Result<Stepped, Breakdown> {
        let v =
            self.post("step", &self.endpoints.step, json!({ "id": id, "action": action })).await?;
        let reward = match v.get("reward") {
            None | Some(Json::Null) => 0.0,
            Some(r) => r.as_f64().ok_or_else(|| {
                Breakdown::Env(format!("`step` answered a `reward` that is not a number: {r}"))
            })?,
        };
        let done = match v.get("done") {
            Some(Json::Bool(b)) => *b,
            other => {
                let got = other.map_or("nothing".to_string(), Json::to_string);
                return Err(Breakdown::Env(format!(
                    "`step` answered no boolean `done` (got {got})"
                )));
            }
        };
        let observation = match (done, self.endpoints.observe.is_empty()) {
            (true, _) => v.get("observation").and_then(Json::as_str).unwrap_or("").to_string(),
            (false, true) => text_of(&v, "step")?,
            (false, false) => self.observe(id).await?,
        };
        Ok(Stepped { observation: cut(&observation, self.step_text), reward, done })
    }

    async fn observe(&self, id: &Json) -> Result<String, Breakdown> {
        let key = match id {
            Json::String(s) => s.clone(),
            other => other.to_string(),
        };
        let url =
            reqwest::Url::parse_with_params(&self.url(&self.endpoints.observe), &[("id", key)])
                .map_err(|e| Breakdown::Env(format!("`observe`: bad URL `{}`: {e}", self.base)))?;
        let req = self.http.get(url);
        let v = self.send("observe", req).await?;
        match &v {
            Json::String(s) => Ok(s.clone()),
            _ => text_of(&v, "observe"),
        }
    }

    /// A new instance reset to `task`: its id, first observation (cut to the response budget)
    /// and goal: the start of an episode driven from outside, as `wrlc env serve` drives one.
    pub async fn open(&self, task: &Task) -> Result<Opened, (Option<Json>, Breakdown)> {
        let id = self.create().await.map_err(|f| (None, f))?;
        match self.reset(&id, task).await {
            Ok((first, goal)) => Ok((id, cut(&first, self.step_text), goal)),
            Err(f) => Err((Some(id), f)),
        }
    }

    /// Ends the instance; a server that fails to close it does not change the episode.
    pub async fn close(&self, id: &Json) {
        let _ = self.post("close", &self.endpoints.close, json!({ "id": id })).await;
    }

    /// Runs one episode of `task` on a fresh instance: `agent` writes each turn until the server
    /// says `done`, the steps run out, or the time does.
    pub async fn run_task(
        &self,
        task: &Task,
        agent: &mut dyn Agent,
        cfg: &EpisodeCfg,
    ) -> Trajectory {
        let started = Instant::now();
        let mut steps: Vec<TrajStep> = Vec::new();
        let mut reward = 0.0;
        // A slot the server draws takes the goal its reset answered, for the agent's prompts,
        // the trajectory, the judges and the report alike.
        let mut task = std::borrow::Cow::Borrowed(task);
        let (end, id) = match self.open(&task).await {
            Err((id, f)) => (f.end(), id),
            Ok((id, first, goal)) => {
                if goal != task.goal {
                    task.to_mut().goal = goal;
                }
                let end = self
                    .turns(&task, agent, cfg, (&id, started), first, &mut steps, &mut reward)
                    .await;
                (end, Some(id))
            }
        };
        if let Some(id) = &id {
            self.close(id).await;
        }
        let (success, detail) = verdict(matches!(end, EndReason::Completed { .. }), reward);
        Trajectory {
            task_id: task.id.clone(),
            template: task.template.clone(),
            goal: task.goal.clone(),
            agent: agent.name().to_string(),
            steps,
            outcome: TrajOutcome {
                reason: end.ending(),
                message: end.message(),
                answer: None,
                success,
                detail,
                reward: Some(reward),
            },
            elapsed_ms: started.elapsed().as_millis() as u64,
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn turns(
        &self,
        task: &Task,
        agent: &mut dyn Agent,
        cfg: &EpisodeCfg,
        (id, started): (&Json, Instant),
        mut shown: String,
        steps: &mut Vec<TrajStep>,
        reward: &mut f64,
    ) -> EndReason {
        let mut history: Vec<String> = Vec::new();
        loop {
            let seen = observation(&task.goal, &shown);
            // The server reads the turn as written, malformed or not.
            let written =
                match super::text_turn(task, agent, cfg, (started, steps.len()), seen, &history) {
                    Ok(t) => t,
                    Err(ended) => {
                        let (end, step) = *ended;
                        steps.extend(step);
                        return end;
                    }
                };
            let turn = written.text;
            history.push(turn.clone());
            let mut step = TrajStep {
                observation: written.observation,
                actions: vec![turn.clone()],
                feedback: String::new(),
                url: String::new(),
                screenshot: None,
                boxes: None,
                said: written.said,
                malformed: written.malformed.is_some(),
            };
            match self.step(id, &turn).await {
                Err(f) => {
                    step.feedback = format!("error: {}", f.message());
                    steps.push(step);
                    return f.end();
                }
                Ok(s) => {
                    *reward += s.reward;
                    shown = s.observation;
                    step.feedback = shown.clone();
                    steps.push(step);
                    if s.done {
                        return EndReason::Completed { answer: None };
                    }
                }
            }
        }
    }
}

impl Env for ServerEnv {
    fn run<'a>(
        &'a self,
        task: &'a Task,
        agent: &'a mut dyn Agent,
        _keep_screens: usize,
        cfg: &'a EpisodeCfg,
    ) -> BoxFuture<'a, Result<EpisodeRun, String>> {
        Box::pin(async move {
            let trajectory = self.run_task(task, agent, cfg).await;
            Ok(EpisodeRun { trajectory, screenshots: Vec::new() })
        })
    }
}

/// An episode's verdict (success, detail) from how it ended and the server's summed reward:
/// solved when the server said `done` and gave more than 0.
pub fn verdict(completed: bool, reward: f64) -> (bool, String) {
    match completed {
        true => (reward > 0.0, format!("the server's reward: {reward}")),
        false => (false, String::new()),
    }
}

/// The `observation` text of an answer.
fn text_of(v: &Json, what: &str) -> Result<String, Breakdown> {
    match v.get("observation") {
        Some(Json::String(s)) => Ok(s.clone()),
        _ => Err(Breakdown::Env(format!("`{what}` answered no `observation` text: {}", brief(v)))),
    }
}

/// An answer, shortened for a message.
fn brief(v: &Json) -> String {
    let s = v.to_string();
    if s.len() > 120 { format!("{}…", cut(&s, 120)) } else { s }
}
