//! The trainer's error type: one enum so the executor can tell configuration mistakes from I/O and numeric failures.

/// Everything that can go wrong in the trainer.
#[derive(Debug, thiserror::Error)]
pub enum TrainerError {
    /// A tensor operation failed (shape mismatch, unsupported device, ...). Held without the
    /// backtrace candle attaches under `RUST_BACKTRACE`: messages reach users, stacks do not.
    #[error("tensor error: {0}")]
    Candle(candle_core::Error),
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

impl From<candle_core::Error> for TrainerError {
    fn from(e: candle_core::Error) -> Self {
        TrainerError::Candle(without_backtrace(e))
    }
}

/// `e` with every backtrace candle wrapped around it removed.
fn without_backtrace(e: candle_core::Error) -> candle_core::Error {
    match e {
        candle_core::Error::WithBacktrace { inner, .. } => without_backtrace(*inner),
        candle_core::Error::WithPath { inner, path } => {
            candle_core::Error::WithPath { inner: Box::new(without_backtrace(*inner)), path }
        }
        other => other,
    }
}

/// Result alias used across the crate.
pub type Result<T> = std::result::Result<T, TrainerError>;

/// Shorthand for a configuration error.
pub(crate) fn config_err(msg: impl Into<String>) -> TrainerError {
    TrainerError::Config(msg.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Under `RUST_BACKTRACE=1` candle attaches a stack to its errors; the trainer's message
    /// carries none.
    #[test]
    fn a_candle_error_reads_without_its_backtrace() {
        let inner = candle_core::Error::Msg("shape mismatch".into());
        let e = candle_core::Error::WithBacktrace {
            inner: Box::new(inner),
            backtrace: Box::new(std::backtrace::Backtrace::force_capture()),
        };
        assert_eq!(TrainerError::from(e).to_string(), "tensor error: shape mismatch");
    }
}
