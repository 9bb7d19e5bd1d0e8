//! A tool set's MCP servers, reached before the run: each is connected to (`initialize`) and
//! asked for its `tools/list`, and every declared tool the environment does not run itself is
//! held to the one server that lists it, name and argument types (E0517); a server that cannot
//! be reached is a service the run needs (E0507). `wrlc check` stays offline: only `wrlc run`
//! (and `--dry-run`) does this.

use wrl_plan::Node;
use wrl_plan::params::{self, Env};

use super::refuse::unsupported;
use crate::error::{Fault, RunError};

/// What is wrong with env `n`'s MCP tools, reaching its servers.
pub(super) fn mcp(n: &Node, e: &Env) -> Vec<RunError> {
    let (tools, native) = match e {
        Env::SearchApi(s) => (&s.tools, crate::mcp::SEARCH_NATIVE),
        Env::Browser(b) => return elsewhere(n, &b.tools, "a browser env"),
        Env::EnvServer(s) => match s.tools.value() {
            Some(t) => return elsewhere(n, t, "an environment server (it runs every tool itself)"),
            None => return Vec::new(),
        },
    };
    if tools.mcp.is_empty() {
        return Vec::new();
    }
    let listings = match crate::mcp::list_blocking(&tools.mcp) {
        Ok(l) => l,
        Err(why) => {
            return vec![
                RunError::new(Fault::Service, format!("env `{}`: {why}", n.decl))
                    .help("start the server first (docs/mcp.md), or check its URL or command")
                    .at(n, Some("tools"), "this tool set's MCP servers"),
            ];
        }
    };
    match crate::mcp::route(tools, native, &listings) {
        Ok(_) => Vec::new(),
        Err(problems) => problems
            .into_iter()
            .map(|p| {
                RunError::new(Fault::McpTool, format!("env `{}`: {p}", n.decl))
                    .help("declare the tool as the server lists it (its `tools/list`), or serve it from the server")
                    .at(n, Some("tools"), "the tool set that declares it")
            })
            .collect(),
    }
}

/// MCP servers on a tool set whose env does not call them (this runtime calls MCP tools from
/// `search_api` episodes only).
fn elsewhere(n: &Node, tools: &params::Toolset, what: &str) -> Vec<RunError> {
    if tools.mcp.is_empty() {
        return Vec::new();
    }
    vec![unsupported(
        n,
        format!(
            "env `{}`: MCP tools are called from `search_api` episodes only, not from {what}",
            n.decl
        ),
        "serve the tools through a `search_api` env, or remove `mcp` from the tool set",
        "tools",
    )]
}
