//! Browser benchmark (run by `bench/browser.sh`, not by `cargo test`): the same scripted shop
//! loop as `bench/browser/pw_bench.py`, with our runtime or (`--bare`) with bare chromiumoxide
//! calls (`--no-fetch`: without the allow-list's request interception), at a given concurrency,
//! with or without PNG screenshots; prints one JSON line.
//! `--serve PORT` only serves the sandbox; `--print-chromium` prints the browser binary that both
//! Rust sides launch (for the Playwright side to launch the same).
//!
//! `cargo run -p wrl-browser --example bench -- --base URL --concurrency 4 --seconds 10 [--warmup 1.5] [--screenshots] [--bare [--no-fetch]]`

mod bare;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use wrl_browser::{AllowList, BrowserPool, EpisodeCfg, EpisodeSpec, Item, PoolCfg, terse};

/// Steps and summed step latency over all loops, in total and per kind of step (type, click
/// Search, click the product, go to the shop).
#[derive(Clone, Default)]
pub struct Counters {
    /// Steps done (counted ones: after the warm-up).
    pub steps: Arc<AtomicU64>,
    /// Steps ended, counted or not (for the CPU per step).
    pub ended: Arc<AtomicU64>,
    /// Sum of step latencies in µs.
    pub lat_us: Arc<AtomicU64>,
    /// Steps per kind.
    pub kind_steps: Arc<[AtomicU64; 4]>,
    /// Summed latency per kind in µs.
    pub kind_us: Arc<[AtomicU64; 4]>,
    /// Sum over loops of each loop's steps per second (see `LoopCount`).
    pub rate: Arc<std::sync::Mutex<f64>>,
    /// Steps that start this long after the loops start are counted; those before warm up.
    pub warmup: Duration,
}

/// One loop's count. Steps that start during the warm-up are not counted: at the start every
/// loop takes its first steps at once, in lockstep. The loop's rate is its counted steps over
/// the time from the first counted step's start to the last step's end. Throughput is the sum
/// of the loops' rates, not all steps over the time to the last loop's end: that would count
/// the tail, where the last loops finish their last steps on an emptier machine, as idle time.
pub struct LoopCount {
    warm_until: Instant,
    first: Option<Instant>,
    steps: u64,
}

impl LoopCount {
    /// The count of a loop that starts at `t0`.
    pub fn new(c: &Counters, t0: Instant) -> Self {
        LoopCount { warm_until: t0 + c.warmup, first: None, steps: 0 }
    }

    /// Step `k`, which started at `s`, has just ended.
    pub fn step(&mut self, c: &Counters, k: u64, s: Instant) {
        c.ended.fetch_add(1, Ordering::Relaxed);
        if s >= self.warm_until {
            self.first.get_or_insert(s);
            self.steps += 1;
            c.record(k, s);
        }
    }

    /// The loop has ended.
    pub fn end(self, c: &Counters) {
        if let (Some(first), Ok(mut sum)) = (self.first, c.rate.lock()) {
            *sum += self.steps as f64 / first.elapsed().as_secs_f64().max(1e-9);
        }
    }
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

/// Busy CPU time of the whole machine so far, in ms (`/proc/stat`: user, nice, system, irq,
/// softirq; not idle, iowait or steal). `None` where there is no `/proc/stat`.
fn busy_ms() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let cpu = stat.lines().next()?.split_whitespace().skip(1);
    let v: Vec<f64> = cpu.take(7).filter_map(|x| x.parse().ok()).collect();
    // Jiffies are 10 ms on Linux's default USER_HZ of 100.
    Some([0, 1, 2, 5, 6].iter().filter_map(|&i| v.get(i)).sum::<f64>() * 10.0)
}

/// The timed region of a run, started the same way on both Rust sides.
pub struct Clock {
    /// When the loops start (their warm-up first).
    pub t0: Instant,
    /// When the loops stop starting steps.
    pub deadline: Instant,
    /// Whole-machine CPU per step between the end of the warm-up and the deadline (ms),
    /// measured in the background: a measure that a slower or busier host changes less than
    /// steps/s. It divides by the steps that ended in that window, whenever they started: the
    /// work of the steps in flight at its start and at its end then roughly cancels out.
    pub cpu: tokio::task::JoinHandle<f64>,
}

