//! An instruction-tuned policy (an `hf(…)` model with its own chat template) as the agent of
//! its environment's tool set, the way it was trained to call tools: its prompts give the
//! recipe's typed tools to the template's `tools`, its turns are read as Hermes calls checked
//! against them (a malformed turn is a format error, counted toward `max_parse_failures`), and
//! the expert's terse demonstrations become the calls the template renders (a coordinate tool
//! set's grounded at the elements' boxes, `grounded`), so SFT teaches the very format the ReAct
//! loop reads. A checked turn reaches its environment as the terse line(s)
//! the environment runs, the same lines the expert's steps and the prompts' `done:` history use;
//! a call of a tool an MCP server serves as its `<tool_call>{…}</tool_call>` line, in a browser
//! turn among the page's actions in the order written (`wrl_browser::side`).

use serde_json::Value as Json;
use wrl_browser::{Action, AgentError, ToolSet, side, terse};
use wrl_plan::params::{self, Toolset, TypedPlan};
use wrl_sandbox::StepBoxes;
use wrl_trainer::chat::CallText;
use wrl_trainer::{Role, Segment};

use super::actions::{TurnError, browser_name, call_action, tool_set, turn_actions};
use super::grounded::step_calls;
use super::toolcall::{Arg, ToolCall, Turn, parse_turn};
use crate::env::search::{Call, parse_call};

/// Which environment a turn is for: its terse syntax differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnvKind {
    /// The browser's element-id actions (`click 7`).
    Browser,
    /// The search API's calls (`search Q1 | Q2`, `visit URL | GOAL`, `answer TEXT`).
    Search,
}

/// A ReAct agent's tool set as an instruction-tuned policy sees and calls it.
#[derive(Clone, Debug, PartialEq)]
pub struct Hermes {
    pub tools: Toolset,
    pub env: EnvKind,
    /// The tools' function schemas as JSON texts (the template's `tools`).
    pub schemas: Vec<String>,
}

impl Hermes {
    pub fn new(tools: Toolset, env: EnvKind) -> Hermes {
        let schemas = tools.function_schema_texts();
        Hermes { tools, env, schemas }
    }

    /// The tool set of a ReAct agent's environment; `None` for a module graph (its modules
    /// write the tiny policy's terse turns) or an agent whose env is not in the plan.
    pub fn of_agent(agent: &params::Agent, plan: &TypedPlan<'_>) -> Option<Hermes> {
        let params::Agent::React(r) = agent else { return None };
        Hermes::of_env(r.env.id(), plan)
    }

    /// The tool set of env node `env` as a ReAct policy calls it there (an evaluation in an
    /// env other than its agent's); `None` for an env whose tools the policy does not call.
    pub fn of_env(env: &str, plan: &TypedPlan<'_>) -> Option<Hermes> {
        match plan.node(env)? {
            (_, params::Params::Env(params::Env::Browser(b))) => {
                Some(Hermes::new(b.tools.clone(), EnvKind::Browser))
            }
            (_, params::Params::Env(params::Env::SearchApi(s))) => {
                Some(Hermes::new(s.tools.clone(), EnvKind::Search))
            }
            _ => None,
        }
    }

    /// Whether the environment runs tool `name` itself (the search API's `search`, `visit` and
    /// `answer`; the page's tools in a browser): a call of any other tool (an MCP server's) is
    /// written as its `<tool_call>{…}</tool_call>` line.
    pub fn runs_itself(&self, name: &str) -> bool {
        match self.env {
            EnvKind::Search => crate::mcp::SEARCH_NATIVE.contains(&name),
            EnvKind::Browser => {
                let set = tool_set(&self.tools);
                set.tool_names().contains(&browser_name(set, name))
            }
        }
    }

