//! A checkpoint of a Hugging Face policy is itself a Hugging Face model directory: the weights
//! in `model.safetensors` (f32, `format: pt`, tied embeddings stored once) beside a copy of the
//! source's config (its dtype set to what the file holds), tokenizer, chat template and
//! generation config, so `AutoModelForCausalLM.from_pretrained(checkpoint)` loads it and
//! `wrlc serve` needs nothing but the checkpoint.

use std::path::Path;

use serde_json::Value as Json;

use crate::error::{Result, TrainerError};
use crate::models::QwenModel;

/// The files copied from the model directory, when it has them.
const COPIED: &[&str] = &[
    "tokenizer.json",
    "tokenizer_config.json",
    "chat_template.jinja",
    "special_tokens_map.json",
    "generation_config.json",
    "vocab.json",
    "merges.txt",
    "added_tokens.json",
];

/// Writes `model`'s weights and its model directory's files into `dir`.
pub fn write_model_dir(model: &QwenModel, dir: &Path) -> Result<()> {
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    // An adapted model is written merged: plain Hugging Face weights (`lora.rs`).
    let merged = match &model.lora {
        Some(spec) => Some(crate::lora::merged_store(&model.params, spec)?),
        None => None,
    };
    let params = merged.as_ref().unwrap_or(&model.params);
    match &model.vision {
        None => params.save_with_metadata(&dir.join("model.safetensors"), &[("format", "pt")])?,
        Some(_) => write_vl_weights(params, &model.path, &dir.join("model.safetensors"))?,
    }
    if same(&model.path, dir) {
        return Ok(());
    }
    let vl_files: &[&str] =
        if model.vision.is_some() { &["preprocessor_config.json"] } else { &[] };
    for f in COPIED.iter().chain(vl_files) {
        let from = model.path.join(f);
        if from.is_file() {
            std::fs::copy(&from, dir.join(f))?;
        }
    }
    let text = std::fs::read_to_string(model.path.join("config.json"))?;
    let mut config: Json = serde_json::from_str(&text)?;
    let obj = config
        .as_object_mut()
        .ok_or_else(|| TrainerError::Checkpoint("`config.json` is not an object".into()))?;
    // The weights are f32 whatever the source held; transformers 4 reads `torch_dtype`, 5 `dtype`.
    for k in ["torch_dtype", "dtype"] {
        if obj.contains_key(k) || k == "dtype" {
            obj.insert(k.to_string(), Json::String("float32".into()));
        }
    }
    std::fs::write(dir.join("config.json"), serde_json::to_string_pretty(&config)?)?;
    Ok(())
}

/// A Qwen3-VL checkpoint's weights in its own layout: the trained text decoder under
/// `model.language_model.*` and the tower's tensors (which never train) as the source holds
/// them, all f32, so the directory loads as the source did (`vision::QwenVlModel::load`).
fn write_vl_weights(params: &crate::params::ParamStore, source: &Path, to: &Path) -> Result<()> {
    use candle_core::{DType, Device, Tensor};
    let mut tensors: Vec<(String, Tensor)> = params
        .iter()
        .map(|(k, v)| (crate::vision::vl_model::checkpoint_name(k), v.as_tensor().clone()))
        .collect();
    for shard in crate::hf::files::shards(source)? {
        for (name, t) in candle_core::safetensors::load(&shard, &Device::Cpu)? {
            if name.starts_with("model.visual.") || name.starts_with("visual.") {
                tensors.push((name, t.to_dtype(DType::F32)?));
            }
        }
    }
    tensors.sort_by(|a, b| a.0.cmp(&b.0));
    let meta: std::collections::HashMap<String, String> =
        [("format".to_string(), "pt".to_string())].into_iter().collect();
    let views: Vec<(String, &Tensor)> = tensors.iter().map(|(k, t)| (k.clone(), t)).collect();
    safetensors::tensor::serialize_to_file(views, Some(meta), to)
        .map_err(|e| TrainerError::Checkpoint(format!("cannot write {}: {e}", to.display())))
}
