//! Failure taxonomy against real Chromium: crash recovery, blacklist, allow-list, step and
//! task timeouts. Each test has its own pool (crash recovery kills the browser).
#![allow(clippy::unwrap_used)] // tests may unwrap (clippy.toml allows it only inside #[test] fns)

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use wrl_browser::{Action, EndReason, EpisodeCfg, EpisodeSpec, ToolSet, terse};

#[test]
fn killed_browser_is_an_env_error_and_the_pool_recovers() {
    let f = common::fixture(2, |_| {});
    f.rt.block_on(async {
        let mut ep = f.lab().await;
        assert!(ep.observe(false).await.is_ok());
        let pids = f.pool.pids().await;
        assert_eq!(pids.len(), 1);
        // Kill the Chromium process we launched (by its pid) mid-episode.
        let st =
            std::process::Command::new("kill").args(["-9", &pids[0].to_string()]).status().unwrap();
        assert!(st.success());
        tokio::time::sleep(Duration::from_millis(300)).await;
        let r = ep.act(&[terse::parse("scroll down").unwrap()]).await;
        assert!(r.done, "{r:?}");
        assert!(matches!(&r.end, Some(EndReason::EnvError { .. })), "{:?}", r.end);
        let out = ep.finish().await;
        assert!(out.reason.is_infrastructure());
        // The next episode gets a fresh browser and works.
        let mut ep = f.lab().await;
        assert!(ep.ended().is_none(), "{:?}", ep.ended());
        let obs = ep.observe(false).await.unwrap();
        assert!(obs.text().contains("Clicked 0"));
        assert_eq!(f.pool.restarts(), 1);
        assert_ne!(f.pool.pids().await, pids);
        ep.finish().await;
    });
}

#[test]
fn failing_hosts_are_blacklisted_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("blacklist.txt");
    let file2 = file.clone();
    // A port nothing listens on: connection refused.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let dead = format!("http://localhost:{closed}/");
    let f = common::fixture(2, move |c| {
        c.blacklist_file = Some(file2);
        c.allow.allow("localhost");
    });
    f.rt.block_on(async {
        let ep = f.pool.episode(EpisodeSpec::url("x", &dead), EpisodeCfg::default()).await.unwrap();
        match ep.ended() {
            Some(EndReason::EnvError { message }) => {
                // Refused upstream, seen through the allow-list proxy (blacklist.rs).
                assert!(message.contains("ERR_EMPTY_RESPONSE"), "{message}")
            }
            other => panic!("expected env error, got {other:?}"),
        }
        ep.finish().await;
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "localhost\n");
        let ep = f.pool.episode(EpisodeSpec::url("x", &dead), EpisodeCfg::default()).await.unwrap();
        match ep.ended() {
            Some(EndReason::EnvError { message }) => {
                assert!(message.contains("blacklisted"), "{message}")
            }
            other => panic!("expected env error, got {other:?}"),
        }
        ep.finish().await;
        // The agent's own goto to a blacklisted host is refused with feedback, not an env error.
        let mut ep = f.lab().await;
        let r = ep.act(&[terse::parse(&format!("goto {dead}x")).unwrap()]).await;
        assert!(r.feedback.contains("blacklisted") && !r.done, "{}", r.feedback);
        ep.finish().await;
    });
}

#[test]
fn allow_list_blocks_other_ports_files_and_control_ports() {
    let f = common::fixture(2, |_| {});
    f.rt.block_on(async {
        // Another server on another port, counting HTTP requests (bytes received). Chromium may
        // open a speculative TCP connection (preconnect) when a navigation starts; no request
        // is ever sent on it.
        let other = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = other.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let h2 = hits.clone();
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = other.accept().await {
                let h3 = h2.clone();
                tokio::spawn(async move {
                    use tokio::io::AsyncReadExt;
                    let mut buf = [0u8; 64];
                    if let Ok(n) = sock.read(&mut buf).await
                        && n > 0
                    {
                        h3.fetch_add(1, Ordering::SeqCst);
                    }
                });
            }
        });
        let leak = format!("http://127.0.0.1:{port}/pixel.png");
        let mut ep = f.lab().await;
        let r = ep.act(&[terse::parse(&format!("goto {}", f.url(&format!("/lab/?leak={leak}")))).unwrap()]).await;
        assert!(r.feedback.contains(&format!("blocked request to {leak}")), "{}", r.feedback);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(hits.load(Ordering::SeqCst), 0, "the other port must not be contacted by a subresource");
        let r = ep.act(&[terse::parse(&format!("goto http://127.0.0.1:{port}/")).unwrap()]).await;
        assert!(r.feedback.contains("failed to open") && r.feedback.contains("not in the allow-list"), "{}", r.feedback);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(hits.load(Ordering::SeqCst), 0, "the other port must not be contacted by goto");
        // A link to the other port, clicked: blocked inside the browser.
        ep.eval_js(&format!("(() => {{ const a = document.createElement('a'); a.href = 'http://127.0.0.1:{port}/x'; a.textContent = 'Away'; document.body.prepend(a); return 1; }})()")).await.unwrap();
        let obs = ep.observe(false).await.unwrap();
        let id = obs.snapshot.items.iter().find_map(|i| match i {
            wrl_browser::Item::Element { id, label, .. } if label == "Away" => Some(*id),
            _ => None,
        });
        let r = ep.act(&[terse::parse(&format!("click {}", id.unwrap())).unwrap()]).await;
        assert!(r.feedback.contains(&format!("blocked request to http://127.0.0.1:{port}/x")), "{}", r.feedback);
        let r = ep.act(&[terse::parse("goto file:///etc/passwd").unwrap()]).await;
        assert!(r.feedback.contains("failed to open"), "{}", r.feedback);
        let text = ep.eval_js("document.body ? document.body.innerText : ''").await.unwrap();
        assert!(!text.as_str().unwrap_or("").contains("root:"), "file:// must not load");
        assert_eq!(hits.load(Ordering::SeqCst), 0, "no request may reach the other port");
        ep.finish().await;
    });
}

