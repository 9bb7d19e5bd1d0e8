//! A Qwen2 / Qwen2.5 / Qwen3 dense text `config.json`, read the way transformers reads it:
//! every field that enters the maths is honoured (sizes, grouped-query heads, head width, tied
//! embeddings, attention biases, RMSNorm ε, RoPE θ and its `default`, `linear` and `yarn`
//! scalings, sliding-window layers) or refused by name; fields that do not (bookkeeping,
//! generation defaults) are listed as inert; an unknown field is refused, not guessed at.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};

use super::HfError;

/// The architectures this runtime runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arch {
    /// Qwen2 and Qwen2.5: q/k/v biases, no q/k norm.
    Qwen2,
    /// Qwen3: per-head q/k RMSNorm, biases only with `attention_bias`.
    Qwen3,
}

impl Arch {
    /// `model_type` in `config.json`.
    pub fn model_type(self) -> &'static str {
        match self {
            Arch::Qwen2 => "qwen2",
            Arch::Qwen3 => "qwen3",
        }
    }

    /// The `architectures` entry of a causal LM of this type.
    pub fn class(self) -> &'static str {
        match self {
            Arch::Qwen2 => "Qwen2ForCausalLM",
            Arch::Qwen3 => "Qwen3ForCausalLM",
        }
    }
}

/// How RoPE frequencies are scaled (`rope_parameters` / `rope_scaling`).
#[derive(Debug, Clone, PartialEq)]
pub enum RopeKind {
    /// θ^(−2i/d).
    Default,
    /// Frequencies divided by `factor` (positions interpolated).
    Linear { factor: f64 },
    /// YaRN (Peng et al. 2023) as transformers computes it.
    Yarn {
        factor: f64,
        original_max: usize,
        /// Multiplies cos and sin; `None`: 0.1·ln(factor) + 1 (or the mscale ratio).
        attention_factor: Option<f64>,
        beta_fast: f64,
        beta_slow: f64,
        mscale: Option<f64>,
        mscale_all_dim: Option<f64>,
        truncate: bool,
    },
}

/// The fields of a Qwen `config.json` that define the network.
#[derive(Debug, Clone, PartialEq)]
pub struct QwenConfig {
    pub arch: Arch,
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub num_key_value_heads: usize,
    pub head_dim: usize,
    pub rms_norm_eps: f64,
    pub rope_theta: f64,
    pub rope: RopeKind,
    pub max_position_embeddings: usize,
    pub tie_word_embeddings: bool,
    /// Qwen3: q/k/v/o biases (Qwen2 always has q/k/v biases and no o bias).
    pub attention_bias: bool,
    /// The attention window of each layer; `None`: full causal attention.
    pub windows: Vec<Option<usize>>,
    /// `eos_token_id`, as a list.
    pub eos_token_ids: Vec<u32>,
}

/// Fields that do not change the network's outputs: bookkeeping, dtype hints (the recipe's
/// `dtype` decides), token ids, and generation defaults (the recipe's sampling decides).
pub(crate) const INERT: &[&str] = &[
    "_name_or_path",
    "transformers_version",
    "torch_dtype",
    "dtype",
    "use_cache",
    "initializer_range",
    "bos_token_id",
    "pad_token_id",
    "sep_token_id",
    "decoder_start_token_id",
    "id2label",
    "label2id",
    "num_labels",
    "problem_type",
    "tokenizer_class",
    "prefix",
    "task_specific_params",
    "finetuning_task",
    "output_attentions",
    "output_hidden_states",
    "return_dict",
    "torchscript",
    "use_bfloat16",
    "tf_legacy_loss",
    "pruned_heads",
    "chunk_size_feed_forward",
    "is_decoder",
    "is_encoder_decoder",
    "add_cross_attention",
    "cross_attention_hidden_size",
    "tie_encoder_decoder",
    "max_length",
    "min_length",
    "do_sample",
    "early_stopping",
    "num_beams",
    "num_beam_groups",
    "diversity_penalty",
    "temperature",
    "top_k",
    "top_p",
    "typical_p",
    "repetition_penalty",
    "length_penalty",
    "no_repeat_ngram_size",
    "encoder_no_repeat_ngram_size",
    "bad_words_ids",
    "num_return_sequences",
    "output_scores",
    "return_dict_in_generate",
    "forced_bos_token_id",
    "forced_eos_token_id",
    "remove_invalid_values",
    "exponential_decay_length_penalty",
    "suppress_tokens",
    "begin_suppress_tokens",
];

