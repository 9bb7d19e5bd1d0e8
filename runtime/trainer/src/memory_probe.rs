//! What holds the memory plan (`footprint.rs`) to the trainer: one SFT step of a random Qwen3
//! on the CPU, its measured resident peak beside the estimate for the same step. Run in a
//! process of its own (`examples/memory_fit.rs`, and `tests/all/memory_plan.rs`, which runs
//! itself again for each shape), since a resident peak is the whole process's.

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::footprint::{Shape, Step};
use crate::hf::tiny::{self, TinySpec, TokenizerSource};
use crate::precision::Precision;
use crate::{
    DeviceChoice, Example, OptimConfig, PolicyConfig, PretrainedSource, Trainer, TrainerConfig,
};

/// A step to measure: the model's width and depth, the forward batch, recomputation, dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
    pub hidden: usize,
    pub layers: usize,
    pub sequences: usize,
    pub length: usize,
    pub recompute: bool,
    pub bf16: bool,
}

/// A probe's result, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Measured {
    #[serde(flatten)]
    pub probe: Probe,
    /// Resident before the model was built (the binary, its libraries, its threads).
    pub baseline: u64,
    /// The second step's resident peak, less the baseline.
    pub measured: u64,
    /// `footprint.rs`'s peak for the step.
    pub estimate: u64,
}

fn resident() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Writes a random Qwen3 of the probe's shape in `dir`, runs two SFT steps of `sequences`
/// sequences of `length` tokens, all trained, and measures the second (the optimiser's
/// moments exist by then, as in every step after a run's first).
pub fn measure(p: Probe, dir: &std::path::Path) -> Result<Measured> {
    let baseline = resident();
    let heads = (p.hidden / 32).max(2);
    let spec = TinySpec {
        hidden: p.hidden,
        intermediate: 3 * p.hidden,
        layers: p.layers,
        heads,
        kv_heads: (heads / 2).max(1),
        head_dim: 32,
        ..TinySpec::default()
    };
    let corpus = vec!["click the blue button and answer the price".to_string()];
    tiny::write(dir, &spec, &TokenizerSource::Generated { corpus, merges: 16 })?;
    let text = std::fs::read_to_string(dir.join("config.json"))?;
    let shape = Shape::of_qwen(&crate::hf::QwenConfig::parse(&text)?);
    let dtype = if p.bf16 { Precision::Bf16 } else { Precision::F32 };
    let src = PretrainedSource {
        dtype,
        gradient_checkpointing: p.recompute,
        ..PretrainedSource::new(dir)
    };
    let mut t = Trainer::new(TrainerConfig {
        policy: PolicyConfig::Qwen3(src),
        optim: OptimConfig::default(),
        seed: 0,
        device: DeviceChoice::Cpu,
    })?;
    let vocab = shape.vocab.max(1) as usize;
    let examples: Vec<Example> = (0..p.sequences)
        .map(|s| {
            let tokens = (0..p.length).map(|j| ((j * 7 + s * 13) % vocab) as u32).collect();
            let mut weights = vec![1.0; p.length];
            if let Some(w) = weights.first_mut() {
                *w = 0.0;
            }
            Example::new(tokens, weights)
        })
        .collect();
    let pairs: Vec<(&Example, f32)> = examples.iter().map(|e| (e, 1.0)).collect();
    t.sft_step_on(&pairs, p.sequences)?;
    let m = t.sft_step_on(&pairs, p.sequences)?;
    let step = Step {
        sequences: p.sequences as u64,
        length: p.length as u64,
        trainable: shape.params.total,
        reference: false,
        checkpointing: p.recompute,
        lora: None,
        rollout: None,
    };
    let width = if p.bf16 { 2 } else { 4 };
    Ok(Measured {
        probe: p,
        baseline,
        measured: m.memory.host_peak_bytes.unwrap_or(0).saturating_sub(baseline),
        estimate: shape.memory(width, &step).total,
    })
}
