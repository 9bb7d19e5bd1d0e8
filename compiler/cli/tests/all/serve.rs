//! `wrlc serve` refuses before loading anything when the checkpoint is missing or not one, or
//! the address is not loopback without `--public`: coded errors with a help line, exit 2.

use wrl_cli::run_captured;

#[test]
fn a_missing_checkpoint_is_a_coded_error() {
    let (code, out, err) =
        run_captured(["serve", "no/such/run/checkpoints/sft", "--addr", "127.0.0.1:0"]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("E0503") && err.contains("no/such/run/checkpoints/sft"), "{err}");
    assert!(err.contains("help:"), "{err}");
}

#[test]
fn a_directory_that_is_not_a_checkpoint_is_refused() {
    let (code, _, err) =
        run_captured(["serve", env!("CARGO_MANIFEST_DIR"), "--addr", "127.0.0.1:0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("E0503") && err.contains("not a checkpoint"), "{err}");
}

#[test]
fn a_public_address_needs_public() {
    let (code, _, err) = run_captured(["serve", "no/such/ckpt", "--addr", "0.0.0.0:0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a loopback address") && err.contains("--public"), "{err}");
}

#[test]
fn help_has_examples() {
    // Help is not an error: it goes to standard output, as `wrlc` prints it.
    let (code, help, err) = run_captured(["serve", "--help"]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert!(help.contains("Examples:") && help.contains("--max-concurrency"), "{help}");
}

#[test]
fn connection_limits_are_refused_out_of_range_in_the_json_stream() {
    for (flag, value) in
        [("--max-connections", "0"), ("--idle-timeout", "0"), ("--idle-timeout", "1e9")]
    {
        let (code, _, err) =
            run_captured(["--error-format", "json", "serve", "no/such/ckpt", flag, value]);
        assert_eq!(code, 2, "{err}");
        let first: serde_json::Value =
            serde_json::from_str(err.lines().next().unwrap_or("")).unwrap_or_default();
        assert_eq!(first["code"], "E0531", "{err}");
        assert!(first["message"].as_str().unwrap_or("").contains(flag), "{err}");
    }
}

/// A hub id is looked up in the offline Hugging Face cache (`HF_HUB_CACHE`): a cached Qwen3-VL
/// snapshot resolves as a base model, never downloaded, and is served (its address the first
/// line of stdout) under the hub id.
#[test]
fn a_cached_hub_id_resolves_to_its_snapshot() {
    use std::io::{BufRead, Read};
    use wrl_trainer::hf::tiny::{TinySpec, TokenizerSource};
    use wrl_trainer::hf::tiny_vl::{TinyVision, write_vl};
    let cache = tempfile::tempdir().unwrap();
    let repo = cache.path().join("models--Org--Tiny-VL");
    let snapshot = repo.join("snapshots").join("0123abcd");
    let tok = TokenizerSource::Generated { corpus: vec!["a b".into()], merges: 4 };
    write_vl(&snapshot, &TinySpec::narrow(), &TinyVision::default(), &tok).unwrap();
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs").join("main"), "0123abcd").unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_wrlc"))
        .args(["serve", "Org/Tiny-VL", "--addr", "127.0.0.1:0"])
        .env("HF_HUB_CACHE", cache.path())
        .current_dir(cache.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    out.read_line(&mut first).unwrap();
    // Its stderr says which model it serves once it listens; the address reaches stdout first,
    // so the test reads stderr up to that line (or its end) before it stops the server.
    let mut errs = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut err = String::new();
    while !err.contains("Ctrl-C stops") && errs.read_line(&mut err).unwrap_or(0) > 0 {}
    // The server runs until stopped: this test's own child, stopped by its handle.
    let _ = child.kill();
    let _ = child.wait();
    errs.read_to_string(&mut err).unwrap_or_default();
    assert!(first.starts_with("serving policy at http://127.0.0.1:"), "{first}{err}");
    assert!(err.contains("0123abcd"), "the snapshot it resolved to: {err}");
    assert!(err.contains("model `Org/Tiny-VL`"), "{err}");
}