/// Fields read below (the network) or checked (`architectures`, `model_type`).
const READ: &[&str] = &[
    "architectures",
    "model_type",
    "vocab_size",
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "hidden_act",
    "rms_norm_eps",
    "rope_theta",
    "rope_scaling",
    "rope_parameters",
    "partial_rotary_factor",
    "max_position_embeddings",
    "tie_word_embeddings",
    "attention_bias",
    "attention_dropout",
    "use_sliding_window",
    "sliding_window",
    "max_window_layers",
    "layer_types",
    "eos_token_id",
];

fn field(field: &str, why: impl Into<String>) -> HfError {
    HfError::Field { field: field.to_string(), why: why.into() }
}

/// Which backend runs a model type this runtime does not.
fn elsewhere(model_type: &str) -> HfError {
    let verl = Some("verl".to_string());
    let (what, backend) = match model_type {
        "qwen2_vl" | "qwen2_5_vl" | "qwen3_vl" | "qwen3_vl_moe" => {
            ("a vision-language model", verl)
        }
        "qwen2_moe" | "qwen3_moe" => ("a mixture-of-experts model", verl),
        "llama" | "mistral" | "gemma" | "gemma2" | "gemma3" | "phi3" => {
            ("a dense text model of another family", verl)
        }
        _ => ("an architecture this runtime does not know", None),
    };
    HfError::Architecture {
        message: format!(
            "`model_type` `{model_type}` is {what}; this runtime runs Qwen2, Qwen2.5 and Qwen3 \
             dense text models"
        ),
        backend,
    }
}

/// `config.json` text as JSON (any value: each reader says what it needs of it).
pub fn parse_json(text: &str) -> Result<Json, HfError> {
    serde_json::from_str(text)
        .map_err(|e| HfError::Files(format!("`config.json` is not valid JSON: {e}")))
}

/// The top-level object of a parsed `config.json`.
pub fn as_object(v: &Json) -> Result<&Map<String, Json>, HfError> {
    v.as_object().ok_or_else(|| HfError::Files("`config.json` is not a JSON object".into()))
}

impl QwenConfig {
    /// Parses `config.json` text.
    pub fn parse(text: &str) -> Result<QwenConfig, HfError> {
        QwenConfig::from_json(&parse_json(text)?)
    }

