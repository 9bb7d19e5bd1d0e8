//! Hostile inputs through `wrlc check` itself, as a user would meet them: invalid UTF-8 (E0106
//! naming the file), NUL bytes, a 50 MB file, runaway nesting, a directory with no `.wrl`
//! files and a missing path (exit 2 with a clear message), thousands of unknown names (the
//! did-you-mean work is bounded). The same for the commands that run a recipe (`run`,
//! `lower`): invalid UTF-8 is E0106 there too, a directory is called one, and a dataset that is
//! a FIFO or a device is refused at once instead of hanging or filling memory. And an old
//! recipe (`tests/fixtures/migrate/`) through `wrlc migrate`: rewritten in place, comments and
//! layout kept, then checking clean. The CLI runs in-process.

use std::path::Path;

use wrl_tests::parse_json_diagnostics;

fn check(path: &Path, json: bool) -> (u8, String, String) {
    let mut args: Vec<std::ffi::OsString> = vec!["check".into()];
    if json {
        args.extend(["--error-format".into(), "json".into()]);
    }
    args.push(path.into());
    wrl_cli::run_captured(args)
}

/// The codes of the errors (not warnings) in `--error-format json` output.
fn error_codes(json: &str) -> Vec<String> {
    parse_json_diagnostics(json)
        .expect("JSON diagnostics")
        .into_iter()
        .filter(|d| d.severity == "error")
        .map(|d| d.code)
        .collect()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).expect("write the input");
    p
}

#[test]
fn invalid_utf8_is_e0106_naming_the_file_and_the_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let p = write(tmp.path(), "latin1.wrl", b"param name = \"caf\xe9\"\nparam x = 1\n");
    let (exit, out, err) = check(&p, false);
    assert_eq!(exit, 1, "{err}");
    assert!(out.is_empty());
    assert!(err.contains("E0106"), "{err}");
    assert!(err.contains("latin1.wrl"), "the message names the file: {err}");
    assert!(err.contains("offset 17"), "{err}");
    let (_, _, json) = check(&p, true);
    let d = parse_json_diagnostics(&json).unwrap();
    assert_eq!(d.len(), 1, "the file is not parsed: {json}");
    assert_eq!((d[0].code.as_str(), d[0].line, d[0].column), ("E0106", Some(1), Some(18)));

    // Only invalid bytes; invalid bytes at the very start and at the very end.
    for (name, bytes) in [
        ("only_bad.wrl", &b"\xff\xfe\xfd"[..]),
        ("start.wrl", b"\x80param x = 1"),
        ("end.wrl", b"param x = 1\n\xc3"),
        ("utf16.wrl", b"\xff\xfep\0a\0r\0a\0m\0"),
    ] {
        let p = write(tmp.path(), name, bytes);
        let (exit, _, err) = check(&p, false);
        assert_eq!(exit, 1, "{name}: {err}");
        assert!(err.contains("E0106") && err.contains(name), "{name}: {err}");
    }
}

#[test]
fn nul_bytes_are_syntax_errors_not_crashes() {
    let tmp = tempfile::tempdir().unwrap();
    let p = write(tmp.path(), "nul.wrl", b"param x = 1\0\nparam y = \0\0\0\n\0");
    let (exit, _, json) = check(&p, true);
    assert_eq!(exit, 1);
    let codes = error_codes(&json);
    assert!(!codes.is_empty() && codes.iter().all(|c| c == "E0100"), "{json}");
    let (_, _, human) = check(&p, false);
    assert!(human.contains("U+0000"), "{human}");
}

#[test]
fn runaway_nesting_is_e0104_through_the_cli() {
    let tmp = tempfile::tempdir().unwrap();
    let text = format!(
        "param p = {}1{}\nparam q = {}1\nparam r = 3 parsecs\n",
        "[".repeat(10_000),
        "]".repeat(10_000),
        "-".repeat(100_000)
    );
    let p = write(tmp.path(), "deep.wrl", text.as_bytes());
    let (exit, _, json) = check(&p, true);
    assert_eq!(exit, 1);
    assert_eq!(error_codes(&json), ["E0104", "E0104", "E0103"], "{json}");
}

