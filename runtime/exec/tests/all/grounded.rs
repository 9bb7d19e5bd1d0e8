//! Grounded demonstrations against real Chromium: the scripted expert's element action, written
//! as a coordinate tool set's calls at the element's box (OpenWebRL's own set from
//! `recipes/openwebrl.wrl`, OpAgent's `std::tools::opagent`, decoded from real plans),
//! read back by the rollout's own path (`Hermes::read` → the runner's lines → `Episode::act`:
//! 0–1000 → CSS pixels → a CDP click) lands on the same element: the page changes exactly as
//! the element action changes it, for several elements, one in a corner of the viewport and
//! one a few pixels above its bottom edge.

#![allow(clippy::unwrap_used)]

use std::sync::{Arc, OnceLock};

use wrl_browser::{AllowList, BrowserPool, EpisodeCfg, EpisodeSpec, Item, PoolCfg, terse};
use wrl_exec::agent::hermes::Hermes;
use wrl_sandbox::{Sandbox, StepBoxes};

use super::hermes_chat::{hermes_of, plan};

/// OpAgent's tool set (`std::tools::opagent`) as a ReAct policy calls it: OpenWebRL's smoke
/// profile with it swapped in (OpAgent's own recipe leaves too much `unknown` to decode).
fn opagent() -> Hermes {
    let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let mut text = std::fs::read_to_string(root.join("recipes/openwebrl.wrl")).unwrap();
    // A copy of `smoke_vl` with OpAgent's tools, one call a turn.
    let start = text.find("profile smoke_vl {").unwrap();
    let end = start + text[start..].find("\n}\n").unwrap();
    let body = text[start..end].replace("profile smoke_vl {", "profile opagent_tools {");
    text.push_str(&format!(
        "\n{body}\n  web.tools = std::tools::opagent\n  web.per_turn = one\n}}\n"
    ));
    let mut sources = wrl_diagnostics::SourceMap::new();
    let id = sources.add("recipes/openwebrl.wrl".to_string(), text.clone());
    let parsed = wrl_syntax::parse(id, &text);
    let checked = wrl_check::check(&mut sources, &[(id, &parsed.file)], &wrl_check::FsLoader);
    let recipe = checked.recipes.into_iter().next().unwrap();
    hermes_of(&wrl_plan::lower(&recipe.with_profile("opagent_tools").unwrap()).unwrap())
}

struct Fixture {
    rt: tokio::runtime::Runtime,
    sandbox: Arc<Sandbox>,
    pool: BrowserPool,
}

fn shared() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (sandbox, pool) = rt.block_on(async {
            let sandbox = Arc::new(Sandbox::start(0, 0).await.unwrap());
            let cfg = PoolCfg {
                max_concurrent: 2,
                allow: AllowList::only([format!("127.0.0.1:{}", sandbox.addr().port())]),
                ..PoolCfg::default()
            };
            (sandbox, BrowserPool::launch(cfg).await.unwrap())
        });
        Fixture { rt, sandbox, pool }
    })
}

/// A fresh lab page with `setup` run in it.
async fn lab(f: &Fixture, setup: &str) -> wrl_browser::Episode {
    let url = format!("{}/lab/", f.sandbox.base_url());
    let cfg = EpisodeCfg { max_steps: 20, ..EpisodeCfg::default() };
    let mut ep = f.pool.episode(EpisodeSpec::url("lab", url), cfg).await.unwrap();
    if !setup.is_empty() {
        ep.eval_js(setup).await.unwrap();
    }
    ep
}