#[test]
fn control_ports_are_blocked_even_when_everything_is_allowed() {
    let f = common::fixture(1, |c| c.allow = wrl_browser::AllowList::any());
    f.rt.block_on(async {
        // The CDP port of our own browser is a control port.
        let mut ep = f.lab().await;
        let ws = ep.eval_js("1").await.unwrap();
        assert_eq!(ws, json!(1));
        let pid = f.pool.pids().await[0];
        let cmdline = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        assert!(cmdline.contains("remote-debugging-port"), "{cmdline}");
        // chromiumoxide launches with port 0; read the real port from DevToolsActivePort.
        let port_file = cmdline
            .split('\0')
            .find_map(|a| a.strip_prefix("--user-data-dir="))
            .map(|d| std::path::Path::new(d).join("DevToolsActivePort"))
            .unwrap();
        let port = std::fs::read_to_string(port_file).unwrap().lines().next().unwrap().to_string();
        let r = ep
            .act(&[terse::parse(&format!("goto http://127.0.0.1:{port}/json/version")).unwrap()])
            .await;
        assert!(r.feedback.contains("control port"), "{}", r.feedback);
        ep.finish().await;
    });
}

#[test]
fn step_and_task_timeouts() {
    let f = common::fixture(2, |_| {});
    f.rt.block_on(async {
        let cfg = EpisodeCfg { step_timeout: Duration::from_millis(800), ..EpisodeCfg::default() };
        let mut ep = f.pool.episode(EpisodeSpec::url("lab", f.url("/lab/")), cfg).await.unwrap();
        let goto = Action::from_tool_call(
            ToolSet::Openwebrl,
            "goto_url",
            &json!({"url": f.url("/lab/slow?ms=3000")}),
        )
        .unwrap();
        let r = ep.act(&[goto]).await;
        match &r.end {
            Some(EndReason::EnvError { message }) => {
                assert!(message.contains("timed out"), "{message}")
            }
            other => panic!("expected env error, got {other:?}"),
        }
        ep.finish().await;
        let cfg = EpisodeCfg { task_timeout: Duration::from_millis(1), ..EpisodeCfg::default() };
        let mut ep = f.pool.episode(EpisodeSpec::url("lab", f.url("/lab/")), cfg).await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        let r = ep.act(&[terse::parse("scroll down").unwrap()]).await;
        assert!(matches!(r.end, Some(EndReason::InfraTimeout { .. })), "{:?}", r.end);
        assert_eq!(ep.finish().await.reason.ending(), wrl_sandbox::Ending::InfraTimeout);
    });
}

/// A wrapper script that runs the browser without `exec` (as Debian's
/// `/usr/bin/chromium-headless-shell` does): dropping the launch kills the browser too, not
/// only the wrapper, and its temporary directory goes.
#[cfg(target_os = "linux")]
#[test]
fn dropping_a_launch_through_a_wrapper_kills_the_browser() {
    let real = wrl_browser::find_chromium(None).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let wrapper = dir.path().join("chromium-wrapper");
    std::fs::write(&wrapper, format!("#!/bin/sh\n'{}' \"$@\"\n", real.display())).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let launched = rt
        .block_on(wrl_browser::launch::launch(
            &wrapper,
            (800, 600),
            1.0,
            &[],
            None,
            Duration::from_secs(20),
        ))
        .unwrap();
    let shell = launched.process.as_ref().unwrap().pid();
    let procs = common::tree(shell);
    // The launch's temporary directory (the parent of the browser's profile).
    let browser = procs.iter().find(|p| **p != shell).copied().unwrap();
    let cmdline = std::fs::read_to_string(format!("/proc/{browser}/cmdline")).unwrap();
    let profile = cmdline.split('\0').find_map(|a| a.strip_prefix("--user-data-dir=")).unwrap();
    let dir = std::path::Path::new(profile).parent().unwrap().to_path_buf();
    assert!(procs.len() > 2, "expected the wrapper, the browser and its helpers: {procs:?}");
    drop(launched);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while procs.iter().any(|p| common::running(*p)) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left: Vec<u32> = procs.iter().copied().filter(|p| common::running(*p)).collect();
    assert!(left.is_empty(), "browser processes outlived the dropped launch: {left:?}");
    // A browser left running would write into its profile while the directory is deleted.
    while dir.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!dir.exists(), "{} was left behind", dir.display());
}
