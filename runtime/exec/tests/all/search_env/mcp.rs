//! MCP tools in `search_api` episodes against the official MCP Python SDK's server
//! (tests/scripts/mcp_server.py), over stdio and streamable HTTP on loopback: the preflight's
//! listing and its refusals, calls answered as text, a tool's error returned to the policy,
//! `max_calls`, `result_chars`, the counts, and a server gone mid-run ending the episode as an
//! `env_error`. Skipped, saying why, without `MCP_PYTHON` (tests/scripts/mcp-check.sh sets it),
//! unless `WRL_REQUIRE_MCP` is set (CI).

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use wrl_exec::env::SearchEnv;
use wrl_exec::mcp::{McpTools, SEARCH_NATIVE, list_blocking, route};
use wrl_plan::params::{
    CallsPerTurn, Coordinates, McpHttp, McpOnError, McpServer, McpStdio, OrUnlimited, Seconds,
    Tool, ToolParam, ToolTy, Toolset,
};
use wrl_sandbox::{Sandbox, Split, generate_qa};

use super::{Script, cfg};

/// The Python with the MCP SDK, or `None` after saying why the test is skipped.
pub(crate) fn python() -> Option<String> {
    match std::env::var("MCP_PYTHON") {
        Ok(p) if !p.is_empty() => Some(p),
        _ => {
            assert!(
                std::env::var_os("WRL_REQUIRE_MCP").is_none(),
                "WRL_REQUIRE_MCP is set but MCP_PYTHON is not (CI makes the venv first)"
            );
            eprintln!(
                "SKIPPED: MCP_PYTHON is not set (the Python of a venv with the official MCP SDK; \
                 bash tests/scripts/mcp-check.sh makes one and runs these tests)"
            );
            None
        }
    }
}

fn script() -> String {
    format!("{}/../../tests/scripts/mcp_server.py", env!("CARGO_MANIFEST_DIR"))
}

pub(crate) fn tool(name: &str, params: &[(&str, &str)]) -> Tool {
    Tool {
        name: name.into(),
        params: params
            .iter()
            .map(|(n, t)| ToolParam {
                name: n.to_string(),
                ty: ToolTy::parse(t).unwrap(),
                default: None,
            })
            .collect(),
        terminal: false,
    }
}

fn tools(server: McpServer, extra: Vec<Tool>) -> Toolset {
    let mut tools = vec![
        tool("search", &[("query", "list(string)")]),
        tool("run_code", &[("code", "string")]),
        tool("add", &[("a", "int"), ("b", "int")]),
        tool("fail", &[("message", "string")]),
    ];
    tools.extend(extra);
    Toolset {
        coordinates: Coordinates::ElementIds,
        calls_per_turn: CallsPerTurn::One,
        answer_tag: "answer".into(),
        mcp: vec![server],
        tools,
    }
}

pub(crate) fn stdio(py: &str) -> McpServer {
    McpServer::Stdio(McpStdio {
        command: py.into(),
        args: vec![script(), "stdio".into()],
        timeout: Seconds(30.0),
        result_chars: 12,
        max_calls: OrUnlimited::Value(2),
        on_error: McpOnError::Text,
    })
}

