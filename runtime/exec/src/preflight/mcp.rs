//! A tool set's MCP servers, reached before the run: each is connected to (`initialize`) and
//! asked for its `tools/list`, and every declared tool the environment does not run itself (a
//! search API's `search`, `visit`, `answer`; a browser's page tools) is held to the one server
//! that lists it, name and argument types (E0517); a server that cannot be reached is a service
//! the run needs (E0507). An environment server, which runs every tool itself, is refused
//! (E0502). `wrlc check` stays offline: only `wrlc run` (and `--dry-run`) does this.

use wrl_plan::Node;
use wrl_plan::params::{self, Env};

use super::refuse::unsupported;
use crate::error::{Fault, RunError};

/// What is wrong with env `n`'s MCP tools, reaching its servers.
pub(super) fn mcp(n: &Node, e: &Env) -> Vec<RunError> {
    let page_tools;
    let (tools, native): (&params::Toolset, &[&str]) = match e {
        Env::SearchApi(s) => (&s.tools, crate::mcp::SEARCH_NATIVE),
        Env::Browser(b) => {
            page_tools = crate::mcp::browser_native(&b.tools);
            (&b.tools, &page_tools)
        }
        Env::EnvServer(s) => match s.tools.value() {
            Some(t) => return env_server(n, t),
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

/// MCP servers on an environment server's tool set: the server runs every tool of its turns
/// itself (a turn goes to it whole), so no call would reach them.
fn env_server(n: &Node, tools: &params::Toolset) -> Vec<RunError> {
    if tools.mcp.is_empty() {
        return Vec::new();
    }
    vec![unsupported(
        n,
        format!(
            "env `{}`: an environment server runs every tool of a turn itself, so no call would reach the tool set's MCP servers; MCP tools are called from `search_api` and `browser` episodes",
            n.decl
        ),
        "serve the tools from the environment server, or call them from a `search_api` or `browser` env; else remove `mcp` from the tool set",
        "tools",
    )]
}
