//! Hugging Face models and datasets on this machine: where an `hf(…)` id or an `hf_dataset(…)`
//! id lives (a local directory, or the standard hub cache, never downloaded), and why one cannot
//! be used, as one error type whose kinds the runtime reports under their own codes.

pub mod config;
pub mod files;
pub mod save;
pub mod tiny;
pub mod tiny_vl;

use std::path::{Path, PathBuf};

pub use config::{Arch, QwenConfig, RopeKind};
pub use files::{ModelFiles, inspect, read_config};

/// Why a Hugging Face model (or dataset) cannot be used. Each kind is one runtime code.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HfError {
    /// The id is not a directory and not in the offline cache, or a snapshot lacks a file.
    #[error("{0}")]
    NotFound(String),
    /// An architecture or family this runtime does not run (a vision-language model, a
    /// mixture of experts, Llama, an unknown one), or one other than the recipe's `family`.
    #[error("{message}")]
    Architecture {
        /// What was found and why it does not run here.
        message: String,
        /// Which backend can run it, when one can.
        backend: Option<String>,
    },
    /// A `config.json` field whose value would change the maths and is not implemented.
    #[error("`config.json` field `{field}`: {why}")]
    Field {
        /// The field (`rope_scaling.rope_type`).
        field: String,
        /// What is wrong with its value.
        why: String,
    },
    /// The weights or the tokenizer do not match the config (a missing tensor, a wrong shape).
    #[error("{0}")]
    Files(String),
    /// The chat template is missing, does not compile or fails to render.
    #[error("{0}")]
    Template(String),
}

/// The Hugging Face hub cache: `HF_HUB_CACHE`, else `HF_HOME/hub`, else
/// `XDG_CACHE_HOME/huggingface/hub`, else `~/.cache/huggingface/hub` (as `huggingface_hub`).
pub fn hub_cache() -> Option<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(p) = var("HF_HUB_CACHE") {
        return Some(p);
    }
    if let Some(p) = var("HF_HOME") {
        return Some(p.join("hub"));
    }
    if let Some(p) = var("XDG_CACHE_HOME") {
        return Some(p.join("huggingface").join("hub"));
    }
    var("HOME").map(|h| h.join(".cache").join("huggingface").join("hub"))
}

/// What kind of hub repository an id names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RepoKind {
    Model,
    Dataset,
}

impl RepoKind {
    fn prefix(self) -> &'static str {
        match self {
            RepoKind::Model => "models",
            RepoKind::Dataset => "datasets",
        }
    }
}

/// Whether `id` has the shape of a hub id (`Org/Name`).
fn is_hub_id(id: &str) -> bool {
    let mut parts = id.split('/');
    let ok = |p: Option<&str>| {
        p.is_some_and(|p| {
            !p.is_empty()
                && p != "."
                && p != ".."
                && p.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        })
    };
    ok(parts.next()) && ok(parts.next()) && parts.next().is_none()
}

/// The directory of `id`: itself when it is a directory, else its snapshot in the hub cache
/// (`models--Org--Name/snapshots/<rev>`, the revision `refs/main` names, or the only one).
pub fn resolve(id: &str, kind: RepoKind) -> Result<PathBuf, HfError> {
    resolve_in(id, kind, hub_cache().as_deref())
}

/// [`resolve`] against a given hub cache (`None`: there is none).
pub fn resolve_in(id: &str, kind: RepoKind, cache: Option<&Path>) -> Result<PathBuf, HfError> {
    let what = match kind {
        RepoKind::Model => "model",
        RepoKind::Dataset => "dataset",
    };
    let local = Path::new(id);
    if local.is_dir() {
        return Ok(local.to_path_buf());
    }
    let cache_help = "HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub";
    if !is_hub_id(id) {
        return Err(HfError::NotFound(format!(
            "the {what} `{id}` is not a directory, nor a hub id (`Org/Name`) to look up in the \
             Hugging Face cache"
        )));
    }
    let Some(cache) = cache else {
        return Err(HfError::NotFound(format!(
            "the {what} `{id}` is not a directory, and there is no Hugging Face cache to look in \
             ({cache_help})"
        )));
    };
    let repo = cache.join(format!("{}--{}", kind.prefix(), id.replace('/', "--")));
    let snapshots = repo.join("snapshots");
    if !snapshots.is_dir() {
        return Err(HfError::NotFound(format!(
            "the {what} `{id}` is not in the Hugging Face cache ({cache_help}); this runtime \
             never downloads"
        )));
    }
    if let Ok(rev) = std::fs::read_to_string(repo.join("refs").join("main")) {
        let dir = snapshots.join(rev.trim());
        if dir.is_dir() {
            return Ok(dir);
        }
    }
    let mut revs: Vec<PathBuf> = std::fs::read_dir(&snapshots)
        .map_err(|e| HfError::NotFound(format!("cannot read the cache of `{id}`: {e}")))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    revs.sort();
    match revs.len() {
        1 => Ok(revs.remove(0)),
        0 => Err(HfError::NotFound(format!(
            "the {what} `{id}` has no snapshot in the Hugging Face cache; this runtime never \
             downloads"
        ))),
        n => Err(HfError::NotFound(format!(
            "the {what} `{id}` has {n} snapshots in the Hugging Face cache and no `refs/main` \
             naming one; give the snapshot's directory instead of the id"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hub_ids_and_paths() {
        assert!(is_hub_id("Qwen/Qwen3-0.6B"));
        assert!(!is_hub_id("Qwen"));
        assert!(!is_hub_id("/abs/path"));
        assert!(!is_hub_id("a/b/c"));
        assert!(!is_hub_id("../x"));
    }
}
