//! Every action of the three tool sets against real Chromium on the sandbox lab pages, with
//! its feedback; DOM diff; screenshots; agent errors and step limits.
#![allow(clippy::unwrap_used)] // tests may unwrap (clippy.toml allows it only inside #[test] fns)

use crate::common;

use serde_json::json;
use wrl_browser::{Action, EndReason, Episode, ToolSet, terse};

fn t(line: &str) -> Action {
    terse::parse(line).unwrap()
}

fn ow(name: &str, args: serde_json::Value) -> Action {
    Action::from_tool_call(ToolSet::Openwebrl, name, &args).unwrap()
}

fn op(name: &str, args: serde_json::Value) -> Action {
    Action::from_tool_call(ToolSet::Opagent, name, &args).unwrap()
}

async fn status(ep: &mut Episode) -> String {
    ep.eval_js("document.getElementById('status').textContent")
        .await
        .unwrap()
        .as_str()
        .unwrap()
        .to_string()
}

/// Id of the element with this label in the current observation.
async fn id_of(ep: &mut Episode, label: &str) -> u32 {
    let obs = ep.observe(false).await.unwrap();
    for it in &obs.snapshot.items {
        if let wrl_browser::Item::Element { id, label: l, .. } = it
            && l == label
        {
            return *id;
        }
    }
    panic!("no element {label:?} in\n{}", obs.text());
}

/// Centre of a CSS selector in viewport pixels.
async fn center(ep: &mut Episode, sel: &str) -> [f64; 2] {
    let v = ep
        .eval_js(&format!(
            "(() => {{ const e = document.querySelector('{sel}'); e.scrollIntoView({{block:'center'}}); const r = e.getBoundingClientRect(); return [r.left + r.width/2, r.top + r.height/2]; }})()"
        ))
        .await
        .unwrap();
    [v[0].as_f64().unwrap(), v[1].as_f64().unwrap()]
}

#[test]
fn element_id_actions_and_feedback() {
    let f = common::shared();
    f.rt.block_on(async {
        let mut ep = f.lab().await;
        let obs = ep.observe(false).await.unwrap();
        let text = obs.text();
        assert!(text.contains("button \"Clicked 0\""), "{text}");
        assert!(text.contains("Secret word: pelican"), "{text}");
        let counter = id_of(&mut ep, "Clicked 0").await;
        let r = ep.act(&[t(&format!("click {counter}"))]).await;
        assert!(r.feedback.contains("clicked button \"Clicked 0\""), "{}", r.feedback);
        assert!(!r.done);
        assert_eq!(id_of(&mut ep, "Clicked 1").await, counter, "ids are stable across snapshots");
        let name = id_of(&mut ep, "Name").await;
        let r = ep.act(&[t(&format!("type {name} blue mug"))]).await;
        assert!(r.feedback.contains("typed into textbox \"Name\": \"blue mug\""), "{}", r.feedback);
        assert_eq!(status(&mut ep).await, "typed blue mug");
        // Typing again replaces the value (the field is cleared first).
        ep.act(&[t(&format!("type {name} red"))]).await;
        assert_eq!(
            ep.eval_js("document.getElementById('name').value").await.unwrap(),
            json!("red")
        );
        let color = id_of(&mut ep, "Color").await;
        let r = ep.act(&[t(&format!("select {color} Green"))]).await;
        assert!(r.feedback.contains("selected \"Green\""), "{}", r.feedback);
        assert_eq!(status(&mut ep).await, "color g");
        let r = ep.act(&[t(&format!("select {color} Purple"))]).await;
        assert_eq!(r.agent_errors.len(), 1, "{}", r.feedback);
        let keys = id_of(&mut ep, "Keys").await;
        ep.act(&[t(&format!("click {keys}")), t("press ctrl+a")]).await;
        assert_eq!(status(&mut ep).await, "key Control+a");
        let other = id_of(&mut ep, "Other page").await;
        let r = ep.act(&[t(&format!("hover {other}"))]).await;
        assert!(r.feedback.contains("hovering link \"Other page\""), "{}", r.feedback);
        let r = ep.act(&[t("click 999")]).await;
        assert!(r.feedback.contains("no element [999]"), "{}", r.feedback);
        assert!(!r.done);
        ep.finish().await;
    });
}

