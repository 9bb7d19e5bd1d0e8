//! Saves a tiny untrained byte-level policy as a checkpoint directory, so that scripts can start
//! `wrlc serve` without a training run (`tests/scripts/openai-client.sh`).

use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: tiny_checkpoint DIR");
        return ExitCode::from(2);
    };
    let config = serde_json::json!({
        "policy": {"family": "tiny", "layers": 1, "d_model": 32, "heads": 2, "context": 512},
        "seed": 11,
        "device": "cpu",
    });
    let result = serde_json::from_value::<wrl_trainer::TrainerConfig>(config)
        .map_err(|e| e.to_string())
        .and_then(|c| wrl_trainer::Trainer::new(c).map_err(|e| e.to_string()))
        .and_then(|t| t.save(std::path::Path::new(&dir)).map_err(|e| e.to_string()));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
