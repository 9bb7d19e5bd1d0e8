//! One episode driven from outside, a turn per request: the same loop as `wrlc run`'s episode
//! runners (`wrl_browser::runner`, `SearchEnv::run_task`) cut at the point where they ask the
//! policy for its turn. A browser turn is read by `agent::actions::read_turn` (Hermes calls
//! checked against the recipe's tool set, or terse lines); a search turn by `parse_service_call`; an
//! environment server's turn goes to its `step` as written (`ServerEnv::step`). The
//! finished trajectory is scored by `rollout::scored`, the function `wrlc run`'s rollouts use.

use std::collections::VecDeque;
use std::time::Instant;

use serde::Serialize;
use wrl_browser::{EndReason, Episode, EpisodeCfg, EpisodeSpec, Observation};
use wrl_exec::agent::actions::read_turn;
use wrl_exec::agent::prompt::{prompt_cut, split_task};
use wrl_exec::env::search::{Call, observation, parse_service_call};
use wrl_exec::reward::{RewardExpr, RewardValue};
use wrl_exec::rollout::{Scoring, scored};
use wrl_sandbox::{CheckInput, Ending, EpisodeState, Task, TrajOutcome, TrajStep, Trajectory};

use crate::setup::{Place, Served};

/// What the agent sees before its next turn.
#[derive(Clone, Debug, Serialize)]
pub struct Observed {
    /// The observation as text (`task: …` first), as a text policy reads it.
    pub text: String,
    /// The prompt the recipe's agent would be given: the observation with the history its
    /// `history` keeps.
    pub prompt: String,
    /// The page as PNG, base64, when the env observes screenshots.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub screenshot: Option<String>,
}

/// The result of one turn.
#[derive(Clone, Debug, Serialize)]
pub struct Stepped {
    pub done: bool,
    /// What the env answered (the action's feedback, the tool's response, or the reason the
    /// turn could not run).
    pub feedback: String,
    /// The turn could not be read as calls of the tool set: E0613 and why (the episode goes
    /// on; the malformed turn counts toward the agent's `max_parse_failures`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<TurnProblem>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observation: Option<Observed>,
    pub steps: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct TurnProblem {
    pub code: &'static str,
    pub message: String,
}

/// A finished episode's score.
#[derive(Clone, Debug, Serialize)]
pub struct Score {
    pub episode: String,
    pub node: String,
    /// The recipe's reward; `None` when excluded.
    pub reward: Option<f64>,
    /// The class that excluded the reward (a failed judge, or a class in `exclude`).
    pub excluded: Option<String>,
    pub success: bool,
    /// How the episode ended (its word: docs/sandbox.md, "Trajectory JSONL").
    pub failure_class: Ending,
    pub message: String,
    pub answer: Option<String>,
    pub steps: usize,
    /// The process reward of each step (empty without one).
    pub process: Vec<f64>,
    pub elapsed_ms: u64,
}

enum Driver {
    Browser {
        ep: Box<Episode>,
        shots: VecDeque<Vec<u8>>,
        keep: usize,
        screenshot: bool,
        /// The last page's loopback origin, cut from feedback and URLs as trajectories record them.
        origin: Option<String>,
    },
    Search {
        env: wrl_exec::env::SearchEnv,
        response: String,
        errors: u32,
        end: Option<EndReason>,
    },
    Server {
        env: wrl_exec::env::ServerEnv,
        /// The server's instance (none when it could not be created).
        id: Option<serde_json::Value>,
        /// Its last observation.
        shown: String,
        /// Its step rewards so far.
        reward: f64,
        end: Option<EndReason>,
    },
}

/// Why an episode did not start.
#[derive(Clone, Debug)]
pub struct Unstarted {
    pub busy: bool,
    pub message: String,
}

/// A live episode.
pub struct Session {
    pub id: String,
    pub node: String,
    task: Task,
    cfg: EpisodeCfg,
    driver: Driver,
    steps: Vec<TrajStep>,
    history: Vec<String>,
    /// The pages observed before the current one (without task lines), oldest first.
    seen: Vec<String>,
    last: Option<Observed>,
    started: Instant,
    /// When the last request touched it (an idle episode is ended by the reaper).
    pub touched: Instant,
}

fn b64(png: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(png)
}

impl Session {
    /// Starts an episode of `task` at `served`'s env. An error: the episode could not start —
    /// busy (no browser came free within `timeout.acquire`: retry), or the pool failed.
    pub async fn start(id: String, served: &Served, mut task: Task) -> Result<Session, Unstarted> {
        task.max_steps = task.max_steps.min(served.max_steps).max(1);
        let cfg = EpisodeCfg { max_steps: task.max_steps, ..served.episode.clone() };
        let driver = match &served.place {
            Place::Browser { pool, sandbox, screenshot } => {
                let ep = pool
                    .episode(EpisodeSpec::sandbox_task(sandbox, &task), cfg.clone())
                    .await
                    .map_err(|e| Unstarted {
                        busy: matches!(e, wrl_browser::EpisodeError::NoSlot(_)),
                        message: e.to_string(),
                    })?;
                let keep = served.judges.screenshots().max(usize::from(*screenshot));
                Driver::Browser {
                    ep: Box::new(ep),
                    shots: VecDeque::new(),
                    keep,
                    screenshot: *screenshot,
                    origin: None,
                }
            }
            Place::Search(env) => {
                Driver::Search { env: env.clone(), response: String::new(), errors: 0, end: None }
            }
            // A server that cannot open an instance ends the episode at once, with its class.
            Place::Server(env) => {
                let (id, shown, end) = match env.open(&task).await {
                    Ok((id, first, goal)) => {
                        // A slot the server draws: the goal its reset answered.
                        task.goal = goal;
                        (Some(id), first, None)
                    }
                    Err((id, f)) => (id, String::new(), Some(f.end())),
                };
                Driver::Server { env: env.clone(), id, shown, reward: 0.0, end }
            }
        };
        let now = Instant::now();
        let mut s = Session {
            id,
            node: served.node.clone(),
            task,
            cfg,
            driver,
            steps: Vec::new(),
            history: Vec::new(),
            seen: Vec::new(),
            last: None,
            started: now,
            touched: now,
        };
        s.observe(served).await;
        Ok(s)
    }

