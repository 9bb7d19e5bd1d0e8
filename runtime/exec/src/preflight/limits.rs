//! Fields of the seed recipes' round 3 (#44) this runtime does not honour yet, each refused at
//! its field (E0502) rather than ignored: a ReAct agent's cut of tool responses and its
//! per-call timeout, a graph module's stop strings, tasks drawn shuffled, a dropped rest of the
//! mini-batches, and grounding pairs.

use wrl_plan::Node;
use wrl_plan::params::{self, Dataset, RecordKind};

use super::refuse::unsupported;
use crate::error::RunError;

/// A ReAct agent's `tool_response_chars` and `call_timeout`, a graph's modules' `stop`.
pub(super) fn agent(n: &Node, a: &params::Agent) -> Vec<RunError> {
    let mut errs = Vec::new();
    match a {
        params::Agent::React(r) => {
            if let params::OrUnlimited::Value(c) = r.tool_response_chars {
                errs.push(unsupported(
                    n,
                    format!(
                        "agent `{}`: cutting each tool response to {c} characters is not \
                         implemented: the prompt keeps each whole, within its `pages` window",
                        n.decl
                    ),
                    "set `tool_response_chars = unlimited` (a profile can)",
                    "tool_response_chars",
                ));
            }
            if let params::OrOff::Value(t) = r.call_timeout {
                errs.push(unsupported(
                    n,
                    format!(
                        "agent `{}`: a time limit of {} s on one policy call is not implemented: \
                         only the env's `timeout.task` ends a slow episode",
                        n.decl, t.0
                    ),
                    "set `call_timeout = off` (a profile can)",
                    "call_timeout",
                ));
            }
        }
        params::Agent::Graph(g) => {
            for (name, m) in g.modules.iter().filter(|(_, m)| !m.stop().is_empty()) {
                errs.push(unsupported(
                    n,
                    format!(
                        "agent `{}`: module `{name}` stops at {}, which is not implemented: a \
                         module's reply ends at its model's end of turn or its `max_response`",
                        n.decl,
                        m.stop().iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ")
                    ),
                    format!("set `{}.{name}.stop = []` (a profile can)", n.decl),
                    "modules",
                ));
            }
        }
    }
    errs
}

/// A dataset of grounding pairs (`kind = grounding`), which no stage of this runtime trains on.
pub(super) fn grounding(n: &Node, d: &Dataset) -> Option<RunError> {
    let kind = match d {
        Dataset::Jsonl(f) | Dataset::Parquet(f) => f.kind,
        Dataset::HfDataset(h) => h.kind,
        Dataset::Mixture(m) => m.kind,
        _ => return None,
    };
    (kind == RecordKind::Grounding).then(|| {
        unsupported(
            n,
            format!(
                "dataset `{}`: grounding pairs (`kind = grounding`) are not implemented: SFT \
                 trains on trajectories",
                n.decl
            ),
            "replace the dataset with trajectories (a profile can)",
            "kind",
        )
    })
}
