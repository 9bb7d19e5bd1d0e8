//! A ReAct agent whose policy is an `api(…)` model (a frontier baseline, a model served by
//! `wrlc serve` or vLLM): each turn is one OpenAI chat completion of the episode's conversation,
//! the tool set offered as the request's `tools` and the reply's `tool_calls` read as the
//! agent's calls, each later page answering the turn's calls as `tool` messages; where its env
//! shows screenshots, the last K as `image_url` parts after the page they show (older ones as
//! the env's `older` says, by a local vision-language policy's rule: `agent::vision`).
//! Evaluation only: nothing of the turn is trained, so no tokens or log-probs are kept.

use std::sync::Arc;

use serde_json::{Value as Json, json};
use wrl_browser::{AgentTurn, Breakdown};
use wrl_sandbox::Task;
use wrl_trainer::chat::CallText;
use wrl_trainer::{Role, SampleParams, Segment};

use super::conversation::Chat;
use super::hermes::Hermes;
use super::prompt::{History, Window, prompt_in, split_task};
use super::vision::{image_mark, marked, resolve_marks, split_images};
use crate::env::Agent;
use crate::reward::client::JudgeClient;
use crate::reward::prompts::JudgeError;

/// The model an `api(…)` policy is called at, and its context in tokens (the room its prompts
/// are fitted to, as a graph module's: [`super::graph::api_room`]).
#[derive(Clone, Debug)]
pub struct ApiRun {
    pub client: JudgeClient,
    pub context: usize,
    /// The tokens one screenshot is counted as in the room (the model's `image_tokens`).
    pub image_tokens: usize,
}

/// What a page answers of the turn before it when that turn made several calls: the page after
/// the last call is that call's result; the earlier calls' results say where to look.
const EARLIER_CALL: &str = "done; the page after this turn's calls is the last call's result";

/// An `api(…)` policy acting in one episode.
pub struct ApiPolicy {
    run: ApiRun,
    params: SampleParams,
    mode: History,
    window: Window,
    hermes: Arc<Hermes>,
    /// The episode as a conversation (`history = full_text` / `hide_thinking`); otherwise
    /// each turn is one user message, as a local policy's.
    chat: Option<Chat>,
    /// The pages so far without their task lines (a one-message prompt's past pages).
    seen: Vec<String>,
    /// The episode's seed: turn `t` sends `seed = mix(stream, t)`.
    stream: Option<u64>,
    turns: u64,
    /// Completion tokens the endpoint reported so far (`trajectory_tokens`).
    spent: usize,
    /// Every screenshot the episode has shown, as a `data:` URL, oldest first.
    shots: Vec<String>,
    name: String,
}

impl ApiPolicy {
    pub fn new(
        run: ApiRun,
        params: SampleParams,
        (mode, window): (History, Window),
        hermes: Arc<Hermes>,
        stream: Option<u64>,
    ) -> ApiPolicy {
        let room = super::graph::api_room(run.context, params.max_tokens, "");
        let chat = match mode {
            History::Conversation { hide_thinking } => Some(Chat::new(hide_thinking)),
            History::None | History::ActionOnly => None,
        };
        ApiPolicy {
            run,
            params,
            mode,
            // The room its context leaves, as `Window::fit` gives a local policy's (the
            // agent's window holds the tiny policy's until a policy fits it).
            window: Window { room, ..window },
            hermes,
            chat,
            seen: Vec::new(),
            stream,
            turns: 0,
            spent: 0,
            shots: Vec::new(),
            name: "policy".into(),
        }
    }

    /// The conversation to send for `observation`, as segments: with screenshots, the room
    /// the kept ones' tokens leave, the last K marked to be sent as images.
    fn segments(&mut self, observation: &str, history: &[String]) -> Result<Vec<Segment>, String> {
        match (self.chat.as_mut(), self.window.screens) {
            (Some(c), Some(screens)) => {
                let kept = self.shots.len().min(screens.last) * self.run.image_tokens;
                let window = Window { room: self.window.room.saturating_sub(kept), ..self.window };
                let mut segments = c.prompt_in(observation, window)?;
                let count = self.shots.len();
                resolve_marks(&mut segments, count, screens, &mut |i| Some(image_mark(i)));
                Ok(segments)
            }
            (Some(c), None) => c.prompt_in(observation, self.window),
            (None, _) => {
                let prompt = prompt_in(observation, &self.seen, history, self.mode, self.window);
                self.seen.push(split_task(observation).1.to_string());
                prompt.map(|t| vec![Segment::new(Role::User, t)])
            }
        }
    }