    /// Reads a parsed `config.json`.
    pub fn from_json(v: &Json) -> Result<QwenConfig, HfError> {
        let obj = as_object(v)?;
        let model_type = obj.get("model_type").and_then(Json::as_str).unwrap_or("");
        let arch = match model_type {
            "qwen2" => Arch::Qwen2,
            "qwen3" => Arch::Qwen3,
            "" => {
                return Err(HfError::Architecture {
                    message: "`config.json` names no `model_type`".into(),
                    backend: None,
                });
            }
            other => return Err(elsewhere(other)),
        };
        if let Some(archs) = obj.get("architectures").filter(|a| !a.is_null()) {
            let names: Vec<&str> =
                archs.as_array().into_iter().flatten().filter_map(Json::as_str).collect();
            if names != [arch.class()] {
                return Err(HfError::Architecture {
                    message: format!(
                        "`architectures` is {archs}, not [\"{}\"]: this runtime runs causal \
                         language models only",
                        arch.class()
                    ),
                    backend: None,
                });
            }
        }
        if let Some(k) =
            obj.keys().find(|k| !READ.contains(&k.as_str()) && !INERT.contains(&k.as_str()))
        {
            return Err(field(
                k,
                "this runtime does not know the field, so it cannot tell whether it changes the \
                 model's outputs",
            ));
        }
        let get = |k: &str| obj.get(k).filter(|x| !x.is_null());
        let size = |k: &str, default: usize| positive(get(k), default).map_err(|why| field(k, why));
        let float = |k: &str, default: f64| -> Result<f64, HfError> {
            match get(k) {
                None => Ok(default),
                Some(x) => x.as_f64().ok_or_else(|| field(k, format!("{x} is not a number"))),
            }
        };
        let flag = |k: &str, default: bool| -> Result<bool, HfError> {
            match get(k) {
                None => Ok(default),
                Some(x) => x.as_bool().ok_or_else(|| field(k, format!("{x} is not a boolean"))),
            }
        };
        let act = get("hidden_act").and_then(Json::as_str).unwrap_or("silu");
        if act != "silu" {
            return Err(field(
                "hidden_act",
                format!("`{act}` is not implemented (SwiGLU uses `silu`)"),
            ));
        }
        let dropout = float("attention_dropout", 0.0)?;
        if dropout != 0.0 {
            return Err(field(
                "attention_dropout",
                format!("{dropout}: this runtime trains without dropout; set it to 0.0"),
            ));
        }
        let heads = size("num_attention_heads", 32)?;
        let hidden = size("hidden_size", 4096)?;
        let kv = size("num_key_value_heads", heads)?;
        if !heads.is_multiple_of(kv) {
            return Err(field(
                "num_key_value_heads",
                format!("{kv} does not divide `num_attention_heads` = {heads}"),
            ));
        }
        let head_dim = match arch {
            Arch::Qwen3 => size("head_dim", 128)?,
            Arch::Qwen2 => size("head_dim", hidden / heads)?,
        };
        if !head_dim.is_multiple_of(2) {
            return Err(field("head_dim", format!("{head_dim} is odd: RoPE rotates pairs")));
        }
        let layers = size("num_hidden_layers", 32)?;
        let max_pos = size("max_position_embeddings", 32768)?;
        let (rope_theta, rope) = rope(obj, max_pos)?;
        let eos_token_ids = match get("eos_token_id") {
            None => Vec::new(),
            Some(x) => token_ids(x).ok_or_else(|| {
                field("eos_token_id", format!("{x} is not a token id or a list of them"))
            })?,
        };
        Ok(QwenConfig {
            arch,
            vocab_size: size("vocab_size", 151936)?,
            hidden_size: hidden,
            intermediate_size: size("intermediate_size", 22016)?,
            num_hidden_layers: layers,
            num_attention_heads: heads,
            num_key_value_heads: kv,
            head_dim,
            rms_norm_eps: float("rms_norm_eps", 1e-6)?,
            rope_theta,
            rope,
            max_position_embeddings: max_pos,
            tie_word_embeddings: flag("tie_word_embeddings", false)?,
            attention_bias: match arch {
                Arch::Qwen3 => flag("attention_bias", false)?,
                // Qwen2's attention reads no such field: q/k/v always have biases.
                Arch::Qwen2 => false,
            },
            windows: windows(obj, layers, flag("use_sliding_window", false)?)?,
            eos_token_ids,
        })
    }

    /// Per-head width.
    pub fn head_dim(&self) -> usize {
        self.head_dim
    }
    /// Qwen3 has per-head q/k RMSNorm.
    pub fn is_qwen3(&self) -> bool {
        self.arch == Arch::Qwen3
    }
    /// Whether q/k/v projections carry a bias.
    pub fn qkv_bias(&self) -> bool {
        !self.is_qwen3() || self.attention_bias
    }
    /// Whether the output projection carries a bias.
    pub fn o_bias(&self) -> bool {
        self.is_qwen3() && self.attention_bias
    }

