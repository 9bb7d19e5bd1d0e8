//! The files of a Hugging Face model directory, checked without loading the weights: the config,
//! the safetensors shards (through their index when there is one) whose headers must hold exactly
//! the tensors the config implies with their shapes, the tokenizer, the chat template
//! (`chat_template.jinja`, where transformers 5 writes it, else `tokenizer_config.json`) and the
//! stop tokens of `generation_config.json`. `wrlc run --dry-run` runs all of it.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value as Json;

use super::HfError;
use super::config::{QwenConfig, token_ids};

/// What a model directory holds.
#[derive(Debug, Clone)]
pub struct ModelFiles {
    pub dir: PathBuf,
    pub config: QwenConfig,
    /// The safetensors shards, in order.
    pub weights: Vec<PathBuf>,
    pub tokenizer: PathBuf,
    /// `tokenizer_config.json`, or an empty object.
    pub tokenizer_config: Json,
    /// The chat template and the file it came from.
    pub template: Option<(PathBuf, String)>,
    /// `generation_config.json`'s `eos_token_id`s (empty without one).
    pub generation_eos: Vec<u32>,
    /// A Qwen3-VL checkpoint's whole config (`config` is then its `text_config`); its tensors
    /// are checked by name and shape when the model loads (`vision::QwenVlModel::load`).
    pub vision: Option<crate::vision::VlConfig>,
}

fn read(path: &Path) -> Result<String, HfError> {
    std::fs::read_to_string(path)
        .map_err(|e| HfError::NotFound(format!("cannot read `{}`: {e}", path.display())))
}

fn json_file(path: &Path) -> Result<Json, HfError> {
    serde_json::from_str(&read(path)?)
        .map_err(|e| HfError::Files(format!("`{}` is not valid JSON: {e}", path.display())))
}

/// Reads and checks the `config.json` of the model directory `dir`, and nothing else
/// (`wrlc estimate` needs only the sizes).
pub fn read_config(dir: &Path) -> Result<QwenConfig, HfError> {
    let config_path = dir.join("config.json");
    if !config_path.is_file() {
        return Err(HfError::NotFound(format!(
            "`{}` has no `config.json`: it is not a Hugging Face model directory",
            dir.display()
        )));
    }
    QwenConfig::parse(&read(&config_path)?)
}

/// Reads and checks the model directory `dir` (see the module doc).
pub fn inspect(dir: &Path) -> Result<ModelFiles, HfError> {
    let config_path = dir.join("config.json");
    let vision = match config_path.is_file().then(|| read(&config_path)).transpose()? {
        Some(text) if crate::vision::VlConfig::is_vl(&text) => {
            Some(crate::vision::VlConfig::parse(&text)?)
        }
        _ => None,
    };
    let config = match &vision {
        Some(vl) => vl.text.clone(),
        None => read_config(dir)?,
    };
    let weights = shards(dir)?;
    if vision.is_none() {
        check_tensors(&config, &weights)?;
    }
    let tokenizer = dir.join("tokenizer.json");
    if !tokenizer.is_file() {
        return Err(HfError::NotFound(format!(
            "`{}` has no `tokenizer.json` (this runtime reads fast tokenizers only)",
            dir.display()
        )));
    }
    let tc_path = dir.join("tokenizer_config.json");
    let tokenizer_config =
        if tc_path.is_file() { json_file(&tc_path)? } else { Json::Object(Default::default()) };
    let jinja = dir.join("chat_template.jinja");
    let template = if jinja.is_file() {
        Some((jinja.clone(), read(&jinja)?))
    } else {
        match tokenizer_config.get("chat_template") {
            Some(Json::String(s)) => Some((tc_path.clone(), s.clone())),
            // A list of named templates: the one named `default`.
            Some(Json::Array(named)) => named
                .iter()
                .find(|t| t.get("name").and_then(Json::as_str) == Some("default"))
                .and_then(|t| t.get("template").and_then(Json::as_str))
                .map(|s| (tc_path.clone(), s.to_string())),
            _ => None,
        }
    };
    let gen_path = dir.join("generation_config.json");
    let generation_eos = if gen_path.is_file() {
        match json_file(&gen_path)?.get("eos_token_id") {
            None | Some(Json::Null) => Vec::new(),
            Some(x) => token_ids(x).ok_or_else(|| {
                HfError::Files(format!(
                    "`generation_config.json`: `eos_token_id` {x} is not a token id"
                ))
            })?,
        }
    } else {
        Vec::new()
    };
    Ok(ModelFiles {
        dir: dir.to_path_buf(),
        config,
        weights,
        tokenizer,
        tokenizer_config,
        template,
        generation_eos,
        vision,
    })
}