    /// The request body of one turn.
    fn body(&self, segments: &[Segment], max_tokens: usize) -> Json {
        let tools: Vec<Json> =
            self.hermes.schemas.iter().filter_map(|s| serde_json::from_str(s).ok()).collect();
        let mut body = json!({
            "model": self.run.client.model(),
            "messages": messages(segments, &self.shots),
            "tools": tools,
            "temperature": self.params.temperature,
            "top_p": self.params.top_p,
            "max_tokens": max_tokens,
        });
        if let Some(s) = self.stream {
            // Within JSON's exact integers, so any server reads it back unchanged.
            body["seed"] = json!(wrl_trainer::rng::mix(s, self.turns) >> 11);
        }
        body
    }

    /// The reply's tokens left of the episode's `trajectory_tokens`, or why none are.
    fn budget(&self) -> Result<usize, String> {
        let Some(budget) = self.window.reply_budget else { return Ok(self.params.max_tokens) };
        let left = budget.saturating_sub(self.spent);
        if left == 0 {
            return Err(format!(
                "trajectory_tokens: the policy has written {} tokens, the episode's whole budget \
                 of {budget}",
                self.spent
            ));
        }
        Ok(self.params.max_tokens.min(left))
    }

    /// One turn: the request, the wait for its answer (without holding up other episodes), and
    /// the reply read as the tool set's calls.
    fn turn(&mut self, observation: &str, history: &[String]) -> AgentTurn {
        let max_tokens = match self.budget() {
            Ok(n) => n,
            Err(why) => return AgentTurn::GaveUp(why),
        };
        let segments = match self.segments(observation, history) {
            Ok(s) => s,
            Err(why) => return AgentTurn::GaveUp(why),
        };
        let body = self.body(&segments, max_tokens);
        self.turns += 1;
        let client = self.run.client.clone();
        let answer = match tokio::runtime::Handle::try_current() {
            Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(|| h.block_on(client.exchange_whole(&body)))
            }
            _ => {
                return AgentTurn::Failed(Breakdown::Env(
                    "the policy is called over HTTP, which needs a multi-threaded runtime".into(),
                ));
            }
        };
        let reply = match answer.map_err(breakdown).and_then(|v| Reply::read(&v)) {
            Ok(r) => r,
            Err(b) => return AgentTurn::Failed(b),
        };
        if self.window.reply_budget.is_some() {
            match reply.completion_tokens {
                Some(n) => self.spent += n,
                None => {
                    return AgentTurn::Failed(Breakdown::Env(
                        "the policy's endpoint reported no `usage.completion_tokens`, so the \
                         agent's trajectory_tokens cannot be kept"
                            .into(),
                    ));
                }
            }
        }
        let text = reply.hermes_text();
        if let Some(c) = self.chat.as_mut() {
            let mut message = Segment::new(Role::Assistant, reply.content.clone());
            message.tool_calls = reply.calls.clone();
            c.answered(message);
        }
        match self.hermes.read(&text) {
            Ok(lines) => AgentTurn::Read { lines, said: text },
            Err(error) => AgentTurn::Malformed { text, error },
        }
    }
}

impl Agent for ApiPolicy {
    fn act(&mut self, _task: &Task, observation: &str, history: &[String]) -> AgentTurn {
        self.turn(observation, history)
    }

    /// Shown screenshots in a conversation whose env takes them (the preflight asks the
    /// conversation of a policy shown screenshots).
    fn sees_screens(&self) -> bool {
        self.window.screens.is_some() && self.chat.is_some()
    }

    fn act_seeing(
        &mut self,
        _task: &Task,
        observation: &str,
        history: &[String],
        png: Option<&[u8]>,
    ) -> AgentTurn {
        match png.filter(|_| self.sees_screens()) {
            Some(png) => {
                let b64 = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, png);
                self.shots.push(format!("data:image/png;base64,{b64}"));
                let text = marked(observation, self.shots.len() - 1);
                self.turn(&text, history)
            }
            None => self.turn(observation, history),
        }
    }

    fn name(&self) -> &str {
        &self.name
    }
}

/// What a chat completion answered: its text, its calls and the tokens it wrote.
#[derive(Clone, Debug, PartialEq)]
struct Reply {
    content: String,
    calls: Vec<CallText>,
    completion_tokens: Option<usize>,
}

impl Reply {
    /// `choices[0].message` and `usage` of a response; a call whose arguments are not a JSON
    /// object text is a malformed answer (the episode's env error, not the policy's turn).
    fn read(v: &Json) -> Result<Reply, Breakdown> {
        let bad =
            |why: &str| Breakdown::Env(format!("the policy's answer could not be read: {why}"));
        let message =
            v.pointer("/choices/0/message").ok_or_else(|| bad("no choices[0].message"))?;
        let content = message.get("content").and_then(Json::as_str).unwrap_or("").to_string();
        let mut calls = Vec::new();
        for c in message.get("tool_calls").and_then(Json::as_array).into_iter().flatten() {
            let f = c.get("function").ok_or_else(|| bad("a tool call without `function`"))?;
            let name = f.get("name").and_then(Json::as_str).ok_or_else(|| bad("a call's name"))?;
            let arguments = f.get("arguments").and_then(Json::as_str).unwrap_or("{}");
            calls.push(CallText { name: name.to_string(), arguments: arguments.to_string() });
        }
        let completion_tokens = v
            .pointer("/usage/completion_tokens")
            .and_then(Json::as_u64)
            .and_then(|n| usize::try_from(n).ok());
        Ok(Reply { content, calls, completion_tokens })
    }