    /// Number of scalar parameters (tied embeddings counted once).
    pub fn parameters(&self) -> u64 {
        let (h, v, i) =
            (self.hidden_size as u64, self.vocab_size as u64, self.intermediate_size as u64);
        let (q, kv) = (
            (self.num_attention_heads * self.head_dim) as u64,
            (self.num_key_value_heads * self.head_dim) as u64,
        );
        let mut layer = h * q + 2 * h * kv + q * h + 3 * h * i + 2 * h;
        if self.qkv_bias() {
            layer += q + 2 * kv;
        }
        if self.o_bias() {
            layer += h;
        }
        if self.is_qwen3() {
            layer += 2 * self.head_dim as u64;
        }
        let head = if self.tie_word_embeddings { 0 } else { v * h };
        v * h + head + h + self.num_hidden_layers as u64 * layer
    }
}

/// A token id or a list of them.
pub(crate) fn token_ids(x: &Json) -> Option<Vec<u32>> {
    match x {
        Json::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()).map(|n| vec![n]),
        Json::Array(a) => {
            a.iter().map(|x| x.as_u64().and_then(|n| u32::try_from(n).ok())).collect()
        }
        _ => None,
    }
}

/// θ and the scaling: `rope_scaling` (transformers 4) replaces `rope_parameters` (5) when set;
/// θ comes from the dict, else `rope_theta`, else 10 000.
fn rope(obj: &Map<String, Json>, max_pos: usize) -> Result<(f64, RopeKind), HfError> {
    let (name, params) = match (obj.get("rope_scaling"), obj.get("rope_parameters")) {
        (Some(Json::Object(m)), _) => ("rope_scaling", m.clone()),
        (_, Some(Json::Object(m))) => ("rope_parameters", m.clone()),
        (Some(x), _) if !x.is_null() => {
            return Err(field("rope_scaling", format!("{x} is not an object")));
        }
        (_, Some(x)) if !x.is_null() => {
            return Err(field("rope_parameters", format!("{x} is not an object")));
        }
        _ => ("rope_parameters", Map::new()),
    };
    let at = |k: &str| format!("{name}.{k}");
    let num = |k: &str| -> Result<Option<f64>, HfError> {
        match params.get(k).filter(|x| !x.is_null()) {
            None => Ok(None),
            Some(x) => {
                x.as_f64().map(Some).ok_or_else(|| field(&at(k), format!("{x} is not a number")))
            }
        }
    };
    let theta = match num("rope_theta")? {
        Some(t) => t,
        None => match obj.get("rope_theta").filter(|x| !x.is_null()) {
            None => 10_000.0,
            Some(x) => {
                x.as_f64().ok_or_else(|| field("rope_theta", format!("{x} is not a number")))?
            }
        },
    };
    let partial = match num("partial_rotary_factor")? {
        Some(p) => Some(p),
        None => obj.get("partial_rotary_factor").and_then(Json::as_f64),
    };
    if partial.is_some_and(|p| p != 1.0) {
        return Err(field(
            "partial_rotary_factor",
            "partial rotary embeddings are not implemented",
        ));
    }
    let kind = params
        .get("rope_type")
        .or_else(|| params.get("type"))
        .and_then(Json::as_str)
        .unwrap_or("default")
        .to_string();
    let common = ["rope_type", "type", "rope_theta", "partial_rotary_factor"];
    let allowed: &[&str] = match kind.as_str() {
        "default" => &[],
        "linear" => &["factor"],
        "yarn" => &[
            "factor",
            "original_max_position_embeddings",
            "attention_factor",
            "beta_fast",
            "beta_slow",
            "mscale",
            "mscale_all_dim",
            "truncate",
        ],
        other => {
            return Err(field(
                &at("rope_type"),
                format!("`{other}` RoPE is not implemented (`default`, `linear` and `yarn` are)"),
            ));
        }
    };
    if let Some(k) =
        params.keys().find(|k| !common.contains(&k.as_str()) && !allowed.contains(&k.as_str()))
    {
        return Err(field(&at(k), format!("not a parameter of `{kind}` RoPE in this runtime")));
    }
    let factor = |required: bool| -> Result<Option<f64>, HfError> {
        match num("factor")? {
            Some(f) if f > 0.0 => Ok(Some(f)),
            Some(f) => Err(field(&at("factor"), format!("{f} is not positive"))),
            None if required => Err(field(&at("factor"), "missing")),
            None => Ok(None),
        }
    };
    let rope = match kind.as_str() {
        "linear" => RopeKind::Linear { factor: factor(true)?.unwrap_or(1.0) },
        "yarn" => {
            let original_max =
                match params.get("original_max_position_embeddings").and_then(Json::as_u64) {
                    Some(n) => n as usize,
                    None => max_pos,
                };
            let factor = factor(false)?.unwrap_or(max_pos as f64 / original_max as f64);
            let truncate = match params.get("truncate") {
                None | Some(Json::Null) => true,
                Some(Json::Bool(b)) => *b,
                Some(x) => return Err(field(&at("truncate"), format!("{x} is not a boolean"))),
            };
            RopeKind::Yarn {
                factor,
                original_max,
                attention_factor: num("attention_factor")?,
                beta_fast: num("beta_fast")?.filter(|b| *b != 0.0).unwrap_or(32.0),
                beta_slow: num("beta_slow")?.filter(|b| *b != 0.0).unwrap_or(1.0),
                mscale: num("mscale")?,
                mscale_all_dim: num("mscale_all_dim")?,
                truncate,
            }
        }
        _ => RopeKind::Default,
    };
    Ok((theta, rope))
}

