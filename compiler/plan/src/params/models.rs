//! The model constructors the runtime runs: `hf` (a Hugging Face model directory or hub id),
//! `tiny_transformer` (the embedded byte-level policy) and `api` (a frozen model behind an
//! OpenAI-compatible endpoint).

use serde::Deserialize;

use super::or::OrNone;
use super::units::{Pixels, Seconds, Tokens};

/// `hf(id) { … }`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hf {
    pub id: String,
    pub context: Tokens,
    pub family: Family,
    pub dtype: DType,
    pub image_tokens: Tokens,
    /// The processor's pixel budget for one screenshot (`none`: `image_tokens` counts them).
    pub image_max_pixels: OrNone<Pixels>,
    pub chat_template: ChatTemplate,
    pub thinking: bool,
    pub device: Device,
    pub gradient_checkpointing: bool,
}

/// A part of a model that gets no gradient (a stage's `frozen`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FrozenPart {
    VisionTower,
    Projector,
    Embeddings,
    LmHead,
}

impl FrozenPart {
    /// The part as the recipe names it.
    pub fn word(self) -> &'static str {
        match self {
            FrozenPart::VisionTower => "vision_tower",
            FrozenPart::Projector => "projector",
            FrozenPart::Embeddings => "embeddings",
            FrozenPart::LmHead => "lm_head",
        }
    }
}

/// The architecture family a recipe names (`auto`: as the model's `config.json` says).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    Auto,
    Qwen2,
    Qwen3,
    Qwen3Vl,
    #[serde(rename = "qwen2_5_vl")]
    Qwen25Vl,
    Llama,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DType {
    Bf16,
    F16,
    F32,
}

/// How prompts and tool calls are rendered: the model's own template, or a fixed one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChatTemplate {
    Native,
    Hermes,
    Xml,
}

/// `tiny_transformer { … }`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TinyTransformer {
    pub layers: u32,
    pub d_model: u32,
    pub heads: u32,
    pub context: Tokens,
    pub positions: Positions,
    pub copy: bool,
    pub seed: u64,
    pub device: Device,
}

/// Where a model trains and samples (a model's `device`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Device {
    /// The first CUDA GPU when the runtime has CUDA and the machine a GPU, else the CPU.
    Auto,
    Cpu,
    /// `cuda(ordinal)`.
    Cuda(Cuda),
}

/// `cuda(ordinal)`: one CUDA GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cuda {
    pub ordinal: u32,
}

/// How the tiny policy knows where a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Positions {
    Learned,
    Alibi,
}

/// `api(model) { … }`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Api {
    pub model: String,
    pub base_url: String,
    pub api_key_env: String,
    pub context: Tokens,
    pub timeout: Seconds,
    pub retries: u32,
    pub concurrency: u32,
    pub temperature: f64,
    pub image_tokens: Tokens,
}