    pub fn done(&self) -> bool {
        match &self.driver {
            Driver::Browser { ep, .. } => ep.ended().is_some(),
            Driver::Search { end, .. } | Driver::Server { end, .. } => end.is_some(),
        }
    }

    pub fn observation(&self) -> Option<&Observed> {
        self.last.as_ref()
    }

    pub fn steps(&self) -> usize {
        self.steps.len()
    }

    /// Observes the page (a browser) or the last response (a search API) for the next turn.
    async fn observe(&mut self, served: &Served) {
        if self.done() {
            self.last = None;
            return;
        }
        let (text, screenshot) = match &mut self.driver {
            Driver::Browser { ep, shots, keep, screenshot, origin } => {
                let obs: Observation = match ep.observe(*keep > 0).await {
                    Ok(o) => o,
                    Err(_) => {
                        self.last = None;
                        return;
                    }
                };
                let png = obs.screenshot.clone();
                if let Some(p) = png.clone().filter(|_| *keep > 0) {
                    if shots.len() == *keep {
                        shots.pop_front();
                    }
                    shots.push_back(p);
                }
                *origin = obs.local_origin();
                (obs.text(), png.filter(|_| *screenshot).map(|p| b64(&p)))
            }
            Driver::Search { response, .. } => (observation(&self.task.goal, response), None),
            Driver::Server { shown, .. } => (observation(&self.task.goal, shown), None),
        };
        // The service hands the prompt to its client, who decides what an over-long one does;
        // `overflow = end_episode` is refused when the service starts.
        if let Some(prev) = self.last.as_ref() {
            self.seen.push(split_task(&prev.text).1.to_string());
        }
        let prompt = prompt_cut(&text, &self.seen, &self.history, served.history, served.window);
        self.last = Some(Observed { text, prompt, screenshot });
    }