#[test]
fn a_directory_without_wrl_files_is_a_usage_error() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("sub")).unwrap();
    write(tmp.path(), "notes.txt", b"param x = 1");
    write(&tmp.path().join("sub"), "recipe.wrl.bak", b"param x = 1");
    let (exit, out, err) = check(tmp.path(), false);
    assert_eq!(exit, 2, "{err}");
    assert!(out.is_empty());
    assert!(err.starts_with("error: no `.wrl` files in `"), "{err}");
    assert!(err.contains(&tmp.path().display().to_string()), "names the directory: {err}");
    assert_eq!(err.lines().count(), 1, "one clear line: {err}");

    let (exit, _, err) = check(&tmp.path().join("missing.wrl"), false);
    assert_eq!(exit, 2);
    assert!(err.contains("missing.wrl") && err.contains("no such file"), "{err}");

    // A directory that does hold a recipe, deep down, is searched recursively.
    write(&tmp.path().join("sub"), "deep.wrl", b"// nothing yet\n");
    let (exit, _, err) = check(tmp.path(), false);
    assert_eq!((exit, err.as_str()), (0, "checked 1 file: no problems\n"));
}

#[test]
fn empty_and_comment_only_files_check_clean() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, bytes) in [
        ("empty.wrl", &b""[..]),
        ("comments.wrl", b"// nothing\n/// here\n"),
        ("bom.wrl", b"\xef\xbb\xbf"),
        ("crlf.wrl", b"param x = 1\r\nparam y = [x,\r\n 2]\r\n"),
    ] {
        let p = write(tmp.path(), name, bytes);
        let (exit, _, json) = check(&p, true);
        assert_eq!(exit, 0, "{name}: {json}");
        assert_eq!(error_codes(&json), Vec::<String>::new(), "{name}");
    }
}

/// A 50 MB file through the whole CLI: a realistic head, a large text block, and an error at
/// the very end (so the whole file must have been read to find it).
#[test]
fn a_fifty_megabyte_file() {
    let tmp = tempfile::tempdir().unwrap();
    let mut text =
        String::from("model policy = hf(\"q\") { context = 32k tokens }\nparam prompt = \"\"\"\n");
    let line = "Read the page, plan a step, act; repeat until the task is done. Filler text.\n";
    while text.len() < 50 << 20 {
        text.push_str(line);
    }
    text.push_str("\"\"\"\nparam last = 1 parsecs\n");
    let p = write(tmp.path(), "big.wrl", text.as_bytes());
    let t = std::time::Instant::now();
    let (exit, _, json) = check(&p, true);
    assert_eq!(exit, 1);
    let d: Vec<_> = parse_json_diagnostics(&json)
        .unwrap()
        .into_iter()
        .filter(|d| d.severity == "error")
        .collect();
    assert_eq!(d.len(), 1, "{json}");
    assert_eq!(d[0].code, "E0103");
    assert_eq!(d[0].line, Some(text.lines().count()));
    assert!(t.elapsed().as_secs() < 20, "took {:?}", t.elapsed());
}

/// A FIFO given as a recipe is refused at once (it used to wait forever for a writer).
#[test]
fn a_fifo_is_refused_without_being_opened() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("pipe.wrl");
    let made = std::process::Command::new("mkfifo").arg(&p).status().expect("mkfifo");
    assert!(made.success());
    let (tx, rx) = std::sync::mpsc::channel();
    let q = p.clone();
    std::thread::spawn(move || {
        let _ = tx.send(check(&q, false));
    });
    let (exit, _, err) =
        rx.recv_timeout(std::time::Duration::from_secs(20)).expect("wrlc check waited on a FIFO");
    assert_eq!(exit, 2, "{err}");
    assert!(err.contains("not a regular file"), "{err}");
}

