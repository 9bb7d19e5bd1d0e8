//! Rollout decoding throughput of the embedded policy (`std::models::tiny`: 2 layers, d 128,
//! ALiBi, copy head), as the executor decodes today: each episode's turn on its own forked
//! `Sampler`, concurrent episodes on their own threads. Prints episodes/s and decode tokens/s
//! at each concurrency.
//!
//! Usage: rollout_bench [CONCURRENCY,…] [EPISODES] [PROMPT_BYTES] [MAX_TOKENS]

use std::time::Instant;

use wrl_trainer::{
    DeviceChoice, OptimConfig, PolicyConfig, Positions, SampleParams, TinyConfig, Trainer,
    TrainerConfig,
};

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
    println!("| concurrent | episodes | seconds | episodes/s | decode tokens/s |");
    println!("|---:|---:|---:|---:|---:|");
    for &c in &levels {
        let samplers: Vec<_> = (0..episodes).map(|i| trainer.sampler_for(i as u64)).collect();
        let t0 = Instant::now();
        let tokens: usize = std::thread::scope(|s| {
            let chunks: Vec<Vec<(usize, wrl_trainer::Sampler)>> = {
                let mut v: Vec<Vec<_>> = (0..c).map(|_| Vec::new()).collect();
                for (i, sm) in samplers.into_iter().enumerate() {
                    v[i % c].push((i, sm));
                }
                v
            };
            let handles: Vec<_> = chunks
                .into_iter()
                .map(|chunk| {
                    let prompts = &prompts;
                    let params = &params;
                    s.spawn(move || {
                        let mut n = 0;
                        for (i, mut sm) in chunk {
                            let out = sm
                                .sample(std::slice::from_ref(&prompts[i]), params)
                                .expect("sample");
                            n += out.iter().map(|o| o.tokens.len()).sum::<usize>();
                        }
                        n
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("thread")).sum()
        });
        let dt = t0.elapsed().as_secs_f64();
        println!(
            "| {c} | {episodes} | {dt:.2} | {:.1} | {:.0} |",
            episodes as f64 / dt,
            tokens as f64 / dt
        );
    }
}
