//! `wrlc report` given what users give it by mistake: a directory that holds no run, an
//! `--out` that is not an HTML page (it could be one of the run's records), one run twice, a
//! damaged log; and a run that has not finished, whose report says so. The CLI runs in-process.

#![allow(clippy::unwrap_used)] // test helpers fail loudly, like the tests they serve

use std::path::Path;

use wrl_exec::{Cursor, RunDir};

fn report(args: &[&Path]) -> (u8, String, String) {
    let mut a: Vec<std::ffi::OsString> = vec!["report".into()];
    a.extend(args.iter().map(|p| p.as_os_str().to_owned()));
    wrl_cli::run_captured(a)
}

const PLAN: &str =
    r#"{"version": 1, "recipe": "recipes/x.wrl", "profile": null, "nodes": [], "edges": []}"#;

/// A run directory stopped after its first commit.
fn stopped_run(root: &Path) {
    let mut run = RunDir::create(root, PLAN).unwrap();
    run.commit(None, &Cursor { wall_s: 3.0, ..Default::default() }, false).unwrap();
}

#[test]
fn a_directory_without_a_run_is_e0504() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, out, err) = report(&[tmp.path()]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty());
    assert!(err.contains("E0504") && err.contains("no `state.json`"), "{err}");
}

#[test]
fn out_must_be_an_html_page_and_runs_are_named_once() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    stopped_run(&run);
    let metrics = run.join("metrics.jsonl");
    let before = std::fs::read(&metrics).unwrap();
    let (code, _, err) = report(&[&run, Path::new("--out"), &metrics]);
    assert_eq!(code, 2);
    assert!(err.contains("must name an `.html` file"), "{err}");
    assert_eq!(std::fs::read(&metrics).unwrap(), before, "a record was overwritten");
    let (code, _, err) = report(&[&run, &run, Path::new("--out"), &tmp.path().join("c.html")]);
    assert_eq!(code, 2);
    assert!(err.contains("is given twice"), "{err}");
    let (code, _, err) = report(&[&run, Path::new("--out"), tmp.path()]);
    assert_eq!(code, 2);
    assert!(err.contains("must name an `.html` file"), "{err}");
}

#[test]
fn a_stopped_run_gets_a_report_that_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    stopped_run(&run);
    let (code, out, err) = report(&[&run]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim_end(), run.join("report.html").display().to_string());
    let page = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(page.contains("not finished (as of its last commit)"), "{page}");
    assert!(page.contains("no evaluation has finished") && page.contains("nothing logged yet"));
}

#[test]
fn a_damaged_log_line_is_named_by_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    {
        let mut r = RunDir::create(&run, PLAN).unwrap();
        r.append_trajectories(&[serde_json::json!({"not": "a trajectory"})]).unwrap();
        r.commit(None, &Cursor::default(), false).unwrap();
    }
    let (code, _, err) = report(&[&run]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("E0508") && err.contains("trajectories.jsonl` line 1"), "{err}");
    assert!(!run.join("report.html").exists());
}
