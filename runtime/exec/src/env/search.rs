//! The `search_api` environment: text-only episodes in which the agent calls `search` and
//! `visit` over HTTP — on the sandbox's `std::sandbox::search`, or on any service that speaks the
//! same two-endpoint protocol (docs/sandbox.md) — and ends with `answer`, recorded in the same
//! trajectory format, with the same failure classes, as browser episodes.

use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use wrl_browser::{AgentTurn, EndReason, EpisodeCfg};
use wrl_sandbox::{CheckInput, EpisodeState, Task, TrajOutcome, TrajStep, Trajectory};

use super::{Agent, Env, EpisodeRun};

/// One call of WebDancer's tool set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// `search(query: [..])`: one request per query.
    Search(Vec<String>),
    /// `visit(url: [..], goal)`: each page read for the goal (the task when none is given).
    Visit { urls: Vec<String>, goal: Option<String> },
    /// The terminal `answer(text)`.
    Answer(String),
    /// Another tool of the tool set, by its JSON call: one an MCP server serves (docs/mcp.md).
    Tool { name: String, arguments: serde_json::Map<String, serde_json::Value> },
}

impl Call {
    /// The tool it calls.
    pub fn tool(&self) -> &str {
        match self {
            Call::Search(_) => "search",
            Call::Visit { .. } => "visit",
            Call::Answer(_) => "answer",
            Call::Tool { name, .. } => name,
        }
    }
}

/// Reads one turn of the policy as a call. Two spellings are accepted: the terse one the tiny
/// policy writes (`search Q1 | Q2`, `visit URL [URL…] [| GOAL]`, `answer TEXT`, one line), and
/// WebDancer's tags (`<think>…</think>` then `<tool_call>{"name": …, "arguments": {…}}</tool_call>`
/// or `<answer>…</answer>`).
pub fn parse_call(turn: &str) -> Result<Call, String> {
    let text = match turn.find("</think>") {
        Some(i) => &turn[i + "</think>".len()..],
        None => turn,
    }
    .trim();
    if let Some(inner) = between(text, "<answer>", "</answer>") {
        return answer(inner);
    }
    if let Some(inner) = between(text, "<tool_call>", "</tool_call>") {
        return tagged(inner);
    }
    if text.is_empty() {
        return Err("empty turn: call `search`, `visit` or `answer`".into());
    }
    if text.lines().filter(|l| !l.trim().is_empty()).count() > 1 {
        return Err("one call per turn".into());
    }
    let (name, rest) = text.split_once(' ').unwrap_or((text, ""));
    let rest = rest.trim();
    match name {
        "search" => queries(rest.split(" | ").map(str::to_string).collect()),
        "visit" => {
            let (urls, goal) = match rest.split_once(" | ") {
                Some((u, g)) => (u, Some(g.trim().to_string()).filter(|g| !g.is_empty())),
                None => (rest, None),
            };
            visit(urls.split_whitespace().map(str::to_string).collect(), goal)
        }
        "answer" => answer(rest),
        other => Err(format!("unknown tool `{other}` (the tools are search, visit and answer)")),
    }
}

/// The text between `open` and `close` (or the end) when `text` holds `open`.
fn between<'t>(text: &'t str, open: &str, close: &str) -> Option<&'t str> {
    let start = text.find(open)? + open.len();
    let rest = &text[start..];
    Some(rest.find(close).map_or(rest, |end| &rest[..end]))
}

fn answer(text: &str) -> Result<Call, String> {
    let a = text.trim();
    if a.is_empty() { Err("`answer` needs a text".into()) } else { Ok(Call::Answer(a.into())) }
}

fn queries(qs: Vec<String>) -> Result<Call, String> {
    let qs: Vec<String> =
        qs.into_iter().map(|q| q.trim().to_string()).filter(|q| !q.is_empty()).collect();
    if qs.is_empty() { Err("`search` needs a query".into()) } else { Ok(Call::Search(qs)) }
}

fn visit(urls: Vec<String>, goal: Option<String>) -> Result<Call, String> {
    if urls.is_empty() { Err("`visit` needs a URL".into()) } else { Ok(Call::Visit { urls, goal }) }
}

