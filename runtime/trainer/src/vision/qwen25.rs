//! What of a Qwen2.5-VL `config.json` differs from Qwen3-VL's, read as transformers'
//! `Qwen2_5_VLConfig` reads it: the `vision_config` (`Qwen2_5_VLVisionConfig`: window attention
//! with `window_size` and `fullatt_block_indexes`, no learned positions, no DeepStack, RoPE θ fixed
//! at 10 000) and the text part (`Qwen2_5_VLTextConfig`, a Qwen2 decoder: nested under
//! `text_config` as `save_pretrained` writes it, or flat at the top level as the Hub's checkpoints
//! have it; θ 1 000 000 by default; `mrope_section` in `rope_parameters` / `rope_scaling`, whose
//! `mrope` type is transformers' `default`). Every field that enters the maths is honoured or
//! refused by name.

use serde_json::{Map, Value as Json};

use crate::hf::HfError;
use crate::hf::config::INERT;

use super::vision_config::{
    Fields, VisionAct, VisionConfig, VlFamily, block_list, field, head_dim,
};

/// `vision_config` fields read below, or checked.
const READ: &[&str] = &[
    "model_type",
    "depth",
    "hidden_size",
    "intermediate_size",
    "num_heads",
    "hidden_act",
    "in_channels",
    "in_chans",
    "patch_size",
    "spatial_patch_size",
    "temporal_patch_size",
    "spatial_merge_size",
    "out_hidden_size",
    "window_size",
    "fullatt_block_indexes",
    "tokens_per_second",
];

/// Reads a Qwen2.5-VL `vision_config` object.
pub(crate) fn vision_config(obj: &Map<String, Json>) -> Result<VisionConfig, HfError> {
    let fields = Fields::checked(obj, READ, ["qwen2_5_vl_vision", "qwen2_5_vl"])?;
    let get = |k: &str| fields.get(k);
    let size = |k: &str, default: usize| fields.size(k, default);
    for k in ["patch_size", "temporal_patch_size"] {
        if get(k).is_some_and(|x| !x.is_u64()) {
            return Err(field(k, "a list of sizes per axis is not supported; give one integer"));
        }
    }
    let depth = size("depth", 32)?;
    let hidden_size = size("hidden_size", 3584)?;
    let num_heads = size("num_heads", 16)?;
    // Checked only: the tower reads the head width from `hidden_size` and `num_heads`.
    head_dim(hidden_size, num_heads)?;
    let act_name = get("hidden_act").and_then(Json::as_str).unwrap_or("silu");
    let hidden_act = VisionAct::parse(act_name).ok_or_else(|| {
        field(
            "hidden_act",
            format!(
                "`{act_name}` is not implemented (silu, gelu_pytorch_tanh, gelu_new, gelu_fast, \
                 gelu, quick_gelu are)"
            ),
        )
    })?;
    // `in_channels` is what transformers reads; the Hub's configs also carry the older
    // `in_chans`, which it ignores: both must say RGB.
    for k in ["in_channels", "in_chans"] {
        if let Some(x) = get(k)
            && x.as_u64() != Some(3)
        {
            return Err(field(k, format!("{x}: the image processor makes RGB rows")));
        }
    }
    let patch_size = size("patch_size", 14)?;
    // `spatial_patch_size`, another older spelling transformers ignores, must not contradict.
    if let Some(x) = get("spatial_patch_size")
        && x.as_u64() != Some(patch_size as u64)
    {
        return Err(field(
            "spatial_patch_size",
            format!("{x} contradicts `patch_size` = {patch_size}, which transformers uses"),
        ));
    }
    let spatial_merge_size = size("spatial_merge_size", 2)?;
    let window_size = size("window_size", 112)?;
    if window_size / spatial_merge_size / patch_size == 0 {
        return Err(field(
            "window_size",
            format!(
                "{window_size} pixels hold no whole merged token ({spatial_merge_size} × \
                 {patch_size} pixels): transformers would divide by zero"
            ),
        ));
    }
    // Only videos' time positions read it (`get_rope_index`); images never do.
    let _tokens_per_second = size("tokens_per_second", 4)?;
    Ok(VisionConfig {
        family: VlFamily::Qwen25Vl,
        depth,
        hidden_size,
        intermediate_size: size("intermediate_size", 3420)?,
        num_heads,
        hidden_act,
        patch_size,
        temporal_patch_size: size("temporal_patch_size", 2)?,
        spatial_merge_size,
        out_hidden_size: size("out_hidden_size", 3584)?,
        num_position_embeddings: 0,
        deepstack_visual_indexes: Vec::new(),
        rope_theta: 10_000.0,
        window_size,
        fullatt_block_indexes: block_list(
            "fullatt_block_indexes",
            get("fullatt_block_indexes"),
            depth,
            &[7, 15, 23, 31],
        )?,
    })
}

/// Top-level fields of a Qwen2.5-VL `config.json` that are not the text model's: read by
/// `vl_config.rs`, or inert (`vision_token_id`: the Hub's configs name `<|vision_pad|>`, which
/// the model never reads).
pub(crate) const TOP: &[&str] = &[
    "architectures",
    "model_type",
    "text_config",
    "vision_config",
    "image_token_id",
    "video_token_id",
    "vision_start_token_id",
    "vision_end_token_id",
    "vision_token_id",
    "tie_word_embeddings",
];

