//! Tools served by Model Context Protocol servers (a tool set's `mcp`; docs/mcp.md): which
//! server serves each declared tool, checked against its `tools/list` before the run (E0517,
//! E0507), and at run time each call sent there, its text cut to `result_chars`, its calls
//! limited per episode (`max_calls`), and what a failed call does (`on_error`), with every
//! call and failure counted per tool.

pub mod client;
pub mod schema;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use wrl_browser::EndReason;
use wrl_plan::params::{McpLimits, McpOnError, McpServer, Toolset};

use schema::{Listed, Mismatch};

/// The tools a `search_api` env runs itself; the rest of its tool set is served by MCP.
pub const SEARCH_NATIVE: &[&str] = &["search", "visit", "answer"];

/// The tools a `browser` env runs itself: the page tools of its tool set's coordinates (the
/// stdlib's names, `go_back` for the element tools' `back`); the rest is served by MCP.
pub fn browser_native(tools: &Toolset) -> Vec<&'static str> {
    use crate::agent::actions::{recipe_names, tool_set};
    recipe_names(tool_set(tools))
}

/// What one call answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The tool's text.
    Text(String),
    /// The tool failed (`isError`, a JSON-RPC error, the call's timeout): its message.
    ToolError(String),
    /// The server could not be reached (a closed process, a refused connection).
    Unreachable(String),
}

/// What the policy reads of a call, and whether the episode ends there.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    pub text: String,
    pub end: Option<EndReason>,
}

/// How each tool's calls went over a run (a run's `mcp_calls` record).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ToolCounts {
    /// Calls sent to the server.
    pub calls: u64,
    /// Calls the tool failed (`isError`, a JSON-RPC error, a timeout).
    pub errors: u64,
    /// Calls the server could not be reached for.
    pub unreachable: u64,
    /// Calls past `max_calls`, answered without being sent.
    pub over_limit: u64,
}

/// `text` cut to at most `chars` characters; the cut says how many were left out.
pub fn truncate(text: &str, chars: u64) -> String {
    let keep = usize::try_from(chars).unwrap_or(usize::MAX);
    let total = text.chars().count();
    if total <= keep {
        return text.to_string();
    }
    let end = text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i);
    format!("{}\n[cut: {} more characters]", &text[..end], total - keep)
}

/// What the policy reads of `outcome` under `limits`, and whether the episode ends.
pub fn reply(tool: &str, outcome: Outcome, limits: &McpLimits) -> Reply {
    match outcome {
        Outcome::Text(t) => Reply { text: truncate(&t, limits.result_chars), end: None },
        Outcome::ToolError(why) => {
            let text = truncate(&format!("error: {why}"), limits.result_chars);
            let end = match limits.on_error {
                McpOnError::Text => None,
                McpOnError::EndEpisode => Some(EndReason::EnvError {
                    message: format!("MCP tool `{tool}` failed: {why}"),
                }),
            };
            Reply { text, end }
        }
        Outcome::Unreachable(why) => Reply {
            text: format!("error: the MCP server of `{tool}` cannot be reached: {why}"),
            end: Some(EndReason::EnvError {
                message: format!("MCP tool `{tool}`: the server cannot be reached: {why}"),
            }),
        },
    }
}

/// One episode's calls per tool, held to each tool's `max_calls`.
#[derive(Clone, Debug, Default)]
pub struct EpisodeCalls(BTreeMap<String, u32>);

impl EpisodeCalls {
    /// Counts a call of `tool`, or says why it is past the limit (and is not sent).
    pub fn admit(&mut self, tool: &str, max: Option<u32>) -> Result<(), String> {
        let n = self.0.entry(tool.to_string()).or_insert(0);
        if max.is_some_and(|m| *n >= m) {
            return Err(format!(
                "error: `{tool}` was already called {n} times this episode, its limit (`max_calls`); answer with what you have"
            ));
        }
        *n += 1;
        Ok(())
    }
}

