//! The device check of `bench/gpu.sh` (not `cargo test`): a randomly initialised Qwen2 of a
//! given shape, written here in Hugging Face layout (no network), trained and sampled through
//! the real `Trainer` on the chosen device. It measures SFT tokens/s and MFU at several sequence
//! lengths, one GRPO update over a group of prompt + completion samples, and sampling tokens/s.
//! It prints a Markdown table, the peak resident memory of the process (the GPU's own memory is
//! read by the script from `nvidia-smi`), and, last, `mfu: X.XX` (the best SFT row).
//!
//! Usage: gpu_bench SHAPE DEVICE [SEQS] [STEPS] [PEAK_TFLOPS] [DTYPE] [CHECKPOINTING]
//!   SHAPE        qwen2-0.5b (Qwen2-0.5B's layers, widths and heads) | narrow (a CPU smoke shape)
//!   DEVICE       auto | cpu | cuda:N
//!   SEQS         comma-separated sequence lengths (default 512,1024,2048)
//!   STEPS        timed steps per length, after one warm-up step (default 3)
//!   PEAK_TFLOPS  the device's dense peak the MFU divides by (default 989: an H100/H200 in bf16)
//!   DTYPE        bf16 (default) | f16 | f32: the compute dtype, over f32 master weights
//!   CHECKPOINTING on (default) | off: recompute each layer in the backward pass
//!
//! Each row's memory is the trainer's own measurement of that step (`Metrics`): the GPU's
//! memory in use after it, or on the CPU the process's peak resident memory during it. MFU
//! counts the model's FLOPs only, not those of recomputed layers.
//!
//! FLOPs per trained token are 6·N + 12·L·d·T (PaLM's appendix B: the weights' matmuls forward
//! and backward, plus attention over T positions), N the parameter count, L layers, d width.
//! The vocabulary is the generated tokenizer's (a few hundred tokens, not Qwen's 151,936), so N
//! counts the layers almost alone; the table prints N.

use std::path::Path;
use std::time::Instant;

use wrl_trainer::hf::Arch;
use wrl_trainer::hf::tiny::{self, TinySpec, TokenizerSource};
use wrl_trainer::precision::Precision;
use wrl_trainer::{
    DeviceChoice, Example, OptimConfig, PolicyConfig, PretrainedSource, RlConfig, Sample,
    SampleParams, Trainer, TrainerConfig,
};

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("gpu_bench: {msg}");
    std::process::exit(1);
}

fn spec(shape: &str) -> TinySpec {
    match shape {
        // Qwen2-0.5B's config.json: 24 layers, hidden 896, MLP 4864, 14 query heads of 64
        // sharing 2 key/value heads, tied embeddings.
        "qwen2-0.5b" => TinySpec {
            arch: Arch::Qwen2,
            hidden: 896,
            intermediate: 4864,
            layers: 24,
            heads: 14,
            kv_heads: 2,
            head_dim: 64,
            context: 32768,
            tie: true,
            seed: 0,
        },
        "narrow" => TinySpec { arch: Arch::Qwen2, ..TinySpec::narrow() },
        other => fail(format!("unknown shape `{other}` (qwen2-0.5b or narrow)")),
    }
}

fn device(s: &str) -> DeviceChoice {
    match s {
        "auto" => DeviceChoice::Auto,
        "cpu" => DeviceChoice::Cpu,
        _ => match s.strip_prefix("cuda:").and_then(|n| n.parse().ok()) {
            Some(n) => DeviceChoice::Cuda(n),
            None => fail(format!("unknown device `{s}` (auto, cpu or cuda:N)")),
        },
    }
}

/// A step's measured memory: the GPU's in use after it, else the process's peak during it.
fn memory(m: &wrl_trainer::Metrics) -> String {
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    match (m.memory.device_bytes, m.memory.host_peak_bytes) {
        (Some(d), _) => format!("{:.0} MiB GPU", mib(d)),
        (None, Some(h)) => format!("{:.0} MiB peak RSS", mib(h)),
        (None, None) => "—".to_string(),
    }
}

/// The process's peak resident memory in MiB (`VmHWM`), where the kernel reports it.
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// Deterministic token ids below `vocab` (no data file: the weights are random anyway).
fn tokens(n: usize, vocab: usize, salt: usize) -> Vec<u32> {
    (0..n).map(|i| ((i * 7919 + salt * 104_729) % (vocab - 1) + 1) as u32).collect()
}

