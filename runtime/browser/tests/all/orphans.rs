//! Chromium must not outlive the process that launched it: this test runs its own binary as a
//! child that launches a pool (from a thread that then exits) and prints Chromium's pid, kills
//! that child with SIGKILL, and checks that Chromium and every process it started are gone,
//! and that the child's temporary directory (with Chromium's own TMPDIR inside) is swept as stale.
#![allow(clippy::unwrap_used)] // tests may unwrap (clippy.toml allows it only inside #[test] fns)
#![cfg(target_os = "linux")]

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{running, tree};
use wrl_browser::{BrowserPool, PoolCfg};

const CHILD_ENV: &str = "WRL_ORPHAN_TEST_CHILD";

/// The child's side; does nothing unless the parent test started this binary for it.
#[test]
fn helper_launch_then_wait_to_be_killed() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let handle = rt.handle().clone();
    // Launch from a thread that exits right after: Chromium must survive it (PR_SET_PDEATHSIG
    // follows the forking thread, not the process).
    let pool = std::thread::spawn(move || {
        handle.block_on(BrowserPool::launch(PoolCfg::default())).unwrap()
    })
    .join()
    .unwrap();
    let pids = rt.block_on(pool.pids());
    println!("CHROMIUM_PID={}", pids[0]);
    std::thread::sleep(Duration::from_secs(120));
}

/// Kills the child if an assertion fails before the test kills it.
struct Guard(std::process::Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn chromium_dies_when_its_parent_is_sigkilled() {
    let child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "orphans::helper_launch_then_wait_to_be_killed",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut child = Guard(child);
    let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    let pid: u32 = loop {
        let line = lines.next().expect("the child exited before printing Chromium's pid").unwrap();
        // libtest may print "test NAME ... " on the same line first.
        if let Some((_, p)) = line.split_once("CHROMIUM_PID=") {
            break p.trim().parse().unwrap();
        }
    };
    let cmdline = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let profile = cmdline.split('\0').find_map(|a| a.strip_prefix("--user-data-dir="));
    // The launching thread has exited; Chromium is still there.
    std::thread::sleep(Duration::from_millis(500));
    assert!(running(pid), "Chromium died with the thread that launched it");
    let dir = std::path::Path::new(profile.expect("--user-data-dir in Chromium's argv"))
        .parent()
        .unwrap()
        .to_path_buf();
    // Chromium's own temporary files (`chromium`'s singleton socket directory) go inside our
    // directory, not into the shared TMPDIR where a killed Chromium would leave them behind:
    // Chromium runs with TMPDIR set to it. (The headless shell keeps no singleton, so only
    // `chromium` shows a file there.)
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    let want = format!("TMPDIR={}", dir.join("tmp").display());
    assert!(
        environ.split(|b| *b == 0).any(|v| v == want.as_bytes()),
        "Chromium was not given our TMPDIR ({want})"
    );
    let own_tmp: Vec<_> = std::fs::read_dir(dir.join("tmp")).unwrap().flatten().collect();
    let shell = cmdline.split('\0').next().is_some_and(|b| b.ends_with("headless-shell"));
    assert!(
        shell
            || own_tmp.iter().any(|e| e.file_name().to_string_lossy().starts_with("org.chromium.")),
        "Chromium did not use the TMPDIR it was given: {own_tmp:?}"
    );
    let procs = tree(pid);
    assert!(procs.len() > 1, "expected Chromium's helper processes too: {procs:?}");
    child.0.kill().unwrap(); // SIGKILL: no destructor of the child runs
    child.0.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while procs.iter().any(|p| running(*p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left: Vec<u32> = procs.iter().copied().filter(|p| running(*p)).collect();
    assert!(left.is_empty(), "Chromium processes outlived their parent: {left:?}");
    // The killed child could not delete its temporary directory: the next launch's sweep
    // (run here directly) does, since its owner is gone.
    assert!(dir.join("owner").is_file(), "{}", dir.display());
    wrl_browser::process::sweep_stale_now(&std::env::temp_dir(), "wrl-chromium-");
    assert!(!dir.exists(), "{} survived the sweep", dir.display());
}