/// Which server (by its index in the tool set's `mcp`) serves each tool the environment does
/// not run itself, from the servers' listings; every problem in words (E0517's messages).
pub fn route(
    tools: &Toolset,
    native: &[&str],
    listings: &[(String, Vec<Listed>)],
) -> Result<BTreeMap<String, usize>, Vec<String>> {
    let mut out = BTreeMap::new();
    let mut problems = Vec::new();
    for t in tools.tools.iter().filter(|t| !native.contains(&t.name.as_str())) {
        let serving: Vec<(usize, &Listed)> = listings
            .iter()
            .enumerate()
            .filter_map(|(i, (_, l))| l.iter().find(|x| x.name == t.name).map(|x| (i, x)))
            .collect();
        match serving.as_slice() {
            [] => {
                let all = listings.iter().flat_map(|(_, l)| l.iter().map(|x| x.name.as_str()));
                // A near name may be one the env runs itself (`clik` for a browser's `click`).
                let dym = schema::nearest(&t.name, all.clone().chain(native.iter().copied()))
                    .map(|s| format!(" (did you mean `{s}`?)"))
                    .unwrap_or_default();
                let listed: Vec<String> = all.map(|n| format!("`{n}`")).collect();
                let servers: Vec<String> = listings.iter().map(|(n, _)| format!("`{n}`")).collect();
                problems.push(format!(
                    "tool `{}` is served by no MCP server of the tool set{dym}: {} list{} {}",
                    t.name,
                    servers.join(", "),
                    if servers.len() == 1 { "s" } else { "" },
                    if listed.is_empty() { "no tools".to_string() } else { listed.join(", ") }
                ));
            }
            [(i, listed)] => {
                let m: Vec<Mismatch> = schema::compare(t, listed);
                if m.is_empty() {
                    out.insert(t.name.clone(), *i);
                } else {
                    problems.extend(m.iter().map(|m| m.describe(&t.name)));
                }
            }
            several => {
                let names: Vec<String> =
                    several.iter().map(|(i, _)| format!("`{}`", listings[*i].0)).collect();
                problems.push(format!(
                    "tool `{}` is listed by several MCP servers ({}): which one serves it is ambiguous",
                    t.name,
                    names.join(", ")
                ));
            }
        }
    }
    if problems.is_empty() { Ok(out) } else { Err(problems) }
}

/// Every server's listing, in the tool set's order, connecting on a thread of its own (the
/// preflight is synchronous and may run inside a runtime); the first server that cannot be
/// reached is the error.
pub fn list_blocking(servers: &[McpServer]) -> Result<Vec<(String, Vec<Listed>)>, String> {
    let servers = servers.to_vec();
    let worker = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start a runtime to reach the MCP servers: {e}"))?;
        rt.block_on(async {
            let mut out = Vec::new();
            for s in &servers {
                let c = client::connect(s).await?;
                let listed = c.list().await.map_err(|e| format!("MCP server `{}`: {e}", s.name()));
                c.close().await;
                out.push((s.name(), listed?));
            }
            Ok(out)
        })
    });
    worker.join().unwrap_or_else(|_| Err("the thread reaching the MCP servers panicked".into()))
}

/// The MCP servers of one environment's tool set, connected, and which serves each tool: what
/// a `search_api` or `browser` episode calls a tool it does not run itself through.
#[derive(Debug)]
pub struct McpTools {
    servers: Vec<(McpLimits, client::Connection)>,
    route: BTreeMap<String, usize>,
    counts: Mutex<BTreeMap<String, ToolCounts>>,
}

impl McpTools {
    /// Connects to every server of `tools` and routes each tool not in `native`; why not, in
    /// words (a server that cannot be reached, a tool no server serves as declared).
    pub async fn connect(
        tools: &Toolset,
        native: &[&str],
    ) -> Result<Option<Arc<McpTools>>, String> {
        if tools.mcp.is_empty() {
            return Ok(None);
        }
        let mut servers = Vec::new();
        let mut listings = Vec::new();
        for s in &tools.mcp {
            let c = client::connect(s).await?;
            listings.push((
                s.name(),
                c.list().await.map_err(|e| format!("MCP server `{}`: {e}", s.name()))?,
            ));
            servers.push((s.limits(), c));
        }
        let route = route(tools, native, &listings).map_err(|p| p.join("; "))?;
        Ok(Some(Arc::new(McpTools { servers, route, counts: Mutex::new(BTreeMap::new()) })))
    }

    /// Whether `tool` is served here.
    pub fn serves(&self, tool: &str) -> bool {
        self.route.contains_key(tool)
    }

    /// Calls `tool` for an episode (`calls` its calls so far): what the policy reads, and
    /// whether the episode ends there.
    pub async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        calls: &mut EpisodeCalls,
    ) -> Reply {
        let Some((limits, conn)) = self.route.get(tool).and_then(|i| self.servers.get(*i)) else {
            return Reply { text: format!("error: no MCP server serves `{tool}`"), end: None };
        };
        if let Err(why) = calls.admit(tool, limits.max_calls) {
            self.count(tool, |c| c.over_limit += 1);
            return Reply { text: why, end: None };
        }
        let outcome = conn.call(tool, arguments).await;
        self.count(tool, |c| {
            c.calls += 1;
            match &outcome {
                Outcome::Text(_) => {}
                Outcome::ToolError(_) => c.errors += 1,
                Outcome::Unreachable(_) => c.unreachable += 1,
            }
        });
        reply(tool, outcome, limits)
    }

    fn count(&self, tool: &str, f: impl FnOnce(&mut ToolCounts)) {
        if let Ok(mut m) = self.counts.lock() {
            f(m.entry(tool.to_string()).or_default());
        }
    }

    /// Every tool's counts so far, by name.
    pub fn counts(&self) -> BTreeMap<String, ToolCounts> {
        self.counts.lock().map(|m| m.clone()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests;