/// A symlink back up (`sub/up -> ..`) does not make the walk check one file 41 times.
#[test]
fn a_symlink_loop_checks_each_file_once() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "a.wrl", b"param x = 1 +\n");
    std::fs::create_dir(tmp.path().join("sub")).unwrap();
    std::os::unix::fs::symlink("..", tmp.path().join("sub/up")).unwrap();
    let (exit, _, json) = check(tmp.path(), true);
    assert_eq!(exit, 1, "{json}");
    assert_eq!(error_codes(&json).len(), 1, "one file, one error: {json}");
}

/// Thousands of the same warning are capped: the first 100 are shown, the last shown says how
/// many more there were, and the summary still counts them all (a 50 MB file of unused
/// declarations once printed 543 MB of warnings).
#[test]
fn repeated_warnings_are_capped() {
    let tmp = tempfile::tempdir().unwrap();
    let text: String = (0..3000).map(|i| format!("param unused_{i} = {i}\n")).collect();
    let p = write(tmp.path(), "many.wrl", text.as_bytes());
    let (exit, _, json) = check(&p, true);
    assert_eq!(exit, 0, "{json}");
    let d = parse_json_diagnostics(&json).unwrap();
    assert_eq!(d.iter().filter(|d| d.code == "W0201").count(), 100, "{}", d.len());
    let (_, _, human) = check(&p, false);
    assert!(
        human.contains("2900 more `W0201` warnings are not shown"),
        "{}",
        &human[human.len().saturating_sub(600)..]
    );
    assert!(human.contains("3000 warnings"), "{}", &human[human.len().saturating_sub(300)..]);
}

/// Runs `wrlc ARGS` in-process on a thread, waiting at most `secs`.
fn within(secs: u64, args: Vec<std::ffi::OsString>) -> (u8, String, String) {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(wrl_cli::run_captured(args));
    });
    rx.recv_timeout(std::time::Duration::from_secs(secs))
        .unwrap_or_else(|_| panic!("wrlc did not answer within {secs} s"))
}

/// `run --dry-run` and `lower` read the recipe themselves: they said `error: cannot read …`
/// for invalid UTF-8 where `check` gives E0106, and called a directory "a FIFO, socket or
/// device".
#[test]
fn run_and_lower_give_e0106_and_name_a_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let p = write(tmp.path(), "latin1.wrl", b"param name = \"caf\xe9\"\nparam x = 1\n");
    for args in [
        vec!["run", "--dry-run"],
        vec!["lower", "--to", "verl", "--dry-run"],
        vec!["env", "serve", "--bind", "127.0.0.1:0"],
    ] {
        let mut argv: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
        argv.push(p.clone().into());
        let (exit, _, err) = within(60, argv);
        assert_eq!(exit, 1, "{args:?}: {err}");
        assert!(err.contains("E0106") && err.contains("latin1.wrl"), "{args:?}: {err}");
        assert!(err.contains("offset 17"), "{args:?}: {err}");
    }
    let argv = vec!["run".into(), "--dry-run".into(), tmp.path().as_os_str().to_owned()];
    let (exit, _, err) = wrl_cli::run_captured(argv);
    assert_eq!(exit, 2, "{err}");
    assert!(err.contains("is a directory"), "{err}");
    assert!(!err.contains("FIFO"), "{err}");
}

