//! `bench/hf-parity.sh` — candle against transformers on small random Qwen2/Qwen3 models
//! (logits, an SFT step's loss and gradient norm, chat-template token ids, a `wrlc run`
//! checkpoint through `from_pretrained`) — run when a Python with torch and transformers ≥ 5 is
//! at hand: `PARITY_PYTHON=/path/to/python`, or the script's own `bench/.venv-parity`. Without
//! one (CI has no Python) the test says so and passes: the parity is then checked by hand.

use std::path::Path;
use std::process::Command;

#[test]
fn candle_matches_transformers_when_python_is_at_hand() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let venv = root.join("bench/.venv-parity/bin/python");
    let python = match std::env::var_os("PARITY_PYTHON") {
        Some(p) => p,
        None if venv.is_file() => venv.into_os_string(),
        None => {
            eprintln!("skipped: set PARITY_PYTHON to a Python with torch and transformers >= 5");
            return;
        }
    };
    let work = tempfile::tempdir().unwrap();
    let out = Command::new("bash")
        .arg(root.join("bench/hf-parity.sh"))
        .env("PARITY_PYTHON", python)
        .env("WORK", work.path())
        .output()
        .expect("bash");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let rows: Vec<&str> =
        stdout.lines().filter(|l| l.ends_with(" yes") || l.ends_with(" NO")).collect();
    assert!(rows.len() >= 20, "{stdout}");
    assert!(rows.iter().all(|l| l.ends_with(" yes")), "{stdout}");
    assert!(stdout.contains("wrlc run checkpoint"), "{stdout}");
}
