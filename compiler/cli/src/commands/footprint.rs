//! The models part of `wrlc estimate` as text: each trained model's parameter count by part and
//! the memory each stage that trains it holds, per dtype, as `wrl_exec::preflight::footprint`
//! finds them (the preflight holds the same figures against the machine's memory).

use std::fmt::Write as _;

use wrl_exec::preflight::footprint::bytes;
use wrl_plan::estimate::group_digits;
use wrl_trainer::footprint::DTYPES;

pub use wrl_exec::preflight::fit::{Device, StageFit as Fit, fit, parse_device};
pub use wrl_exec::preflight::footprint::{ModelFootprint, models};

/// The models part as text, appended to the estimate's.
pub fn render_text(models: &[ModelFootprint]) -> String {
    let mut s = String::new();
    if models.is_empty() {
        return s;
    }
    let _ = writeln!(s, "\nmodels (parameters; training memory per forward batch, by dtype)");
    for m in models {
        let recompute = if m.gradient_checkpointing { ", layers recomputed" } else { "" };
        let _ = writeln!(
            s,
            "\n{} ({}), trained in {}{recompute}, on {}",
            m.id, m.ctor, m.dtype, m.device
        );
        let Some(shape) = &m.shape else {
            let _ = writeln!(s, "  parameters  {}", m.source);
            continue;
        };
        let p = &shape.params;
        let head =
            if shape.tied { "tied to the embeddings".to_string() } else { group_digits(p.lm_head) };
        let tower = match p.vision {
            0 => String::new(),
            n => format!(", vision tower {} (frozen)", group_digits(n)),
        };
        let _ = writeln!(
            s,
            "  parameters  {} (embeddings {}, blocks {}, lm_head {head}{tower}; from {})",
            group_digits(p.total),
            group_digits(p.embeddings),
            group_digits(p.blocks),
            if m.source == "recipe" { "the recipe" } else { m.source.as_str() }
        );
        for st in &m.stages {
            let adapters = if st.adapter_parameters > 0 { " (LoRA adapters)" } else { "" };
            let _ = writeln!(
                s,
                "  {}: {} × {} tokens per forward, {} parameters trained{adapters}",
                st.id,
                group_digits(st.sequences),
                group_digits(st.length),
                group_digits(st.trained_parameters)
            );
            if let Some(r) = &st.rollout {
                let how = if r.on_cpu {
                    "on the CPU: the batched decoder in f32, candle's path in bf16/f16"
                } else {
                    "candle's path, caches in the dtype"
                };
                let _ = writeln!(
                    s,
                    "    rollouts: {} episodes at once of up to {} tokens ({how})",
                    group_digits(r.sequences),
                    group_digits(r.length)
                );
            }
            let _ = writeln!(
                s,
                "    {:<6} {:>10} {:>10} {:>10} {:>10} {:>11} {:>10} {:>10} {:>10}",
                "dtype",
                "weights",
                "reference",
                "gradients",
                "optimizer",
                "activations",
                "decoder",
                "kv cache",
                "peak"
            );
            for (name, _) in DTYPES {
                let Some(b) = st.memory.get(name) else { continue };
                let mark = if name == m.dtype { "*" } else { " " };
                let _ = writeln!(
                    s,
                    "    {name:<5}{mark} {:>10} {:>10} {:>10} {:>10} {:>11} {:>10} {:>10} {:>10}",
                    bytes(b.weights),
                    bytes(b.reference),
                    bytes(b.gradients),
                    bytes(b.optimizer),
                    bytes(b.activations),
                    bytes(b.decoder),
                    bytes(b.kv_cache),
                    bytes(b.total)
                );
            }
        }
    }
    s.push_str(
        "\n  * the recipe's dtype; weights: f32 masters (and in bf16/f16 their cast copy); \
         gradients: f32;\n    optimizer: AdamW's two f32 moments per trained parameter;\n",
    );
    s.push_str("    activations: what one forward keeps for its backward (an estimate, docs/plan-format.md);\n");
    s.push_str(
        "    decoder: the CPU decoder's f32 copy of the weights; kv cache: a rollout's keys and values;\n    \
         peak: weights + reference + optimizer + decoder + the larger of (gradients + activations) and kv cache\n",
    );
    s
}

/// The fit table of `wrlc estimate --device`: each stage's peak against the device, and for
/// one that does not fit, what would.
pub fn render_fit(fits: &[Fit], device: &Device) -> String {
    let mut s = format!("\nfit on {} ({})\n", device.name, bytes(device.bytes));
    if fits.is_empty() {
        s.push_str("  no trained model whose sizes are known\n");
        return s;
    }
    for f in fits {
        let pct = f.need as f64 / f.have.max(1) as f64 * 100.0;
        let verdict = if f.fits { "fits" } else { "does not fit" };
        let _ = writeln!(
            s,
            "  {} {} ({}): {} of {} ({pct:.0} %), {verdict}",
            f.model,
            f.stage,
            f.dtype,
            bytes(f.need),
            bytes(f.have)
        );
        if f.fits {
            continue;
        }
        match &f.way_out {
            Some(w) => {
                let _ =
                    writeln!(s, "    fits with {} ({})", w.changes.join(" and "), bytes(w.need));
            }
            None => {
                s.push_str("    nothing tried makes it fit (recomputation, bf16, LoRA, one sequence per forward, one episode at a time): a larger device, or a smaller model\n");
            }
        }
    }
    s
}
