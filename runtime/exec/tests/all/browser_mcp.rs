//! MCP tools in `browser` episodes: real Chromium on the sandbox web and the official MCP Python
//! SDK's reference server (tests/scripts/mcp_server.py) on loopback. A turn clicks and calls a
//! code tool, whose reply is that step's feedback and reaches the next observation; a turn only
//! calls the tool; `result_chars` cuts, `max_calls` answers without sending, a failing tool's
//! error is text the policy reads (none of which is an agent error); an instruction-tuned
//! policy's Hermes calls of a page tool and an MCP tool are read into one turn; a server gone
//! mid-run ends the episode as an `env_error`. Skipped without `MCP_PYTHON`, as
//! `search_env::mcp` is.

#![allow(clippy::unwrap_used)] // test helpers fail loudly, like the tests they serve

use std::sync::Arc;

use wrl_browser::{AgentTurn, AllowList, BrowserPool, EpisodeCfg, PoolCfg};
use wrl_exec::agent::hermes::{EnvKind, Hermes};
use wrl_exec::env::{Agent, BrowserEnv, Env};
use wrl_exec::mcp::{McpTools, browser_native};
use wrl_plan::params::{CallsPerTurn, Coordinates, McpServer, Toolset};
use wrl_sandbox::{Sandbox, Split, Task};

use crate::search_env::{http_server, python, stdio, tool};

/// The element tools a scripted turn uses, and the reference server's three.
fn tools(server: McpServer) -> Toolset {
    Toolset {
        coordinates: Coordinates::ElementIds,
        calls_per_turn: CallsPerTurn::Many,
        answer_tag: String::new(),
        mcp: vec![server],
        tools: vec![
            tool("click", &[("id", "int")]),
            tool("answer", &[("text", "string")]),
            tool("run_code", &[("code", "string")]),
            tool("add", &[("a", "int"), ("b", "int")]),
            tool("fail", &[("message", "string")]),
        ],
    }
}

fn call(name: &str, args: &str) -> String {
    format!("<tool_call>{{\"name\": \"{name}\", \"arguments\": {args}}}</tool_call>")
}

/// An agent that writes the given turns (`{id}` standing for the first element id of the
/// page it sees), then repeats the last, keeping every observation it was shown.
struct Scripted {
    turns: Vec<String>,
    hermes: Option<Hermes>,
    seen: Vec<String>,
}

impl Scripted {
    fn new(turns: Vec<String>) -> Scripted {
        Scripted { turns, hermes: None, seen: Vec::new() }
    }
}

impl Agent for Scripted {
    fn act(&mut self, _: &Task, observation: &str, _: &[String]) -> AgentTurn {
        self.seen.push(observation.to_string());
        let id = observation
            .split('[')
            .skip(1)
            .find_map(|s| s.split(']').next()?.parse::<u32>().ok())
            .unwrap_or(1);
        let turn = self.turns.first().cloned().unwrap_or_default().replace("{id}", &id.to_string());
        if self.turns.len() > 1 {
            self.turns.remove(0);
        }
        match &self.hermes {
            // An instruction-tuned policy reads its own reply into the lines the env runs.
            Some(h) => match h.read(&turn) {
                Ok(lines) => AgentTurn::Read { lines, said: turn },
                Err(error) => AgentTurn::Malformed { text: turn, error },
            },
            None => AgentTurn::Text(turn),
        }
    }
    fn name(&self) -> &str {
        "scripted"
    }
}

/// The sandbox, a browser pool on it, and a shop task of `steps` steps.
async fn browser() -> (Arc<Sandbox>, BrowserPool, Task) {
    let sandbox = Arc::new(Sandbox::start(0, 0).await.unwrap());
    let pool = BrowserPool::launch(PoolCfg {
        max_concurrent: 1,
        allow: AllowList::only([format!("127.0.0.1:{}", sandbox.addr().port())]),
        ..PoolCfg::default()
    })
    .await
    .unwrap();
    let mut task =
        wrl_sandbox::generate_on(sandbox.content(), Split::Test, 1, 1, &["shop"]).remove(0);
    task.max_steps = 8;
    (sandbox, pool, task)
}