fn best_and_median(mut times: Vec<f64>) -> (f64, f64) {
    times.sort_by(f64::total_cmp);
    (times[0], times[times.len() / 2])
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let shape = args.first().map_or("qwen2-0.5b", String::as_str);
    let dev = device(args.get(1).map_or("auto", String::as_str));
    let seqs: Vec<usize> = args
        .get(2)
        .map_or("512,1024,2048", String::as_str)
        .split(',')
        .map(|s| s.trim().parse().unwrap_or_else(|_| fail(format!("not a length: `{s}`"))))
        .collect();
    let steps: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(3).max(1);
    let peak: f64 = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(989.0) * 1e12;
    let dtype = match args.get(5).map_or("bf16", String::as_str) {
        "bf16" => Precision::Bf16,
        "f16" => Precision::F16,
        "f32" => Precision::F32,
        other => fail(format!("DTYPE is bf16, f16 or f32, not `{other}`")),
    };
    let checkpointing = match args.get(6).map_or("on", String::as_str) {
        "on" => true,
        "off" => false,
        other => fail(format!("CHECKPOINTING is on or off, not `{other}`")),
    };

    let spec = spec(shape);
    let dir = tempfile_dir();
    let corpus = vec!["the quick brown fox jumps over the lazy dog".to_string(); 4];
    let vocab = tiny::write(&dir, &spec, &TokenizerSource::Generated { corpus, merges: 200 })
        .unwrap_or_else(|e| fail(e));
    let mut trainer = Trainer::new(TrainerConfig {
        policy: PolicyConfig::Qwen2(PretrainedSource {
            dtype,
            gradient_checkpointing: checkpointing,
            ..PretrainedSource::new(&dir)
        }),
        optim: OptimConfig { lr: 1e-5, ..OptimConfig::default() },
        seed: 0,
        device: dev,
    })
    .unwrap_or_else(|e| fail(e));
    let n_params = trainer.model().params().num_elements() as f64;
    let (layers, width) = (spec.layers as f64, spec.hidden as f64);
    println!(
        "gpu_bench: shape {shape}, {:.2} M parameters (vocabulary {vocab}), device {dev:?}, {}, checkpointing {}, peak {:.1} TFLOP/s",
        n_params / 1e6,
        dtype.name(),
        if checkpointing { "on" } else { "off" },
        peak / 1e12
    );
    println!();
    println!("| measure | length | batch | best | median | tokens/s (best) | MFU | memory |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut best_mfu: f64 = 0.0;
    for &t in &seqs {
        // One sequence of t + 1 tokens per step, every position trained.
        let batch = 1;
        let exs: Vec<Example> = (0..batch)
            .map(|b| {
                let mut weights = vec![1.0; t + 1];
                weights[0] = 0.0;
                Example::new(tokens(t + 1, vocab, b), weights)
            })
            .collect();
        let pairs: Vec<(&Example, f32)> = exs.iter().map(|e| (e, 1.0)).collect();
        let mut times = Vec::new();
        let mut held = String::new();
        for s in 0..=steps {
            let t0 = Instant::now();
            let m = trainer
                .sft_step_on(&pairs, batch)
                .unwrap_or_else(|e| fail(format!("SFT at {t}: {e}")));
            if s > 0 {
                times.push(t0.elapsed().as_secs_f64());
            }
            held = memory(&m);
        }
        let (best, median) = best_and_median(times);
        let toks = (batch * t) as f64;
        let flops = toks * (6.0 * n_params + 12.0 * layers * width * t as f64);
        let mfu = flops / best / peak;
        best_mfu = best_mfu.max(mfu);
        println!(
            "| SFT step | {t} | {batch} | {:.1} ms | {:.1} ms | {:.0} | {mfu:.3} | {held} |",
            best * 1e3,
            median * 1e3,
            toks / best
        );
    }

    // One GRPO update: a group of 8 samples of a 256-token prompt and a 256-token completion.
    let (p, c, group) = (256, 256, 8);
    let samples: Vec<Sample> = (0..group)
        .map(|i| Sample {
            prompt_tokens: tokens(p, vocab, 1),
            completion_tokens: tokens(c, vocab, 2 + i),
            old_logprobs: vec![-(vocab as f32).ln(); c],
            completion_mask: None,
            reward: if i % 2 == 0 { 1.0 } else { 0.0 },
            advantage: None,
            group_id: 0,
            trajectory_id: i as u64,
            excluded: false,
            truncated: false,
            step: None,
            images: Vec::new(),
        })
        .collect();
    let cfg = RlConfig::default();
    let mut times = Vec::new();
    let mut held = String::new();
    for s in 0..=steps.min(2) {
        let t0 = Instant::now();
        let m =
            trainer.rl_update(&samples, &cfg).unwrap_or_else(|e| fail(format!("GRPO update: {e}")));
        if s > 0 {
            times.push(t0.elapsed().as_secs_f64());
        }
        held = memory(&m);
    }
    let (best, median) = best_and_median(times);
    let toks = (group * (p + c)) as f64;
    println!(
        "| GRPO update | {} | {group} | {:.1} ms | {:.1} ms | {:.0} | — | {held} |",
        p + c,
        best * 1e3,
        median * 1e3,
        toks / best
    );

    // Sampling: 8 prompts of 128 tokens, 128 new tokens each, one episode after another.
    let prompts: Vec<Vec<u32>> = (0..8).map(|i| tokens(128, vocab, 10 + i)).collect();
    let params = SampleParams { max_tokens: 128, temperature: 1.0, ..SampleParams::default() };
    let t0 = Instant::now();
    let out = trainer.sample(&prompts, &params).unwrap_or_else(|e| fail(format!("sampling: {e}")));
    let dt = t0.elapsed().as_secs_f64();
    let made: usize = out.iter().map(|c| c.tokens.len()).sum();
    println!(
        "| sampling | 128 + 128 | 8 | {:.1} ms | — | {:.0} | — | — |",
        dt * 1e3,
        made as f64 / dt
    );
    println!();
    match peak_rss_mib() {
        Some(m) => println!("peak resident memory of the process: {m:.0} MiB"),
        None => println!("peak resident memory of the process: not reported here"),
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!("mfu: {best_mfu:.2}");
}

/// A fresh directory for the model under the system's temporary directory.
fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("wrl-gpu-bench-{}", std::process::id()));
    if Path::new(&dir).exists() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    dir
}