#[test]
fn dom_diff_reports_appeared_and_disappeared() {
    let f = common::shared();
    f.rt.block_on(async {
        let mut ep = f.lab().await;
        let add = id_of(&mut ep, "Add items").await;
        let r = ep.act(&[t(&format!("click {add}"))]).await;
        assert!(
            r.feedback.contains("DOM changes: 3 appeared [button \"Item 1\", button \"Item 2\", button \"Item 3\"]; 0 disappeared"),
            "{}",
            r.feedback
        );
        let rm = id_of(&mut ep, "Remove items").await;
        let r = ep.act(&[t(&format!("click {rm}"))]).await;
        assert!(r.feedback.contains("DOM changes: 0 appeared; 3 disappeared"), "{}", r.feedback);
        let name = id_of(&mut ep, "Name").await;
        let r = ep.act(&[t(&format!("hover {name}"))]).await;
        assert!(!r.feedback.contains("DOM changes"), "{}", r.feedback);
        ep.finish().await;
    });
}

#[test]
fn settles_after_late_empty_and_same_document_navigations() {
    let f = common::shared();
    f.rt.block_on(async {
        let mut ep = f.lab().await;
        // A navigation requested after the click's handler has returned.
        let later = id_of(&mut ep, "Go later").await;
        let r = ep.act(&[t(&format!("click {later}"))]).await;
        assert!(
            r.feedback.contains("navigated to") && r.feedback.contains("/lab/other"),
            "{}",
            r.feedback
        );
        assert!(ep.observe(false).await.unwrap().url.ends_with("/lab/other"));
        let back = id_of(&mut ep, "Back to lab").await;
        let r = ep.act(&[t(&format!("click {back}"))]).await;
        assert!(r.feedback.contains("navigated to http"), "{}", r.feedback);
        // A 204: loading starts and stops, the page stays.
        let empty = id_of(&mut ep, "No content").await;
        let r = ep.act(&[t(&format!("click {empty}"))]).await;
        assert!(!r.feedback.contains("navigated"), "{}", r.feedback);
        assert!(r.end.is_none(), "{:?}", r.end);
        assert!(ep.observe(false).await.unwrap().url.ends_with("/lab/"));
        // A same-document navigation: the URL changes, the document does not.
        let hash = id_of(&mut ep, "To bottom").await;
        let r = ep.act(&[t(&format!("click {hash}"))]).await;
        assert!(
            r.feedback.contains("navigated to") && r.feedback.contains("/lab/#bottom"),
            "{}",
            r.feedback
        );
        assert_eq!(status(&mut ep).await, "ready");
        ep.finish().await;
    });
}

#[test]
fn openwebrl_coordinate_tools() {
    let f = common::shared();
    f.rt.block_on(async {
        let mut ep = f.lab().await;
        let c = center(&mut ep, "#counter").await;
        let r = ep.act(&[ow("click", json!({"point_2d": c}))]).await;
        assert!(r.feedback.contains("clicked button \"Clicked 0\""), "{}", r.feedback);
        let r = ep.act(&[ow("click", json!({"point_2d": c, "clicks": 2}))]).await;
        assert!(r.feedback.contains("double-clicked"), "{}", r.feedback);
        assert_eq!(status(&mut ep).await, "double");
        ep.act(&[ow("click", json!({"point_2d": c, "button": "right"}))]).await;
        assert_eq!(status(&mut ep).await, "right");
        let s = center(&mut ep, "#short").await;
        let r = ep.act(&[ow("click", json!({"point_2d": s})), ow("write", json!({"message": "abcdef"}))]).await;
        assert!(r.feedback.contains("value mismatch: field has \"abc\""), "{}", r.feedback);
        let k = center(&mut ep, "#keys").await;
        ep.act(&[ow("click", json!({"point_2d": k})), ow("press_keys", json!({"keys": ["Shift", "b"], "is_hotkey": true}))]).await;
        assert_eq!(status(&mut ep).await, "key Shift+b", "hotkey with shift");
        let h = center(&mut ep, "#hov").await;
        ep.act(&[ow("hover", json!({"point_2d": h}))]).await;
        assert_eq!(status(&mut ep).await, "hovered");
        let d = center(&mut ep, "#drag").await;
        ep.act(&[ow("drag", json!({"start_point_2d": [d[0] - 50.0, d[1]], "end_point_2d": [d[0] + 30.0, d[1]], "steps": 4}))]).await;
        assert_eq!(status(&mut ep).await, "dragged 80,0");
        let r = ep.act(&[ow("scroll", json!({"direction": "down", "amount": 0.5}))]).await;
        assert!(r.feedback.contains("scrolled down"), "{}", r.feedback);
        ep.act(&[ow("scroll", json!({"direction": "up", "amount": 1.0}))]).await;
        ep.act(&[ow("scroll", json!({"direction": "up", "amount": 1.0}))]).await;
        let r = ep.act(&[ow("scroll", json!({"direction": "up"}))]).await;
        assert!(r.feedback.contains("already at the boundary"), "{}", r.feedback);
        let b = center(&mut ep, "#box").await;
        let r = ep.act(&[ow("scroll", json!({"direction": "down", "amount": 1.0, "point_2d": b}))]).await;
        assert!(r.feedback.contains("scrolled down"), "{}", r.feedback);
        assert!(ep.eval_js("document.getElementById('box').scrollTop").await.unwrap().as_f64().unwrap() > 0.0);
        let r = ep.act(&[ow("click", json!({"point_2d": [5000, 10]}))]).await;
        assert!(r.feedback.contains("invalid coordinates"), "{}", r.feedback);
        let r = ep.act(&[ow("wait", json!({"seconds": 0.05}))]).await;
        assert!(r.feedback.contains("waited"), "{}", r.feedback);
        let r = ep.act(&[ow("done", json!({"response": "ok"}))]).await;
        assert!(r.done);
        assert_eq!(r.end, Some(EndReason::Completed { answer: Some("ok".into()) }));
        ep.finish().await;
    });
}

