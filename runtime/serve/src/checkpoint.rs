//! What `wrlc serve` serves: a checkpoint directory written by a run, or a run directory's
//! latest committed checkpoint, resolved without touching the run (it may be going on).

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
}

const HELP_CHECKPOINT: &str = "give a checkpoint directory written by a run \
    (`runs/<run>/checkpoints/<name>`) or a run directory to serve its latest committed checkpoint";

/// Resolves a checkpoint directory or a run directory (its latest committed checkpoint).
/// Reads only; a run directory's logs are not touched, so a run may be going on.
pub fn resolve_checkpoint(path: &Path) -> Result<ResolvedCheckpoint, RunError> {
    let shown = path.display();
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
        return Ok(ResolvedCheckpoint { dir: path.to_path_buf(), run: None });
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
            Some(dir) => Ok(ResolvedCheckpoint { dir: dir.clone(), run: Some(path.to_path_buf()) }),
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
    let why = if path.join("model.safetensors").is_file() {
        "it has weights but no `trainer_state.json` (the save was interrupted)"
    } else {
        "it has no `trainer_state.json`"
    };
    Err(RunError::new(Fault::Data, format!("`{shown}` is not a checkpoint: {why}"))
        .help(HELP_CHECKPOINT))
}

/// Loads the policy of a checkpoint directory written by `Trainer::save`.
pub fn load_policy(dir: &Path) -> Result<Trainer, RunError> {
    Trainer::load(dir).map_err(|e| {
        RunError::new(Fault::Model, format!("cannot load checkpoint `{}`: {e}", dir.display()))
    })
}