fn cfg() -> EpisodeCfg {
    EpisodeCfg { max_steps: 8, max_agent_errors: 2, ..EpisodeCfg::default() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_turn_clicks_and_calls_an_mcp_tool_whose_reply_is_the_next_observation() {
    let Some(py) = python() else { return };
    // `result_chars = 12`, `max_calls = 2` for each tool.
    let set = tools(stdio(&py));
    let mcp = McpTools::connect(&set, &browser_native(&set)).await.unwrap();
    let (sandbox, pool, task) = browser().await;
    let env = BrowserEnv::new(pool, sandbox).with_mcp(mcp);
    let mut agent = Scripted::new(vec![
        format!("click {{id}}\n{}", call("run_code", r#"{"code": "print(6 * 7)"}"#)),
        call("run_code", r#"{"code": "print('x' * 40)"}"#),
        call("run_code", r#"{"code": "print(1)"}"#),
        call("fail", r#"{"message": "no luck"}"#),
        call("nope", "{}"),
        "answer 42".into(),
    ]);
    let t = env.run(&task, &mut agent, 0, &cfg()).await.unwrap().trajectory;
    assert_eq!(t.outcome.reason.word(), "completed", "{:?}\n{:#?}", t.outcome, t.steps);
    assert_eq!(t.steps.len(), 6, "{:#?}", t.steps);
    // The first turn: a page action and a tool call, each with its feedback line, in order.
    let first = &t.steps[0];
    assert_eq!(first.actions.len(), 2);
    assert!(first.actions[0].starts_with("click ") && first.actions[1].contains("run_code"));
    let lines: Vec<&str> = first.feedback.lines().collect();
    assert!(lines[0].starts_with("clicked"), "{lines:?}");
    assert_eq!(lines[1], "42", "{lines:?}");
    // The reply reaches the policy in the next observation.
    assert!(
        agent.seen[1].contains("feedback: ") && agent.seen[1].contains("; 42"),
        "{}",
        agent.seen[1]
    );
    // A turn of the tool alone: its reply cut to `result_chars`.
    assert!(t.steps[1].feedback.starts_with("xxxxxxxxxxxx\n[cut: "), "{:?}", t.steps[1].feedback);
    assert!(agent.seen[2].contains("xxxxxxxxxxxx; [cut: 29 more characters]"), "{}", agent.seen[2]);
    // Past `max_calls`: answered, not sent; a failing tool: its error as text. Neither is the
    // agent's error (two in a row would end the episode at `max_agent_errors = 2`).
    assert!(t.steps[2].feedback.contains("already called 2 times"), "{:?}", t.steps[2]);
    assert!(t.steps[3].feedback.starts_with("error: "), "{:?}", t.steps[3]);
    assert!(!t.steps[2].malformed && !t.steps[3].malformed);
    // A tool no server serves is the agent's mistake, as an unknown page tool is.
    assert!(t.steps[4].malformed && t.steps[4].feedback.contains("nope"), "{:?}", t.steps[4]);
    // The calls count per tool, and `called`/`calls` rewards see them in the trajectory.
    let counts = env.mcp().unwrap().counts();
    assert_eq!((counts["run_code"].calls, counts["run_code"].over_limit), (2, 1));
    assert_eq!((counts["fail"].calls, counts["fail"].errors), (1, 1));
    let called = wrl_exec::rollout::tool_calls(&t);
    assert_eq!(called.iter().filter(|c| *c == "run_code").count(), 3, "{called:?}");
    assert!(called.contains(&"click".to_string()) && called.contains(&"fail".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hermes_calls_of_page_and_mcp_tools_share_a_turn_and_a_lost_server_ends_it() {
    let Some(py) = python() else { return };
    let (mut child, server) = http_server(&py);
    let set = tools(server);
    let mcp = McpTools::connect(&set, &browser_native(&set)).await.unwrap();
    let (sandbox, pool, task) = browser().await;
    let env = BrowserEnv::new(pool, sandbox).with_mcp(mcp);
    let hermes = Hermes::new(set.clone(), EnvKind::Browser);
    // An instruction-tuned policy's reply: a click and an `add`, read into the env's lines.
    let reply = "<think>click, then add</think>\n\
                 <tool_call>{\"name\": \"click\", \"arguments\": {\"id\": 1}}</tool_call>\n\
                 <tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 2, \"b\": 3}}</tool_call>";
    assert_eq!(
        hermes.read(reply).unwrap(),
        "click 1\n<tool_call>{\"arguments\":{\"a\":2,\"b\":3},\"name\":\"add\"}</tool_call>"
    );
    let add = "<tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 2, \"b\": 3}}</tool_call>";
    let mut agent = Scripted {
        hermes: Some(hermes.clone()),
        ..Scripted::new(vec![reply.replace("\"id\": 1", "\"id\": {id}"), add.into()])
    };
    agent.turns.push(
        "<tool_call>{\"name\": \"answer\", \"arguments\": {\"text\": \"5\"}}</tool_call>".into(),
    );
    let t = env.run(&task, &mut agent, 0, &cfg()).await.unwrap().trajectory;
    assert_eq!(t.outcome.reason.word(), "completed", "{:?}\n{:#?}", t.outcome, t.steps);
    assert_eq!(t.steps[0].feedback.lines().nth(1), Some("5"), "{:?}", t.steps[0]);
    assert!(t.steps[0].said.as_deref().is_some_and(|s| s.contains("<think>")));
    assert_eq!(t.steps[1].feedback, "5");
    // The server gone: the next call cannot reach it, and the episode is the env's failure.
    child.kill().unwrap();
    let _ = child.wait();
    let mut agent = Scripted::new(vec![add.into(), "answer 5".into()]);
    let t = env.run(&task, &mut agent, 0, &cfg()).await.unwrap().trajectory;
    assert_eq!(t.outcome.reason.word(), "env_error", "{:?}", t.outcome);
    assert!(t.outcome.message.contains("cannot be reached"), "{:?}", t.outcome);
    assert_eq!(env.mcp().unwrap().counts()["add"].unreachable, 1);
}