#[test]
fn navigation_history_and_tabs() {
    let f = common::shared();
    f.rt.block_on(async {
        let mut ep = f.lab().await;
        let other = id_of(&mut ep, "Other page").await;
        let r = ep.act(&[t(&format!("click {other}"))]).await;
        assert!(
            r.feedback.contains("navigated to") && r.feedback.contains("/lab/other"),
            "{}",
            r.feedback
        );
        let r = ep.act(&[ow("go_back", json!({}))]).await;
        assert!(r.feedback.contains("went back") && r.feedback.contains("/lab/"), "{}", r.feedback);
        let r = ep.act(&[op("go_forward", json!({}))]).await;
        assert!(r.feedback.contains("/lab/other"), "{}", r.feedback);
        let r = ep.act(&[ow("goto_url", json!({"url": f.url("/lab/")}))]).await;
        assert!(r.feedback.contains("opened"), "{}", r.feedback);
        let tab = id_of(&mut ep, "Open in new tab").await;
        let r = ep.act(&[t(&format!("click {tab}"))]).await;
        assert!(r.feedback.contains("new tab opened (tab 1)"), "{}", r.feedback);
        let obs = ep.observe(false).await.unwrap();
        assert_eq!(obs.tabs.len(), 2);
        assert!(obs.tabs[1].active && obs.url.contains("/lab/other?tab=1"), "{:?}", obs.tabs);
        let r = ep.act(&[ow("switch_tab", json!({"tab_index": 0}))]).await;
        assert!(r.feedback.contains("switched to tab 0"));
        assert!(ep.observe(false).await.unwrap().url.ends_with("/lab/"));
        let r = ep.act(&[ow("switch_tab", json!({"tab_index": 5}))]).await;
        assert!(r.feedback.contains("invalid tab"), "{}", r.feedback);
        let r = ep.act(&[ow("new_tab", json!({}))]).await;
        assert!(r.feedback.contains("new tab opened (tab 2)"), "{}", r.feedback);
        ep.act(&[ow("close_tab", json!({})), ow("close_tab", json!({}))]).await;
        let r = ep.act(&[ow("close_tab", json!({}))]).await;
        assert!(r.feedback.contains("cannot close the last tab"), "{}", r.feedback);
        let r = ep.act(&[op("find", json!({"search_term": "pelican"}))]).await;
        assert!(r.feedback.contains("found 1 match"), "{}", r.feedback);
        ep.finish().await;
    });
}

