//! The bare chromiumoxide side of the browser benchmark: the same shop loop with the same CDP
//! calls our runtime makes for it (element geometry script, marking the document in it before
//! clicks, mouse events, focused-field select, `Input.insertText`, `Page.navigate`, waiting
//! for the new document on `Page.loadEventFired` with a readiness check, snapshot script, PNG
//! screenshots, and `Fetch.continueRequest` for every request paused by the browser-wide
//! `Fetch.enable` that enforces the allow-list), the same Chromium and flags, and nothing around
//! them: no pool, no allow-list check, no feedback, DOM diff or grace waits. Our per-step
//! overhead is measured against this. `--no-fetch` leaves the interception out too, to measure
//! what the allow-list costs.

use std::time::{Duration, Instant};

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::fetch::{
    ContinueRequestParams, EnableParams, EventRequestPaused,
};
use chromiumoxide::cdp::browser_protocol::input::{
    DispatchMouseEventParams, DispatchMouseEventType, InsertTextParams, MouseButton,
};
use chromiumoxide::cdp::browser_protocol::page::{
    CaptureScreenshotFormat, CaptureScreenshotParams, EventLoadEventFired, NavigateParams,
};
use chromiumoxide::cdp::browser_protocol::target::CreateTargetParams;
use chromiumoxide::cdp::js_protocol::runtime::EvaluateParams;
use chromiumoxide::listeners::EventStream;
use futures::StreamExt;
use wrl_browser::{Item, Snapshot, js};

use crate::{Counters, LoopCount};

async fn eval(page: &Page, expr: &str) -> anyhow::Result<serde_json::Value> {
    let p = EvaluateParams::builder()
        .expression(expr)
        .return_by_value(true)
        .build()
        .map_err(anyhow::Error::msg)?;
    let r = page.execute(p).await?;
    if let Some(ex) = &r.result.exception_details {
        anyhow::bail!("script error: {}", ex.text);
    }
    Ok(r.result.result.value.clone().unwrap_or(serde_json::Value::Null))
}

async fn eval_str(page: &Page, expr: &str) -> anyhow::Result<String> {
    Ok(eval(page, expr).await?.as_str().unwrap_or_default().to_string())
}

async fn snapshot(page: &Page) -> anyhow::Result<Snapshot> {
    Ok(serde_json::from_str(&eval_str(page, js::SNAPSHOT).await?)?)
}

fn find(s: &Snapshot, role: &str, label: &str) -> anyhow::Result<u32> {
    s.items
        .iter()
        .find_map(|i| match i {
            Item::Element { id, role: r, label: l, .. } if r == role && l == label => Some(*id),
            _ => None,
        })
        .ok_or_else(|| anyhow::anyhow!("no {role} {label:?} on {}", s.url))
}

/// Centre of element `id`, as our runtime computes it (`mark`: marking the document too).
async fn center(page: &Page, id: u32, mark: bool) -> anyhow::Result<(f64, f64)> {
    let v: serde_json::Value =
        serde_json::from_str(&eval_str(page, &js::element_center(id, mark)).await?)?;
    Ok((v["x"].as_f64().unwrap_or(0.0), v["y"].as_f64().unwrap_or(0.0)))
}

async fn click(page: &Page, (x, y): (f64, f64)) -> anyhow::Result<()> {
    let moved = DispatchMouseEventParams::builder()
        .r#type(DispatchMouseEventType::MouseMoved)
        .x(x)
        .y(y)
        .build()
        .map_err(anyhow::Error::msg)?;
    page.execute(moved).await?;
    for ty in [DispatchMouseEventType::MousePressed, DispatchMouseEventType::MouseReleased] {
        let p = DispatchMouseEventParams::builder()
            .r#type(ty)
            .x(x)
            .y(y)
            .button(MouseButton::Left)
            .buttons(1)
            .click_count(1)
            .build()
            .map_err(anyhow::Error::msg)?;
        page.execute(p).await?;
    }
    Ok(())
}

/// Waits until the marked document was replaced by a loaded one, as our runtime's `settle`
/// does: on each load event of the page (subscribed before the action), or every 500 ms, it
/// checks the document. It does not check before the first event: a script sent while the
/// navigation is in flight waits in the renderer for the new document.
async fn wait_new_document(
    page: &Page,
    loads: &mut EventStream<EventLoadEventFired>,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(500)) => {}
            _ = loads.next() => {}
        }
        // An evaluation may fail while the document is being replaced: not ready yet.
        if let Ok(s) = eval_str(page, js::CHECK_DOCUMENT).await
            && s.starts_with("0|complete|")
        {
            return Ok(());
        }
        anyhow::ensure!(Instant::now() < deadline, "no new document within 20 s");
    }
}