/// Starts the timed region: the loops run their warm-up, then `secs`. Says so on stderr when
/// `BENCH_ANNOUNCE` is set, for profilers that attach to the steady state.
pub fn start_clock(c: &Counters, secs: f64) -> Clock {
    if std::env::var_os("BENCH_ANNOUNCE").is_some() {
        eprintln!("loops started");
    }
    let t0 = Instant::now();
    let (warm, deadline) = (t0 + c.warmup, t0 + c.warmup + Duration::from_secs_f64(secs));
    let c = c.clone();
    let cpu = tokio::spawn(async move {
        tokio::time::sleep_until(warm.into()).await;
        let (b0, s0) = (busy_ms(), c.ended.load(Ordering::Relaxed));
        tokio::time::sleep_until(deadline.into()).await;
        let (b1, s1) = (busy_ms(), c.ended.load(Ordering::Relaxed));
        match (b0, b1) {
            (Some(b0), Some(b1)) if s1 > s0 => (b1 - b0) / (s1 - s0) as f64,
            _ => 0.0,
        }
    });
    Clock { t0, deadline, cpu }
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
/// its context), and the CPU per step (`Clock::cpu`).
async fn ours(
    base: &str,
    n: usize,
    secs: f64,
    shots: bool,
    c: &Counters,
) -> anyhow::Result<(f64, f64)> {
    let port = wrl_browser::allow::origin(base).map_or(0, |o| o.port);
    let pool = BrowserPool::launch(PoolCfg {
        max_concurrent: n,
        allow: AllowList::only([format!("127.0.0.1:{port}")]),
        extra_args: extra_args(),
        ..PoolCfg::default()
    })
    .await?;
    // Open every episode and take its first observation, then run the loops for `secs`: the
    // bare loop also takes its first snapshot before the clock starts.
    let mut eps = Vec::new();
    for _ in 0..n {
        let cfg = EpisodeCfg {
            max_steps: u32::MAX,
            task_timeout: Duration::from_secs(3600),
            ..EpisodeCfg::default()
        };
        let mut ep = pool.episode(EpisodeSpec::url("bench", format!("{base}/shop/")), cfg).await?;
        let obs = ep.observe(shots).await.map_err(|e| anyhow::anyhow!("{e:?}"))?;
        eps.push((ep, obs));
    }
    let Clock { t0, deadline, cpu } = start_clock(c, secs);
    let mut handles = Vec::new();
    for (mut ep, mut obs) in eps {
        let (c, base) = (c.clone(), base.to_string());
        handles.push(tokio::spawn(async move {
            let (mut k, mut count) = (0u64, LoopCount::new(&c, t0));
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
                count.step(&c, k, s);
                k += 1;
            }
            count.end(&c);
            anyhow::Ok((Instant::now(), ep))
        }));
    }
    // Contexts are closed once every loop has ended: closing one while others still run would
    // slow their last steps, and the bare loop closes nothing while it is timed.
    let mut last = t0;
    let mut done = Vec::new();
    for h in handles {
        let (end, ep) = h.await??;
        last = last.max(end);
        done.push(ep);
    }
    for ep in done {
        ep.finish().await;
    }
    Ok(((last - t0).as_secs_f64(), cpu.await?))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--print-snapshot-js") {
        println!("{}", wrl_browser::js::SNAPSHOT);
        return Ok(());
    }
    if args.iter().any(|a| a == "--print-chromium") {
        println!("{}", wrl_browser::find_chromium(None)?.display());
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
    let warmup: f64 = arg(&args, "--warmup").unwrap_or_else(|| "0".into()).parse()?;
    let c = Counters { warmup: Duration::from_secs_f64(warmup), ..Counters::default() };
    let (el, cpu) = if is_bare {
        let fetch = !args.iter().any(|a| a == "--no-fetch");
        bare::run(&base, n, secs, shots, fetch, &c).await?
    } else {
        ours(&base, n, secs, shots, &c).await?
    };
    let s = c.steps.load(Ordering::Relaxed);
    let lat = c.lat_us.load(Ordering::Relaxed) as f64 / s.max(1) as f64 / 1000.0;
    let name = if is_bare { "bare" } else { "wrl" };
    let rate = c.rate.lock().map_or(0.0, |r| *r);
    println!(
        "{{\"impl\":\"{name}\",\"concurrency\":{n},\"screenshots\":{shots},\"steps\":{s},\"seconds\":{el:.2},\"steps_per_s\":{rate:.2},\"mean_step_ms\":{lat:.1},\"cpu_ms_per_step\":{cpu:.1},\"kind_ms\":{}}}",
        c.kinds_json()
    );
    Ok(())
}
