//! What `wrlc serve` serves: a checkpoint directory written by a run, a run directory's latest
//! committed checkpoint (resolved without touching the run: it may be going on), or a plain
//! Hugging Face model directory or cached hub id (a base model, as `save_pretrained` wrote it).

use std::path::{Path, PathBuf};

use wrl_exec::{Committed, Fault, RunError};
use wrl_trainer::Trainer;

/// Where a checkpoint argument led: the checkpoint directory and, when a run directory was
/// given, the run it belongs to.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedCheckpoint {
    /// The checkpoint directory (holds `trainer_state.json`).
    pub dir: PathBuf,
    /// The run directory, when the argument was one.
    pub run: Option<PathBuf>,
    /// A Hugging Face model directory that no run wrote (no `trainer_state.json`): served as it is.
    pub base_model: bool,
}

const HELP_CHECKPOINT: &str = "give a checkpoint directory written by a run \
    (`runs/<run>/checkpoints/<name>`), a run directory to serve its latest committed checkpoint, \
    or a Hugging Face model directory or cached hub id (`Qwen/Qwen3-0.6B`) to serve a base model";

/// Resolves a checkpoint directory or a run directory (its latest committed checkpoint).
/// Reads only; a run directory's logs are not touched, so a run may be going on.
pub fn resolve_checkpoint(path: &Path) -> Result<ResolvedCheckpoint, RunError> {
    let shown = path.display();
    if !path.exists()
        && let Some(id) = path.to_str()
        && let Ok(dir) = wrl_trainer::hf::resolve(id, wrl_trainer::hf::RepoKind::Model)
    {
        return Ok(ResolvedCheckpoint { dir, run: None, base_model: true });
    }
    let meta = std::fs::metadata(path).map_err(|e| {
        RunError::new(Fault::Data, format!("cannot read checkpoint `{shown}`: {e}"))
            .help(HELP_CHECKPOINT)
    })?;
    if !meta.is_dir() {
        return Err(RunError::new(
            Fault::Data,
            format!("`{shown}` is a file, not a checkpoint directory"),
        )
        .help(HELP_CHECKPOINT));
    }
    if path.join("trainer_state.json").is_file() {
        return Ok(ResolvedCheckpoint { dir: path.to_path_buf(), run: None, base_model: false });
    }
    let state_path = path.join("state.json");
    if state_path.is_file() {
        let text = std::fs::read_to_string(&state_path).map_err(|e| {
            RunError::new(Fault::Data, format!("cannot read `{}`: {e}", state_path.display()))
        })?;
        let committed: Committed = serde_json::from_str(&text).map_err(|e| {
            RunError::new(Fault::Data, format!("`{}` is damaged: {e}", state_path.display()))
        })?;
        let Some(name) = committed.checkpoint else {
            return Err(RunError::new(
                Fault::Data,
                format!("the run `{shown}` has not committed a checkpoint yet"),
            )
            .help("serve it once a training stage has finished, or give a checkpoint directory"));
        };
        // The executor commits the name under `checkpoints/`; accept a relative path too.
        let candidates = [path.join("checkpoints").join(&name), path.join(&name)];
        return match candidates.iter().find(|c| c.join("trainer_state.json").is_file()) {
            Some(dir) => Ok(ResolvedCheckpoint {
                dir: dir.clone(),
                run: Some(path.to_path_buf()),
                base_model: false,
            }),
            None => Err(RunError::new(
                Fault::Data,
                format!(
                    "the run `{shown}` committed checkpoint `{name}`, but `{}` holds no checkpoint",
                    candidates[0].display()
                ),
            )
            .help(
                "the run directory is damaged or was moved in part; give a checkpoint directory",
            )),
        };
    }
    if path.join("config.json").is_file() {
        return Ok(ResolvedCheckpoint { dir: path.to_path_buf(), run: None, base_model: true });
    }
    let why = if path.join("model.safetensors").is_file() {
        "it has weights but no `trainer_state.json` (the save was interrupted)"
    } else {
        "it has no `trainer_state.json`"
    };
    Err(RunError::new(Fault::Data, format!("`{shown}` is not a checkpoint: {why}"))
        .help(HELP_CHECKPOINT))
}

/// Loads the policy of a checkpoint directory written by `Trainer::save`, or of a Hugging Face
/// model directory that no run wrote (a base model: its weights, tokenizer and chat template).
pub fn load_policy(dir: &Path) -> Result<Trainer, RunError> {
    if !dir.join("trainer_state.json").is_file() && dir.join("config.json").is_file() {
        return load_base_model(dir);
    }
    Trainer::load(dir).map_err(|e| {
        RunError::new(Fault::Model, format!("cannot load checkpoint `{}`: {e}", dir.display()))
    })
}

fn load_base_model(dir: &Path) -> Result<Trainer, RunError> {
    use wrl_trainer::hf::{Arch, HfError};
    use wrl_trainer::models::{PolicyConfig, PretrainedSource};
    let shown = dir.display();
    let bad = |e: HfError| {
        let fault = match e {
            HfError::Architecture { .. } | HfError::Field { .. } => Fault::Model,
            HfError::NotFound(_) | HfError::Files(_) | HfError::Template(_) => Fault::Data,
        };
        RunError::new(fault, format!("cannot serve the model directory `{shown}`: {e}"))
    };
    let text = std::fs::read_to_string(dir.join("config.json"))
        .map_err(|e| bad(HfError::Files(format!("cannot read `config.json`: {e}"))))?;
    if wrl_trainer::vision::VlConfig::is_vl(&text) {
        // The model loads (`vision::QwenVlModel`); the chat endpoint does not take images yet.
        return Err(RunError::new(
            Fault::Model,
            format!(
                "`{shown}` is a vision-language model; `wrlc serve` serves text models and the \
                 policies runs write"
            ),
        )
        .help("serve a text model, or a checkpoint a run wrote"));
    }
    let source = PretrainedSource::new(dir);
    let policy = match wrl_trainer::hf::read_config(dir).map_err(bad)?.arch {
        Arch::Qwen2 => PolicyConfig::Qwen2(source),
        Arch::Qwen3 => PolicyConfig::Qwen3(source),
    };
    let config = wrl_trainer::TrainerConfig {
        policy,
        optim: Default::default(),
        seed: 0,
        device: Default::default(),
    };
    Trainer::new(config).map_err(|e| {
        RunError::new(Fault::Model, format!("cannot load the model directory `{shown}`: {e}"))
    })
}
