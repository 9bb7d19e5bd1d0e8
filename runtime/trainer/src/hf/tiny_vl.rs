//! A tiny randomly initialised Qwen3-VL or Qwen2.5-VL in Hugging Face layout, written by Rust so
//! that tests and the VL smoke runs need no Python and no download: the text model `tiny.rs`
//! writes (its tokenizer gains `<|vision_start|>`, `<|vision_end|>`, `<|image_pad|>` and
//! `<|video_pad|>` where it lacks them), re-laid as `Qwen3VLForConditionalGeneration` or
//! `Qwen2_5_VLForConditionalGeneration` (`model.language_model.*`), a small vision tower under
//! `model.visual.*` (Qwen2.5-VL's with window attention), and a `preprocessor_config.json` whose
//! pixel budget keeps a screenshot to a few dozen image tokens.

use std::path::Path;

use serde_json::{Value as Json, json};

use super::tiny::{TinySpec, TokenizerSource};
use crate::error::{Result, TrainerError};
use crate::vision::VlFamily;
use crate::vision::vl_model::checkpoint_name;

/// The vision tower's sizes.
#[derive(Debug, Clone, PartialEq)]
pub struct TinyVision {
    /// Qwen3-VL or Qwen2.5-VL.
    pub family: VlFamily,
    pub depth: usize,
    pub hidden: usize,
    pub intermediate: usize,
    pub heads: usize,
    pub patch: usize,
    /// The learned position table's side² entries (Qwen3-VL).
    pub positions: usize,
    /// DeepStack's blocks (Qwen3-VL).
    pub deepstack: Vec<usize>,
    /// The attention window's side in pixels (Qwen2.5-VL).
    pub window_size: usize,
    /// The blocks attending over whole images (Qwen2.5-VL).
    pub fullatt: Vec<usize>,
    /// The processor's pixel budget (`size.longest_edge`).
    pub max_pixels: usize,
}

impl Default for TinyVision {
    /// Two blocks of width 32, 16-pixel patches, one DeepStack feature from block 0, and at most
    /// 64 merged tokens an image.
    fn default() -> Self {
        TinyVision {
            family: VlFamily::Qwen3Vl,
            depth: 2,
            hidden: 32,
            intermediate: 64,
            heads: 2,
            patch: 16,
            positions: 64,
            deepstack: vec![0],
            window_size: 0,
            fullatt: Vec::new(),
            max_pixels: 64 * 32 * 32,
        }
    }
}

impl TinyVision {
    /// A tiny Qwen2.5-VL tower: two blocks of width 32, 14-pixel patches, windows of 112 pixels
    /// (4 × 4 merged tokens) in block 0 and whole images in block 1, at most 64 merged tokens an
    /// image (so a screenshot spans several windows).
    pub fn qwen25() -> TinyVision {
        TinyVision {
            family: VlFamily::Qwen25Vl,
            patch: 14,
            positions: 0,
            deepstack: Vec::new(),
            window_size: 112,
            fullatt: vec![1],
            max_pixels: 64 * 28 * 28,
            ..TinyVision::default()
        }
    }
}

/// The tokens around an image, added to a tokenizer that lacks them.
const VISION_TOKENS: [&str; 4] =
    ["<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"];

fn write_json(path: &Path, v: &Json) -> Result<()> {
    std::fs::write(path, serde_json::to_string_pretty(v)?)?;
    Ok(())
}

