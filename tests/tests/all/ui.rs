//! UI tests: every `.wrl` file under `tests/ui/<phase>/` is a case. `wrlc check <file>` runs
//! in-process from the workspace root; the source and the rendered diagnostics are snapshotted
//! together (`tests/ui/snapshots/`), and the case's `// expect:` header is checked against the
//! codes `wrlc` reported, so a case cannot pass with the wrong error. Files under `tests/ui/ok/`
//! must check clean. A case whose first line is `// wrlc: ARGS` (e.g. `// wrlc: --profile smoke`)
//! is checked with `wrlc check ARGS <file>`; one whose first line is `// wrlc: run --dry-run
//! [ARGS]` (the runtime's cases, `tests/ui/run/`) with `wrlc run --dry-run ARGS <file>`, from the
//! workspace root, so its data files are found by relative paths. See `tests/README.md`.

use std::panic::{AssertUnwindSafe, catch_unwind};

use wrl_diagnostics::lookup;
use wrl_tests::{
    PHASE_DIRS, case_args, code_of_file_name, compare, parse_expectations, parse_json_diagnostics,
    snapshot_name, snapshot_text, ui_dir, wrl_files, wrlc,
};

/// Runs `case` on every file, collecting failures so that one broken case does not hide others.
fn run_all(files: &[String], case: impl Fn(&str)) {
    let mut failed = Vec::new();
    for f in files {
        if catch_unwind(AssertUnwindSafe(|| case(f))).is_err() {
            failed.push(f.as_str());
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} UI cases failed:\n  {}\n(new or changed output: accept with INSTA_UPDATE=always, \
         see tests/README.md)",
        failed.len(),
        files.len(),
        failed.join("\n  ")
    );
}

fn read_lossy(rel: &str) -> String {
    let bytes = std::fs::read(wrl_tests::workspace_root().join(rel))
        .unwrap_or_else(|e| panic!("cannot read {rel}: {e}"));
    String::from_utf8_lossy(&bytes).into_owned()
}

fn error_case(rel: &str) {
    let source = read_lossy(rel);
    let file_name = rel.rsplit('/').next().unwrap_or(rel);
    let expected = parse_expectations(&source).unwrap_or_else(|e| panic!("{rel}: {e}"));

    // The case is named after a registered code, and its header lists that code.
    let code = code_of_file_name(file_name)
        .unwrap_or_else(|| panic!("{rel}: a case is named `<code>_<what>.wrl`"));
    assert!(lookup(code).is_some(), "{rel}: {code} is not in wrl_diagnostics::CODES");
    assert!(
        expected.iter().any(|e| e.code == code),
        "{rel}: the header must list its own code: `// expect: {code}`"
    );
    for e in &expected {
        assert!(lookup(&e.code).is_some(), "{rel}: expects unregistered code {}", e.code);
    }

    // The codes (and places) reported are exactly the ones the header lists.
    let (exit_json, _, json) = wrlc(case_args(rel, &source, true));
    let reported = parse_json_diagnostics(&json).unwrap_or_else(|e| panic!("{rel}: {e}"));
    if let Err(why) = compare(&expected, &reported) {
        panic!("{rel}: the header does not match what wrlc reported:\n{why}\nstderr:\n{json}");
    }

    // The human rendering, snapshotted under the source.
    let (exit, stdout, stderr) = wrlc(case_args(rel, &source, false));
    assert_eq!(exit, exit_json, "{rel}: exit status depends on --error-format");
    // Errors exit with 1 (2 for a usage error); a case that expects only warnings exits with 0;
    // a header line `// exit: N` names another status (a command's usage errors exit with 2).
    let declared = source
        .lines()
        .take_while(|l| l.starts_with("//"))
        .find_map(|l| l.strip_prefix("// exit: ").and_then(|n| n.trim().parse::<u8>().ok()));
    let usage = expected.iter().any(|e| wrl_tests::USAGE_CODES.contains(&e.code.as_str()));
    let want = declared.unwrap_or(if usage {
        2
    } else if expected.iter().any(|e| e.code.starts_with('E')) {
        1
    } else {
        0
    });
    assert_eq!(exit, want, "{rel}: exit status\nstderr:\n{stderr}");
    let text = snapshot_text(rel, &source, exit, &stdout, &stderr);
    insta::with_settings!({
        snapshot_path => ui_dir().join("snapshots"),
        prepend_module_to_snapshot => false,
        input_file => wrl_tests::workspace_root().join(rel),
        omit_expression => true,
    }, {
        insta::assert_snapshot!(snapshot_name(rel), text);
    });
}

#[test]
fn error_cases() {
    let mut files = Vec::new();
    for phase in PHASE_DIRS {
        files.extend(wrl_files(&ui_dir().join(phase)));
    }
    assert!(!files.is_empty(), "no UI cases found under {}", ui_dir().display());
    run_all(&files, error_case);
}

#[test]
fn ok_cases_check_clean() {
    let files = wrl_files(&ui_dir().join("ok"));
    assert!(!files.is_empty(), "no cases under tests/ui/ok");
    run_all(&files, |rel| {
        let source = read_lossy(rel);
        let expected = parse_expectations(&source).unwrap_or_else(|e| panic!("{rel}: {e}"));
        assert!(expected.is_empty(), "{rel}: an ok case expects no diagnostics");
        let args = case_args(rel, &source, false);
        let (exit, stdout, stderr) = wrlc(&args);
        if args[0] == "run" {
            // A clean dry run says what it would run, on stdout, and nothing else.
            assert_eq!((exit, stderr.as_str()), (0, ""), "{rel}");
            assert!(
                stdout.starts_with("dry run: ") && stdout.lines().count() == 1,
                "{rel}: {stdout}"
            );
            return;
        }
        assert_eq!(
            (exit, stdout.as_str(), stderr.as_str()),
            (0, "", "checked 1 file: no problems\n"),
            "{rel}"
        );
    });
}

/// A whole phase directory is checked in one run, and every case is still reported: one
/// broken file never hides the errors of another.
#[test]
fn a_directory_of_cases_reports_every_file() {
    let files = wrl_files(&ui_dir().join("syntax"));
    let (exit, _, json) = wrlc(["check", "--error-format", "json", "tests/ui/syntax"]);
    assert_eq!(exit, 1);
    let text = json.replace("\\\\", "/");
    for f in &files {
        assert!(text.contains(&format!("\"file\":\"{f}\"")), "no diagnostic names {f}");
    }
    let (exit, _, stderr) = wrlc(["check", "tests/ui/ok"]);
    assert_eq!(exit, 0, "{stderr}");
}
