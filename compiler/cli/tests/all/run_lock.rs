//! One process writes a run directory at a time: while a `wrlc run` writes DIR, a second
//! `wrlc run --resume DIR` and a second `wrlc run --out DIR` are refused with E0504 naming the
//! first one's pid; once the first is killed (SIGKILL: no clean-up), a resume takes the lock.
//! Before the lock, both processes wrote the run and every id was logged twice.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn wrlc() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_wrlc"));
    c.stdout(Stdio::null()).stderr(Stdio::piped());
    c
}

fn recipe() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../recipes/quickstart.wrl")
}

/// Kills the child when dropped (a failed assertion leaves no run behind).
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until the run in `out` has committed its first state and holds its lock.
fn wait_for_lock(child: &mut Child, out: &Path) -> u32 {
    let start = Instant::now();
    loop {
        assert!(child.try_wait().unwrap().is_none(), "the run ended before it could be raced");
        if out.join("state.json").exists()
            && let Some(Some(pid)) = wrl_exec::rundir::lock::Lock::holder(out)
        {
            return pid;
        }
        assert!(start.elapsed() < Duration::from_secs(120), "the run never took its lock");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn refused(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "a second writer was let in: {err}");
    err
}

#[test]
fn a_second_writer_is_refused_naming_the_first_until_it_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let first = wrlc().arg("run").arg(recipe()).arg("--out").arg(&out).spawn().unwrap();
    let mut first = Killed(first);
    let pid = wait_for_lock(&mut first.0, &out);
    assert_eq!(pid, first.0.id());

    let err = refused(wrlc().arg("run").arg("--resume").arg(&out));
    assert!(err.contains("E0504") && err.contains(&format!("pid {pid}")), "{err}");
    let err = refused(wrlc().arg("run").arg(recipe()).arg("--out").arg(&out));
    assert!(err.contains("E0504") && err.contains(&format!("pid {pid}")), "{err}");

    // SIGKILL: the kernel drops the lock with the process; a resume takes it.
    drop(first);
    let second = wrlc().arg("run").arg("--resume").arg(&out).spawn().unwrap();
    let mut second = Killed(second);
    let start = Instant::now();
    loop {
        if let Some(status) = second.0.try_wait().unwrap() {
            let mut err = String::new();
            if let Some(mut e) = second.0.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            panic!("the resume ended ({status}) instead of taking the lock: {err}");
        }
        if wrl_exec::rundir::lock::Lock::holder(&out) == Some(Some(second.0.id())) {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(120), "the resume never took the lock");
        std::thread::sleep(Duration::from_millis(100));
    }
    // SIGTERM stops it as SIGINT does: with the message saying how to resume.
    let pid = second.0.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let status = second.0.wait().unwrap();
    let mut err = String::new();
    if let Some(mut e) = second.0.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut err);
    }
    assert!(err.contains("stopped; resume with `wrlc run --resume"), "{status}: {err}");
    // No temporary of either writer shares a name: none is left at the top of the run.
    let names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n == "plan.tmp" || n == "state.tmp"), "{names:?}");
}