    /// The reply as the Hermes text the tool set's reader takes: its text, then each call as a
    /// `<tool_call>` block (arguments that are no JSON are kept as written, and the reader
    /// calls the turn malformed).
    fn hermes_text(&self) -> String {
        let mut out = self.content.trim().to_string();
        for c in &self.calls {
            let args = serde_json::from_str::<Json>(&c.arguments)
                .map_or_else(|_| c.arguments.clone(), |v| v.to_string());
            let name = Json::String(c.name.clone());
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&format!(
                "<tool_call>{{\"name\": {name}, \"arguments\": {args}}}</tool_call>"
            ));
        }
        out
    }
}

/// The conversation as OpenAI chat messages: an assistant turn's calls as `tool_calls` with ids
/// of their place in this request, the page after it as the `tool` message answering its last
/// call (the earlier calls answered by [`EARLIER_CALL`]); a page after a turn that made no call
/// is the user's. A page's kept screenshots (`shots`, by the marks left in its text) are
/// `image_url` parts: in the user's message that holds them, or, after a `tool` message (text
/// only), in a user message of their own.
fn messages(segments: &[Segment], shots: &[String]) -> Vec<Json> {
    let mut out = Vec::new();
    let mut pending: Vec<String> = Vec::new();
    for (i, s) in segments.iter().enumerate() {
        match s.role {
            Role::System => out.push(json!({"role": "system", "content": s.text})),
            // An observation is the user's, as a chat template renders it.
            Role::User | Role::Observation => {
                out.push(json!({"role": "user", "content": content(&s.text, shots)}));
            }
            Role::Assistant => {
                pending = (0..s.tool_calls.len()).map(|k| format!("call_{i}_{k}")).collect();
                let mut m = json!({"role": "assistant", "content": s.text});
                if !s.tool_calls.is_empty() {
                    let calls: Vec<Json> = s
                        .tool_calls
                        .iter()
                        .zip(&pending)
                        .map(|(c, id)| {
                            json!({"id": id, "type": "function",
                                   "function": {"name": c.name, "arguments": c.arguments}})
                        })
                        .collect();
                    m["tool_calls"] = Json::Array(calls);
                }
                out.push(m);
            }
            Role::Tool => {
                let ids = std::mem::take(&mut pending);
                let Some((last, earlier)) = ids.split_last() else {
                    out.push(json!({"role": "user", "content": content(&s.text, shots)}));
                    continue;
                };
                for id in earlier {
                    out.push(json!({"role": "tool", "tool_call_id": id, "content": EARLIER_CALL}));
                }
                let parts = split_images(&s.text);
                let text: String = parts.iter().filter_map(|p| p.ok()).collect();
                out.push(json!({"role": "tool", "tool_call_id": last, "content": text}));
                let images: Vec<Json> =
                    parts.iter().filter_map(|p| p.err()).filter_map(|k| image(shots, k)).collect();
                if !images.is_empty() {
                    out.push(json!({"role": "user", "content": images}));
                }
            }
        }
    }
    out
}

/// A user message's content: its text, or with kept screenshots, its text and images as parts
/// in the order they stand.
fn content(text: &str, shots: &[String]) -> Json {
    let parts = split_images(text);
    if parts.iter().all(Result::is_ok) {
        return Json::String(text.to_string());
    }
    let parts: Vec<Json> = parts
        .into_iter()
        .filter_map(|p| match p {
            Ok(t) => Some(json!({"type": "text", "text": t})),
            Err(k) => image(shots, k),
        })
        .collect();
    Json::Array(parts)
}

/// Screenshot `k` as an `image_url` part.
fn image(shots: &[String], k: usize) -> Option<Json> {
    shots.get(k).map(|url| json!({"type": "image_url", "image_url": {"url": url}}))
}

/// How a failed call ends the episode: a timeout as `infra_timeout`, anything else as
/// `env_error` — never as the policy's turn.
fn breakdown(e: JudgeError) -> Breakdown {
    match e {
        JudgeError::Timeout => {
            Breakdown::Timeout("the policy's model did not answer in time".into())
        }
        JudgeError::Http(code) => {
            Breakdown::Env(format!("the policy's model answered HTTP {code}"))
        }
        JudgeError::Malformed(why) => {
            Breakdown::Env(format!("the policy's answer could not be read: {why}"))
        }
        JudgeError::Transport(why) => {
            Breakdown::Env(format!("the policy's model is unreachable: {why}"))
        }
    }
}

#[cfg(test)]
#[path = "api_policy_tests.rs"]
mod tests;