/// One step of the loop (`k % 4`), then the observation.
async fn step(
    page: &Page,
    k: u64,
    obs: &Snapshot,
    base: &str,
    shots: bool,
) -> anyhow::Result<Snapshot> {
    match k % 4 {
        0 => {
            let at = center(page, find(obs, "textbox", "Search products")?, false).await?;
            click(page, at).await?;
            eval(page, js::SELECT_FOCUSED).await?;
            page.execute(InsertTextParams::new("blue mug")).await?;
            eval(page, js::FOCUSED_VALUE).await?;
        }
        1 | 2 => {
            let id = if k % 4 == 1 {
                find(obs, "button", "Search")?
            } else {
                find(obs, "link", "blue mug")?
            };
            let mut loads = page.event_listener::<EventLoadEventFired>().await?;
            let at = center(page, id, true).await?;
            click(page, at).await?;
            wait_new_document(page, &mut loads).await?;
        }
        _ => {
            let mut loads = page.event_listener::<EventLoadEventFired>().await?;
            eval(page, js::MARK_DOCUMENT).await?;
            page.execute(NavigateParams::new(format!("{base}/shop/"))).await?;
            wait_new_document(page, &mut loads).await?;
        }
    }
    let snap = snapshot(page).await?;
    if shots {
        let p = CaptureScreenshotParams::builder()
            .format(CaptureScreenshotFormat::Png)
            .optimize_for_speed(true)
            .build();
        page.execute(p).await?;
    }
    Ok(snap)
}

/// Pauses every request of the browser (`Fetch.enable` on the browser session, as our runtime's
/// allow-list does) and continues each from one task, answers awaited together (as ours).
async fn continue_every_request(
    browser: std::sync::Arc<chromiumoxide::Browser>,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let mut events = browser.event_listener::<EventRequestPaused>().await?.fuse();
    browser.execute(EnableParams::default()).await?;
    Ok(tokio::spawn(async move {
        let mut answers = futures::stream::FuturesUnordered::new();
        loop {
            futures::select! {
                ev = events.next() => {
                    let Some(ev) = ev else { break };
                    let b = browser.clone();
                    answers.push(async move {
                        let _ = b.execute(ContinueRequestParams::new(ev.request_id.clone())).await;
                    });
                }
                _ = answers.select_next_some() => {}
            }
        }
    }))
}

/// Runs `n` loops for `secs` on one Chromium, counting into `c`; returns the seconds from the
/// start of the loops to the end of the last one, and the CPU per step (`Clock::cpu`). `fetch`:
/// with the allow-list's request interception.
pub async fn run(
    base: &str,
    n: usize,
    secs: f64,
    shots: bool,
    fetch: bool,
    c: &Counters,
) -> anyhow::Result<(f64, f64)> {
    let bin = wrl_browser::find_chromium(None)?;
    let launched = wrl_browser::launch::launch(
        &bin,
        (800, 600),
        1.0,
        &crate::extra_args(),
        None,
        Duration::from_secs(20),
    )
    .await?;
    let wrl_browser::launch::Launched { browser, mut handler, process } = launched;
    let handler = tokio::spawn(async move { while handler.next().await.is_some() {} });
    let browser = std::sync::Arc::new(browser);
    let interceptor =
        if fetch { Some(continue_every_request(browser.clone()).await?) } else { None };
    let mut pages = Vec::new();
    for _ in 0..n {
        let ctx = browser.create_browser_context(Default::default()).await?;
        let params = CreateTargetParams::builder()
            .url("about:blank")
            .browser_context_id(ctx)
            .build()
            .map_err(anyhow::Error::msg)?;
        let page = browser.new_page(params).await?;
        let mut loads = page.event_listener::<EventLoadEventFired>().await?;
        eval(&page, js::MARK_DOCUMENT).await?;
        page.execute(NavigateParams::new(format!("{base}/shop/"))).await?;
        wait_new_document(&page, &mut loads).await?;
        let obs = snapshot(&page).await?;
        pages.push((page, obs));
    }
    let crate::Clock { t0, deadline, cpu } = crate::start_clock(c, secs);
    let mut tasks = Vec::new();
    for (page, mut obs) in pages {
        let (base, c) = (base.to_string(), c.clone());
        tasks.push(tokio::spawn(async move {
            let (mut k, mut count) = (0u64, LoopCount::new(&c, t0));
            while Instant::now() < deadline {
                let s = Instant::now();
                obs = step(&page, k, &obs, &base, shots).await?;
                count.step(&c, k, s);
                k += 1;
            }
            count.end(&c);
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    let elapsed = t0.elapsed().as_secs_f64();
    handler.abort();
    if let Some(i) = interceptor {
        i.abort();
    }
    drop((browser, process));
    Ok((elapsed, cpu.await?))
}