/// The reference server over streamable HTTP on a free loopback port, once it answers.
pub(crate) fn http_server(py: &str) -> (Child, McpServer) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new(py)
        .args([script(), "http".into(), port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let server = McpServer::Http(McpHttp {
        url: format!("http://127.0.0.1:{port}/mcp"),
        api_key_env: String::new(),
        timeout: Seconds(30.0),
        result_chars: 12,
        max_calls: OrUnlimited::Unlimited,
        on_error: McpOnError::Text,
    });
    (child, server)
}

/// The sandbox, the test tool set served by `server`, and a search env calling it.
async fn sandbox_with(server: McpServer) -> (Sandbox, Toolset, SearchEnv) {
    let sb = Sandbox::start(0, 0).await.unwrap();
    let set = tools(server, vec![]);
    let mcp = McpTools::connect(&set, SEARCH_NATIVE).await.unwrap();
    let env = SearchEnv::new(&format!("{}/api", sb.base_url()), 64, Duration::from_secs(5))
        .unwrap()
        .with_mcp(mcp);
    (sb, set, env)
}

fn call(name: &str, args: &str) -> String {
    format!("<tool_call>{{\"name\": \"{name}\", \"arguments\": {args}}}</tool_call>")
}

#[test]
fn the_preflight_holds_declared_tools_to_the_servers_listing() {
    let Some(py) = python() else { return };
    let (mut child, http) = http_server(&py);
    for server in [stdio(&py), http] {
        let listings = list_blocking(std::slice::from_ref(&server)).unwrap();
        let names: Vec<&str> = listings[0].1.iter().map(|l| l.name.as_str()).collect();
        assert!(names.contains(&"run_code") && names.contains(&"add"), "{names:?}");
        assert!(route(&tools(server.clone(), vec![]), SEARCH_NATIVE, &listings).is_ok());
        let bad = tools(
            server.clone(),
            vec![
                tool("run_cod", &[("code", "string")]),
                tool("add", &[("a", "float"), ("c", "int")]),
            ],
        );
        let why = route(&bad, SEARCH_NATIVE, &listings).unwrap_err().join("\n");
        assert!(
            why.contains("tool `run_cod` is served by no MCP server")
                && why.contains("did you mean `run_code`?"),
            "{why}"
        );
        assert!(
            why.contains("argument `a` is `integer` on the server, `float (number)` in the recipe"),
            "{why}"
        );
        assert!(why.contains("the server takes no argument `c`"), "{why}");
        assert!(why.contains("the server requires argument `b`"), "{why}");
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_go_to_the_server_over_stdio_with_limits_and_errors_as_text() {
    let Some(py) = python() else { return };
    let (sb, _, env) = sandbox_with(stdio(&py)).await;
    // Six turns: more than a QA task's step budget of 4.
    let mut task = generate_qa(sb.content(), Split::Test, 1, 2)[0].clone();
    task.max_steps = 10;
    let task = &task;
    let turns = vec![
        Box::leak(call("run_code", r#"{"code": "print(6 * 7)"}"#).into_boxed_str()) as &str,
        Box::leak(call("add", r#"{"a": 2, "b": 3}"#).into_boxed_str()),
        Box::leak(call("run_code", r#"{"code": "print('x' * 40)"}"#).into_boxed_str()),
        Box::leak(call("run_code", r#"{"code": "print(1)"}"#).into_boxed_str()),
        Box::leak(call("fail", r#"{"message": "no luck"}"#).into_boxed_str()),
        "answer 1",
    ];
    let t = env.run_task(task, &mut Script(turns), &cfg()).await;
    let feedback: Vec<&str> = t.steps.iter().map(|s| s.feedback.as_str()).collect();
    assert_eq!(feedback[0].trim(), "42");
    assert_eq!(feedback[1], "5");
    assert!(feedback[2].starts_with("xxxxxxxxxxxx\n[cut: "), "{feedback:?}");
    assert!(feedback[3].contains("already called 2 times"), "{feedback:?}");
    assert!(feedback[4].starts_with("error: ") && feedback[4].len() < 80, "{feedback:?}");
    assert_eq!(t.outcome.reason.word(), "completed", "{:?}", t.outcome);
    let counts = env.mcp().unwrap().counts();
    assert_eq!((counts["run_code"].calls, counts["run_code"].over_limit), (2, 1));
    assert_eq!((counts["add"].calls, counts["fail"].errors), (1, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_gone_mid_run_ends_the_episode_as_an_env_error() {
    let Some(py) = python() else { return };
    let (mut child, server) = http_server(&py);
    let sb = Sandbox::start(0, 0).await.unwrap();
    let mcp = McpTools::connect(&tools(server, vec![]), SEARCH_NATIVE).await.unwrap();
    let env = SearchEnv::new(&format!("{}/api", sb.base_url()), 64, Duration::from_secs(5))
        .unwrap()
        .with_mcp(mcp.clone());
    let task = &generate_qa(sb.content(), Split::Test, 1, 2)[0];
    let add = Box::leak(call("add", r#"{"a": 2, "b": 3}"#).into_boxed_str()) as &str;
    let t = env.run_task(task, &mut Script(vec![add, "answer 5"]), &cfg()).await;
    assert_eq!(t.steps[0].feedback, "5");
    child.kill().unwrap();
    let _ = child.wait();
    let t = env.run_task(task, &mut Script(vec![add, "answer 5"]), &cfg()).await;
    assert_eq!(t.outcome.reason.word(), "env_error", "{:?}", t.outcome);
    assert!(t.outcome.message.contains("cannot be reached"), "{:?}", t.outcome);
    let counts: Arc<McpTools> = mcp.unwrap();
    assert_eq!(counts.counts()["add"].unreachable, 1);
}

/// A tag-style agent (ARPO's `<python>…</python>`) calling an MCP tool: the tag's text is the
/// tool's one argument, the server's reply comes back inline in the result tags, and the
/// episode goes on in the same sequence to its answer — with a tiny candle policy writing
/// scripted segments (a branch's replay, token for token).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tag_style_call_reaches_an_mcp_tool_and_its_reply_comes_back_inline() {
    use std::collections::BTreeMap;
    use std::sync::Mutex;
    use wrl_exec::agent::policy::TrainerPolicy;
    use wrl_exec::agent::prompt::History;
    use wrl_exec::agent::tags::TagCalls;
    use wrl_plan::params::Tags;
    use wrl_trainer::SampleParams;
    let Some(py) = python() else { return };
    let (sb, set, env) = sandbox_with(stdio(&py)).await;
    let task = generate_qa(sb.content(), Split::Test, 1, 2).remove(0);
    let trainer = super::tiny_trainer(3);
    let script = ["<run_code>print(6 * 7)</run_code>", "<answer>42</answer>"];
    let turns = super::replayed(trainer.tokenizer(), &script);
    let tags = TagCalls::new(set, &Tags { result: "information".into(), tools: BTreeMap::new() });
    let mut policy = TrainerPolicy::new(
        Arc::new(Mutex::new(trainer)),
        SampleParams::default(),
        History::ActionOnly,
        "policy",
    )
    .with_tags(Some(Arc::new(tags)))
    .with_replay(turns);
    let t = env.run_task(&task, &mut policy, &cfg()).await;
    assert_eq!(t.steps.len(), 2, "{:?}", t.outcome);
    assert_eq!(t.steps[0].feedback.trim(), "42");
    assert_eq!(t.outcome.reason.word(), "completed", "{:?}", t.outcome);
    let parts = policy.sequence().unwrap();
    let texts: Vec<(&str, bool)> = parts.iter().map(|p| (p.text.as_str(), p.loss)).collect();
    assert_eq!(
        texts,
        [(script[0], true), ("\n<information>42</information>\n", false), (script[1], true)]
    );
    assert_eq!(env.mcp().unwrap().counts()["run_code"].calls, 1);
}