/// A JSON tool call: `{"name": "search", "arguments": {"query": ["…"]}}`; a string stands for a
/// list of one.
fn tagged(json: &str) -> Result<Call, String> {
    let v: serde_json::Value =
        serde_json::from_str(json.trim()).map_err(|e| format!("the tool call is not JSON: {e}"))?;
    let args = &v["arguments"];
    let list = |k: &str| -> Vec<String> {
        match &args[k] {
            serde_json::Value::String(s) => vec![s.clone()],
            serde_json::Value::Array(a) => {
                a.iter().filter_map(|x| x.as_str()).map(str::to_string).collect()
            }
            _ => Vec::new(),
        }
    };
    match v["name"].as_str() {
        Some("search") => queries(list("query")),
        Some("visit") => visit(list("url"), args["goal"].as_str().map(str::to_string)),
        Some("answer") => answer(args["text"].as_str().unwrap_or("")),
        Some(other) => Ok(Call::Tool {
            name: other.to_string(),
            arguments: args.as_object().cloned().unwrap_or_default(),
        }),
        None => Err("the tool call has no `name`".into()),
    }
}

/// Why a tool call failed: the environment's fault, so the episode ends as an `env_error`.
#[derive(Debug)]
struct EnvFailure(String);

/// A search API: its base URL, a client, and how much of each response the agent sees; the
/// MCP servers of its tool set, when it has some.
#[derive(Clone, Debug)]
pub struct SearchEnv {
    base: String,
    /// Bytes of each tool response kept (the tiny policy's tokens are bytes).
    step_text: usize,
    http: reqwest::Client,
    mcp: Option<std::sync::Arc<crate::mcp::McpTools>>,
    /// The engine that writes `search`'s documents, in place of the service (ZeroSearch).
    sim: Option<std::sync::Arc<super::simulated::Simulator>>,
}

/// The error text of a call of a tool neither the service nor an MCP server serves.
fn unknown(name: &str) -> String {
    format!("unknown tool `{name}` (the tools are search, visit and answer)")
}

/// `parse_call` for a search service with no MCP server beside it (`wrlc env serve`, which
/// refuses a tool set with one): a call of any other tool is the agent's mistake.
pub fn parse_service_call(turn: &str) -> Result<Call, String> {
    match parse_call(turn)? {
        Call::Tool { name, .. } => Err(unknown(&name)),
        call @ (Call::Search(_) | Call::Visit { .. } | Call::Answer(_)) => Ok(call),
    }
}

impl SearchEnv {
    /// A client of the API at `base` (`{base}/search`, `{base}/visit`); requests time out after
    /// `step_timeout`.
    pub fn new(base: &str, step_text: usize, step_timeout: Duration) -> Result<SearchEnv, String> {
        let http =
            reqwest::Client::builder().timeout(step_timeout).build().map_err(|e| e.to_string())?;
        Ok(SearchEnv {
            base: base.trim_end_matches('/').to_string(),
            step_text,
            http,
            mcp: None,
            sim: None,
        })
    }

    /// The same env calling the tools `mcp` serves there.
    pub fn with_mcp(self, mcp: Option<std::sync::Arc<crate::mcp::McpTools>>) -> SearchEnv {
        SearchEnv { mcp, ..self }
    }

    /// The same env with `search` answered by a simulated engine (`simulated_search`).
    pub fn with_simulator(self, sim: std::sync::Arc<super::simulated::Simulator>) -> SearchEnv {
        SearchEnv { sim: Some(sim), ..self }
    }

    /// Its simulated search engine, when it has one.
    pub fn simulator(&self) -> Option<&super::simulated::Simulator> {
        self.sim.as_deref()
    }

    /// The MCP tools it calls, with their counts.
    pub fn mcp(&self) -> Option<&crate::mcp::McpTools> {
        self.mcp.as_deref()
    }

    /// `call` when this env can make it; why not (the agent's mistake) otherwise.
    fn known(&self, call: Call) -> Result<Call, String> {
        match &call {
            Call::Tool { name, .. } if !self.mcp.as_ref().is_some_and(|m| m.serves(name)) => {
                Err(unknown(name))
            }
            Call::Search(_) | Call::Visit { .. } | Call::Answer(_) | Call::Tool { .. } => Ok(call),
        }
    }

    async fn get(&self, endpoint: &str, query: &[(&str, &str)]) -> Result<String, EnvFailure> {
        let url = reqwest::Url::parse_with_params(&format!("{}/{endpoint}", self.base), query)
            .map_err(|e| EnvFailure(format!("`{endpoint}`: bad URL `{}`: {e}", self.base)))?;
        let resp = self.http.get(url).send().await.map_err(|e| {
            let what = if e.is_timeout() { "timed out" } else { "failed" };
            EnvFailure(format!("`{endpoint}` {what}: {}", e.without_url()))
        })?;
        let status = resp.status();
        let body = resp.text().await.map_err(|e| EnvFailure(format!("`{endpoint}`: {e}")))?;
        if status.is_server_error() {
            return Err(EnvFailure(format!("`{endpoint}` answered HTTP {}", status.as_u16())));
        }
        // A 404 is the agent's mistake (a URL that does not exist): it reads why.
        Ok(if status.is_success() { body } else { format!("error: {}", body.trim()) })
    }

