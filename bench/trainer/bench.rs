//! Trainer throughput benchmark (run by bench/trainer.sh, not by `cargo test`): train tokens/s
//! of the tiny policy through the real `Trainer::sft_step_on` path, full-sequence loss, with
//! the thread settings `wrlc` starts with (`wrl_trainer::threads`).
//!
//! Usage: trainer_bench LAYERS D_MODEL HEADS CONTEXT BATCH STEPS [DATA_FILE]
//! Prints one line: `rust layers=.. d=.. tok/s median=.. best=.. loss=..`.

use std::time::Instant;

use wrl_trainer::{
    DeviceChoice, Example, OpsMode, OptimConfig, PolicyConfig, Positions, TinyConfig, Trainer,
    TrainerConfig,
};

fn arg(args: &[String], i: usize, default: usize) -> usize {
    args.get(i).and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn main() -> wrl_trainer::Result<()> {
    // The thread settings wrlc applies at start-up, unless set in the environment.
    for (key, value) in wrl_trainer::threads::unset_defaults() {
        // SAFETY: first thing in main, before any other thread exists.
        #[allow(unsafe_code)]
        unsafe {
            std::env::set_var(key, value)
        };
    }
    let args: Vec<String> = std::env::args().collect();
    let (layers, d, heads, ctx, batch, steps) = (
        arg(&args, 1, 2),
        arg(&args, 2, 128),
        arg(&args, 3, 4),
        arg(&args, 4, 256),
        arg(&args, 5, 8),
        arg(&args, 6, 8),
    );
    let data = args
        .get(7)
        .and_then(|p| std::fs::read(p).ok())
        .unwrap_or_else(|| (0..200_000u32).map(|i| (i * 7919 % 251) as u8).collect());
    let ops = match std::env::var("WRL_OPS").as_deref() {
        Ok("reference") => OpsMode::Reference,
        _ => OpsMode::Auto,
    };
    let mut trainer = Trainer::new(TrainerConfig {
        policy: PolicyConfig::Tiny(TinyConfig {
            layers,
            d_model: d,
            heads,
            context: ctx,
            mlp_ratio: 4,
            // The PyTorch side learns absolute positions too.
            positions: Positions::Learned,
            copy: false,
            ops,
        }),
        optim: OptimConfig { lr: 1e-3, weight_decay: 0.01, ..OptimConfig::default() },
        seed: 0,
        device: DeviceChoice::Cpu,
    })?;
    // Each example is ctx + 1 bytes: ctx predicted tokens, all trained.
    let mut offset = 0usize;
    let mut next_batch = || -> Vec<Example> {
        (0..batch)
            .map(|_| {
                if offset + ctx + 1 > data.len() {
                    offset = 0;
                }
                let tokens: Vec<u32> =
                    data[offset..offset + ctx + 1].iter().map(|&b| b as u32).collect();
                offset += ctx + 1;
                let mut weights = vec![1.0; ctx + 1];
                weights[0] = 0.0;
                Example::new(tokens, weights)
            })
            .collect()
    };
    let warmup = 2;
    let mut times = Vec::new();
    let mut loss = 0.0;
    for s in 0..warmup + steps {
        let exs = next_batch();
        let pairs: Vec<(&Example, f32)> = exs.iter().map(|e| (e, 1.0)).collect();
        let t0 = Instant::now();
        let m = trainer.sft_step_on(&pairs, batch)?;
        let dt = t0.elapsed().as_secs_f64();
        loss = m.loss;
        if s >= warmup {
            times.push(dt);
        }
    }
    times.sort_by(f64::total_cmp);
    let toks = (batch * ctx) as f64;
    let median = toks / times[times.len() / 2];
    let best = toks / times[0];
    println!(
        "rust layers={layers} d={d} params={} tok/s median={median:.0} best={best:.0} loss={loss:.3}",
        trainer.model().params().num_elements()
    );
    Ok(())
}