/// The element labelled `label` in an observation with its screenshot (as the expert's
/// recorded step takes one), and the boxes the step records for it.
async fn observed(ep: &mut wrl_browser::Episode, label: &str) -> (u32, StepBoxes) {
    let obs = ep.observe(true).await.unwrap();
    assert!(obs.screenshot.is_some());
    let (id, rect) = obs
        .snapshot
        .items
        .iter()
        .find_map(|i| match i {
            Item::Element { id, label: l, rect, .. } if l == label => Some((*id, rect.unwrap())),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no element {label:?} in\n{}", obs.text()));
    let viewport = [obs.viewport.0, obs.viewport.1];
    (id, StepBoxes { viewport, elements: [(id, rect)].into_iter().collect() })
}

/// The demonstration's calls as the model writes them (its Hermes text).
fn as_written(h: &Hermes, line: &str, boxes: &StepBoxes) -> String {
    let seg = h.demo(&[line.to_string()], Some(boxes), "goal").unwrap();
    let calls: Vec<String> = seg
        .tool_calls
        .iter()
        .map(|c| {
            format!(
                "<tool_call>\n{{\"name\": \"{}\", \"arguments\": {}}}\n</tool_call>",
                c.name, c.arguments
            )
        })
        .collect();
    format!("{}{}", calls.join("\n"), seg.text)
}

/// Puts the counter in the bottom-right corner of the viewport, a pixel from both edges.
const CORNER: &str = "(() => { const e = document.getElementById('counter'); \
    e.style.cssText = 'position:fixed; right:1px; bottom:1px'; return 1; })()";
/// Scrolls the page so that the counter's centre stands 3 px above the viewport's bottom.
const NEAR_BOTTOM: &str = "(() => { const e = document.getElementById('counter'); \
    const r = e.getBoundingClientRect(); \
    window.scrollBy(0, r.top + r.height / 2 - (innerHeight - 3)); \
    return e.getBoundingClientRect().top; })()";
/// A spacer above everything, so the page can scroll the counter up to the bottom edge.
const SPACER: &str = "(() => { const d = document.createElement('div'); d.style.height = '900px'; \
    document.body.prepend(d); return 1; })()";

#[test]
fn grounded_demonstrations_land_where_the_element_actions_do() {
    let f = shared();
    let openwebrl = hermes_of(&plan("openwebrl.wrl", "smoke_vl"));
    let opagent = opagent();
    assert_eq!(openwebrl.tools.tools.len(), 13, "OpenWebRL's own tool set");
    // (setup, element label, the expert's line, what shows the page's change)
    let state = "[(document.getElementById('counter') || {}).textContent, \
                 (document.getElementById('status') || {}).textContent, location.pathname] \
                 .join(' | ')";
    let spacer_then_bottom = format!("{SPACER}; {NEAR_BOTTOM}");
    let cases: [(&str, &str, &str); 5] = [
        ("", "Clicked 0", "click {}"),
        ("", "Name", "type {} blue mug"),
        ("", "Other page", "click {}"),
        (CORNER, "Clicked 0", "click {}"),
        (&spacer_then_bottom, "Clicked 0", "click {}"),
    ];
    f.rt.block_on(async {
        for (setup, label, line) in cases {
            for h in [&openwebrl, &opagent] {
                let mut by_id = lab(f, setup).await;
                let before = by_id.eval_js(state).await.unwrap();
                let (id, boxes) = observed(&mut by_id, label).await;
                let line = line.replace("{}", &id.to_string());
                let r = by_id.act(&terse::parse_turn(&line).unwrap()).await;
                let want = by_id.eval_js(state).await.unwrap();
                assert_ne!(want, before, "{label}: the element action changes the page");

                let mut by_point = lab(f, setup).await;
                let (again, boxes_again) = observed(&mut by_point, label).await;
                assert_eq!((again, &boxes_again), (id, &boxes), "the same page, the same box");
                let written = as_written(h, &line, &boxes);
                let lines = h.read(&written).unwrap();
                let g = by_point.act(&terse::parse_turn(&lines).unwrap()).await;
                let got = by_point.eval_js(state).await.unwrap();
                let case = format!("{label} {setup:.20} via {written}");
                assert_eq!(got, want, "{case}: lines {lines}, feedback {}", g.feedback);
                assert!(g.agent_errors.is_empty(), "{case}: {}", g.feedback);
                // The click names the element the id did.
                let first = |s: &str| s.split(';').next().unwrap_or("").to_string();
                let clicked = first(&r.feedback);
                if clicked.starts_with("clicked") {
                    assert_eq!(first(&g.feedback), clicked, "{case}");
                }
                by_id.finish().await;
                by_point.finish().await;
            }
        }
    });
}

#[test]
fn a_step_becomes_the_sets_calls_and_one_without_boxes_is_refused() {
    let openwebrl = hermes_of(&plan("openwebrl.wrl", "smoke_vl"));
    let opagent = opagent();
    // At 0–1000 each set runs as its own tools, every one of them (E0502 refused seven of
    // OpenWebRL's when 0–1000 meant OpAgent's).
    use wrl_exec::agent::actions::{tool_set, unknown_tools};
    assert_eq!(tool_set(&openwebrl.tools), wrl_browser::ToolSet::OpenwebrlNorm);
    assert_eq!(tool_set(&opagent.tools), wrl_browser::ToolSet::Opagent);
    assert!(unknown_tools(&openwebrl.tools).is_empty() && unknown_tools(&opagent.tools).is_empty());
    let done = openwebrl
        .read("<tool_call>\n{\"name\": \"done\", \"arguments\": {\"response\": \"12\"}}\n</tool_call>")
        .unwrap();
    assert!(terse::parse(&done).unwrap().is_terminal(), "{done}");
    let boxes = StepBoxes { viewport: [640, 400], elements: [(3, [200, 100, 100, 40])].into() };
    let calls = |h: &Hermes, line: &str| {
        let seg = h.demo(&[line.to_string()], Some(&boxes), "g").unwrap();
        let calls: Vec<(String, serde_json::Value)> = seg
            .tool_calls
            .iter()
            .map(|c| (c.name.clone(), serde_json::from_str(&c.arguments).unwrap()))
            .collect();
        (calls, seg.text)
    };
    let call = |n: &str, a: serde_json::Value| (n.to_string(), a);
    use serde_json::json;
    // Arguments the schema leaves to their defaults are left out (`clicks`, `button`, `amount`).
    let table: [(&str, Vec<(String, serde_json::Value)>); 5] = [
        ("click 3", vec![call("click", json!({"point_2d": [391, 300]}))]),
        (
            "type! 3 blue mug",
            vec![
                call("click", json!({"point_2d": [391, 300]})),
                call("write", json!({"message": "blue mug"})),
                call("press_keys", json!({"keys": ["Enter"]})),
            ],
        ),
        ("scroll down", vec![call("scroll", json!({}))]),
        ("back", vec![call("go_back", json!({}))]),
        ("answer 12.50", vec![call("done", json!({"response": "12.50"}))]),
    ];
    for (line, want) in table {
        assert_eq!(calls(&openwebrl, line), (want, String::new()), "{line}");
    }
    assert_eq!(
        calls(&opagent, "type 3 blue mug").0,
        [call("type", json!({"coords": [391, 300], "content": "blue mug"}))]
    );
    assert_eq!(
        calls(&opagent, "scroll up").0,
        [call("scroll", json!({"direction": "up", "distance": 200}))]
    );
    assert_eq!(calls(&opagent, "answer 12.50"), (vec![], "<answer>12.50</answer>".to_string()));

    let no_boxes = openwebrl.demo(&["click 3".into()], None, "g").unwrap_err();
    assert!(no_boxes.contains("records no element boxes"), "{no_boxes}");
    assert!(no_boxes.contains("data/<dataset>.jsonl"), "{no_boxes}");
    let off = StepBoxes { viewport: [640, 400], elements: [(3, [10, 500, 50, 20])].into() };
    let e = openwebrl.demo(&["click 3".into()], Some(&off), "g").unwrap_err();
    assert!(e.contains("cannot be grounded") && e.contains("outside"), "{e}");
    // A step already in the set's own actions (a policy's recorded turn) needs no boxes.
    let recorded = r#"{"toolset":"openwebrl_norm","tool":"click","point_2d":[10.0,20.0]}"#;
    let seg = openwebrl.demo(&[recorded.into()], None, "g").unwrap();
    assert_eq!(seg.tool_calls[0].arguments, r#"{"point_2d":[10,20]}"#);
    // The element tools need no boxes: their calls stay element ids.
    let elements = hermes_of(&plan("openwebrl.wrl", "smoke"));
    assert_eq!(elements.demo(&["click 3".into()], None, "g").unwrap().tool_calls.len(), 1);
}
