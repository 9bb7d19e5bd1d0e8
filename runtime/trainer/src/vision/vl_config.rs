//! A whole Qwen3-VL or Qwen2.5-VL `config.json` (`Qwen3VLForConditionalGeneration`,
//! `Qwen2_5_VLForConditionalGeneration`), read as transformers reads it: the text decoder's
//! `text_config` through the text families' own reader (every field that enters the maths
//! honoured or refused by name, under `text_config.`; Qwen2.5-VL's through `qwen25.rs`, nested or
//! flat), the tower's `vision_config` (`vision_config.rs`, `qwen25.rs`), the multimodal RoPE's
//! settings (`mrope.rs`) and the special tokens around an image. A top-level field this runtime
//! does not know is refused.

use serde_json::{Map, Value as Json};

use crate::hf::config::{as_object, parse_json};
use crate::hf::{HfError, QwenConfig};

use super::mrope::{MropeConfig, MropeLayout};
use super::vision_config::{VisionConfig, VlFamily};

/// Top-level fields read below.
const READ: &[&str] = &[
    "architectures",
    "model_type",
    "text_config",
    "vision_config",
    "image_token_id",
    "video_token_id",
    "vision_start_token_id",
    "vision_end_token_id",
    "tie_word_embeddings",
];

/// The settings of a Qwen-VL checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct VlConfig {
    /// Qwen3-VL or Qwen2.5-VL (`model_type`).
    pub family: VlFamily,
    /// The language model (`text_config`, with the top-level `tie_word_embeddings`).
    pub text: QwenConfig,
    /// The vision tower.
    pub vision: VisionConfig,
    /// Image tokens, merge size and `mrope_section`.
    pub mrope: MropeConfig,
    /// `<|vision_start|>` (151652 by default).
    pub vision_start_token_id: u32,
    /// `<|vision_end|>` (151653 by default).
    pub vision_end_token_id: u32,
}

fn field(name: &str, why: impl Into<String>) -> HfError {
    HfError::Field { field: name.to_string(), why: why.into() }
}

impl VlConfig {
    /// Whether `config.json` text names a vision-language `model_type` (any Qwen-VL family).
    pub fn is_vl(text: &str) -> bool {
        let v: Option<Json> = serde_json::from_str(text).ok();
        matches!(
            v.as_ref().and_then(|v| v.get("model_type")).and_then(Json::as_str),
            Some("qwen3_vl" | "qwen2_5_vl" | "qwen2_vl" | "qwen3_vl_moe")
        )
    }

