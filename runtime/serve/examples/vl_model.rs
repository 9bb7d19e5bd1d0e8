//! Writes the tiny random Qwen3-VL in Hugging Face layout (`hf::tiny_vl`), so that scripts can
//! serve a vision-language model and send it images (`tests/scripts/openai-client.sh`).

use std::process::ExitCode;

use wrl_trainer::hf::tiny::{TinySpec, TokenizerSource};
use wrl_trainer::hf::tiny_vl::{TinyVision, write_vl};

fn main() -> ExitCode {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: vl_model DIR");
        return ExitCode::from(2);
    };
    let corpus = vec!["Which button buys the blue mug?".to_string()];
    let tok = TokenizerSource::Generated { corpus, merges: 20 };
    match write_vl(std::path::Path::new(&dir), &TinySpec::narrow(), &TinyVision::default(), &tok) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
