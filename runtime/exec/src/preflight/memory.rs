//! A run the machine cannot hold is refused before it starts: a `tiny_transformer { layers = 48,
//! d_model = 4096, context = 65536 tokens }` passed the preflight ("ready to run") while `wrlc
//! estimate` said 24.7 TiB, then aborted on allocation. The training memory the estimate
//! figures for each stage (`footprint`, in the model's own dtype) is held against this
//! machine's memory (`MemTotal`) for every model that trains on the CPU, and a stage whose
//! weights, gradients and optimiser state alone need more is refused (E0505) with the figures
//! and the way out `fit.rs` finds. A model on a GPU is not held against it here:
//! this build cannot ask a GPU for its memory before it opens it.

use wrl_plan::params::{Params, TypedPlan};

use super::footprint::{self, bytes};
use crate::error::{Fault, RunError};

/// The stages whose training memory is more than the machine's, when it can be read.
pub(super) fn refusals(typed: &TypedPlan<'_>) -> Vec<RunError> {
    match super::fit::machine_memory() {
        Some(total) => refusals_within(typed, total),
        None => Vec::new(),
    }
}

/// The stages whose training memory is more than `total` bytes.
pub(crate) fn refusals_within(typed: &TypedPlan<'_>, total: u64) -> Vec<RunError> {
    let mut errs = Vec::new();
    for m in footprint::models(typed.plan) {
        let on_cpu = match typed.get(&m.id) {
            Some(Params::Model(model)) => footprint::on_cpu(model),
            _ => false,
        };
        if !on_cpu {
            continue;
        }
        for st in &m.stages {
            let Some(b) = st.memory.get(&m.dtype) else { continue };
            // What the stage holds whatever its sequences: a certain failure when it is more
            // than the machine. The activations are at the stage's longest sequences (its
            // `max_length`, the episode's bound), an upper bound its data may never reach, so
            // a total over the machine alone is not refused: `wrlc estimate --device cpu` says
            // it, and the report shows the measured peak beside it.
            let fixed = [b.weights, b.reference, b.gradients, b.optimizer, b.decoder]
                .iter()
                .fold(0u64, |a, x| a.saturating_add(*x));
            let need = b.total;
            if fixed <= total {
                continue;
            }
            let mut e = RunError::new(
                Fault::Model,
                format!(
                    "stage `{}` needs at least {} to train `{}` in {} before any activation \
                     (weights, gradients, optimizer state), an estimated {} at its longest \
                     sequences (`wrlc estimate` shows the parts), but this machine has {} of memory",
                    st.id,
                    bytes(fixed),
                    m.id.trim_start_matches("model:"),
                    m.dtype,
                    bytes(need),
                    bytes(total)
                ),
            )
            .help(match m.shape.as_ref().and_then(|s| super::fit::way_out(s, &m, st, total)) {
                Some(w) => format!(
                    "with {} it needs an estimated {}; or run on a machine with more memory \
                     (`wrlc estimate --device` says what fits where)",
                    w.changes.join(" and "),
                    bytes(w.need)
                ),
                None => "make the model smaller (`layers`, `d_model`) or its sequences shorter \
                         (`context`, the stage's `max_length`), or run on a machine with more \
                         memory (`wrlc estimate --device` says what fits where)"
                    .to_string(),
            });
            if let Some(n) = typed.plan.node(&m.id) {
                e = e.at(n, None, format!("{} to train", bytes(need)));
            }
            errs.push(e);
        }
    }
    errs
}