    /// Runs one turn of the model's text.
    pub async fn step(&mut self, served: &Served, turn: &str) -> Stepped {
        self.touched = Instant::now();
        let observation = self.last.as_ref().map(|o| o.text.clone()).unwrap_or_default();
        let mut problem = None;
        let (feedback, url) = match &mut self.driver {
            Driver::Browser { ep, origin, .. } => {
                let result = match read_turn(turn, &served.tools) {
                    Ok((_, actions)) => ep.act(&actions).await,
                    Err(e) => {
                        problem = Some(TurnProblem {
                            code: crate::Code::MalformedCall.as_str(),
                            message: e.to_string(),
                        });
                        ep.reject(e.agent_error())
                    }
                };
                let fb = match origin {
                    Some(o) => result.feedback.replace(o.as_str(), ""),
                    None => result.feedback.clone(),
                };
                let url = fb
                    .split("navigated to ")
                    .nth(1)
                    .and_then(|r| r.split([';', '\n']).next())
                    .map(|u| u.trim().to_string())
                    .unwrap_or_else(|| url_path(&observation));
                (fb, url)
            }
            Driver::Search { env, response, errors, end } => {
                let (fb, url) = search_turn(
                    env,
                    &self.task,
                    turn,
                    response,
                    errors,
                    end,
                    &self.cfg,
                    self.started,
                    &mut problem,
                )
                .await;
                (fb, url)
            }
            Driver::Server { env, id, shown, reward, end } => {
                let fb = match (id.as_ref(), self.started.elapsed() > self.cfg.task_timeout) {
                    (Some(_), true) => {
                        let message = format!("the task took over {:.0?}", self.cfg.task_timeout);
                        *end = Some(EndReason::InfraTimeout { message: message.clone() });
                        format!("error: {message}")
                    }
                    (Some(i), false) => match env.step(i, turn.trim()).await {
                        Ok(s) => {
                            *reward += s.reward;
                            *shown = s.observation;
                            if s.done {
                                *end = Some(EndReason::Completed { answer: None });
                            }
                            shown.clone()
                        }
                        Err(f) => {
                            let fb = format!("error: {}", f.message());
                            *end = Some(f.end());
                            fb
                        }
                    },
                    (None, _) => String::new(),
                };
                (fb, String::new())
            }
        };
        self.steps.push(TrajStep {
            observation,
            actions: turn.lines().map(str::to_string).filter(|l| !l.trim().is_empty()).collect(),
            feedback: feedback.clone(),
            url,
            screenshot: None,
            boxes: None,
            said: None, // `actions` are the model's text, as the client sent it
            malformed: problem.is_some(),
        });
        self.history.extend(turn.lines().map(str::to_string));
        if let Driver::Search { end, .. } | Driver::Server { end, .. } = &mut self.driver
            && end.is_none()
            && self.steps.len() >= self.task.max_steps as usize
        {
            *end = Some(EndReason::MaxSteps);
        }
        self.observe(served).await;
        Stepped {
            done: self.done(),
            feedback,
            error: problem,
            observation: self.last.clone(),
            steps: self.steps.len(),
        }
    }