/// The shards: those the index names, else `model.safetensors`, else every `*.safetensors`.
pub(crate) fn shards(dir: &Path) -> Result<Vec<PathBuf>, HfError> {
    let index = dir.join("model.safetensors.index.json");
    if index.is_file() {
        let v = json_file(&index)?;
        let map = v.get("weight_map").and_then(Json::as_object).ok_or_else(|| {
            HfError::Files("`model.safetensors.index.json` has no `weight_map`".into())
        })?;
        let mut files: Vec<String> =
            map.values().filter_map(Json::as_str).map(str::to_string).collect();
        files.sort();
        files.dedup();
        let paths: Vec<PathBuf> = files.iter().map(|f| dir.join(f)).collect();
        if let Some(missing) = paths.iter().find(|p| !p.is_file()) {
            return Err(HfError::NotFound(format!(
                "`{}` is named by the index but missing (an incomplete download?)",
                missing.display()
            )));
        }
        return Ok(paths);
    }
    let single = dir.join("model.safetensors");
    if single.is_file() {
        return Ok(vec![single]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| HfError::NotFound(format!("cannot read `{}`: {e}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "safetensors"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(HfError::NotFound(format!(
            "`{}` has no `*.safetensors` weights (this runtime reads safetensors only)",
            dir.display()
        )));
    }
    Ok(files)
}

/// A shard's raw header (its JSON object, `__metadata__` included) and the length of the
/// header in bytes: the tensors' `data_offsets` count from byte 8 + that length.
pub(crate) fn raw_header(path: &Path) -> Result<(serde_json::Map<String, Json>, u64), HfError> {
    let bad = |why: String| {
        HfError::Files(format!("`{}` is not a safetensors file: {why}", path.display()))
    };
    let mut f = std::fs::File::open(path)
        .map_err(|e| HfError::NotFound(format!("cannot read `{}`: {e}", path.display())))?;
    let mut len = [0u8; 8];
    f.read_exact(&mut len).map_err(|e| bad(e.to_string()))?;
    let n = u64::from_le_bytes(len);
    if n > 100_000_000 {
        return Err(bad(format!("a header of {n} bytes")));
    }
    let mut text = vec![0u8; n as usize];
    f.read_exact(&mut text).map_err(|e| bad(e.to_string()))?;
    let v: Json = serde_json::from_slice(&text).map_err(|e| bad(e.to_string()))?;
    match v {
        Json::Object(obj) => Ok((obj, n)),
        _ => Err(bad("the header is not an object".into())),
    }
}

/// A shard's header: tensor name → (dtype, shape).
pub fn header(path: &Path) -> Result<BTreeMap<String, (String, Vec<usize>)>, HfError> {
    let bad = |why: String| {
        HfError::Files(format!("`{}` is not a safetensors file: {why}", path.display()))
    };
    let (obj, _) = raw_header(path)?;
    let mut out = BTreeMap::new();
    for (name, t) in obj.iter().filter(|(k, _)| *k != "__metadata__") {
        let dtype = t.get("dtype").and_then(Json::as_str).unwrap_or("").to_string();
        let shape: Option<Vec<usize>> = t
            .get("shape")
            .and_then(Json::as_array)
            .map(|a| a.iter().filter_map(|x| x.as_u64().map(|x| x as usize)).collect());
        out.insert(
            name.clone(),
            (dtype, shape.ok_or_else(|| bad(format!("`{name}` has no shape")))?),
        );
    }
    Ok(out)
}

