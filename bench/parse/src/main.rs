//! Measures the `.wrl` parser on generated, realistic recipe corpora (about 10k, 100k and 1M
//! lines): parse-to-AST throughput in MB/s (best of several runs), and the time of a whole
//! `wrlc check` on the same file (read, UTF-8 check, parse, render) to show that it grows
//! linearly. Prints a Markdown table; "CPU MB/s" divides by the parsing thread's CPU time
//! (best of the runs), which a loaded machine disturbs far less than the wall time. Run it through `bench/parse.sh` (release build).
//!
//! Options: `--lines 10000,100000,1000000` (sizes), `--runs N` (parse repetitions per size),
//! `--write DIR` (also write each corpus to `DIR/corpus_<lines>.wrl`, e.g. for `perf`),
//! `--parse-only FILE` (parse one file N times and exit; for profiling), `--check-all` (also
//! time `wrlc check` above 10k lines: today that takes minutes, see docs/benchmarks.md).
//! Built with `--no-default-features`, it measures the parse only (no `wrl-cli`, quick to build).

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use wrl_diagnostics::FileId;

/// A small deterministic generator (xorshift), so every run measures the same text.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[(self.next() % xs.len() as u64) as usize]
    }

    fn int(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

/// One block of a realistic recipe (about 60 lines) for experiment `i`: every kind of
/// declaration, graphs, rewards with arithmetic, stages with phase lists, profiles, comments.
fn experiment(out: &mut String, i: usize, rng: &mut Rng) {
    let ctx = rng.pick(&["16k", "32k", "64k", "128k"]);
    let repo =
        rng.pick(&["Qwen/Qwen3-VL-4B-Thinking", "Qwen/Qwen2.5-VL-7B", "opagent/grounder-7b"]);
    let lr = rng.pick(&["1e-5", "2e-5", "5e-6", "3e-6"]);
    let group = rng.int(2, 16);
    let shots = rng.int(1, 5);
    let turns = rng.int(10, 40);
    let conc = rng.int(8, 96);
    let n_demo = rng.int(100, 50_000);
    let n_task = rng.int(100, 9_000);
    let _ = write!(
        out,
        r#"// ── experiment {i}: ablation of the group size and the judge ──────────────
/// Policy for run {i}: a vision-language model with the vision tower frozen.
model policy_{i} = hf("{repo}") {{
  context = {ctx} tokens
  frozen  = [vision_tower, projector]
  memory  = 80 GiB
}}

dataset demos_{i} = jsonl("data/run{i}/sft.jsonl") {{ kind = trajectories, count = {n_demo} }}
dataset tasks_{i} = parquet("data/run{i}/tasks.parquet") {{ kind = tasks, count = {n_task} }}

env web_{i} = browser {{
  viewport    = 1280 x 1000
  tools       = browser.openwebrl          // typed tool schemas; `done` is terminal
  observe     = [screenshot(last: {shots}), url, tabs, feedback(dom_diff)]
  concurrency = {conc}
  timeout     = {{ step = 45 s, task = 600 s }}
  blacklist   = on_navigation_error
}}

agent actor_{i} = graph {{
  module planner  = llm(frontier) {{ emits = [done, go_on, replan] }}
  module grounder = policy_of(policy_{i}) {{ tools = browser.opagent, trainable }}
  start -> planner
  planner -> grounder -> planner when go_on | replan limit 8
  planner -> end when done
  max_turns = {turns}
}}

/// Outcome reward, gated on a well-formed answer, with a small cost per turn.
reward outcome_{i} =
  if ended(format_error) then -1
  else format_ok * judge(model: "gpt-4.1", screenshots: {shots}, verdict: binary) - 0.01 * turns

stage warmup_{i} = sft(policy_{i}, demos_{i}) {{
  epochs = 3, lr = {lr}, batch = 16, schedule = cosine(warmup: 10%), loss_on = current_turn
}}

stage online_{i} = grpo(warmup_{i}.model, tasks_{i}, actor_{i}) {{
  prompts = 48, group = {group}, drop = uniform_groups, clip = 0.2 .. 0.28, kl = 0
  ppo_epochs = 2, temperature = 0.8, reward = outcome_{i}
  exclude = [env_error, judge_timeout]
  phases = [ {{ iters = 90, horizon = 15 steps, lr = 1e-6 }},
             {{ iters = 50, horizon = 30 steps, lr = 5e-7 }} ]
}}

eval bench_{i} = benchmark("webarena-lite") {{ agent = actor_{i}, episodes = 165, budget = 30 turns }}

profile smoke_{i} {{                    // same recipe, offline, on a CPU
  policy_{i} = std::models::tiny
  demos_{i}  = std::sandbox::demos(count: 64)
  online_{i}.phases[1].lr = 1e-7
}}

"#
    );
    if i % 4 == 0 {
        let _ = write!(
            out,
            r#"reward rubric_{i} = judge(model: frontier, rubric: """
  Did this step move the task forward? Answer "yes" or "no".
""") + (if not ended(timeout) and steps <= {turns} then 0.1 else 0)

"#
        );
    }
}

/// A corpus of at least `lines` lines.
fn corpus(lines: usize) -> String {
    let mut rng = Rng(0x5eed_2026_0000_0001);
    let mut out = String::from(
        "// Generated benchmark corpus: realistic recipes, repeated with varied values.\n\
         use std::tools::browser\nuse std::rewards::{format_ok, judge}\n\
         param frontier = \"gpt-4.1\"\n\n",
    );
    let mut n_lines = out.matches('\n').count();
    let mut i = 0;
    while n_lines < lines {
        let before = out.len();
        experiment(&mut out, i, &mut rng);
        n_lines += out[before..].matches('\n').count();
        i += 1;
    }
    out
}

fn best_of<F: FnMut() -> Duration>(runs: usize, mut f: F) -> Duration {
    (0..runs.max(1)).map(|_| f()).min().unwrap_or_default()
}

/// The best time of a whole `wrlc check` of `path`.
#[cfg(feature = "check")]
fn time_check(runs: usize, path: &std::path::Path) -> Duration {
    best_of(runs, || {
        let t = Instant::now();
        let (code, _, err) = wrl_cli::run_captured(["check".as_ref(), path.as_os_str()]);
        let e = t.elapsed();
        assert!(code == 0 || code == 1, "wrlc check failed: {err}");
        e
    })
}

#[cfg(not(feature = "check"))]
fn time_check(_runs: usize, _path: &std::path::Path) -> Duration {
    Duration::ZERO
}

/// The CPU time of this thread so far (Linux `schedstat`, in ns), or zero where unknown: on a
/// loaded machine the wall time says more about the load than about the parser.
fn cpu_time() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .map_or(Duration::ZERO, Duration::from_nanos)
}

fn mb(bytes: usize) -> f64 {
    bytes as f64 / 1e6
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opt = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1));
    let sizes: Vec<usize> = opt("--lines")
        .map(|s| s.split(',').filter_map(|n| n.trim().replace('_', "").parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 100_000, 1_000_000]);
    let runs: usize = opt("--runs").and_then(|r| r.parse().ok()).unwrap_or(5);
    let write_dir = opt("--write");

    if let Some(file) = opt("--parse-only") {
        let text = std::fs::read_to_string(file).expect("readable file");
        let t = Instant::now();
        for _ in 0..runs {
            let p = wrl_syntax::parse(FileId(0), &text);
            std::hint::black_box(&p);
        }
        let per = t.elapsed() / runs.max(1) as u32;
        println!(
            "{file}: {:.1} MB in {per:?} = {:.1} MB/s",
            mb(text.len()),
            mb(text.len()) / per.as_secs_f64()
        );
        return;
    }

    let tmp = std::env::temp_dir().join(format!("wrl-bench-parse-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("temp dir");
    println!(
        "| lines | MB | items | parse (best of {runs}) | parse MB/s | CPU MB/s | `wrlc check` | check µs/line |"
    );
    println!("|------:|---:|------:|------:|------:|------:|------:|------:|");
    for &lines in &sizes {
        let text = corpus(lines);
        let n_lines = text.lines().count();
        let path = tmp.join(format!("corpus_{lines}.wrl"));
        std::fs::write(&path, &text).expect("write corpus");
        if let Some(dir) = write_dir {
            std::fs::create_dir_all(dir).expect("--write dir");
            std::fs::write(std::path::Path::new(dir).join(format!("corpus_{lines}.wrl")), &text)
                .expect("write corpus");
        }

        let check = wrl_syntax::parse(FileId(0), &text);
        assert!(
            check.diagnostics.is_empty(),
            "the generated corpus must parse cleanly: {:?}",
            check.diagnostics.first()
        );
        let items = check.file.items.len();
        drop(check);

        let r = if lines >= 1_000_000 { runs.min(3) } else { runs };
        let mut cpu = Duration::MAX;
        let parse = best_of(r, || {
            let c = cpu_time();
            let t = Instant::now();
            let p = wrl_syntax::parse(FileId(0), &text);
            let e = t.elapsed();
            cpu = cpu.min(cpu_time().saturating_sub(c));
            std::hint::black_box(&p);
            e
        });
        let run_check =
            cfg!(feature = "check") && (lines <= 10_000 || args.iter().any(|a| a == "--check-all"));
        let whole = if !run_check { Duration::ZERO } else { time_check(r.min(3), &path) };
        let (check_ms, check_us) = if run_check {
            (
                format!("{:.1} ms", whole.as_secs_f64() * 1e3),
                format!("{:.2}", whole.as_secs_f64() * 1e6 / n_lines as f64),
            )
        } else {
            ("—".to_string(), "—".to_string())
        };
        let cpu_mbs = if cpu.is_zero() || cpu == Duration::MAX {
            "—".to_string()
        } else {
            format!("{:.1}", mb(text.len()) / cpu.as_secs_f64())
        };
        println!(
            "| {n_lines} | {:.1} | {items} | {:.1} ms | **{:.1}** | {cpu_mbs} | {check_ms} | {check_us} |",
            mb(text.len()),
            parse.as_secs_f64() * 1e3,
            mb(text.len()) / parse.as_secs_f64(),
        );
    }
    let _ = std::fs::remove_dir_all(&tmp);
}