#[test]
fn opagent_type_with_enter_and_select() {
    let f = common::shared();
    f.rt.block_on(async {
        let mut ep = f.pool.episode(wrl_browser::EpisodeSpec::url("shop", f.url("/shop/")), Default::default()).await.unwrap();
        let (w, h) = f.pool.cfg().viewport;
        let c = ep
            .eval_js("(() => { const r = document.querySelector('input[name=q]').getBoundingClientRect(); return [r.left + r.width/2, r.top + r.height/2]; })()")
            .await
            .unwrap();
        let norm = [c[0].as_f64().unwrap() * 1000.0 / f64::from(w), c[1].as_f64().unwrap() * 1000.0 / f64::from(h)];
        let r = ep.act(&[op("type", json!({"coords": norm, "content": "blue mug", "press_enter_after": 1}))]).await;
        assert!(r.feedback.contains("navigated to") && r.feedback.contains("q=blue+mug"), "{}", r.feedback);
        assert!(ep.observe(false).await.unwrap().text().contains("link \"blue mug\""));
        let r = ep.act(&[op("answer", json!({"text": "x"}))]).await;
        assert_eq!(r.end, Some(EndReason::Completed { answer: Some("x".into()) }));
        ep.finish().await;

        let mut ep = f.lab().await;
        let s = ep
            .eval_js("(() => { const r = document.getElementById('color').getBoundingClientRect(); return [r.left + r.width/2, r.top + r.height/2]; })()")
            .await
            .unwrap();
        let norm = [s[0].as_f64().unwrap() * 1000.0 / f64::from(w), s[1].as_f64().unwrap() * 1000.0 / f64::from(h)];
        ep.act(&[op("browser_select_option", json!({"coords": norm, "option": "Blue"}))]).await;
        assert_eq!(status(&mut ep).await, "color b");
        let r = ep.act(&[op("click", json!({"coords": [1200, 5]}))]).await;
        assert!(r.feedback.contains("invalid coordinates"), "{}", r.feedback);
        ep.finish().await;
    });
}

/// OpAgent's `get_file`: the file the link at a point leads to, fetched through the page and
/// read back (a CSV under its `download` name, JSON, a binary file, a 404), and no link there.
#[test]
fn opagent_get_file_reads_the_linked_file() {
    let f = common::shared();
    f.rt.block_on(async {
        let spec = wrl_browser::EpisodeSpec::url("files", f.url("/lab/files"));
        let mut ep = f.pool.episode(spec, Default::default()).await.unwrap();
        let (w, h) = f.pool.cfg().viewport;
        let at = |p: [f64; 2]| [p[0] * 1000.0 / f64::from(w), p[1] * 1000.0 / f64::from(h)];
        let csv = at(center(&mut ep, "#csv").await);
        let r = ep.act(&[op("get_file", json!({"coords": csv}))]).await;
        assert!(
            r.feedback.contains("file `kettle-prices.csv` (text/csv, 68 bytes)")
                && r.feedback.contains("green kettle,34.90"),
            "{}",
            r.feedback
        );
        assert_eq!(r.end, None);
        let json = at(center(&mut ep, "#json").await);
        let r = ep.act(&[op("get_file", json!({"coords": json}))]).await;
        assert!(r.feedback.contains("`stock.json` (application/json"), "{}", r.feedback);
        let bin = at(center(&mut ep, "#bin").await);
        let r = ep.act(&[op("get_file", json!({"coords": bin}))]).await;
        assert!(r.feedback.contains("256 bytes): binary, not shown"), "{}", r.feedback);
        let gone = at(center(&mut ep, "#gone").await);
        let r = ep.act(&[op("get_file", json!({"coords": gone}))]).await;
        assert!(r.feedback.contains("answered HTTP 404"), "{}", r.feedback);
        let plain = at(center(&mut ep, "#plain").await);
        let r = ep.act(&[op("get_file", json!({"coords": plain}))]).await;
        assert!(r.feedback.contains("no link to a file at the point (p)"), "{}", r.feedback);
        // The page stays where it was: nothing navigated.
        assert!(ep.observe(false).await.unwrap().url.ends_with("/lab/files"));
        ep.finish().await;
    });
}

#[test]
fn screenshots_decode_and_match_the_viewport() {
    let f = common::shared();
    f.rt.block_on(async {
        let mut ep = f.lab().await;
        let obs = ep.observe(true).await.unwrap();
        let png = obs.screenshot.expect("screenshot");
        let img = image::load_from_memory_with_format(&png, image::ImageFormat::Png).unwrap();
        let (w, h) = f.pool.cfg().viewport;
        assert_eq!((img.width(), img.height()), (w, h));
        assert_eq!(obs.viewport, (w, h));
        ep.finish().await;
    });
}

