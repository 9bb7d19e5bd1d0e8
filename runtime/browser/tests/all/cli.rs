//! The `wrlc sandbox` subcommand through its library entry point: expert writes task and
//! trajectory JSONL; a missing Chromium is a clear usage/environment error (exit 2).
#![allow(clippy::unwrap_used)] // tests may unwrap

use std::path::PathBuf;

use wrl_browser::cli::{SandboxCommand, run};
use wrl_sandbox::{Split, Trajectory};

fn code(c: std::process::ExitCode) -> String {
    format!("{c:?}")
}

#[test]
fn expert_command_writes_tasks_and_trajectories() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demos");
    let c = run(SandboxCommand::Expert {
        count: 3,
        out: out.clone(),
        split: Split::Test,
        seed: 4,
        concurrency: 2,
        chromium: None,
    });
    assert_eq!(code(c), code(std::process::ExitCode::SUCCESS));
    let tasks =
        wrl_sandbox::parse_jsonl(&std::fs::read_to_string(out.join("tasks.jsonl")).unwrap())
            .unwrap();
    assert_eq!(tasks.len(), 3);
    assert!(tasks.iter().all(|t| t.split == Split::Test));
    let trajs: Vec<Trajectory> = std::fs::read_to_string(out.join("trajectories.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(trajs.len(), 3);
    assert!(trajs.iter().all(|t| t.outcome.success && !t.steps.is_empty()), "{trajs:?}");
    assert!(trajs[0].steps[0].observation.starts_with("task: "));
}

#[test]
fn missing_chromium_is_exit_2_with_install_hint() {
    let dir = tempfile::tempdir().unwrap();
    let c = run(SandboxCommand::Expert {
        count: 1,
        out: dir.path().join("x"),
        split: Split::Train,
        seed: 0,
        concurrency: 1,
        chromium: Some(PathBuf::from("/nonexistent/chromium")),
    });
    assert_eq!(code(c), code(std::process::ExitCode::from(2)));
    let err = wrl_browser::find_chromium(Some(std::path::Path::new("/nonexistent/chromium")))
        .unwrap_err();
    assert!(err.to_string().contains("apt-get install chromium"), "{err}");
}

#[test]
fn tasks_command_succeeds() {
    let c = run(SandboxCommand::Tasks { count: 2, split: Split::Train, seed: 1, qa: false });
    assert_eq!(code(c), code(std::process::ExitCode::SUCCESS));
}