/// The tower's tensors under `model.visual.`, with their shapes and initialisation.
fn vision_tensors(v: &TinyVision, out: usize) -> Vec<(String, Vec<usize>)> {
    let (h, i, p) = (v.hidden, v.intermediate, v.patch);
    let wide = h * 4; // merge 2 × 2
    let qwen3 = v.family == VlFamily::Qwen3Vl;
    let mut t = vec![("patch_embed.proj.weight".to_string(), vec![h, 3, 2, p, p])];
    if qwen3 {
        t.push(("patch_embed.proj.bias".into(), vec![h]));
        t.push(("pos_embed.weight".into(), vec![v.positions, h]));
    }
    let norms: &[(&str, bool)] = &[("norm1.weight", true), ("norm1.bias", qwen3)];
    let mlp: &[(&str, [usize; 2])] = match v.family {
        VlFamily::Qwen3Vl => &[("linear_fc1", [i, h]), ("linear_fc2", [h, i])],
        VlFamily::Qwen25Vl => &[("gate_proj", [i, h]), ("up_proj", [i, h]), ("down_proj", [h, i])],
    };
    for b in 0..v.depth {
        for (s, keep) in norms.iter().chain(&[("norm2.weight", true), ("norm2.bias", qwen3)]) {
            if *keep {
                t.push((format!("blocks.{b}.{s}"), vec![h]));
            }
        }
        for (s, shape) in [
            ("attn.qkv.weight", vec![3 * h, h]),
            ("attn.qkv.bias", vec![3 * h]),
            ("attn.proj.weight", vec![h, h]),
            ("attn.proj.bias", vec![h]),
        ] {
            t.push((format!("blocks.{b}.{s}"), shape));
        }
        for (name, [o, n]) in mlp {
            t.push((format!("blocks.{b}.mlp.{name}.weight"), vec![*o, *n]));
            t.push((format!("blocks.{b}.mlp.{name}.bias"), vec![*o]));
        }
    }
    if !qwen3 {
        t.push(("merger.ln_q.weight".into(), vec![h]));
        t.push(("merger.mlp.0.weight".into(), vec![wide, wide]));
        t.push(("merger.mlp.0.bias".into(), vec![wide]));
        t.push(("merger.mlp.2.weight".into(), vec![out, wide]));
        t.push(("merger.mlp.2.bias".into(), vec![out]));
    }
    let mut mergers = Vec::new();
    if qwen3 {
        mergers.push(("merger.".to_string(), h));
        mergers
            .extend((0..v.deepstack.len()).map(|d| (format!("deepstack_merger_list.{d}."), wide)));
    }
    for (prefix, norm) in mergers {
        t.push((format!("{prefix}norm.weight"), vec![norm]));
        t.push((format!("{prefix}norm.bias"), vec![norm]));
        t.push((format!("{prefix}linear_fc1.weight"), vec![wide, wide]));
        t.push((format!("{prefix}linear_fc1.bias"), vec![wide]));
        t.push((format!("{prefix}linear_fc2.weight"), vec![out, wide]));
        t.push((format!("{prefix}linear_fc2.bias"), vec![out]));
    }
    t.into_iter().map(|(n, s)| (format!("model.visual.{n}"), s)).collect()
}

/// Adds the vision tokens the tokenizer in `dir` lacks; returns their ids in `VISION_TOKENS`'
/// order and the vocabulary size after.
fn vision_token_ids(dir: &Path) -> Result<([u32; 4], usize)> {
    let path = dir.join("tokenizer.json");
    let tok_err = |e: tokenizers::Error| TrainerError::Tokenizer(e.to_string());
    let mut t = tokenizers::Tokenizer::from_file(&path).map_err(tok_err)?;
    let missing: Vec<tokenizers::AddedToken> = VISION_TOKENS
        .iter()
        .filter(|s| t.token_to_id(s).is_none())
        .map(|s| tokenizers::AddedToken::from(s.to_string(), true))
        .collect();
    if !missing.is_empty() {
        let _added = t.add_special_tokens(missing);
        t.save(&path, true).map_err(tok_err)?;
    }
    let mut ids = [0u32; 4];
    for (slot, s) in ids.iter_mut().zip(VISION_TOKENS) {
        *slot = t
            .token_to_id(s)
            .ok_or_else(|| TrainerError::Tokenizer(format!("the tokenizer has no `{s}`")))?;
    }
    Ok((ids, t.get_vocab_size(true)))
}