    /// A model's turn as the line(s) its environment runs, or the format error it is.
    pub fn read(&self, text: &str) -> Result<String, AgentError> {
        match self.env {
            EnvKind::Browser => {
                // Only calls: terse lines are the tiny policy's, not this model's format.
                let turn =
                    parse_turn(text, &self.tools).map_err(|e| TurnError::from(e).agent_error())?;
                // The page's calls as its actions; another tool's (the checked tool set's, so an
                // MCP server's) as its call line, in the order written; the answer tag last.
                let set = tool_set(&self.tools);
                let mut lines = Vec::new();
                for c in &turn.calls {
                    lines.push(if self.runs_itself(&c.name) {
                        page_line(&call_action(set, c)?)?
                    } else {
                        side_line(c)
                    });
                }
                let answer = Turn { calls: Vec::new(), ..turn };
                for a in turn_actions(&answer, &self.tools)? {
                    lines.push(page_line(&a)?);
                }
                Ok(lines.join("\n"))
            }
            EnvKind::Search => {
                let turn =
                    parse_turn(text, &self.tools).map_err(|e| TurnError::from(e).agent_error())?;
                search_turn(&turn)
            }
        }
    }

    /// An expert's step (its terse action lines, and the boxes of the elements they name where
    /// it recorded them) as the assistant segment the template renders: the calls of the tool
    /// set — a coordinate set's at the elements' places in the step's screenshot — and the
    /// answer tag's text where the tool set answers with one. `goal` fills a `visit` without
    /// its own. An action the tool set cannot call is an error naming it.
    pub fn demo(
        &self,
        actions: &[String],
        boxes: Option<&StepBoxes>,
        goal: &str,
    ) -> Result<Segment, String> {
        let mut calls = Vec::new();
        let mut text = String::new();
        let points = self.env == EnvKind::Browser && tool_set(&self.tools) != ToolSet::Elem;
        if points {
            let (grounded, answer) = step_calls(actions, boxes, &self.tools)?;
            calls = grounded;
            if let Some(a) = answer {
                text = format!("<{t}>{a}</{t}>", t = self.tools.answer_tag);
            }
        }
        for line in actions.iter().filter(|l| !l.trim().is_empty() && !points) {
            let call = match self.env {
                EnvKind::Browser => browser_call(line)?,
                EnvKind::Search => match parse_call(line)? {
                    Call::Search(qs) => call_of("search", serde_json::json!({ "query": qs })),
                    Call::Visit { urls, goal: g } => call_of(
                        "visit",
                        serde_json::json!({ "url": urls, "goal": g.as_deref().unwrap_or(goal) }),
                    ),
                    Call::Answer(a) if !self.tools.answer_tag.is_empty() => {
                        text = format!("<{t}>{a}</{t}>", t = self.tools.answer_tag);
                        continue;
                    }
                    Call::Answer(a) => call_of("answer", serde_json::json!({ "text": a })),
                    Call::Tool { name, arguments } => {
                        call_of(&name, serde_json::Value::Object(arguments))
                    }
                },
            };
            calls.push(call);
        }
        // Checked as a model's turn is, so a demonstration teaches only calls the loop accepts.
        let hermes: Vec<String> = calls
            .iter()
            .map(|c| {
                let name = Json::String(c.name.clone());
                format!(
                    "<tool_call>{{\"name\": {name}, \"arguments\": {}}}</tool_call>",
                    c.arguments
                )
            })
            .collect();
        let whole = format!("{}{text}", hermes.join("\n"));
        parse_turn(&whole, &self.tools).map_err(|e| {
            format!(
                "the demonstration's step `{}` is not a turn of the tool set: {e}",
                actions.join("; ")
            )
        })?;
        Ok(Segment { tool_calls: calls, ..Segment::new(Role::Assistant, text) })
    }
}

fn call_of(name: &str, arguments: Json) -> CallText {
    CallText { name: name.to_string(), arguments: arguments.to_string() }
}