/// A dataset that is a FIFO hung `run --dry-run` for ever; `/dev/zero` grew wrlc to 24 GB.
/// Datasets get the file-type check recipes get: refused at once, E0503 naming the file.
#[test]
fn a_dataset_that_is_a_fifo_or_a_device_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("demos.jsonl");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    for (data, kind) in [
        (fifo.display().to_string(), "jsonl"),
        ("/dev/zero".to_string(), "jsonl"),
        ("/dev/zero".to_string(), "parquet"),
        (tmp.path().display().to_string(), "jsonl"),
    ] {
        let recipe = write(
            tmp.path(),
            "r.wrl",
            format!(
                "model policy = std::models::tiny\n\
                 dataset demos = {kind}(\"{data}\") {{ kind = trajectories }}\n\
                 stage warmup = sft(policy, demos) {{ lr = 1e-3 }}\n"
            )
            .as_bytes(),
        );
        let (exit, _, err) = within(20, vec!["run".into(), "--dry-run".into(), recipe.into()]);
        assert_eq!(exit, 1, "{data}: {err}");
        assert!(err.contains("E0503") && err.contains(&data), "{data}: {err}");
        assert!(err.contains("not a regular file"), "{data}: {err}");
    }
}

/// Did-you-mean compared every unknown name with every name in scope: a recipe of N unknown
/// names took 1k 0.47 s, 4k 7.7 s, 10k 82 s (in release), and the language server runs the
/// same check on every edit. The work is bounded now: 10,000 unknown names check in seconds.
#[test]
fn ten_thousand_unknown_names_check_in_linear_time() {
    let tmp = tempfile::tempdir().unwrap();
    let text: String = (0..10_000).map(|i| format!("param p{i} = q{i}\n")).collect();
    let p = write(tmp.path(), "unknown.wrl", text.as_bytes());
    let t = std::time::Instant::now();
    let (exit, _, json) =
        within(120, vec!["check".into(), "--error-format".into(), "json".into(), p.into()]);
    let took = t.elapsed();
    assert_eq!(exit, 1);
    assert_eq!(error_codes(&json).len(), 10_000);
    assert!(took.as_secs() < 20, "10,000 unknown names took {took:?}");
}

#[test]
fn an_old_recipe_migrates_in_place_and_then_checks_clean() {
    let root = wrl_tests::workspace_root();
    let old = std::fs::read_to_string(root.join("tests/fixtures/migrate/old_recipe.wrl"))
        .expect("the old recipe");
    let tmp = tempfile::tempdir().unwrap();
    let path = write(tmp.path(), "old.wrl", old.as_bytes());
    let (code, _, err) = check(&path, true);
    assert_eq!(code, 1);
    assert_eq!(error_codes(&err), ["E0311", "E0311", "E0311"], "{err}");
    let (code, out, _) = wrl_cli::run_captured(["migrate", "--check", path.to_str().unwrap()]);
    assert_eq!((code, out.trim().ends_with("old.wrl")), (1, true), "{out}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), old, "--check changed the file");
    let (code, _, err) = wrl_cli::run_captured(["migrate", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("migrated 1 of 1 files"), "{err}");
    let new = std::fs::read_to_string(&path).unwrap();
    assert!(
        new.contains("  validate = validation(tasks) { every = 4 iters }   // on its own tasks\n")
    );
    assert!(new.contains("  validate = off\n"));
    assert!(new.contains("  online.validate = validation(tasks) { every = 2 iters }  // sooner"));
    // Only the old fields' bytes changed: every other line is as written.
    let kept = |s: &str| {
        s.lines()
            .filter(|l| !l.contains("eval_every") && !l.contains("validate"))
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(kept(&old), kept(&new));
    for profile in [None, Some("smoke")] {
        let mut args = vec!["check".to_string(), "--error-format".into(), "json".into()];
        if let Some(p) = profile {
            args.extend(["--profile".into(), p.into()]);
        }
        args.push(path.display().to_string());
        let (code, _, err) = wrl_cli::run_captured(args);
        assert_eq!(code, 0, "{profile:?}: {err}");
        assert!(parse_json_diagnostics(&err).expect("JSON").is_empty(), "{err}");
    }
    let (code, _, _) = wrl_cli::run_captured(["migrate", "--check", path.to_str().unwrap()]);
    assert_eq!(code, 0, "a migrated recipe has nothing left to migrate");
}
