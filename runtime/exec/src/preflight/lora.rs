//! A stage's `lora` against the model it trains, before anything loads: adapters on an `hf(…)`
//! policy only, targets the model's layers have and ranks within them (E0525, from its
//! `config.json`), and a saved PEFT adapter of that base model, rank and targets (E0526).

use std::path::Path;

use wrl_plan::Node;
use wrl_plan::params::{self, TypedPlan};
use wrl_trainer::hf::{self, RepoKind};
use wrl_trainer::lora::{LoraSpec, misfit, peft_mismatch, read_peft_config};

use super::refuse::unsupported;
use crate::error::{Fault, RunError};

/// What keeps stage `n`'s `lora` from running on the model its weights descend from (`input`).
pub(super) fn lora(
    plan: &TypedPlan<'_>,
    n: &Node,
    input: &str,
    lora: &params::OrOff<params::LoraObj>,
) -> Vec<RunError> {
    let Some(l) = lora.value().map(params::LoraObj::get) else { return Vec::new() };
    let mut errs = Vec::new();
    let Some((m, h)) = crate::executor::hf::trained_hf(plan, input) else {
        errs.push(unsupported(
            n,
            format!("stage `{}`: LoRA adapters need an `hf(…)` policy", n.decl),
            "set `lora = off`, or train an `hf(…)` model",
            "lora",
        ));
        return errs;
    };
    // A model that does not resolve or read is the model's own error (E0510–E0513).
    let Ok(files) = hf::resolve(&h.id, RepoKind::Model).and_then(|dir| hf::inspect(&dir)) else {
        return errs;
    };
    let (spec, _) = crate::executor::settings::lora(Some(l));
    let Some(spec) = spec else { return errs };
    if let Some(why) = misfit(&files.config, &spec) {
        errs.push(
            RunError::new(
                Fault::LoraFit,
                format!("stage `{}`: LoRA on model `{}`: {why}", n.decl, m.decl),
            )
            .help("lower `rank`, or adapt other `targets`")
            .at(n, Some("lora"), "these adapters do not fit the model"),
        );
    }
    if let params::OrNone::Value(dir) = &l.adapter {
        errs.extend(saved(n, &h.id, &files.dir, Path::new(dir), &spec));
    }
    errs
}

/// A saved adapter `dir` the stage starts from, against its base model (the recipe's `id`,
/// read from `model_dir`) and its `lora` settings.
fn saved(n: &Node, id: &str, model_dir: &Path, dir: &Path, spec: &LoraSpec) -> Option<RunError> {
    let refuse = |why: String, help: &str| {
        Some(
            RunError::new(
                Fault::AdapterMismatch,
                format!("stage `{}`: the adapter in `{}` {why}", n.decl, dir.display()),
            )
            .help(help.to_string())
            .at(n, Some("lora"), "this adapter cannot start the stage"),
        )
    };
    let peft = match read_peft_config(dir) {
        Ok(p) => p,
        Err(e) => return refuse(format!("does not read: {e}"), "name a PEFT adapter directory"),
    };
    if let Some(why) = peft_mismatch(&peft, spec) {
        return refuse(
            format!("is not the stage's: {why}"),
            "set the stage's `rank` and `targets` to the adapter's",
        );
    }
    let base = peft.base_model_name_or_path.unwrap_or_default();
    let same_dir = |b: &str| {
        let resolved = hf::resolve(b, RepoKind::Model).ok();
        match (resolved.and_then(|d| d.canonicalize().ok()), model_dir.canonicalize().ok()) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        }
    };
    if base != id && !same_dir(&base) {
        return refuse(
            format!("was trained on `{base}`, the stage's model is `{id}`"),
            "start from an adapter of this base model, or set `adapter = none`",
        );
    }
    None
}