/// Writes a tiny Qwen3-VL or Qwen2.5-VL (`vision.family`) into `dir` (created): the text model
/// of `spec` (a Qwen2 one for Qwen2.5-VL, whatever `spec.arch` says, its heads
/// `hidden / heads` wide) and the tower of `vision`.
/// Returns the vocabulary size.
pub fn write_vl(
    dir: &Path,
    spec: &TinySpec,
    vision: &TinyVision,
    tokenizer: &TokenizerSource,
) -> Result<usize> {
    super::tiny::write(dir, spec, tokenizer)?;
    let ([start, end, image, video], vocab) = vision_token_ids(dir)?;
    let text_path = dir.join("config.json");
    let mut text: Json = serde_json::from_str(&std::fs::read_to_string(&text_path)?)?;
    let obj = text
        .as_object_mut()
        .ok_or_else(|| TrainerError::Tokenizer("the text config is not an object".into()))?;
    for k in ["architectures", "rope_scaling", "rope_theta", "use_sliding_window"] {
        obj.remove(k);
    }
    for k in ["sliding_window", "max_window_layers", "torch_dtype", "tie_word_embeddings"] {
        obj.remove(k);
    }
    let half = match vision.family {
        VlFamily::Qwen3Vl => spec.head_dim / 2,
        VlFamily::Qwen25Vl => spec.hidden / spec.heads / 2,
    };
    let (hw, t) = (half / 3, half - 2 * (half / 3));
    obj.insert("vocab_size".into(), json!(vocab));
    let (config, processor) = match vision.family {
        VlFamily::Qwen3Vl => {
            obj.insert("model_type".into(), json!("qwen3_vl_text"));
            obj.insert(
                "rope_parameters".into(),
                json!({"rope_type": "default", "rope_theta": 5_000_000.0,
                       "mrope_section": [t, hw, hw], "mrope_interleaved": true}),
            );
            (qwen3_config(spec, vision, text, [start, end, image, video]), "Qwen3VLProcessor")
        }
        VlFamily::Qwen25Vl => {
            // A Qwen2 decoder: no q/k norms, its attention as wide as hidden / heads.
            obj.insert("model_type".into(), json!("qwen2_5_vl_text"));
            obj.remove("head_dim");
            obj.remove("attention_bias");
            obj.insert(
                "rope_parameters".into(),
                json!({"rope_type": "default", "rope_theta": 1_000_000.0,
                       "mrope_section": [t, hw, hw]}),
            );
            (qwen25_config(spec, vision, text, [start, end, image, video]), "Qwen2_5_VLProcessor")
        }
    };
    write_json(&text_path, &config)?;
    let edge = vision.patch * 2;
    write_json(
        &dir.join("preprocessor_config.json"),
        &json!({
            "size": {"longest_edge": vision.max_pixels, "shortest_edge": 4 * edge * edge},
            "patch_size": vision.patch, "temporal_patch_size": 2, "merge_size": 2,
            "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
            "processor_class": processor, "image_processor_type": "Qwen2VLImageProcessorFast",
        }),
    )?;
    let parsed = crate::vision::VlConfig::parse(&serde_json::to_string(&config)?)?;
    let text_tensors = super::files::expected_tensors(&parsed.text)
        .into_iter()
        .map(|(n, s)| (checkpoint_name(&n), s));
    let all = text_tensors.chain(vision_tensors(vision, spec.hidden));
    super::tiny::save_random(dir, all, spec.seed ^ 0x71b1_0e5e)?;
    Ok(vocab)
}

/// A Qwen3-VL `config.json` around the text part `text`; `ids`: vision start, end, image, video.
fn qwen3_config(spec: &TinySpec, vision: &TinyVision, text: Json, ids: [u32; 4]) -> Json {
    let [start, end, image, video] = ids;
    json!({
        "architectures": ["Qwen3VLForConditionalGeneration"], "model_type": "qwen3_vl",
        "text_config": text, "tie_word_embeddings": spec.tie,
        "image_token_id": image, "video_token_id": video,
        "vision_start_token_id": start, "vision_end_token_id": end,
        "vision_config": {
            "model_type": "qwen3_vl_vision", "depth": vision.depth, "hidden_size": vision.hidden,
            "intermediate_size": vision.intermediate, "num_heads": vision.heads,
            "patch_size": vision.patch, "temporal_patch_size": 2, "spatial_merge_size": 2,
            "out_hidden_size": spec.hidden, "num_position_embeddings": vision.positions,
            "deepstack_visual_indexes": vision.deepstack, "hidden_act": "gelu_pytorch_tanh",
            "in_channels": 3, "initializer_range": 0.02,
        },
        "dtype": "float32",
    })
}

/// A Qwen2.5-VL `config.json` around the text part `text`, as transformers' `save_pretrained`
/// lays it out (nested); `ids`: vision start, end, image, video.
fn qwen25_config(spec: &TinySpec, vision: &TinyVision, text: Json, ids: [u32; 4]) -> Json {
    let [start, end, image, video] = ids;
    json!({
        "architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl",
        "text_config": text, "tie_word_embeddings": spec.tie,
        "image_token_id": image, "video_token_id": video,
        "vision_start_token_id": start, "vision_end_token_id": end,
        "vision_config": {
            "model_type": "qwen2_5_vl_vision", "depth": vision.depth, "hidden_size": vision.hidden,
            "intermediate_size": vision.intermediate, "num_heads": vision.heads,
            "patch_size": vision.patch, "temporal_patch_size": 2, "spatial_merge_size": 2,
            "out_hidden_size": spec.hidden, "window_size": vision.window_size,
            "fullatt_block_indexes": vision.fullatt, "hidden_act": "silu",
            "tokens_per_second": 2, "in_channels": 3, "initializer_range": 0.02,
        },
        "dtype": "float32",
    })
}
