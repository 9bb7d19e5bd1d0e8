//! Rollout decoding throughput of the embedded policy (`std::models::tiny`: 2 layers, d 128,
//! ALiBi, copy head) at 1, 4 and 16 concurrent episodes, two decoders side by side in one run:
//! each turn alone on candle's ops (`sample::sample_candle`, how every turn decoded before
//! batching) and the shared row-stable batch (`decode::Batcher`, how `wrlc run` decodes now).
//! Concurrent episodes are threads, each decoding its share of the turns one after another
//! from its own seeded stream. Prints a table and, last, `speedup: X.XX` (batched / alone at
//! the highest concurrency), each figure the best of `ROUNDS` (3) runs, with the median beside.
//!
//! Usage: rollout_bench [CONCURRENCY,…] [EPISODES] [PROMPT_BYTES] [MAX_TOKENS] [alone|batched]
//! (the last to run one decoder only, for a profile). `GROUP=6` gives every six episodes in a
//! row one task (their prompt), as a GRPO group of six; `ROLLOUT_COUNTS=1` prints the batch's
//! steps, rows advanced and prompt tokens served from its prefix cache to stderr.
//!
//! `MODEL=qwen` decodes a randomly initialised Qwen2 in Hugging Face layout that the bench
//! writes itself (f32, byte-level vocabulary) instead: by default Qwen2.5-0.5B's layer shape
//! (hidden 896, 14 query heads over 2 kv heads of 64, MLP 4864) with `QWEN_LAYERS` (4) of its
//! 24 layers; `QWEN_LAYERS=24` is the whole 0.5B stack.

use std::time::Instant;

use wrl_trainer::decode::{Batcher, weights_for};
use wrl_trainer::hf::Arch;
use wrl_trainer::hf::tiny::{TinySpec, TokenizerSource, write};
use wrl_trainer::rng::{mix, rng_from_seed};
use wrl_trainer::sample::sample_candle;
use wrl_trainer::{
    DeviceChoice, OptimConfig, PolicyConfig, Positions, PretrainedSource, SampleParams, TinyConfig,
    Trainer, TrainerConfig,
};

