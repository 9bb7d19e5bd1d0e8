//! What `wrlc serve` serves: a checkpoint directory written by a run, a run directory's latest
//! committed checkpoint (resolved without touching the run: it may be going on), or a plain
//! Hugging Face model directory or cached hub id (a base model, as `save_pretrained` wrote it),
//! or a PEFT adapter directory served over its base model.

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
    /// What the directory holds, and so how it is loaded.
    pub kind: Served,
}

/// What a served directory holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Served {
    /// A checkpoint a run wrote (`trainer_state.json`).
    Checkpoint,
    /// A Hugging Face model directory that no run wrote: served as it is.
    BaseModel,
    /// A PEFT LoRA adapter (`adapter_config.json`, `adapter_model.safetensors`): served over
    /// its base model, the one its config names or the one `--base` gives.
    Adapter,
}

const HELP_CHECKPOINT: &str = "give a checkpoint directory written by a run \
    (`runs/<run>/checkpoints/<name>`), a run directory to serve its latest committed checkpoint, \
    a Hugging Face model directory or cached hub id (`Qwen/Qwen3-0.6B`) to serve a base model, \
    or a PEFT adapter directory (`adapter_config.json`) to serve it over its base model";

/// Resolves a checkpoint directory or a run directory (its latest committed checkpoint).
/// Reads only; a run directory's logs are not touched, so a run may be going on.
pub fn resolve_checkpoint(path: &Path) -> Result<ResolvedCheckpoint, RunError> {
    let shown = path.display();
    if !path.exists()
        && let Some(id) = path.to_str()
        && let Ok(dir) = wrl_trainer::hf::resolve(id, wrl_trainer::hf::RepoKind::Model)
    {
        return Ok(ResolvedCheckpoint { dir, run: None, kind: Served::BaseModel });
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
        return Ok(ResolvedCheckpoint {
            dir: path.to_path_buf(),
            run: None,
            kind: Served::Checkpoint,
        });
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
                kind: Served::Checkpoint,
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
        return Ok(ResolvedCheckpoint {
            dir: path.to_path_buf(),
            run: None,
            kind: Served::BaseModel,
        });
    }
    if path.join("adapter_config.json").is_file() {
        return Ok(ResolvedCheckpoint {
            dir: path.to_path_buf(),
            run: None,
            kind: Served::Adapter,
        });
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
/// model directory that no run wrote (a base model: its weights, tokenizer and chat template;
/// a Qwen3-VL one with its vision tower and image processor).
/// A PEFT adapter directory is loaded over the base model its config names ([`load_adapter`]).
pub fn load_policy(dir: &Path) -> Result<Trainer, RunError> {
    if !dir.join("trainer_state.json").is_file() {
        if dir.join("config.json").is_file() {
            return load_base_model(dir);
        }
        if dir.join("adapter_config.json").is_file() {
            return load_adapter(dir, None).map(|(trainer, _)| trainer);
        }
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
    let source = PretrainedSource::new(dir);
    // A Qwen3-VL directory: its tower and processor load with the text decoder, and the chat
    // endpoint takes images (`images.rs`).
    let vl = wrl_trainer::vision::VlConfig::is_vl(&text);
    let policy = if vl {
        PolicyConfig::Qwen3Vl(source)
    } else {
        match wrl_trainer::hf::read_config(dir).map_err(bad)?.arch {
            Arch::Qwen2 => PolicyConfig::Qwen2(source),
            Arch::Qwen3 => PolicyConfig::Qwen3(source),
        }
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

/// Loads the PEFT adapter directory `dir` over `base` (a model directory or cached hub id), or,
/// without one, over the base its `adapter_config.json` names; answers the trainer and the base
/// directory it loaded. An adapter that a run trained over weights of a later step than its
/// base's (`wrl_base_step`) is refused without `base`: its named base does not hold them.
pub fn load_adapter(dir: &Path, base: Option<&Path>) -> Result<(Trainer, PathBuf), RunError> {
    use wrl_trainer::lora;
    let shown = dir.display();
    let config = lora::read_peft_config(dir).map_err(|e| {
        RunError::new(Fault::Data, format!("cannot read the adapter `{shown}`: {e}"))
    })?;
    let spec = config.spec().map_err(|e| {
        RunError::new(Fault::Model, format!("cannot serve the adapter `{shown}`: {e}"))
            .help("serve a LoRA adapter whose `target_modules` lists module names")
    })?;
    let named = config.base_model_name_or_path.as_deref().filter(|b| !b.is_empty());
    let base_arg = match (base, named) {
        (Some(b), _) => b.to_path_buf(),
        (None, Some(named)) if spec.base_step != 0 => {
            return Err(RunError::new(
                Fault::Model,
                format!(
                    "the adapter `{shown}` was trained over the weights of step {}, which its \
                     base model `{}` does not hold",
                    spec.base_step, named
                ),
            )
            .help(
                "serve the checkpoint the adapter was saved in (the directory above a run's \
                 `adapter/`), or give those weights with `--base`",
            ));
        }
        (None, Some(b)) => PathBuf::from(b),
        (None, None) => {
            return Err(RunError::new(
                Fault::Data,
                format!("the adapter `{shown}` does not name its base model"),
            )
            .help("give the model it was trained from with `--base DIR_OR_HUB_ID`"));
        }
    };
    let base_dir = resolve_base(&base_arg)?;
    let mut trainer = load_base_model(&base_dir)?;
    trainer.set_lora(Some(&spec), &wrl_trainer::LoraStart::Saved(dir.to_path_buf()), 0).map_err(
        |e| {
            RunError::new(
                Fault::Model,
                format!(
                    "the adapter `{shown}` does not fit the base model `{}`: {e}",
                    base_dir.display()
                ),
            )
            .help("give the model it was trained from with `--base DIR_OR_HUB_ID`")
        },
    )?;
    Ok((trainer, base_dir))
}

/// A base model named by a path or a cached hub id, as a model directory.
fn resolve_base(base: &Path) -> Result<PathBuf, RunError> {
    if base.join("config.json").is_file() {
        return Ok(base.to_path_buf());
    }
    if !base.exists()
        && let Some(id) = base.to_str()
        && let Ok(dir) = wrl_trainer::hf::resolve(id, wrl_trainer::hf::RepoKind::Model)
    {
        return Ok(dir);
    }
    Err(RunError::new(
        Fault::Data,
        format!(
            "the base model `{}` is neither a model directory (with `config.json`) nor a \
             cached hub id",
            base.display()
        ),
    )
    .help("give the model the adapter was trained from with `--base DIR_OR_HUB_ID`"))
}
