//! An SFT stage's `max_length` against what each example's prompt holds before any page: the
//! reply and the chat template with the agent's tool schemas, measured with the model's own
//! tokenizer (`Window::fit_with`, the rule `executor::sft` renders the examples by). A length
//! that leaves no room is E0515 at `max_length` before the run, not a stage of empty prompts.

use wrl_plan::Node;
use wrl_plan::params::{self, Dataset, Params, RecordKind, TypedPlan};
use wrl_trainer::hf::{self, RepoKind};

use crate::agent::AgentCfg;
use crate::error::{Fault, RunError};

/// E0515 when SFT stage `n`'s examples, written for its agent (`AgentCfg::for_sft`, as
/// `executor::sft` writes them), leave no room for a page. Only demonstrations' pages are fitted (a chat
/// conversation is rendered whole), only an `hf(…)` policy with a chat template has the
/// overhead, and a model whose files are not here is its own error (E0510).
pub(super) fn sft_room(plan: &TypedPlan<'_>, n: &Node, s: &params::Sft) -> Option<RunError> {
    if !pages(plan, s.data.id()) {
        return None;
    }
    let (_, h) = crate::executor::hf::trained_hf(plan, s.model.id())?;
    let agent = AgentCfg::for_sft(plan, s.model.id())?;
    let files = hf::resolve(&h.id, RepoKind::Model).and_then(|d| hf::inspect(&d)).ok()?;
    let tok = wrl_trainer::Tokenizer::from_model(&files, h.thinking).ok()?;
    tok.chat()?;
    let schemas = agent.hermes.as_ref().map_or(&[][..], |h| &h.schemas[..]);
    let length = (h.context.0 as usize).min(s.max_length.0 as usize);
    let room = agent.window.fit_with(&tok, length, agent.max_response, schemas).room;
    (room == 0).then(|| {
        RunError::new(
            Fault::HfSetting,
            format!(
                "stage `{}`: an example of {length} tokens leaves no room for a page: the \
                 reply's {} tokens and `{}`'s chat template with the tool set's {} schemas \
                 take all of it",
                n.decl,
                agent.max_response,
                h.id,
                schemas.len()
            ),
        )
        .help("raise `max_length` (and the model's `context`), or give the agent fewer tools")
        .at(n, Some("max_length"), "no room for a page")
    })
}

/// Whether dataset `id` (or a part of it) holds demonstrations, whose pages are fitted.
fn pages(plan: &TypedPlan<'_>, id: &str) -> bool {
    match plan.get(id) {
        Some(Params::Dataset(Dataset::SandboxDemos(_))) => true,
        Some(Params::Dataset(Dataset::Jsonl(f) | Dataset::Parquet(f))) => {
            f.kind == RecordKind::Trajectories
        }
        Some(Params::Dataset(Dataset::HfDataset(h))) => h.kind == RecordKind::Trajectories,
        Some(Params::Dataset(Dataset::Mixture(m))) => m.parts.iter().any(|p| pages(plan, p.id())),
        _ => false,
    }
}