/// A browser action as its terse line (one line), or why it has none.
fn page_line(a: &Action) -> Result<String, AgentError> {
    match terse::render(a) {
        Some(l) if !l.contains('\n') => Ok(l),
        Some(_) => {
            Err(AgentError::BadArguments("an argument of the call spans several lines".into()))
        }
        None => {
            Err(AgentError::InvalidCoordinates(format!("{a:?}: a point is not a finite number")))
        }
    }
}

/// A checked call of a tool the environment does not run itself (one an MCP server serves) as
/// its line, `<tool_call>{"name": …, "arguments": {…}}</tool_call>`, which the search env and
/// the browser's side tools read back.
fn side_line(call: &ToolCall) -> String {
    let args = call.args.iter().map(|(k, v)| (k.clone(), super::actions::arg_json(v))).collect();
    side::render_call(&call.name, &args)
}

/// A terse browser line as the element tool's call (`type! 3 mug` is `type` with
/// `submit: true`; `back` is `go_back`); a side call's line as that call.
fn browser_call(line: &str) -> Result<CallText, String> {
    if let Some(call) = side::parse_call(line) {
        let call = call.map_err(|e| format!("`{line}`: {e}"))?;
        return Ok(call_of(&call.name, Json::Object(call.arguments)));
    }
    let action = terse::parse(line).map_err(|e| format!("`{line}`: {e}"))?;
    let Action::Elem(e) = action else {
        return Err(format!("`{line}` is not an element-id action"));
    };
    let Ok(Json::Object(mut args)) = serde_json::to_value(&e) else {
        return Err(format!("`{line}` has no arguments object"));
    };
    let name = match args.remove("tool") {
        Some(Json::String(n)) => n,
        _ => return Err(format!("`{line}` names no tool")),
    };
    Ok(call_of(&name, Json::Object(args)))
}

/// Text on one line (a terse line cannot hold a newline).
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn strings(a: Option<&Arg>) -> Vec<String> {
    match a {
        Some(Arg::List(items)) => items.iter().flat_map(|i| strings(Some(i))).collect(),
        Some(Arg::Str(s) | Arg::Word(s)) => vec![one_line(s)],
        _ => Vec::new(),
    }
}

/// A checked turn of a search API's tool set (a Hermes or a tag-style turn) as the terse
/// line the env runs: its answer, or its one call.
pub(crate) fn search_turn(turn: &Turn) -> Result<String, AgentError> {
    if let Some(answer) = &turn.answer {
        return Ok(format!("answer {}", one_line(answer)));
    }
    match turn.calls.as_slice() {
        [call] => search_line(call),
        calls => Err(AgentError::Parse(format!(
            "the search API runs one call a turn; this turn makes {}",
            calls.len()
        ))),
    }
}

/// A checked search-API call as its terse line.
fn search_line(call: &ToolCall) -> Result<String, AgentError> {
    let bad = |why: &str| AgentError::BadArguments(format!("`{}`: {why}", call.name));
    match call.name.as_str() {
        "search" => {
            let qs = strings(call.args.get("query"));
            if qs.is_empty() || qs.iter().any(|q| q.is_empty() || q.contains(" | ")) {
                return Err(bad("each query must be non-empty text without ` | `"));
            }
            Ok(format!("search {}", qs.join(" | ")))
        }
        "visit" => {
            let urls = strings(call.args.get("url"));
            if urls.is_empty() || urls.iter().any(|u| u.contains(char::is_whitespace)) {
                return Err(bad("`url` must be one or more URLs"));
            }
            let goal = strings(call.args.get("goal")).join(" ");
            let tail = if goal.is_empty() { String::new() } else { format!(" | {goal}") };
            Ok(format!("visit {}{tail}", urls.join(" ")))
        }
        "answer" => Ok(format!("answer {}", strings(call.args.get("text")).join(" "))),
        // Another tool of the checked tool set: one an MCP server serves, sent as its JSON
        // call (the env says so if none does).
        _ => Ok(side_line(call)),
    }
}

#[cfg(test)]
#[path = "hermes_tests.rs"]
mod tests;