/// The 1-minute load average, as the table prints it beside each figure.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let levels: Vec<usize> = args
        .first()
        .map_or("1,4,16", String::as_str)
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let episodes: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(32);
    let prompt_bytes: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(400);
    let max_tokens: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(48);
    let only = args.get(4).map(String::as_str);
    // The Qwen checkpoint's directory lives as long as the run.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let policy = match std::env::var("MODEL").as_deref() {
        Ok("qwen") => qwen_policy(dir.path()),
        Ok("tiny") | Err(_) => PolicyConfig::Tiny(TinyConfig {
            layers: 2,
            d_model: 128,
            heads: 4,
            context: 1024,
            positions: Positions::Alibi,
            copy: true,
            ..TinyConfig::default()
        }),
        Ok(other) => panic!("MODEL={other}: tiny or qwen"),
    };
    let trainer = Trainer::new(TrainerConfig {
        policy,
        optim: OptimConfig::default(),
        seed: 0,
        device: DeviceChoice::Cpu,
    })
    .expect("the tiny policy");
    let text =
        "[1] link \"Blue mug\" [2] button \"Add to cart\" [3] textbox \"Search\" url: /shop ";
    // `GROUP` episodes in a row share their task (a GRPO group starts from one page).
    let group: usize =
        std::env::var("GROUP").ok().and_then(|s| s.parse().ok()).filter(|&g| g > 0).unwrap_or(1);
    let prompts: Vec<Vec<u32>> = (0..episodes)
        .map(|i| {
            let task = i / group;
            let s: String =
                format!("task {task}: {text}").chars().cycle().take(prompt_bytes).collect();
            s.bytes().map(u32::from).collect()
        })
        .collect();
    // The policy is untrained, so turns rarely end early; the table counts the tokens made.
    let params = SampleParams { max_tokens, temperature: 0.7, ..SampleParams::default() };
    // Each figure is the best of `ROUNDS` runs, the decoders taking turns (a run lasts about a
    // second, so one run's figure swings with whatever else the machine does for a moment).
    let rounds: usize =
        std::env::var("ROUNDS").ok().and_then(|s| s.parse().ok()).filter(|&r| r > 0).unwrap_or(3);
    let header =
        "| concurrent | decoder | episodes | best s | median s | episodes/s | decode tokens/s |";
    println!("{header} load |");
    println!("|---:|---|---:|---:|---:|---:|---:|---:|");
    let mut last = (0.0, 0.0);
    for &c in &levels {
        // Per decoder: each run's seconds, and the tokens it made (the same every run).
        let mut runs: [(Vec<f64>, usize); 2] = Default::default();
        for _ in 0..rounds {
            for (d, (times, made)) in runs.iter_mut().enumerate() {
                if only.is_some_and(|o| o != ["alone", "batched"][d]) {
                    continue;
                }
                let weights = weights_for(trainer.model()).expect("weights").expect("batched");
                let batcher = Batcher::new(weights, trainer.tokenizer().clone());
                let t0 = Instant::now();
                *made = run(c, &prompts, &params, &trainer, (d == 1).then_some(&batcher));
                times.push(t0.elapsed().as_secs_f64());
                if std::env::var_os("ROLLOUT_COUNTS").is_some() && d == 1 {
                    let (steps, rows, reused) = batcher.counts();
                    eprintln!("batched: {steps} steps, {rows} rows, {reused} prompt tokens reused");
                }
            }
        }
        let mut rates = [0.0f64; 2];
        for (d, (times, made)) in runs.iter_mut().enumerate() {
            if times.is_empty() {
                continue;
            }
            times.sort_by(f64::total_cmp);
            let (best, median) = (times[0], times[times.len() / 2]);
            rates[d] = *made as f64 / best;
            let name = if d == 0 { "alone (candle)" } else { "batched" };
            println!(
                "| {c} | {name} | {episodes} | {best:.2} | {median:.2} | {:.1} | {:.0} | {} |",
                episodes as f64 / best,
                rates[d],
                load()
            );
        }
        last = (rates[0], rates[1]);
    }
    println!("speedup: {:.2}", last.1 / last.0.max(f64::MIN_POSITIVE));
}

/// The turns decoded by `c` threads, each taking every `c`-th prompt in turn from its own
/// seeded stream, alone on candle's ops or through `batcher`; returns the tokens made.
fn run(
    c: usize,
    prompts: &[Vec<u32>],
    params: &SampleParams,
    trainer: &Trainer,
    batcher: Option<&Batcher>,
) -> usize {
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..c)
            .map(|thread| {
                let (model, tokenizer) = (trainer.model(), trainer.tokenizer());
                s.spawn(move || {
                    let mut n = 0;
                    for i in (thread..prompts.len()).step_by(c) {
                        let mut rng = rng_from_seed(mix(0, i as u64));
                        let one = std::slice::from_ref(&prompts[i]);
                        let out = match batcher {
                            None => {
                                sample_candle(model, tokenizer, one, params, &mut rng, &mut |_| {})
                            }
                            Some(b) => b.sample(one, params, &mut rng),
                        };
                        n += out.expect("sample").iter().map(|o| o.tokens.len()).sum::<usize>();
                    }
                    n
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("thread")).sum()
    })
}

/// A random Qwen2 with Qwen2.5-0.5B's layer shape and `QWEN_LAYERS` (4) layers, written to
/// `dir` in Hugging Face layout with a byte-level tokenizer (no merges: a byte is a token).
fn qwen_policy(dir: &std::path::Path) -> PolicyConfig {
    let layers = std::env::var("QWEN_LAYERS").ok().and_then(|s| s.parse().ok()).filter(|&l| l > 0);
    let spec = TinySpec {
        arch: Arch::Qwen2,
        hidden: 896,
        intermediate: 4864,
        layers: layers.unwrap_or(4),
        heads: 14,
        kv_heads: 2,
        head_dim: 64,
        context: 4096,
        tie: true,
        seed: 0,
    };
    let tokenizer = TokenizerSource::Generated { corpus: Vec::new(), merges: 0 };
    write(dir, &spec, &tokenizer).expect("the random Qwen checkpoint");
    PolicyConfig::Qwen2(PretrainedSource::new(dir))
}
