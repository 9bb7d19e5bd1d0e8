//! Reliability: `wrlc run` killed with SIGKILL (no chance to clean up) at two points — right
//! after SFT (during the evaluation after it or the first rollouts) and after the first RL
//! iteration (during the next rollouts or update) — and resumed each time
//! with `wrlc run --resume`, ends with the same run directory shape as an uninterrupted run:
//! every trajectory logged exactly once, ids consecutive, both evaluations in the summary.

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

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

/// Waits until `ready` holds for the run directory, then kills the run with SIGKILL. Returns
/// false when the run finished before the point was reached.
fn kill_when(child: &mut Child, out: &Path, ready: impl Fn(&Path) -> bool) -> bool {
    let start = Instant::now();
    loop {
        if let Ok(Some(_)) = child.try_wait() {
            return false;
        }
        if ready(out) {
            child.kill().expect("SIGKILL");
            let _ = child.wait();
            return true;
        }
        assert!(start.elapsed() < Duration::from_secs(600), "the run never reached the point");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn resume(out: &Path) -> Child {
    wrlc().arg("run").arg("--resume").arg(out).spawn().expect("wrlc starts")
}

#[test]
fn sigkill_during_sft_and_rollouts_then_resume_logs_everything_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let mut child = wrlc()
        .arg("run")
        .arg(recipe())
        .arg("--out")
        .arg(&out)
        .args(["--set", "demos=std::sandbox::demos(count: 4)"])
        .args(["--set", "heldout=std::sandbox::tasks(count: 3) { split = test }"])
        .args(["--set", "online.prompts=2", "--set", "online.group=2"])
        .args(["--set", "online.phases[0].iters=3", "--set", "warmup.epochs=2"])
        .spawn()
        .expect("wrlc starts");

    // 1. SFT's metrics are on disk, no RL iteration yet.
    let killed = kill_when(&mut child, &out, |o| {
        let m = read(&o.join("metrics.jsonl"));
        m.contains("\"kind\":\"sft\"") && !m.contains("\"kind\":\"rl\"")
    });
    assert!(killed, "the run finished before SFT could be interrupted");

    // 2. After the first RL iteration was logged.
    let mut child = resume(&out);
    let killed =
        kill_when(&mut child, &out, |o| read(&o.join("metrics.jsonl")).contains("\"iter\":1,"));
    let status = if killed {
        let mut child = resume(&out);
        child.wait().expect("resume runs")
    } else {
        child.wait().expect("resume runs")
    };
    assert!(status.success(), "the resumed run failed");

    let summary: wrl_exec::Summary =
        serde_json::from_str(&read(&out.join("summary.json"))).expect("summary.json");
    assert_eq!(summary.status, "finished");
    assert_eq!(summary.evals.len(), 2, "{summary:?}");
    // 3 iterations × 2 prompts × group 2 + 2 evaluations × 3 tasks, each exactly once.
    let run = wrl_exec::RunDir::resume(&out).expect("the run directory");
    let ids: Vec<u64> =
        run.read_trajectories().expect("trajectories").iter().map(|t| t.id).collect();
    assert_eq!(ids, (0..18).collect::<Vec<u64>>(), "ids must be consecutive, none twice");
    let rl_iters: Vec<u64> = run
        .read_metrics()
        .expect("metrics")
        .iter()
        .filter_map(|m| match m {
            wrl_exec::MetricLine::Rl(r) => Some(r.iter),
            wrl_exec::MetricLine::Sft(_) | wrl_exec::MetricLine::Eval(_) => None,
        })
        .collect();
    assert_eq!(rl_iters, vec![1, 2, 3], "every RL iteration logged once");
}
