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
