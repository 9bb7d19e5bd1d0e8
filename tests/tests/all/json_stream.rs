//! `--error-format json` for every command (docs/diagnostics-json.md): whatever a command
//! writes to standard error — diagnostics, runtime refusals, usage errors such as a missing
//! file or an unknown option, `wrlc serve`'s refusals, status lines — is one JSON object per
//! line, with the schema version, and a summary object comes last. The CLI runs in-process.

use serde_json::Value;
use wrl_tests::{enter_workspace_root, wrlc};

const MISSING: &str = "tests/ui/run/data/no-such-recipe.wrl";

/// Every line of `stderr` as a JSON object; panics on any other line.
fn lines(args: &[&str], stderr: &str) -> Vec<Value> {
    stderr
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("wrlc {}: not a JSON line: {l:?}: {e}", args.join(" ")));
            assert!(v.is_object(), "wrlc {}: not an object: {l}", args.join(" "));
            v
        })
        .collect()
}

/// Runs `wrlc ARGS` under `--error-format json` and checks the stream's shape; returns the exit
/// status and the objects.
fn stream(args: &[&str]) -> (u8, Vec<Value>) {
    enter_workspace_root();
    let mut full = vec!["--error-format", "json"];
    full.extend_from_slice(args);
    let (exit, _, err) = wrlc(&full);
    let v = lines(args, &err);
    let what = format!("wrlc {}", args.join(" "));
    let (summary, rest) = v.split_last().unwrap_or_else(|| panic!("{what}: nothing on stderr"));
    assert_eq!(summary["type"], "summary", "{what}: the last line is the summary");
    assert_eq!(summary["version"], 1, "{what}");
    assert_eq!(summary["exit"], u64::from(exit), "{what}");
    let count = |sev: &str| {
        rest.iter().filter(|d| d["type"] == "diagnostic" && d["severity"] == sev).count() as u64
    };
    assert_eq!(summary["errors"], count("error"), "{what}");
    assert_eq!(summary["warnings"], count("warning"), "{what}");
    for d in rest {
        assert_eq!(d["version"], 1, "{what}: {d}");
        match d["type"].as_str() {
            Some("diagnostic") => {
                let code = d["code"].as_str().unwrap_or_default();
                assert!(wrl_diagnostics::lookup(code).is_some(), "{what}: unregistered code {d}");
                assert!(d["message"].as_str().is_some_and(|m| !m.is_empty()), "{what}: {d}");
                let placed = d.get("file").is_some();
                assert_eq!(placed, !d["labels"].as_array().is_some_and(Vec::is_empty), "{d}");
                for k in ["file", "span", "line", "column", "help"] {
                    assert!(!d.get(k).is_some_and(Value::is_null), "{what}: `{k}: null` in {d}");
                }
            }
            Some("log") => assert!(d["message"].is_string(), "{what}: {d}"),
            _ => panic!("{what}: unexpected object {d}"),
        }
    }
    (exit, v)
}

fn codes(v: &[Value]) -> Vec<&str> {
    v.iter().filter(|d| d["type"] == "diagnostic").filter_map(|d| d["code"].as_str()).collect()
}

#[test]
fn usage_errors_are_diagnostics_in_the_stream() {
    for args in [
        vec!["check", MISSING],
        vec!["plan", MISSING],
        vec!["estimate", MISSING],
        vec!["fmt", MISSING],
        vec!["run", "--dry-run", MISSING],
        vec!["check", "--no-such-flag", "x.wrl"],
        vec!["frobnicate"],
        vec!["lower", "--to", "verl", "recipes/quickstart.wrl"],
    ] {
        let (exit, v) = stream(&args);
        assert_eq!(exit, 2, "wrlc {}", args.join(" "));
        assert_eq!(codes(&v), ["E0531"], "wrlc {}", args.join(" "));
    }
    // The missing file is named; clap's refusal keeps the argument it wants.
    let (_, v) = stream(&["check", MISSING]);
    assert!(v[0]["message"].as_str().unwrap_or_default().contains(MISSING), "{}", v[0]);
    let (_, v) = stream(&["lower", "--to", "verl", "recipes/quickstart.wrl"]);
    assert!(v[0]["message"].as_str().unwrap_or_default().contains("--out"), "{}", v[0]);
    assert!(v[0]["help"].as_str().unwrap_or_default().starts_with("usage: wrlc lower"), "{}", v[0]);
}

#[test]
fn every_command_keeps_the_stream() {
    // (arguments, exit status, codes reported)
    let cases: &[(&[&str], u8, &[&str])] = &[
        (&["check", "recipes"], 0, &[]),
        (&["check", "tests/ui/check/E0200_lr_abc.wrl"], 1, &["E0200"]),
        (&["plan", "recipes/quickstart.wrl", "--format", "dot"], 0, &[]),
        (&["plan", "recipes/quickstart.wrl", "--profile", "nope"], 1, &["E0206"]),
        (&["estimate", "recipes/quickstart.wrl"], 0, &[]),
        (&["run", "--dry-run", "recipes/quickstart.wrl"], 0, &[]),
        (&["run", "--dry-run", "tests/ui/run/E0500_unknown_lr.wrl"], 1, &["E0500"]),
        (&["fmt", "--check", "recipes/quickstart.wrl"], 0, &[]),
        (&["explain", "E0103"], 0, &[]),
        (&["explain", "E9999"], 2, &["E0531"]),
        (&["serve", "--addr", "0.0.0.0:8000", "x"], 2, &["E0530"]),
        (&["report", "recipes"], 2, &["E0504"]),
        (&["report", "recipes", "docs"], 2, &["E0531"]),
    ];
    for (args, want, want_codes) in cases {
        let (exit, v) = stream(args);
        assert_eq!(exit, *want, "wrlc {}: {v:?}", args.join(" "));
        assert_eq!(codes(&v), *want_codes, "wrlc {}", args.join(" "));
    }
}

#[test]
fn serve_refuses_a_directory_that_is_not_a_checkpoint_in_json() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_string_lossy().into_owned();
    let (exit, v) = stream(&["serve", "--addr", "127.0.0.1:0", &dir]);
    assert_eq!(exit, 2);
    let c = codes(&v);
    assert_eq!(c.len(), 1, "{v:?}");
    assert!(c[0].starts_with("E05"), "a runtime code: {v:?}");
    assert!(v[0].get("file").is_none(), "no place in a recipe: {}", v[0]);
}

#[test]
fn serve_refuses_a_base_for_what_is_not_an_adapter() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("config.json"), "{}").unwrap();
    let dir = tmp.path().to_string_lossy().into_owned();
    let (exit, v) = stream(&["serve", "--addr", "127.0.0.1:0", &dir, "--base", "Qwen/Qwen3-0.6B"]);
    assert_eq!(exit, 2);
    assert_eq!(codes(&v), ["E0531"], "{v:?}");
    assert!(v[0]["message"].as_str().unwrap().contains("adapter_config.json"), "{v:?}");
}

#[test]
fn an_unformatted_file_is_a_log_line_and_exit_1() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("a.wrl");
    std::fs::write(&p, "model  m = std::models::tiny\n").unwrap();
    let path = p.to_string_lossy().into_owned();
    let (exit, v) = stream(&["fmt", "--check", &path]);
    assert_eq!(exit, 1);
    assert!(v.iter().any(|l| l["type"] == "log"), "{v:?}");
}
