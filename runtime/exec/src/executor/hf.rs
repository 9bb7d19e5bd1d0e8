//! An `hf(…)` model as a trainer policy: its id resolved offline (a directory, or the Hugging
//! Face cache), its files checked against its `config.json` (`wrl_trainer::hf::inspect`), its
//! chat template compiled, and every field of the recipe either honoured or refused at that
//! field. The preflight and the executor call the same function, so `--dry-run` refuses exactly
//! what a run would.

use wrl_plan::Node;
use wrl_plan::params::{self, ChatTemplate, DType, Family};
use wrl_trainer::hf::{self, Arch, HfError, RepoKind};
use wrl_trainer::precision::Precision;
use wrl_trainer::vision::VlFamily;
use wrl_trainer::{OpsMode, PolicyConfig, PretrainedSource};

use crate::error::{Fault, RunError};

/// The fault of each kind of Hugging Face problem.
pub(crate) fn fault_of(e: &HfError) -> Fault {
    match e {
        HfError::NotFound(_) => Fault::HfNotFound,
        HfError::Architecture { .. } => Fault::HfArchitecture,
        HfError::Field { .. } => Fault::HfConfig,
        HfError::Files(_) => Fault::HfFiles,
        HfError::Template(_) => Fault::HfTemplate,
    }
}

/// A Hugging Face problem of model `n`, blamed on the `hf(…)` id (or on `family`).
fn hf_error(n: &Node, e: HfError) -> RunError {
    let fault = fault_of(&e);
    let (help, label) = match &e {
        HfError::NotFound(_) => (
            "give a model directory, or put the model in the Hugging Face cache first \
             (`huggingface-cli download ORG/NAME`, or set HF_HUB_CACHE / HF_HOME)"
                .to_string(),
            "this model cannot be found on this machine",
        ),
        HfError::Architecture { backend: Some(b), .. } => {
            (format!("the `{b}` backend runs this model"), "this runtime cannot run this model")
        }
        HfError::Architecture { backend: None, .. } => (
            "use a Qwen2, Qwen2.5 or Qwen3 dense text model".to_string(),
            "this runtime cannot run this model",
        ),
        HfError::Field { .. } => (
            "use a model whose `config.json` this runtime implements (docs/trainer.md lists the \
             fields), or the `verl` backend"
                .to_string(),
            "this model's config changes the maths in a way this runtime does not implement",
        ),
        HfError::Files(_) => (
            "re-download or re-export the model: its files do not match its `config.json`"
                .to_string(),
            "this model's files are inconsistent",
        ),
        HfError::Template(_) => (
            "fix the template in `chat_template.jinja` or `tokenizer_config.json`".to_string(),
            "this model's chat template cannot render prompts",
        ),
    };
    RunError::new(fault, format!("model `{}`: {e}", n.decl)).help(help).at(n, None, label)
}

/// A recipe setting of `hf(…)` that does not fit the model (E0515).
fn setting(n: &Node, field: &str, what: String, help: String, label: &str) -> RunError {
    RunError::new(Fault::HfSetting, format!("model `{}`: {what}", n.decl)).help(help).at(
        n,
        Some(field),
        label,
    )
}