/// Each layer's window, as transformers derives it: `sliding_window` only with
/// `use_sliding_window`, on the layers `layer_types` names `sliding_attention` (by default those
/// from `max_window_layers` on).
fn windows(
    obj: &Map<String, Json>,
    layers: usize,
    use_sliding: bool,
) -> Result<Vec<Option<usize>>, HfError> {
    let window = match obj.get("sliding_window").filter(|x| !x.is_null()) {
        None => None,
        Some(x) => Some(
            x.as_u64()
                .filter(|&n| n > 0)
                .ok_or_else(|| field("sliding_window", format!("{x} is not a positive integer")))?
                as usize,
        ),
    };
    let window = if use_sliding { window.or(Some(4096)) } else { None };
    let types: Vec<bool> = match obj.get("layer_types").filter(|x| !x.is_null()) {
        Some(Json::Array(a)) => {
            if a.len() != layers {
                return Err(field(
                    "layer_types",
                    format!("{} entries for {layers} layers", a.len()),
                ));
            }
            a.iter()
                .map(|t| match t.as_str() {
                    Some("full_attention") => Ok(false),
                    Some("sliding_attention") => Ok(true),
                    _ => Err(field(
                        "layer_types",
                        format!("{t} is not `full_attention` or `sliding_attention`"),
                    )),
                })
                .collect::<Result<_, _>>()?
        }
        Some(x) => return Err(field("layer_types", format!("{x} is not a list"))),
        None => {
            let from = match obj.get("max_window_layers").filter(|x| !x.is_null()) {
                None => 28,
                Some(x) => x
                    .as_u64()
                    .ok_or_else(|| field("max_window_layers", format!("{x} is not an integer")))?
                    as usize,
            };
            (0..layers).map(|i| window.is_some() && i >= from).collect()
        }
    };
    Ok(types.into_iter().map(|sliding| if sliding { window } else { None }).collect())
}

/// A config field as a positive integer: `default` where it is absent (or null), else why it
/// is not one. The text and vision readers name the field each in their own way.
pub(crate) fn positive(got: Option<&Json>, default: usize) -> Result<usize, String> {
    match got {
        None => Ok(default),
        Some(x) => x
            .as_u64()
            .filter(|&n| n > 0)
            .map(|n| n as usize)
            .ok_or_else(|| format!("{x} is not a positive integer")),
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
