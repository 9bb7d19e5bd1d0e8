//! Tokenizers: the byte-level vocabulary of `std::models::tiny` (256 bytes + specials) and
//! Hugging Face `tokenizer.json` files for Qwen checkpoints, plus the chat rendering both use.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Result, TrainerError};

/// Who produced a segment of a conversation or trajectory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// System prompt.
    System,
    /// User / task text.
    User,
    /// The policy's own output: the only role trained on by default.
    Assistant,
    /// Tool output (feedback after an action). Masked; kept in history.
    Tool,
    /// An environment observation (page text, accessibility tree, screenshot stand-in). Masked;
    /// per-turn examples keep only the current one.
    Observation,
}

impl Role {
    /// The role name used in ChatML rendering.
    pub fn chatml_name(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User | Role::Observation => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// Special token ids of the byte vocabulary.
pub mod byte_specials {
    /// Beginning of sequence.
    pub const BOS: u32 = 256;
    /// End of a turn / sequence.
    pub const EOS: u32 = 257;
    /// Padding (never trained on).
    pub const PAD: u32 = 258;
    /// Starts a system segment.
    pub const SYSTEM: u32 = 259;
    /// Starts a user segment.
    pub const USER: u32 = 260;
    /// Starts an assistant segment.
    pub const ASSISTANT: u32 = 261;
    /// Starts a tool-output segment.
    pub const TOOL: u32 = 262;
    /// Starts an observation segment.
    pub const OBSERVATION: u32 = 263;
    /// Size of the byte vocabulary.
    pub const VOCAB: usize = 264;
}

/// A tokenizer plus the chat conventions of its model family.
#[derive(Debug, Clone)]
pub enum Tokenizer {
    /// Bytes 0–255 are themselves; specials follow (see [`byte_specials`]).
    Bytes,
    /// A Hugging Face tokenizer with ChatML (`<|im_start|>role\n … <|im_end|>\n`) rendering.
    Hf {
        /// The loaded tokenizer.
        inner: Box<tokenizers::Tokenizer>,
        /// Id of `<|im_start|>`.
        im_start: u32,
        /// Id of `<|im_end|>` (end of turn; the generation stop token).
        im_end: u32,
        /// Id used for padding (never trained on).
        pad: u32,
    },
}

impl Tokenizer {
    /// Load a `tokenizer.json`. It must define `<|im_start|>` and `<|im_end|>`.
    pub fn from_file(path: &Path) -> Result<Tokenizer> {
        let inner = tokenizers::Tokenizer::from_file(path)
            .map_err(|e| TrainerError::Tokenizer(format!("{}: {e}", path.display())))?;
        let id = |tok: &str| {
            inner.token_to_id(tok).ok_or_else(|| {
                TrainerError::Tokenizer(format!("{} has no `{tok}` token", path.display()))
            })
        };
        let im_start = id("<|im_start|>")?;
        let im_end = id("<|im_end|>")?;
        let pad = inner.token_to_id("<|endoftext|>").unwrap_or(im_end);
        Ok(Tokenizer::Hf { inner: Box::new(inner), im_start, im_end, pad })
    }

    /// Number of ids the tokenizer can produce.
    pub fn vocab_size(&self) -> usize {
        match self {
            Tokenizer::Bytes => byte_specials::VOCAB,
            Tokenizer::Hf { inner, .. } => inner.get_vocab_size(true),
        }
    }

    /// Encode plain text (no special tokens added).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        match self {
            Tokenizer::Bytes => Ok(text.bytes().map(u32::from).collect()),
            Tokenizer::Hf { inner, .. } => Ok(inner
                .encode(text, false)
                .map_err(|e| TrainerError::Tokenizer(e.to_string()))?
                .get_ids()
                .to_vec()),
        }
    }

    /// Decode ids to text; special tokens are dropped, invalid UTF-8 is replaced.
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        match self {
            Tokenizer::Bytes => {
                let bytes: Vec<u8> = ids.iter().filter_map(|&i| u8::try_from(i).ok()).collect();
                Ok(String::from_utf8_lossy(&bytes).into_owned())
            }
            Tokenizer::Hf { inner, .. } => {
                inner.decode(ids, true).map_err(|e| TrainerError::Tokenizer(e.to_string()))
            }
        }
    }

    /// The end-of-turn id: generation stops when it is sampled.
    pub fn eos_id(&self) -> u32 {
        match self {
            Tokenizer::Bytes => byte_specials::EOS,
            Tokenizer::Hf { im_end, .. } => *im_end,
        }
    }

    /// The padding id.
    pub fn pad_id(&self) -> u32 {
        match self {
            Tokenizer::Bytes => byte_specials::PAD,
            Tokenizer::Hf { pad, .. } => *pad,
        }
    }

    /// Tokens that open a sequence (BOS for bytes, nothing for ChatML).
    pub fn sequence_start(&self) -> Vec<u32> {
        match self {
            Tokenizer::Bytes => vec![byte_specials::BOS],
            Tokenizer::Hf { .. } => Vec::new(),
        }
    }

    /// Tokens that open a segment of `role` (never trained on).
    pub fn turn_header(&self, role: Role) -> Result<Vec<u32>> {
        match self {
            Tokenizer::Bytes => Ok(vec![match role {
                Role::System => byte_specials::SYSTEM,
                Role::User => byte_specials::USER,
                Role::Assistant => byte_specials::ASSISTANT,
                Role::Tool => byte_specials::TOOL,
                Role::Observation => byte_specials::OBSERVATION,
            }]),
            Tokenizer::Hf { im_start, .. } => {
                let mut v = vec![*im_start];
                v.extend(self.encode(&format!("{}\n", role.chatml_name()))?);
                Ok(v)
            }
        }
    }

    /// Tokens that close a segment: (trained part, untrained trailer). The end-of-turn token is
    /// trained on for assistant segments so the policy learns to stop.
    pub fn turn_end(&self) -> Result<(Vec<u32>, Vec<u32>)> {
        match self {
            Tokenizer::Bytes => Ok((vec![byte_specials::EOS], Vec::new())),
            Tokenizer::Hf { im_end, .. } => Ok((vec![*im_end], self.encode("\n")?)),
        }
    }
}
