//! The memory each training stage measured beside what `wrlc estimate` said it would need (the
//! memory plan, `preflight/footprint.rs`): the report's check of the plan on the run's own
//! machine. Measured: the highest resident peak of the stage's steps (the whole process's,
//! with what the binary and its threads hold) and the GPU memory in use after them.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use wrl_plan::Plan;

use crate::preflight::footprint::{self, bytes};
use crate::rundir::records::MetricLine;
use wrl_sandbox::html::esc;

/// One trained stage's row.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryRow {
    /// The stage's node (`stage:warmup`, `stage:online/phase:1`).
    pub stage: String,
    pub host_peak: Option<u64>,
    pub device: Option<u64>,
    /// The estimate's peak in the model's dtype, and the dtype; `None` where the model's sizes
    /// are unknown here (its `config.json` not on this machine).
    pub estimate: Option<(u64, String)>,
}

/// A row per stage that logged a training step, in the order the stages first logged.
pub fn rows(plan: &Plan, metrics: &[MetricLine]) -> Vec<MemoryRow> {
    let mut estimates: BTreeMap<String, (u64, String)> = BTreeMap::new();
    for m in footprint::models(plan) {
        for st in &m.stages {
            if let Some(b) = st.memory.get(&m.dtype) {
                estimates.insert(st.id.clone(), (b.total, m.dtype.clone()));
            }
        }
    }
    let mut out: Vec<MemoryRow> = Vec::new();
    for line in metrics {
        let (node, memory) = match line {
            MetricLine::Sft(s) => (&s.node, &s.memory),
            MetricLine::Rl(r) => (&r.node, &r.memory),
            MetricLine::Eval(_) => continue,
        };
        let i = match out.iter().position(|r| &r.stage == node) {
            Some(i) => i,
            None => {
                out.push(MemoryRow {
                    stage: node.clone(),
                    host_peak: None,
                    device: None,
                    estimate: estimates.get(node).cloned(),
                });
                out.len() - 1
            }
        };
        let row = &mut out[i];
        row.host_peak = row.host_peak.max(memory.host_peak_bytes);
        row.device = row.device.max(memory.device_bytes);
    }
    out
}

/// The section, when some stage trained.
pub fn render(h: &mut String, rows: &[MemoryRow]) {
    if rows.is_empty() {
        return;
    }
    h.push_str(
        "<section id=\"memory\"><h2>Memory per stage</h2><p class=\"muted\">The highest \
         resident peak of the stage's steps (the whole process) and the GPU memory in use, \
         beside <code>wrlc estimate</code>'s peak for the stage in the model's dtype \
         (docs/trainer.md, \"A memory plan\").</p><table><tr><th>stage</th><th>measured \
         peak</th><th>GPU in use</th><th>estimate</th><th>measured / estimate</th></tr>",
    );
    let show = |b: Option<u64>| b.map_or_else(|| "—".to_string(), bytes);
    for r in rows {
        let ratio = match (r.host_peak.max(r.device), &r.estimate) {
            (Some(m), Some((e, _))) if *e > 0 => format!("{:.2}", m as f64 / *e as f64),
            _ => "—".to_string(),
        };
        let estimate = match &r.estimate {
            Some((e, dtype)) => format!("{} ({dtype})", bytes(*e)),
            None => "unknown here".to_string(),
        };
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{ratio}</td></tr>",
            esc(&r.stage),
            show(r.host_peak),
            show(r.device),
            esc(&estimate)
        );
    }
    h.push_str("</table></section>");
}