/// The colour of the screenshot's pixel at (20, 20).
fn pixel(obs: &wrl_browser::Observation) -> [u8; 3] {
    let png = obs.screenshot.as_ref().expect("screenshot");
    let img = image::load_from_memory_with_format(png, image::ImageFormat::Png).unwrap();
    let p = img.to_rgb8().get_pixel(20, 20).0;
    [p[0], p[1], p[2]]
}

/// Covers the viewport with a fixed box of colour `c`.
async fn paint(ep: &mut Episode, c: [u8; 3]) {
    let js = format!(
        "document.body.insertAdjacentHTML('beforeend', '<div style=\"position:fixed;inset:0;z-index:99999;background:rgb({},{},{})\"></div>')",
        c[0], c[1], c[2]
    );
    ep.eval_js(&js).await.unwrap();
}

/// A screenshot is never an earlier frame: not after the page changes, not after a navigation,
/// not after a tab is opened, switched to or closed (Chromium takes it from a new surface,
/// launch.rs).
#[test]
fn screenshots_show_the_page_as_it_is_now() {
    let f = common::shared();
    f.rt.block_on(async {
        let mut ep = f.lab().await;
        let lab = pixel(&ep.observe(true).await.unwrap());
        for i in 0..8u8 {
            let c = [40 + 20 * i, 200 - 20 * i, 90];
            paint(&mut ep, c).await;
            assert_eq!(pixel(&ep.observe(true).await.unwrap()), c, "change {i}");
            ep.act(&[t(&format!("goto {}", f.url("/lab/")))]).await;
            assert_eq!(pixel(&ep.observe(true).await.unwrap()), lab, "navigation {i}");
        }
        let (first, second) = ([200, 30, 30], [30, 30, 200]);
        paint(&mut ep, first).await;
        ep.act(&[ow("new_tab", json!({}))]).await;
        assert_eq!(pixel(&ep.observe(true).await.unwrap()), [255, 255, 255], "new tab");
        ep.act(&[ow("goto_url", json!({"url": f.url("/lab/")}))]).await;
        paint(&mut ep, second).await;
        assert_eq!(pixel(&ep.observe(true).await.unwrap()), second, "second tab");
        ep.act(&[ow("switch_tab", json!({"tab_index": 0}))]).await;
        assert_eq!(pixel(&ep.observe(true).await.unwrap()), first, "back to the first tab");
        ep.act(&[ow("switch_tab", json!({"tab_index": 1}))]).await;
        assert_eq!(pixel(&ep.observe(true).await.unwrap()), second, "the second tab again");
        ep.act(&[ow("close_tab", json!({}))]).await;
        assert_eq!(pixel(&ep.observe(true).await.unwrap()), first, "after closing the second");
        ep.finish().await;
    });
}

#[test]
fn agent_errors_and_step_budget_end_episodes() {
    let f = common::shared();
    f.rt.block_on(async {
        let cfg =
            wrl_browser::EpisodeCfg { max_steps: 50, max_agent_errors: 3, ..Default::default() };
        let mut ep = f
            .pool
            .episode(wrl_browser::EpisodeSpec::url("lab", f.url("/lab/")), cfg)
            .await
            .unwrap();
        let r1 = ep.reject(terse::parse("fly 3").unwrap_err());
        assert!(!r1.done && r1.feedback.contains("unknown tool"), "{}", r1.feedback);
        let r2 = ep.act(&[t("click 999")]).await;
        assert!(!r2.done);
        let r3 = ep.act(&[ow("click", json!({"point_2d": [-1, 0]}))]).await;
        assert!(r3.done);
        assert!(matches!(r3.end, Some(EndReason::AgentError { .. })), "{:?}", r3.end);
        let out = ep.finish().await;
        assert_eq!(out.reason.ending(), wrl_sandbox::Ending::AgentError);

        let cfg = wrl_browser::EpisodeCfg { max_steps: 2, ..Default::default() };
        let mut ep = f
            .pool
            .episode(wrl_browser::EpisodeSpec::url("lab", f.url("/lab/")), cfg)
            .await
            .unwrap();
        assert!(!ep.act(&[t("scroll down")]).await.done);
        let r = ep.act(&[t("scroll down")]).await;
        assert_eq!(r.end, Some(EndReason::MaxSteps));
        assert!(ep.act(&[t("scroll down")]).await.feedback.contains("over"));
        assert_eq!(ep.finish().await.steps, 2);
    });
}