    /// Ends the episode (`abort`: the client gave up on it, e.g. its trajectory ran past
    /// verl's response budget) and scores it with the node's reward.
    pub async fn finish(self, served: &Served, abort: Option<String>) -> Score {
        let Session { id, node, task, driver, steps, started, .. } = self;
        let mut env_reward = None;
        let (reason, message, answer, success, detail, shots) = match driver {
            Driver::Browser { ep, mut shots, keep, .. } => {
                let mut ep = *ep;
                if abort.is_none()
                    && keep > 0
                    && let Ok(mut obs) = ep.observe(true).await
                    && let Some(p) = obs.screenshot.take()
                {
                    if shots.len() == keep {
                        shots.pop_front();
                    }
                    shots.push_back(p);
                }
                let running = ep.ended().is_none();
                let out = ep.finish().await;
                let verdict = out.verdict.clone();
                let (reason, message) = match (running, &abort) {
                    (true, Some(why)) => ended_early(why),
                    _ => (out.reason.ending(), out.reason.message()),
                };
                (
                    reason,
                    message,
                    out.answer.clone(),
                    verdict.as_ref().is_some_and(|v| v.success),
                    verdict.map(|v| v.detail).unwrap_or_default(),
                    Vec::from(shots),
                )
            }
            Driver::Server { env, id, reward, end, .. } => {
                if let Some(id) = &id {
                    env.close(id).await;
                }
                env_reward = Some(reward);
                let (reason, message) = match (end, &abort) {
                    (Some(e), _) => (e.ending(), e.message()),
                    (None, Some(why)) => ended_early(why),
                    (None, None) => (Ending::MaxSteps, String::new()),
                };
                let (success, detail) =
                    wrl_exec::env::server::verdict(reason == Ending::Completed, reward);
                (reason, message, None, success, detail, Vec::new())
            }
            Driver::Search { end, .. } => {
                let (answer, (reason, message)) = match (end, &abort) {
                    (Some(EndReason::Completed { answer }), _) => {
                        (answer, (Ending::Completed, String::new()))
                    }
                    (Some(e), _) => (None, (e.ending(), e.message())),
                    (None, Some(why)) => (None, ended_early(why)),
                    (None, None) => (None, (Ending::MaxSteps, String::new())),
                };
                let verdict = answer.as_deref().map(|a| {
                    task.checker.check(CheckInput {
                        answer: Some(a),
                        final_url: "",
                        state: &EpisodeState::default(),
                    })
                });
                (
                    reason,
                    message,
                    answer,
                    verdict.as_ref().is_some_and(|v| v.success),
                    verdict.map(|v| v.detail).unwrap_or_default(),
                    Vec::new(),
                )
            }
        };
        let trajectory = Trajectory {
            task_id: task.id.clone(),
            template: task.template.clone(),
            goal: task.goal.clone(),
            agent: "env-service".into(),
            steps,
            outcome: TrajOutcome { reason, message, answer, success, detail, reward: env_reward },
            elapsed_ms: started.elapsed().as_millis() as u64,
        };
        let (reward, process) = match &served.reward {
            Some(expr) => {
                let scoring =
                    Scoring { reward: expr, rewards: &served.rewards, judges: &served.judges };
                score_with(scoring, served, &task, &trajectory, &shots).await
            }
            // An eval: the task's checker.
            None => (RewardValue::Value(f64::from(u8::from(success))), Vec::new()),
        };
        let (reward, excluded) = match reward {
            RewardValue::Value(v) => (Some(v), None),
            RewardValue::Excluded(why) => (None, Some(why.to_string())),
        };
        Score {
            episode: id,
            node,
            reward,
            excluded,
            success: trajectory.outcome.success,
            failure_class: trajectory.outcome.reason,
            message: trajectory.outcome.message.clone(),
            answer: trajectory.outcome.answer.clone(),
            steps: trajectory.steps.len(),
            process,
            elapsed_ms: trajectory.elapsed_ms,
        }
    }
}

/// The `url: ` line of an observation (the page did not change), else nothing.
fn url_path(observation: &str) -> String {
    observation
        .lines()
        .find_map(|l| l.strip_prefix("url: "))
        .map_or_else(String::new, str::to_string)
}

/// The ending (and message) of an episode the client ends while it runs, as the recipe's
/// `exclude` and `ended(…)` name them: `truncated` (its trajectory ran past the trainer's token
/// budget), `aborted` (the trainer gave up on it), `max_steps`; any other reason (an idle
/// episode the service reaped, an ending only the episode itself can reach) is the
/// infrastructure failing it, `env_error`.
fn ended_early(why: &str) -> (Ending, String) {
    let other = || (Ending::EnvError, format!("ended before it finished ({why})"));
    match why.parse::<Ending>() {
        Ok(Ending::Truncated) => {
            (Ending::Truncated, "the trainer's token budget for the trajectory ran out".into())
        }
        Ok(Ending::Aborted) => (Ending::Aborted, "the trainer gave up on the episode".into()),
        Ok(Ending::MaxSteps) => (Ending::MaxSteps, String::new()),
        Ok(Ending::Completed | Ending::AgentError | Ending::EnvError | Ending::InfraTimeout)
        | Err(_) => other(),
    }
}

async fn score_with(
    scoring: Scoring<'_>,
    served: &Served,
    task: &Task,
    trajectory: &Trajectory,
    shots: &[Vec<u8>],
) -> (RewardValue, Vec<f64>) {
    let process: Option<&RewardExpr> = served.process.as_ref();
    let s = scored(scoring, &served.exclude, process, task, trajectory, shots).await;
    (s.reward, s.process)
}

/// One turn of a search episode, as `SearchEnv::run_task` runs it.
#[allow(clippy::too_many_arguments)]
async fn search_turn(
    env: &wrl_exec::env::SearchEnv,
    task: &Task,
    turn: &str,
    response: &mut String,
    errors: &mut u32,
    end: &mut Option<EndReason>,
    cfg: &EpisodeCfg,
    started: Instant,
    problem: &mut Option<TurnProblem>,
) -> (String, String) {
    if started.elapsed() > cfg.task_timeout {
        let message = format!("the task took over {:.0?}", cfg.task_timeout);
        *end = Some(EndReason::InfraTimeout { message: message.clone() });
        return (format!("error: {message}"), String::new());
    }
    match parse_service_call(turn.trim()) {
        Err(why) => {
            *errors += 1;
            *response = format!("error: {why}");
            *problem = Some(TurnProblem {
                code: crate::Code::MalformedCall.as_str(),
                message: why.clone(),
            });
            if *errors >= cfg.max_agent_errors.max(1) {
                *end = Some(EndReason::AgentError { message: why });
            }
            (response.clone(), String::new())
        }
        Ok(Call::Answer(a)) => {
            *end = Some(EndReason::Completed { answer: Some(a) });
            (String::new(), String::new())
        }
        Ok(call) => {
            *errors = 0;
            let url = match &call {
                Call::Visit { urls, .. } => urls.join(" "),
                _ => String::new(),
            };
            // The service refuses a simulated engine, the one reader of the turns before.
            match env.respond(&call, task, &[]).await {
                Ok(text) => {
                    *response = text;
                    (response.clone(), url)
                }
                Err(message) => {
                    *end = Some(EndReason::EnvError { message: message.clone() });
                    (format!("error: {message}"), url)
                }
            }
        }
    }
}
