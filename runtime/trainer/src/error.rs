//! The trainer's error type: one enum so the executor can tell configuration mistakes from I/O and numeric failures.

/// Everything that can go wrong in the trainer.
#[derive(Debug, thiserror::Error)]
pub enum TrainerError {
    /// A tensor operation failed (shape mismatch, unsupported device, ...).
    #[error("tensor error: {0}")]
    Candle(#[from] candle_core::Error),
    /// Reading or writing a file failed.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// A JSON document (config, trainer state, data line) did not parse.
    #[error("json error: {0}")]
    Json(#[from] serde_json::Error),
    /// A configuration value is invalid; the message says which and why.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A data file or example is malformed.
    #[error("invalid data: {0}")]
    Data(String),
    /// The tokenizer could not be loaded or failed to encode/decode.
    #[error("tokenizer error: {0}")]
    Tokenizer(String),
    /// A checkpoint is missing a tensor or has inconsistent contents.
    #[error("checkpoint error: {0}")]
    Checkpoint(String),
    /// A Hugging Face model cannot be found, run or rendered; its kind says why.
    #[error("{0}")]
    Hf(#[from] crate::hf::HfError),
}

/// Result alias used across the crate.
pub type Result<T> = std::result::Result<T, TrainerError>;

/// Shorthand for a configuration error.
pub(crate) fn config_err(msg: impl Into<String>) -> TrainerError {
    TrainerError::Config(msg.into())
}
