//! Browser benchmark (run by `bench/browser.sh`, not by `cargo test`): the same scripted shop
//! loop as `bench/browser/pw_bench.py`, with our runtime or (`--bare`) with bare chromiumoxide
//! calls, at a given concurrency, with or without PNG screenshots; prints one JSON line.
//! `--serve PORT` only serves the sandbox.
//!
//! `cargo run -p wrl-browser --example bench -- --base URL --concurrency 4 --seconds 10 [--screenshots] [--bare]`

mod bare;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use wrl_browser::{AllowList, BrowserPool, EpisodeCfg, EpisodeSpec, Item, PoolCfg, terse};

/// Steps and summed step latency over all loops, in total and per kind of step (type, click
/// Search, click the product, go to the shop).
#[derive(Clone, Default)]
pub struct Counters {
    /// Steps done.
    pub steps: Arc<AtomicU64>,
    /// Sum of step latencies in µs.
    pub lat_us: Arc<AtomicU64>,
    /// Steps per kind.
    pub kind_steps: Arc<[AtomicU64; 4]>,
    /// Summed latency per kind in µs.
    pub kind_us: Arc<[AtomicU64; 4]>,
}

impl Counters {
    /// Records step `k` (its kind is `k % 4`) that took `s.elapsed()`.
    pub fn record(&self, k: u64, s: Instant) {
        let us = s.elapsed().as_micros() as u64;
        let kind = (k % 4) as usize;
        self.lat_us.fetch_add(us, Ordering::Relaxed);
        self.steps.fetch_add(1, Ordering::Relaxed);
        self.kind_us[kind].fetch_add(us, Ordering::Relaxed);
        self.kind_steps[kind].fetch_add(1, Ordering::Relaxed);
    }

    /// Mean ms per kind of step, as a JSON array.
    fn kinds_json(&self) -> String {
        let ms: Vec<String> = (0..4)
            .map(|i| {
                let n = self.kind_steps[i].load(Ordering::Relaxed).max(1) as f64;
                format!("{:.1}", self.kind_us[i].load(Ordering::Relaxed) as f64 / n / 1000.0)
            })
            .collect();
        format!("[{}]", ms.join(","))
    }
}

/// Extra Chromium flags for both Rust sides, from `BENCH_CHROMIUM_ARGS` (space-separated).
pub fn extra_args() -> Vec<String> {
    std::env::var("BENCH_CHROMIUM_ARGS")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned())
}

fn find(obs: &wrl_browser::Observation, role: &str, label: &str) -> Option<u32> {
    obs.snapshot.items.iter().find_map(|i| match i {
        Item::Element { id, role: r, label: l, .. } if r == role && l == label => Some(*id),
        _ => None,
    })
}

/// Our runtime: `n` episodes on one pool, each running the loop for `secs`. Returns the seconds
/// from the start of the loops to the end of the last one (its last step, not the closing of
/// its context).
async fn ours(base: &str, n: usize, secs: f64, shots: bool, c: &Counters) -> anyhow::Result<f64> {
    let port = wrl_browser::allow::origin(base).map_or(0, |o| o.port);
    let pool = BrowserPool::launch(PoolCfg {
        max_concurrent: n,
        allow: AllowList::only([format!("127.0.0.1:{port}")]),
        extra_args: extra_args(),
        ..PoolCfg::default()
    })
    .await?;
    // Open every episode first, then run the loops for `secs`.
    let mut eps = Vec::new();
    for _ in 0..n {
        let cfg = EpisodeCfg {
            max_steps: u32::MAX,
            task_timeout: Duration::from_secs(3600),
            ..EpisodeCfg::default()
        };
        eps.push(pool.episode(EpisodeSpec::url("bench", format!("{base}/shop/")), cfg).await?);
    }
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs_f64(secs);
    let mut handles = Vec::new();
    for mut ep in eps {
        let (c, base) = (c.clone(), base.to_string());
        handles.push(tokio::spawn(async move {
            let mut k = 0u64;
            let mut obs = ep.observe(shots).await.map_err(|e| anyhow::anyhow!("{e:?}"))?;
            while Instant::now() < deadline {
                let line = match k % 4 {
                    0 => format!(
                        "type {} blue mug",
                        find(&obs, "textbox", "Search products").unwrap_or(0)
                    ),
                    1 => format!("click {}", find(&obs, "button", "Search").unwrap_or(0)),
                    2 => format!("click {}", find(&obs, "link", "blue mug").unwrap_or(0)),
                    _ => format!("goto {base}/shop/"),
                };
                let s = Instant::now();
                let r = ep.act(&[terse::parse(&line)?]).await;
                if !r.agent_errors.is_empty() || r.done {
                    anyhow::bail!(
                        "bench step {line:?} failed: {} {:?} {:?}",
                        r.feedback,
                        r.end,
                        r.agent_errors
                    );
                }
                obs = ep.observe(shots).await.map_err(|e| anyhow::anyhow!("{e:?}"))?;
                c.record(k, s);
                k += 1;
            }
            // The loop's end, before the context is closed: closing it is not a step, and the
            // bare loop closes nothing inside its timed region.
            let end = Instant::now();
            ep.finish().await;
            anyhow::Ok(end)
        }));
    }
    let mut last = t0;
    for h in handles {
        last = last.max(h.await??);
    }
    Ok((last - t0).as_secs_f64())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--print-snapshot-js") {
        println!("{}", wrl_browser::js::SNAPSHOT);
        return Ok(());
    }
    if let Some(port) = arg(&args, "--serve") {
        let sb = wrl_sandbox::Sandbox::start(0, port.parse()?).await?;
        println!("{}", sb.base_url());
        tokio::signal::ctrl_c().await?;
        return Ok(());
    }
    let base = arg(&args, "--base").ok_or_else(|| anyhow::anyhow!("--base URL is required"))?;
    let n: usize = arg(&args, "--concurrency").unwrap_or_else(|| "1".into()).parse()?;
    let secs: f64 = arg(&args, "--seconds").unwrap_or_else(|| "10".into()).parse()?;
    let shots = args.iter().any(|a| a == "--screenshots");
    let is_bare = args.iter().any(|a| a == "--bare");
    let c = Counters::default();
    let el = if is_bare {
        bare::run(&base, n, secs, shots, &c).await?
    } else {
        ours(&base, n, secs, shots, &c).await?
    };
    let s = c.steps.load(Ordering::Relaxed);
    let lat = c.lat_us.load(Ordering::Relaxed) as f64 / s.max(1) as f64 / 1000.0;
    let name = if is_bare { "bare" } else { "wrl" };
    println!(
        "{{\"impl\":\"{name}\",\"concurrency\":{n},\"screenshots\":{shots},\"steps\":{s},\"seconds\":{el:.2},\"steps_per_s\":{:.2},\"mean_step_ms\":{lat:.1},\"kind_ms\":{}}}",
        s as f64 / el,
        c.kinds_json()
    );
    Ok(())
}