    /// What one call returns to the agent, cut to the response budget.
    async fn call(
        &self,
        call: &Call,
        task: &Task,
        history: &[String],
    ) -> Result<String, EnvFailure> {
        let task_goal = task.goal.as_str();
        let mut parts = Vec::new();
        match call {
            Call::Search(qs) => {
                for q in qs {
                    let hits = match &self.sim {
                        Some(sim) => sim.search(task, history, q).await.map_err(EnvFailure)?,
                        None => self.get("search", &[("q", q)]).await?,
                    };
                    parts.push(if qs.len() > 1 { format!("{q}:\n{hits}") } else { hits });
                }
            }
            Call::Visit { urls, goal } => {
                let goal = goal.as_deref().unwrap_or(task_goal);
                for u in urls {
                    parts.push(self.get("visit", &[("url", u), ("goal", goal)]).await?);
                }
            }
            Call::Answer(_) => {}
            // Called by the episode (`run_task`), which counts them; here (`wrlc env serve`'s
            // step), no MCP server is connected.
            Call::Tool { name, .. } => return Ok(format!("error: {}", unknown(name))),
        }
        Ok(cut(&parts.join("\n"), self.step_text))
    }

    /// What one call returns to the agent (cut to the response budget), or why the service
    /// failed (an environment error): the step of an episode driven from outside, as `wrlc env
    /// serve` drives one.
    pub async fn respond(
        &self,
        call: &Call,
        task: &Task,
        history: &[String],
    ) -> Result<String, String> {
        self.call(call, task, history).await.map_err(|EnvFailure(m)| m)
    }

    /// Runs one episode of `task`: `agent` writes each turn until it answers, errs
    /// `cfg.max_agent_errors` times in a row, or runs out of steps or time. The answer is checked
    /// by the task's checker.
    pub async fn run_task(
        &self,
        task: &Task,
        agent: &mut dyn Agent,
        cfg: &EpisodeCfg,
    ) -> Trajectory {
        let started = Instant::now();
        let mut steps: Vec<TrajStep> = Vec::new();
        let mut history: Vec<String> = Vec::new();
        let mut response = String::new();
        let mut errors = 0;
        let mut mcp_calls = crate::mcp::EpisodeCalls::default();
        let end = loop {
            let seen = observation(&task.goal, &response);
            let written =
                match super::text_turn(task, agent, cfg, (started, steps.len()), seen, &history) {
                    Ok(t) => t,
                    Err(ended) => {
                        let (end, step) = *ended;
                        steps.extend(step);
                        break end;
                    }
                };
            let turn = written.text;
            let mut step = TrajStep {
                observation: written.observation,
                actions: vec![turn.clone()],
                feedback: String::new(),
                url: String::new(),
                screenshot: None,
                boxes: None,
                said: written.said,
                malformed: false,
            };
            history.push(turn.clone());
            let call = match written.malformed {
                Some(e) => Err(e.to_string()),
                None => parse_call(&turn).and_then(|c| self.known(c)),
            };
            match call {
                Err(why) => {
                    errors += 1;
                    step.malformed = true;
                    response = format!("error: {why}");
                    step.feedback = response.clone();
                    steps.push(step);
                    if errors >= cfg.max_agent_errors.max(1) {
                        break EndReason::AgentError { message: why };
                    }
                }
                Ok(Call::Answer(a)) => {
                    steps.push(step);
                    break EndReason::Completed { answer: Some(a) };
                }
                Ok(Call::Tool { name, arguments }) => {
                    errors = 0;
                    let Some(mcp) = &self.mcp else {
                        // `known` let no other through.
                        break EndReason::AgentError { message: unknown(&name) };
                    };
                    let reply = mcp.call(&name, arguments, &mut mcp_calls).await;
                    response = reply.text;
                    step.feedback = response.clone();
                    steps.push(step);
                    if let Some(end) = reply.end {
                        break end;
                    }
                }
                Ok(call) => {
                    errors = 0;
                    step.url = match &call {
                        Call::Visit { urls, .. } => urls.join(" "),
                        _ => String::new(),
                    };
                    // The turns before this one: the call's own is the last of `history`.
                    let before = &history[..history.len().saturating_sub(1)];
                    match self.call(&call, task, before).await {
                        Ok(text) => {
                            response = text;
                            step.feedback = response.clone();
                            steps.push(step);
                        }
                        Err(EnvFailure(message)) => {
                            step.feedback = format!("error: {message}");
                            steps.push(step);
                            break EndReason::EnvError { message };
                        }
                    }
                }
            }
        };
        let answer = match &end {
            EndReason::Completed { answer } => answer.clone(),
            _ => None,
        };
        let verdict = answer.as_deref().map(|a| {
            task.checker.check(CheckInput {
                answer: Some(a),
                final_url: "",
                state: &EpisodeState::default(),
            })
        });
        Trajectory {
            task_id: task.id.clone(),
            template: task.template.clone(),
            goal: task.goal.clone(),
            agent: agent.name().to_string(),
            steps,
            outcome: TrajOutcome {
                reason: end.ending(),
                message: end.message(),
                answer,
                success: verdict.as_ref().is_some_and(|v| v.success),
                detail: verdict.map(|v| v.detail).unwrap_or_default(),
                reward: None,
            },
            elapsed_ms: started.elapsed().as_millis() as u64,
        }
    }
}