#[test]
fn the_env_observe_list_and_one_action_per_turn() {
    use wrl_browser::episode::TextView;
    use wrl_browser::{EpisodeCfg, EpisodeSpec};
    let f = common::shared();
    f.rt.block_on(async {
        let view = TextView {
            url: false,
            tabs: false,
            elements: Some(2),
            html: None,
            feedback: true,
            dom_diff: false,
        };
        let cfg = EpisodeCfg { one_action_per_turn: true, view, ..EpisodeCfg::default() };
        let mut ep = f.pool.episode(EpisodeSpec::url("lab", f.url("/lab/")), cfg).await.unwrap();
        let full = ep.observe(false).await.unwrap();
        let text = full.text();
        assert!(!text.contains("url: "), "{text}");
        assert_eq!(text.lines().filter(|l| l.starts_with('[')).count(), 2, "{text}");
        let add = id_of(&mut ep, "Add items").await;
        let counter = id_of(&mut ep, "Clicked 0").await;
        // Two actions in one turn: the first runs, the second is reported; no DOM diff.
        let r = ep.act(&[t(&format!("click {add}")), t(&format!("click {counter}"))]).await;
        assert!(
            r.feedback.contains("1 more action(s) not run: one action per turn"),
            "{}",
            r.feedback
        );
        assert!(!r.feedback.contains("DOM changes"), "{}", r.feedback);
        let ran = ep.eval_js("[window.m, window.n]").await.unwrap();
        assert_eq!(ran, json!([3, 0]), "the first click ran, the second did not");
        let obs = ep.observe(false).await.unwrap();
        assert!(obs.text().contains("feedback: clicked"), "{}", obs.text());
        ep.finish().await;
    });
}

/// `html(max: N)`: the real page in Chromium as simplified HTML, each element with the id the
/// element tools address (a click on it runs).
#[test]
fn the_html_observation_is_the_page_as_simplified_html() {
    use wrl_browser::episode::TextView;
    use wrl_browser::{EpisodeCfg, EpisodeSpec};
    let f = common::shared();
    f.rt.block_on(async {
        let view = TextView {
            url: false,
            tabs: false,
            elements: None,
            html: Some(64),
            feedback: false,
            dom_diff: false,
        };
        let cfg = EpisodeCfg { view, ..EpisodeCfg::default() };
        let mut ep = f.pool.episode(EpisodeSpec::url("lab", f.url("/lab/")), cfg).await.unwrap();
        let text = ep.observe(false).await.unwrap().text();
        let add = id_of(&mut ep, "Add items").await;
        let tag = format!("<button id=\"{add}\">Add items</button>");
        assert!(text.contains(&tag), "{text}");
        assert!(text.lines().any(|l| l.starts_with("<p>")), "page text as paragraphs: {text}");
        assert!(!text.lines().any(|l| l.starts_with('[')), "no element lines: {text}");
        assert!(!ep.act(&[t(&format!("click {add}"))]).await.done);
        assert_eq!(ep.eval_js("window.m").await.unwrap(), json!(3), "the id addressed the button");
        ep.finish().await;
    });
}

#[test]
fn waiting_longer_than_timeout_acquire_for_a_browser_is_an_error() {
    use std::time::Duration;
    use wrl_browser::{EpisodeCfg, EpisodeError, EpisodeSpec};
    let f = common::fixture(1, |_| {});
    f.rt.block_on(async {
        let busy = f.lab().await;
        let cfg =
            EpisodeCfg { acquire_timeout: Duration::from_millis(200), ..EpisodeCfg::default() };
        let r = f.pool.episode(EpisodeSpec::url("lab", f.url("/lab/")), cfg.clone()).await;
        assert!(matches!(r, Err(EpisodeError::NoSlot(_))), "{r:?}");
        busy.finish().await;
        let ep = f.pool.episode(EpisodeSpec::url("lab", f.url("/lab/")), cfg).await.unwrap();
        ep.finish().await;
    });
}
