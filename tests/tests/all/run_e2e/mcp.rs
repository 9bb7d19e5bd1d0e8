//! MCP tools end to end (#46 item 4): `tests/recipes/mcp_tools.wrl --profile offline` (a search
//! env) and `tests/recipes/mcp_browser.wrl --profile offline` (a browser env, real Chromium)
//! with their server over stdio on the official MCP Python SDK (`MCP_PYTHON`,
//! tests/scripts/mcp-check.sh): the preflight reads the server's `tools/list` and accepts the
//! declared tools, the run connects and finishes, writes the calls' counts, and its episodes
//! end by the policy, never by the server.

use std::path::{Path, PathBuf};

use super::records;

/// Runs `recipe --profile offline` into `dir/run`, tool set `tools` served by the reference
/// server over stdio (2 calls a tool, replies cut to 200 characters); the run must finish.
fn offline_run(recipe: &str, tools: &str, py: &str, dir: &Path) -> PathBuf {
    let out = dir.join("run");
    let server = format!(
        "{tools}.mcp=[mcp_stdio(\"{py}\") {{ args = [\"tests/scripts/mcp_server.py\", \"stdio\"], max_calls = 2, result_chars = 200 }}]"
    );
    let args = ["run", recipe, "--profile", "offline", "--set", &server, "--out"];
    let mut args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    args.push(out.display().to_string());
    let (code, _, stderr) = wrl_tests::wrlc(args);
    assert_eq!(code, 0, "{stderr}");
    out
}

/// The Python with the MCP SDK, or `None` after saying why the test is skipped.
fn python() -> Option<String> {
    match std::env::var("MCP_PYTHON") {
        Ok(p) if !p.is_empty() => Some(p),
        _ => {
            assert!(
                std::env::var_os("WRL_REQUIRE_MCP").is_none(),
                "WRL_REQUIRE_MCP is set but MCP_PYTHON is not (CI makes the venv first)"
            );
            eprintln!(
                "SKIPPED: MCP_PYTHON is not set (the Python of a venv with the official MCP SDK; \
                 bash tests/scripts/mcp-check.sh makes one and runs this test)"
            );
            None
        }
    }
}

#[test]
fn mcp_tools_offline_profile_runs_against_the_reference_server() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = offline_run("tests/recipes/mcp_tools.wrl", "research", &py, dir.path());
    let (summary, _, trajs) = records(&out);
    assert_eq!(summary.status, "finished");
    assert!(!trajs.is_empty());
    for t in &trajs {
        let o = &t.trajectory.outcome;
        assert!(!o.message.contains("MCP"), "an episode ended by the MCP server: {o:?}");
    }
}

#[test]
fn mcp_browser_offline_profile_runs_in_chromium_against_the_reference_server() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = offline_run("tests/recipes/mcp_browser.wrl", "shop_and_code", &py, dir.path());
    let (summary, _, trajs) = records(&out);
    assert_eq!(summary.status, "finished");
    assert_eq!(trajs.len(), 2);
    for t in &trajs {
        let o = &t.trajectory.outcome;
        assert!(!o.message.contains("MCP"), "an episode ended by the MCP server: {o:?}");
    }
    // The browser env's servers were connected for the run, and their counts written.
    let counts = std::fs::read_to_string(out.join("mcp_calls.json")).unwrap();
    let counts: serde_json::Value = serde_json::from_str(&counts).unwrap();
    assert!(counts.get("env:web").is_some(), "{counts}");
}