/// The trainer policy of `hf(…)` node `n`, or every reason it cannot be one.
pub(crate) fn policy_of(n: &Node, h: &params::Hf) -> Result<PolicyConfig, Vec<RunError>> {
    // `image_tokens` is the checker's count (E0404); `image_max_pixels` is a vision-language
    // model's processor budget (a text model's prompts hold no images). The device is the
    // trainer's (`load_model`), checked by the preflight (`preflight::device`).
    let params::Hf {
        id,
        context,
        family,
        dtype,
        image_tokens: _,
        image_max_pixels,
        chat_template,
        thinking,
        device: _,
        gradient_checkpointing,
    } = h;
    let mut errs = Vec::new();
    let want = match family {
        Family::Auto => None,
        Family::Qwen2 | Family::Qwen25Vl => Some(Arch::Qwen2),
        Family::Qwen3 | Family::Qwen3Vl => Some(Arch::Qwen3),
        Family::Llama => {
            errs.push(
                RunError::new(
                    Fault::HfArchitecture,
                    format!(
                        "model `{}`: this runtime runs Qwen2, Qwen2.5 and Qwen3 dense text \
                         models, Qwen3-VL and Qwen2.5-VL, not Llama models",
                        n.decl
                    ),
                )
                .help("the `verl` backend runs this family")
                .at(n, Some("family"), "this family does not run on this runtime"),
            );
            None
        }
    };
    // Mixed precision: f32 master weights and optimiser state, activations in `dtype`
    // (wrl_trainer::precision); f16 adds a dynamic loss scale.
    let precision = match dtype {
        DType::F32 => Precision::F32,
        DType::Bf16 => Precision::Bf16,
        DType::F16 => Precision::F16,
    };
    match chat_template {
        ChatTemplate::Native => {}
        ChatTemplate::Hermes | ChatTemplate::Xml => errs.push(
            RunError::new(
                Fault::Unsupported,
                format!(
                    "model `{}`: prompts are rendered with the model's own chat template; a \
                     fixed one (`chat_template = {}`) is not implemented",
                    n.decl,
                    if *chat_template == ChatTemplate::Hermes { "hermes" } else { "xml" }
                ),
            )
            .help("set `chat_template = native`")
            .at(
                n,
                Some("chat_template"),
                "this runtime renders the model's own template",
            ),
        ),
    }
    let files = match hf::resolve(id, RepoKind::Model).and_then(|dir| hf::inspect(&dir)) {
        Ok(f) => f,
        Err(e) => {
            errs.push(hf_error(n, e));
            return Err(errs);
        }
    };
    let arch = files.config.arch;
    let vl = files.vision.as_ref().map(|v| v.family);
    errs.extend(family_mismatch(n, id, *family, want, (arch, vl)));
    match &files.template {
        None => errs.push(hf_error(
            n,
            HfError::Template(format!(
                "`{id}` has no chat template (neither `chat_template.jinja` nor a \
                 `chat_template` in `tokenizer_config.json`)"
            )),
        )),
        Some((origin, source)) => {
            let origin = origin.file_name().map(|f| f.to_string_lossy().into_owned());
            // Compiled, then rendered once on a short conversation: a template that loops
            // without end is refused here (its fuel runs out), not in the middle of a run.
            let rendered = wrl_trainer::chat::ChatTemplate::new(
                source,
                origin.as_deref().unwrap_or("?"),
                &files.tokenizer_config,
            )
            .and_then(|t| t.render(&probe_conversation(), &[], true, false));
            if let Err(e) = rendered {
                errs.push(hf_error(n, e));
            }
        }
    }
    let max = files.config.max_position_embeddings;
    if context.0 as usize > max {
        errs.push(setting(
            n,
            "context",
            format!(
                "`context` = {} tokens is longer than the model's `max_position_embeddings` \
                 ({max})",
                context.0
            ),
            format!("set `context` to at most {max} tokens"),
            "the model was not built for sequences this long",
        ));
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    let src = PretrainedSource {
        path: files.dir.clone(),
        ops: OpsMode::Auto,
        // A stage's `frozen` is checked by the preflight (refusals.rs): this runtime trains
        // every parameter of a text model.
        frozen: Vec::new(),
        thinking: *thinking,
        context: Some(context.0 as usize),
        dtype: precision,
        gradient_checkpointing: *gradient_checkpointing,
        // A stage's `lora` is set on the trainer stage by stage (`Trainer::set_lora`).
        lora: None,
        image_max_pixels: image_max_pixels.value().map(|p| p.0 as usize),
    };
    // Either Qwen-VL family: the trainer reads which from `config.json`.
    Ok(match arch {
        _ if vl.is_some() => PolicyConfig::Qwen3Vl(src),
        Arch::Qwen2 => PolicyConfig::Qwen2(src),
        Arch::Qwen3 => PolicyConfig::Qwen3(src),
    })
}

/// The recipe's `family` against the directory's `config.json` (`arch`, and which Qwen-VL family
/// it is, if one): E0511 at `family` when they differ (`auto` takes either).
fn family_mismatch(
    n: &Node,
    id: &str,
    family: Family,
    want: Option<Arch>,
    (arch, vl): (Arch, Option<VlFamily>),
) -> Option<RunError> {
    let want_vl = match family {
        Family::Qwen3Vl => Some(VlFamily::Qwen3Vl),
        Family::Qwen25Vl => Some(VlFamily::Qwen25Vl),
        Family::Auto | Family::Qwen2 | Family::Qwen3 | Family::Llama => None,
    };
    if vl != want_vl && family != Family::Auto {
        let (says, is) = match vl {
            Some(f) => (f.model_type(), format!("a vision-language model (`{}`)", f.model_type())),
            None => (arch.model_type(), "a text model".to_string()),
        };
        return Some(
            RunError::new(
                Fault::HfArchitecture,
                format!(
                    "model `{}`: the recipe says `family = {}` but `{id}` is {is}",
                    n.decl,
                    want_vl.map_or(arch.model_type(), VlFamily::model_type)
                ),
            )
            .help(format!("set `family = {says}` (or `auto`)"))
            .at(n, Some("family"), "the model is of another family"),
        );
    }
    let w = want.filter(|w| *w != arch)?;
    Some(
        RunError::new(
            Fault::HfArchitecture,
            format!(
                "model `{}`: the recipe says `family = {}` but `config.json` says \
                 `model_type` `{}`",
                n.decl,
                w.model_type(),
                arch.model_type()
            ),
        )
        .help(format!("set `family = {}` (or `auto`)", arch.model_type()))
        .at(n, Some("family"), "the model is of another family"),
    )
}

/// The model node a stage trains (`input`: its `model` or `init`, or a critic's `init`),
/// following earlier stages back to it.
pub(crate) fn base_model<'p>(
    plan: &'p params::TypedPlan<'_>,
    input: &str,
) -> Option<(&'p Node, &'p params::Model)> {
    let mut id = input.to_string();
    // A chain of stages is at most as long as the plan.
    for _ in 0..=plan.nodes.len() {
        match plan.node(&id)? {
            (n, params::Params::Model(m)) => return Some((n, m)),
            (_, params::Params::Sft(s)) => id = s.model.id().to_string(),
            (_, params::Params::RlPhase(p)) => id = p.run.init.id().to_string(),
            // A stage's `.model`: the weights of the stage it holds.
            (_, params::Params::Checkpoint(_)) => {
                let from = plan.plan.inputs(&id).find(|e| e.port == "model")?.from.clone();
                id = from;
            }
            _ => return None,
        }
    }
    None
}