/// The text part of a Qwen2.5-VL `config.json` as a Qwen2 text-family `config.json`, and its
/// `mrope_section`. `text_config` when given (top-level text fields are then ignored, as
/// transformers ignores them); else the top level's own text fields (the Hub's flat layout).
pub(crate) fn text_part(obj: &Map<String, Json>) -> Result<(Json, [usize; 3]), HfError> {
    let nested = !matches!(obj.get("text_config"), None | Some(Json::Null));
    // Nested: a top-level field is the model's or inert; transformers would drop a text field
    // there, so one is refused rather than silently ignored.
    if nested
        && let Some(k) =
            obj.keys().find(|k| !TOP.contains(&k.as_str()) && !INERT.contains(&k.as_str()))
    {
        return Err(HfError::Field {
            field: k.clone(),
            why: "this runtime does not know the field at the top level of a config.json with a \
                  `text_config`, so it cannot tell whether it changes the model's outputs"
                .into(),
        });
    }
    let (mut text, at) = match obj.get("text_config") {
        Some(Json::Object(t)) => (t.clone(), "text_config."),
        None | Some(Json::Null) => {
            let flat: Map<String, Json> = obj
                .iter()
                .filter(|(k, _)| !TOP.contains(&k.as_str()) || k.as_str() == "tie_word_embeddings")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            (flat, "")
        }
        Some(x) => {
            return Err(HfError::Field {
                field: "text_config".into(),
                why: format!("{x} is not an object"),
            });
        }
    };
    let name = |k: &str| format!("{at}{k}");
    let bad = |k: &str, why: String| HfError::Field { field: name(k), why };
    match text.get("model_type").and_then(Json::as_str) {
        None | Some("qwen2_5_vl_text") => {}
        Some("qwen2_5_vl") if !nested => {}
        Some(other) => {
            return Err(bad("model_type", format!("`{other}` is not `qwen2_5_vl_text`")));
        }
    }
    text.insert("model_type".into(), Json::from("qwen2"));
    text.remove("architectures");
    // The attention is `hidden_size / num_attention_heads` wide whatever `head_dim` says, while
    // the rotary table would read `head_dim`: only the agreeing value is taken.
    let width = |k: &str| text.get(k).and_then(Json::as_u64);
    if let Some(x) = text.get("head_dim").filter(|x| !x.is_null()) {
        let implied = match (width("hidden_size"), width("num_attention_heads")) {
            (Some(h), Some(n)) if n > 0 => Some(h / n),
            _ => None,
        };
        if x.as_u64().is_none() || x.as_u64() != implied {
            return Err(bad(
                "head_dim",
                format!(
                    "{x}: Qwen2.5-VL's attention is `hidden_size / num_attention_heads` wide \
                     while its rotary table would read this"
                ),
            ));
        }
    }
    // `Qwen2_5_VLTextConfig`'s own default: sliding layers from 80 on.
    if !text.contains_key("max_window_layers") {
        text.insert("max_window_layers".into(), Json::from(80));
    }
    let section = rope_section(&mut text, at)?;
    if !text.contains_key("tie_word_embeddings")
        && let Some(tie) = obj.get("tie_word_embeddings")
    {
        text.insert("tie_word_embeddings".into(), tie.clone());
    }
    Ok((Json::Object(text), section))
}

/// `mrope_section` taken out of the text part's `rope_scaling` (or `rope_parameters`), whose
/// `mrope` type becomes `default` as transformers makes it; θ 1 000 000 where nothing sets it.
fn rope_section(text: &mut Map<String, Json>, at: &str) -> Result<[usize; 3], HfError> {
    let key = match (text.get("rope_scaling"), text.get("rope_parameters")) {
        (Some(Json::Object(_)), _) => "rope_scaling",
        (_, Some(Json::Object(_))) => "rope_parameters",
        _ => {
            return Err(HfError::Field {
                field: format!("{at}rope_parameters.mrope_section"),
                why: "missing: Qwen2.5-VL's rotary embedding splits its frequencies in these \
                      sections (transformers fails without it)"
                    .into(),
            });
        }
    };
    let name = format!("{at}{key}.mrope_section");
    let has_theta = text.get("rope_theta").is_some_and(|x| !x.is_null());
    let Some(Json::Object(rope)) = text.get_mut(key) else {
        return Err(HfError::Field { field: name, why: "not an object".into() });
    };
    let section = match rope.remove("mrope_section") {
        Some(Json::Array(a)) => {
            let n: Vec<usize> = a.iter().filter_map(Json::as_u64).map(|n| n as usize).collect();
            match n.as_slice() {
                &[t, h, w] if a.len() == 3 => [t, h, w],
                _ => {
                    return Err(HfError::Field {
                        field: name,
                        why: format!("{a:?} is not three integers (t, h, w)"),
                    });
                }
            }
        }
        None | Some(Json::Null) => {
            return Err(HfError::Field {
                field: name,
                why: "missing: Qwen2.5-VL's rotary embedding splits its frequencies in these \
                      sections (transformers fails without it)"
                    .into(),
            });
        }
        Some(x) => {
            return Err(HfError::Field {
                field: name,
                why: format!("{x} is not three integers (t, h, w)"),
            });
        }
    };
    for k in ["rope_type", "type"] {
        if rope.get(k).and_then(Json::as_str) == Some("mrope") {
            rope.insert(k.into(), Json::from("default"));
        }
    }
    if !rope.contains_key("rope_theta") && !has_theta {
        rope.insert("rope_theta".into(), Json::from(1_000_000.0));
    }
    Ok(section)
}