/// Every tensor the config implies, with its shape, by Hugging Face name, in the order a layer
/// defines them (embeddings, then each layer's attention, MLP and norms, then the head).
pub fn expected_tensors(c: &QwenConfig) -> Vec<(String, Vec<usize>)> {
    let (h, v, i) = (c.hidden_size, c.vocab_size, c.intermediate_size);
    let (q, kv, hd) =
        (c.num_attention_heads * c.head_dim, c.num_key_value_heads * c.head_dim, c.head_dim);
    let mut out = vec![("model.embed_tokens.weight".to_string(), vec![v, h])];
    for l in 0..c.num_hidden_layers {
        let mut add = |s: &str, shape: Vec<usize>| {
            out.push((format!("model.layers.{l}.{s}"), shape));
        };
        add("self_attn.q_proj.weight", vec![q, h]);
        add("self_attn.k_proj.weight", vec![kv, h]);
        add("self_attn.v_proj.weight", vec![kv, h]);
        add("self_attn.o_proj.weight", vec![h, q]);
        if c.qkv_bias() {
            add("self_attn.q_proj.bias", vec![q]);
            add("self_attn.k_proj.bias", vec![kv]);
            add("self_attn.v_proj.bias", vec![kv]);
        }
        if c.o_bias() {
            add("self_attn.o_proj.bias", vec![h]);
        }
        if c.is_qwen3() {
            add("self_attn.q_norm.weight", vec![hd]);
            add("self_attn.k_norm.weight", vec![hd]);
        }
        add("mlp.gate_proj.weight", vec![i, h]);
        add("mlp.up_proj.weight", vec![i, h]);
        add("mlp.down_proj.weight", vec![h, i]);
        add("input_layernorm.weight", vec![h]);
        add("post_attention_layernorm.weight", vec![h]);
    }
    out.push(("model.norm.weight".to_string(), vec![h]));
    if !c.tie_word_embeddings {
        out.push(("lm_head.weight".to_string(), vec![v, h]));
    }
    out
}

/// Tensors a checkpoint may hold that are not parameters: RoPE buffers of old exports, and the
/// output head of a model whose embeddings are tied.
pub fn ignored_tensor(c: &QwenConfig, name: &str) -> bool {
    name.ends_with("rotary_emb.inv_freq") || (c.tie_word_embeddings && name == "lm_head.weight")
}

/// The shards' headers hold exactly the tensors the config implies, in a float dtype.
fn check_tensors(c: &QwenConfig, shards: &[PathBuf]) -> Result<(), HfError> {
    let order = expected_tensors(c);
    let want: BTreeMap<String, Vec<usize>> = order.iter().cloned().collect();
    let mut seen = BTreeMap::new();
    for s in shards {
        for (name, (dtype, shape)) in header(s)? {
            if ignored_tensor(c, &name) {
                continue;
            }
            let Some(expected) = want.get(&name) else {
                return Err(HfError::Files(format!(
                    "`{}` holds `{name}`, which a {} model of this `config.json` does not have",
                    s.display(),
                    c.arch.model_type()
                )));
            };
            if &shape != expected {
                return Err(HfError::Files(format!(
                    "`{name}` has shape {shape:?} in `{}`; `config.json` implies {expected:?}",
                    s.display()
                )));
            }
            if !matches!(dtype.as_str(), "F32" | "BF16" | "F16" | "F64") {
                return Err(HfError::Files(format!(
                    "`{name}` is stored as {dtype} in `{}`; this runtime reads float weights only \
                     (not quantized ones)",
                    s.display()
                )));
            }
            seen.insert(name, ());
        }
    }
    if let Some((missing, _)) = order.iter().find(|(k, _)| !seen.contains_key(k)) {
        return Err(HfError::Files(format!(
            "missing tensor `{missing}`: `config.json` implies it and the weights lack it"
        )));
    }
    Ok(())
}
