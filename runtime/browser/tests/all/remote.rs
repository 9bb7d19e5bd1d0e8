//! Remote browsers: a pool given CDP URLs connects to an already running Chromium (started here
//! with `--remote-debugging-port=0`, as a fleet machine would run it) instead of launching one,
//! and episodes run on it like on a local browser.
#![allow(clippy::unwrap_used)] // tests may unwrap (clippy.toml allows it only inside #[test] fns)

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use wrl_browser::{AllowList, BrowserPool, EndReason, EpisodeCfg, EpisodeSpec, PoolCfg, terse};
use wrl_sandbox::Sandbox;

/// A Chromium started by the test, killed when dropped.
struct Running {
    child: Child,
    _dir: tempfile::TempDir,
    /// DevTools port.
    port: u16,
    /// `ws://127.0.0.1:PORT/devtools/browser/…`.
    ws: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_chromium() -> Running {
    let bin = wrl_browser::find_chromium(None).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(bin)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"])
        .arg("--remote-debugging-port=0")
        // What docs/run.md asks of a fleet (the allow-list cannot hold without them).
        .args(["--enable-automation", "--force-webrtc-ip-handling-policy=disable_non_proxied_udp"])
        .arg(format!("--user-data-dir={}", dir.path().display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let file = dir.path().join("DevToolsActivePort");
    // Owned by the guard from here on, so a failed assertion still kills it.
    let mut running = Running { child, _dir: dir, port: 0, ws: String::new() };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(text) = std::fs::read_to_string(&file) {
            let lines: Vec<&str> = text.lines().collect();
            if lines.len() >= 2 && lines[1].starts_with("/devtools/browser/") {
                running.port = lines[0].parse().unwrap();
                running.ws = format!("ws://127.0.0.1:{}{}", running.port, lines[1]);
                return running;
            }
        }
        assert!(Instant::now() < deadline, "Chromium did not open DevTools within 30 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

async fn run_episode(pool: &BrowserPool, sandbox: &Sandbox) {
    let mut ep = pool
        .episode(
            EpisodeSpec::url("lab", format!("{}/lab/", sandbox.base_url())),
            EpisodeCfg { max_steps: 10, ..EpisodeCfg::default() },
        )
        .await
        .unwrap();
    assert!(ep.ended().is_none(), "{:?}", ep.ended());
    let obs = ep.observe(true).await.unwrap();
    assert!(obs.screenshot.is_some_and(|png| png.starts_with(b"\x89PNG")));
    let counter = obs
        .snapshot
        .items
        .iter()
        .find_map(|i| match i {
            wrl_browser::Item::Element { id, label, .. } if label == "Clicked 0" => Some(*id),
            _ => None,
        })
        .unwrap();
    let r = ep.act(&[terse::parse(&format!("click {counter}")).unwrap()]).await;
    assert!(r.feedback.contains("clicked"), "{}", r.feedback);
    let text = ep.observe(false).await.unwrap().text();
    assert!(text.contains("Clicked 1"), "{text}");
    let r = ep.act(&[terse::parse("answer pelican").unwrap()]).await;
    assert!(r.done);
    let out = ep.finish().await;
    assert_eq!(out.reason, EndReason::Completed { answer: Some("pelican".into()) });
}

#[test]
fn episodes_run_on_a_running_chromium_by_ws_and_http_url() {
    let chromium = start_chromium();
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let sandbox = Arc::new(Sandbox::start(0, 0).await.unwrap());
        let allow = AllowList::only([format!("127.0.0.1:{}", sandbox.addr().port())]);
        for url in [chromium.ws.clone(), format!("http://127.0.0.1:{}", chromium.port)] {
            let pool = BrowserPool::launch(PoolCfg {
                remote: vec![url.clone()],
                max_concurrent: 2,
                allow: allow.clone(),
                ..PoolCfg::default()
            })
            .await
            .unwrap();
            // Nothing was launched: the pool knows no local process.
            assert!(pool.pids().await.is_empty(), "{url}");
            // Two concurrent episodes, each in its own context of the remote browser.
            tokio::join!(run_episode(&pool, &sandbox), run_episode(&pool, &sandbox));
            drop(pool);
        }
    });
    // The remote browser belongs to someone else: the pool left it running.
    let mut chromium = chromium;
    assert!(
        chromium.child.try_wait().unwrap().is_none(),
        "the pool must not stop a remote browser"
    );
}