    /// Reads a whole Qwen3-VL or Qwen2.5-VL `config.json` text (parsed once for all its parts).
    pub fn parse(source: &str) -> Result<VlConfig, HfError> {
        let v = parse_json(source)?;
        let obj = as_object(&v)?;
        let family = match obj.get("model_type").and_then(Json::as_str) {
            Some("qwen3_vl") => VlFamily::Qwen3Vl,
            Some("qwen2_5_vl") => VlFamily::Qwen25Vl,
            Some("qwen2_vl") => {
                return Err(HfError::Architecture {
                    message: "Qwen2-VL (multimodal RoPE without Qwen2.5-VL's window attention) is \
                              not implemented; this runtime runs Qwen3-VL and Qwen2.5-VL dense \
                              vision-language models"
                        .into(),
                    backend: Some("verl".into()),
                });
            }
            other => {
                return Err(HfError::Architecture {
                    message: format!(
                        "`model_type` {} is not `qwen3_vl` or `qwen2_5_vl`",
                        other.map_or("(none)".to_string(), |t| format!("`{t}`"))
                    ),
                    backend: None,
                });
            }
        };
        if let Some(archs) = obj.get("architectures").filter(|a| !a.is_null()) {
            let names: Vec<&str> =
                archs.as_array().into_iter().flatten().filter_map(Json::as_str).collect();
            if names != [family.class()] {
                return Err(HfError::Architecture {
                    message: format!(
                        "`architectures` is {archs}, not [\"{}\"]: this runtime runs \
                         conditional-generation vision-language models only",
                        family.class()
                    ),
                    backend: None,
                });
            }
        }
        let (text_config, section, layout) = match family {
            VlFamily::Qwen3Vl => {
                if let Some(k) = obj.keys().find(|k| {
                    !READ.contains(&k.as_str()) && !crate::hf::config::INERT.contains(&k.as_str())
                }) {
                    return Err(field(
                        k,
                        "this runtime does not know the field, so it cannot tell whether it \
                         changes the model's outputs",
                    ));
                }
                (text_part(obj)?, None, MropeLayout::Interleaved)
            }
            VlFamily::Qwen25Vl => {
                let (text, section) = super::qwen25::text_part(obj)?;
                (text, Some(section), MropeLayout::Sectioned)
            }
        };
        // Qwen2.5-VL's text fields sit at the top level in the Hub's flat layout: a refusal
        // names them there, not under `text_config.`.
        let flat = family == VlFamily::Qwen25Vl && !obj.contains_key("text_config");
        let text = QwenConfig::from_json(&text_config).map_err(|e| match e {
            HfError::Field { field: f, why } if !flat => field(&format!("text_config.{f}"), why),
            other => other,
        })?;
        let token = |k: &str, default: u32| -> Result<u32, HfError> {
            match obj.get(k).filter(|x| !x.is_null()) {
                None => Ok(default),
                Some(x) => x
                    .as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| field(k, format!("{x} is not a token id"))),
            }
        };
        let mut mrope = MropeConfig::from_json(&v)?;
        mrope.layout = layout;
        if let Some(section) = section {
            mrope.section = section;
        }
        let config = VlConfig {
            family,
            vision: VisionConfig::of_config(obj)?,
            mrope,
            vision_start_token_id: token("vision_start_token_id", 151_652)?,
            vision_end_token_id: token("vision_end_token_id", 151_653)?,
            text,
        };
        if config.vision.out_hidden_size != config.text.hidden_size {
            return Err(field(
                "vision_config.out_hidden_size",
                format!(
                    "{}: the merger's tokens enter the text model, whose `hidden_size` is {}",
                    config.vision.out_hidden_size, config.text.hidden_size
                ),
            ));
        }
        let half = config.text.head_dim() / 2;
        let [t, h, w] = config.mrope.section;
        if t + h + w != half {
            return Err(field(
                match (family, flat) {
                    (VlFamily::Qwen3Vl, _) => "text_config.rope_parameters.mrope_section",
                    (VlFamily::Qwen25Vl, false) => "text_config.rope_parameters.mrope_section",
                    (VlFamily::Qwen25Vl, true) => "rope_scaling.mrope_section",
                },
                format!(
                    "{:?} sums to {}, not head_dim / 2 = {half}",
                    config.mrope.section,
                    t + h + w
                ),
            ));
        }
        let vocab = config.text.vocab_size as u64;
        for (k, id) in [
            ("image_token_id", config.mrope.image_token_id),
            ("video_token_id", config.mrope.video_token_id),
            ("vision_start_token_id", config.vision_start_token_id),
            ("vision_end_token_id", config.vision_end_token_id),
        ] {
            if u64::from(id) >= vocab {
                return Err(field(k, format!("{id} is outside the vocabulary of {vocab} tokens")));
            }
        }
        Ok(config)
    }
}

/// `text_config` as a text-family `config.json`: `model_type` `qwen3`, the multimodal RoPE's keys
/// taken out of `rope_parameters` (`mrope.rs` reads them), the top-level `tie_word_embeddings`
/// where the text part does not say.
fn text_part(obj: &Map<String, Json>) -> Result<Json, HfError> {
    let mut text = match obj.get("text_config") {
        Some(Json::Object(t)) => t.clone(),
        None | Some(Json::Null) => Map::new(),
        Some(x) => return Err(field("text_config", format!("{x} is not an object"))),
    };
    match text.get("model_type").and_then(Json::as_str) {
        None | Some("qwen3_vl_text") => {}
        Some(other) => {
            return Err(field(
                "text_config.model_type",
                format!("`{other}` is not `qwen3_vl_text`"),
            ));
        }
    }
    text.insert("model_type".into(), Json::from("qwen3"));
    if let Some(Json::Object(rope)) = text.get_mut("rope_parameters") {
        rope.remove("mrope_section");
        match rope.remove("mrope_interleaved") {
            None | Some(Json::Bool(true)) => {}
            Some(x) => {
                return Err(field(
                    "text_config.rope_parameters.mrope_interleaved",
                    format!(
                        "{x}: Qwen3-VL's rotary embedding interleaves the sections whatever this \
                         says; remove it or set it to true"
                    ),
                ));
            }
        }
    }
    if !text.contains_key("tie_word_embeddings")
        && let Some(tie) = obj.get("tie_word_embeddings")
    {
        text.insert("tie_word_embeddings".into(), tie.clone());
    }
    Ok(Json::Object(text))
}