impl Env for SearchEnv {
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

    fn at_iteration(&self, at: Option<(u64, u64)>) {
        if let Some(sim) = &self.sim {
            sim.set_iteration(at);
        }
    }
}

/// The scripted expert of the sandbox's QA pairs, answering with `search` and `visit`.
#[derive(Clone, Copy, Debug, Default)]
pub struct SearchExpert;

impl Agent for SearchExpert {
    fn act(&mut self, task: &Task, observation: &str, history: &[String]) -> AgentTurn {
        AgentTurn::Text(
            wrl_sandbox::search_api::expert_action(task, history, last_response(task, observation))
                .unwrap_or_else(|| "stuck".into()),
        )
    }

    fn name(&self) -> &str {
        "expert"
    }
}

/// The tool response an observation of `task` shows (empty before the first call).
pub fn last_response<'o>(task: &Task, observation: &'o str) -> &'o str {
    observation
        .strip_prefix(&format!("task: {}\nresult: ", task.goal))
        .and_then(|r| r.strip_suffix('\n'))
        .unwrap_or("")
}

/// What the agent sees: the task, then the last tool response.
pub fn observation(goal: &str, response: &str) -> String {
    if response.is_empty() {
        format!("task: {goal}\n")
    } else {
        format!("task: {goal}\nresult: {response}\n")
    }
}

/// `text` cut to at most `max` bytes, on a character boundary.
pub(crate) fn cut(text: &str, max: usize) -> String {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_spellings_parse() {
        assert_eq!(parse_call("search Barvel"), Ok(Call::Search(vec!["Barvel".into()])));
        assert_eq!(parse_call("search a | b "), Ok(Call::Search(vec!["a".into(), "b".into()])));
        assert_eq!(
            parse_call("visit /wiki/article/x | when founded"),
            Ok(Call::Visit {
                urls: vec!["/wiki/article/x".into()],
                goal: Some("when founded".into())
            })
        );
        assert_eq!(parse_call(" answer 1204 "), Ok(Call::Answer("1204".into())));
        let tagged = r#"<think>look it up</think>
<tool_call>{"name": "search", "arguments": {"query": ["Barvel", "river Avel"]}}</tool_call>"#;
        assert_eq!(
            parse_call(tagged),
            Ok(Call::Search(vec!["Barvel".into(), "river Avel".into()]))
        );
        let visit = r#"<tool_call>{"name":"visit","arguments":{"url":"/wiki/article/x","goal":"g"}}</tool_call>"#;
        assert_eq!(
            parse_call(visit),
            Ok(Call::Visit { urls: vec!["/wiki/article/x".into()], goal: Some("g".into()) })
        );
        assert_eq!(
            parse_call("<think>so</think><answer>Avel</answer>"),
            Ok(Call::Answer("Avel".into()))
        );
    }

    #[test]
    fn malformed_turns_say_why() {
        assert!(parse_call("").unwrap_err().contains("empty turn"));
        assert!(parse_call("click 3").unwrap_err().contains("unknown tool `click`"));
        assert!(parse_call("search ").unwrap_err().contains("needs a query"));
        assert!(parse_call("visit").unwrap_err().contains("needs a URL"));
        assert!(parse_call("answer 1\nanswer 2").unwrap_err().contains("one call per turn"));
        assert!(parse_call("<tool_call>{nope</tool_call>").unwrap_err().contains("not JSON"));
        assert_eq!(cut("héllo", 2), "h");
    }
}
