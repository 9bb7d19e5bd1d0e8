//! The DOT plan as an engineer reads it: hyperparameters, model ids, dataset counts and reward
//! expressions in the boxes, every agent a cluster with its module graph, `unknown` values that
//! `wrlc run` would refuse marked, a legend, every parameter in a tooltip. Golden DOT files
//! (`recipes/golden/*.dot`; regenerate with `WRL_BLESS=1 cargo test -p wrl-tests --test
//! plan_dot`) pin the bytes, and real Graphviz (`dot -Tsvg`) renders them: the clusters and the
//! tooltips must be in the SVG. Without `dot` on PATH that part is skipped, unless
//! `WRL_REQUIRE_GRAPHVIZ=1` (CI installs Graphviz and sets it).

// Helpers of this test file panic on purpose: a panic is a failed test.
#![allow(clippy::unwrap_used)]

use std::io::Write as _;
use std::process::{Command, Stdio};

use wrl_tests::{workspace_root, wrlc};

fn dot_of(recipe: &str) -> String {
    let (code, out, err) = wrlc(["plan", recipe, "--format", "dot"]);
    assert_eq!(code, 0, "wrlc plan {recipe}: {err}");
    out
}

/// The SVG Graphviz renders, or `None` when `dot` is not installed (and not required).
fn render_svg(dot: &str) -> Option<String> {
    let child = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            let required = std::env::var_os("WRL_REQUIRE_GRAPHVIZ").is_some_and(|v| v == "1");
            assert!(!required, "WRL_REQUIRE_GRAPHVIZ=1 but `dot` cannot run: {e}");
            eprintln!(
                "skipping the Graphviz rendering: `dot` cannot run ({e}); apt install graphviz"
            );
            return None;
        }
    };
    child.stdin.take().unwrap().write_all(dot.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "dot -Tsvg failed: {stderr}");
    // Graphviz warns on stderr about what it could not lay out as asked: none may be left.
    assert!(stderr.trim().is_empty(), "dot -Tsvg warned: {stderr}");
    Some(String::from_utf8(out.stdout).unwrap())
}

#[test]
fn golden_dot_plans_match() {
    let bless = std::env::var_os("WRL_BLESS").is_some_and(|v| v == "1");
    for stem in ["quickstart", "opagent"] {
        let text = dot_of(&format!("recipes/{stem}.wrl"));
        assert!(!text.contains(&*workspace_root().to_string_lossy()), "absolute path in DOT");
        let path = workspace_root().join("recipes").join("golden").join(format!("{stem}.dot"));
        if bless {
            std::fs::write(&path, &text).unwrap();
            continue;
        }
        let old = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            old == text,
            "{} drifted; regenerate with WRL_BLESS=1 cargo test -p wrl-tests --test all plan_dot",
            path.display()
        );
    }
}

#[test]
fn boxes_show_what_an_engineer_looks_for() {
    let d = dot_of("recipes/quickstart.wrl");
    for want in [
        "lr = 5e-4",
        "prompts × group = 8 × 6 = 48 samples",
        "clip = 0.2 .. 0.28",
        "epochs = 2 epochs",
        "batch = 4",
        "iters × horizon = 14 iters × 6 steps",
        "count = 256",
        "expr = if ended(format_error) then -1 else task_check()",
        "subgraph \"cluster_agent_actor\"",
        "subgraph cluster_legend",
    ] {
        assert!(d.contains(want), "no `{want}` in the quickstart's DOT:\n{d}");
    }
    // The model's id and a judge's model are in the boxes of a recipe that has them.
    let d = dot_of("recipes/openwebrl.wrl");
    assert!(d.contains("id = \\\"Qwen/"), "no hf model id:\n{d}");
    assert!(d.contains("judge(model = \\\"o4-mini\\\", …)"), "no judge model:\n{d}");
}

#[test]
fn a_graph_agent_is_a_cluster_of_its_modules() {
    let d = dot_of("recipes/opagent.wrl");
    assert!(d.contains("subgraph \"cluster_agent_framework\""), "{d}");
    for m in ["planner", "grounder", "reflector", "summarizer", "start", "end"] {
        assert!(d.contains(&format!("\"agent:framework/{m}\" [")), "no module {m}:\n{d}");
    }
    // The module graph's edges, with their verdicts; module models feed the module's box.
    assert!(d.contains(
        "\"agent:framework/reflector\" -> \"agent:framework/summarizer\" [label=\"when done\""
    ));
    assert!(d.contains(
        "\"model:grounder72\" -> \"agent:framework/grounder\" [label=\"modules.grounder.model\""
    ));
}

#[test]
fn unknown_values_that_run_refuses_are_marked() {
    // `lr = unknown`: `wrlc run` refuses it (E0500), the plan says so where it stands.
    let case = "tests/ui/run/E0500_unknown_lr.wrl";
    let d = dot_of(case);
    assert!(d.contains("lr = unknown  ⚠ refused"), "{d}");
    assert!(d.contains("color=\"#c62828\", penwidth=2"), "{d}");
    assert!(d.contains("lr = unknown  (wrlc run refuses: give a value)"), "tooltip: {d}");
    let (_, text, _) = wrlc(["plan", case]);
    assert!(
        text.contains("lr = unknown  # wrlc run refuses `unknown` here: give a value"),
        "{text}"
    );
    // An `unknown` the runtime accepts (an eval's `count`: every task) is not marked.
    let d = dot_of("recipes/quickstart.wrl");
    assert!(!d.contains("⚠ refused\\l"), "{d}");
    assert!(d.contains("count = unknown  (optional)"), "{d}");
}

#[test]
fn graphviz_renders_clusters_legend_and_tooltips() {
    for recipe in ["recipes/quickstart.wrl", "recipes/opagent.wrl", "recipes/openwebrl.wrl"] {
        let Some(svg) = render_svg(&dot_of(recipe)) else { return };
        assert!(svg.starts_with("<?xml") && svg.contains("<svg"), "{recipe}: not SVG");
        assert!(svg.contains("<title>cluster_legend</title>"), "{recipe}: no legend");
        assert!(svg.contains("<title>cluster_agent_"), "{recipe}: no agent cluster");
        // Tooltips are `xlink:title` on the node's link; they hold every parameter.
        assert!(svg.contains("xlink:title=\"stage:"), "{recipe}: no stage tooltip");
        assert!(svg.contains("optimizer = { beta1 = 0.9"), "{recipe}: tooltip lacks parameters");
    }
    let svg = render_svg(&dot_of("recipes/opagent.wrl")).unwrap();
    assert!(svg.contains("<title>cluster_agent_framework</title>"));
    assert!(
        svg.contains("<title>agent:framework/reflector&#45;&gt;agent:framework/summarizer</title>")
    );
    let svg = render_svg(&dot_of("tests/ui/run/E0500_unknown_lr.wrl")).unwrap();
    assert!(svg.contains("stroke=\"#c62828\""), "the refused node is not red in the SVG");
}
