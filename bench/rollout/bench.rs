//! Rollout decoding throughput of the embedded policy (`std::models::tiny`: 2 layers, d 128,
//! ALiBi, copy head) at 1, 4 and 16 concurrent episodes, two decoders side by side in one run:
//! each turn alone on candle's ops (`sample::sample_candle`, how every turn decoded before
//! batching) and the shared row-stable batch (`decode::Batcher`, how `wrlc run` decodes now).
//! Concurrent episodes are threads, each decoding its share of the turns one after another
//! from its own seeded stream. Prints a table and, last, `speedup: X.XX` (batched / alone at
//! the highest concurrency).
//!
//! Usage: rollout_bench [CONCURRENCY,…] [EPISODES] [PROMPT_BYTES] [MAX_TOKENS] [alone|batched]
//! (the last to run one decoder only, for a profile). `ROLLOUT_COUNTS=1` prints the batch's
//! forwards and rows to stderr.

use std::time::Instant;

use wrl_trainer::decode::{Batcher, TinyWeights};
use wrl_trainer::models::Model;
use wrl_trainer::rng::{mix, rng_from_seed};
use wrl_trainer::sample::sample_candle;
use wrl_trainer::{
    DeviceChoice, OptimConfig, PolicyConfig, Positions, SampleParams, TinyConfig, Trainer,
    TrainerConfig,
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
    let policy = PolicyConfig::Tiny(TinyConfig {
        layers: 2,
        d_model: 128,
        heads: 4,
        context: 1024,
        positions: Positions::Alibi,
        copy: true,
        ..TinyConfig::default()
    });
    let trainer = Trainer::new(TrainerConfig {
        policy,
        optim: OptimConfig::default(),
        seed: 0,
        device: DeviceChoice::Cpu,
    })
    .expect("the tiny policy");
    let Model::Tiny(tiny) = trainer.model() else { unreachable!("a tiny policy") };
    let text =
        "[1] link \"Blue mug\" [2] button \"Add to cart\" [3] textbox \"Search\" url: /shop ";
    let prompts: Vec<Vec<u32>> = (0..episodes)
        .map(|i| {
            let s: String =
                format!("task {i}: {text}").chars().cycle().take(prompt_bytes).collect();
            s.bytes().map(u32::from).collect()
        })
        .collect();
    // The policy is untrained, so turns rarely end early; the table counts the tokens made.
    let params = SampleParams { max_tokens, temperature: 0.7, ..SampleParams::default() };
    println!("| concurrent | decoder | episodes | seconds | episodes/s | decode tokens/s | load |");
    println!("|---:|---|---:|---:|---:|---:|---:|");
    let mut last = (0.0, 0.0);
    for &c in &levels {
        let mut rates = [0.0f64; 2];
        for (d, rate) in rates.iter_mut().enumerate() {
            if only.is_some_and(|o| o != ["alone", "batched"][d]) {
                continue;
            }
            let batcher =
                Batcher::new(TinyWeights::new(tiny).expect("weights"), trainer.tokenizer().clone());
            let t0 = Instant::now();
            let tokens: usize = std::thread::scope(|s| {
                let handles: Vec<_> = (0..c)
                    .map(|thread| {
                        let (prompts, params, batcher, model) =
                            (&prompts, &params, &batcher, trainer.model());
                        let tokenizer = trainer.tokenizer();
                        s.spawn(move || {
                            let mut n = 0;
                            for i in (thread..prompts.len()).step_by(c) {
                                let mut rng = rng_from_seed(mix(0, i as u64));
                                let one = std::slice::from_ref(&prompts[i]);
                                let out = if d == 0 {
                                    sample_candle(
                                        model,
                                        tokenizer,
                                        one,
                                        params,
                                        &mut rng,
                                        &mut |_| {},
                                    )
                                } else {
                                    batcher.sample(one, params, &mut rng)
                                };
                                n += out
                                    .expect("sample")
                                    .iter()
                                    .map(|o| o.tokens.len())
                                    .sum::<usize>();
                            }
                            n
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().expect("thread")).sum()
            });
            let dt = t0.elapsed().as_secs_f64();
            *rate = tokens as f64 / dt;
            if std::env::var_os("ROLLOUT_COUNTS").is_some() {
                let (steps, rows) = batcher.counts();
                eprintln!("batched: {steps} steps, {rows} rows");
            }
            let name = if d == 0 { "alone (candle)" } else { "batched" };
            println!(
                "| {c} | {name} | {episodes} | {dt:.2} | {:.1} | {:.0} | {} |",
                episodes as f64 / dt,
                *rate,
                load()
            );
        }
        last = (rates[0], rates[1]);
    }
    println!("speedup: {:.2}", last.1 / last.0.max(f64::MIN_POSITIVE));
}
