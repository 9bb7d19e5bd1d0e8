//! Writes a tiny randomly initialised Qwen2 or Qwen3 in Hugging Face layout (config.json,
//! model.safetensors, tokenizer.json with a byte-level BPE learned from a small built-in corpus,
//! tokenizer_config.json with Qwen3's chat template, generation_config.json): the model of the
//! smoke runs and of the preflight's fixtures, made without Python or a download.
//!
//! `cargo run -p wrl-trainer --example hf_tiny -- DIR [qwen2|qwen3] [hidden] [layers] [merges]`

use wrl_trainer::hf::Arch;
use wrl_trainer::hf::tiny::{self, TinySpec, TokenizerSource};

/// Text of the sandbox's tasks and actions, so the merges cover what the smoke run says.
const CORPUS: &[&str] = &[
    "task: find the price of the blue lamp and answer it",
    "click 3\ntype 2 lamp\nanswer 12.50\nsearch Barvel\nopen 1",
    "[1] link \"Home\"\n[2] textbox \"Search\"\n[3] button \"Go\"\nurl: /shop/item/7",
    "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": [\"Barvel\"]}}\n</tool_call>",
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dir) = args.first() else {
        eprintln!("usage: hf_tiny DIR [qwen2|qwen3] [hidden] [layers] [merges]");
        std::process::exit(2);
    };
    let num = |i: usize, d: usize| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(d);
    let arch = match args.get(1).map(String::as_str) {
        Some("qwen2") => Arch::Qwen2,
        _ => Arch::Qwen3,
    };
    let hidden = num(2, 64);
    let heads = (hidden / 16).max(2);
    let spec = TinySpec {
        arch,
        hidden,
        intermediate: 2 * hidden,
        layers: num(3, 2),
        heads,
        kv_heads: heads / 2,
        head_dim: (hidden / heads).max(2),
        ..TinySpec::default()
    };
    let corpus = CORPUS.iter().map(|s| s.to_string()).collect();
    match tiny::write(
        std::path::Path::new(dir),
        &spec,
        &TokenizerSource::Generated { corpus, merges: num(4, 200) },
    ) {
        Ok(vocab) => println!("{dir}: {} with vocabulary {vocab}", arch.model_type()),
        Err(e) => {
            eprintln!("hf_tiny: {e}");
            std::process::exit(1);
        }
    }
}