/// The `hf(…)` model a stage trains; `None` for another kind of model.
pub(crate) fn trained_hf<'p>(
    plan: &'p params::TypedPlan<'_>,
    input: &str,
) -> Option<(&'p Node, &'p params::Hf)> {
    match base_model(plan, input)? {
        (n, params::Model::Hf(h)) => Some((n, h)),
        _ => None,
    }
}

/// A stage's `frozen` that splits an `hf(…)` model's tied embeddings and LM head (one tensor):
/// E0515 at the stage's `frozen`.
pub(crate) fn frozen_split(
    plan: &params::TypedPlan<'_>,
    n: &Node,
    input: &str,
    frozen: &[params::FrozenPart],
) -> Option<RunError> {
    let emb = frozen.contains(&params::FrozenPart::Embeddings);
    let head = frozen.contains(&params::FrozenPart::LmHead);
    if emb == head {
        return None;
    }
    let (m, h) = trained_hf(plan, input)?;
    let files = hf::resolve(&h.id, RepoKind::Model).and_then(|dir| hf::inspect(&dir)).ok()?;
    if !files.config.tie_word_embeddings {
        return None;
    }
    let (has, lacks) = if emb { ("embeddings", "lm_head") } else { ("lm_head", "embeddings") };
    Some(
        RunError::new(
            Fault::HfSetting,
            format!(
                "stage `{}`: model `{}` ties its LM head to its embeddings (one tensor), so \
                 `frozen` cannot hold `{has}` without `{lacks}`",
                n.decl, m.decl
            ),
        )
        .help("freeze both (`frozen = [embeddings, lm_head]`) or neither")
        .at(n, Some("frozen"), "splits a tied tensor"),
    )
}

/// A short conversation the preflight renders a chat template on: a system prompt, a task, a
/// reply and the next observation.
fn probe_conversation() -> Vec<wrl_trainer::chat::Message> {
    use wrl_trainer::chat::{ChatRole, Message};
    vec![
        Message::new(ChatRole::System, "You are a web agent."),
        Message::new(ChatRole::User, "task: open the cart"),
        Message::new(ChatRole::Assistant, "click 3"),
        Message::new(ChatRole::User, "The cart is empty."),
    ]
}
