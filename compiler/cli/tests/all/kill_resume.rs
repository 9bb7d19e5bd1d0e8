//! Reliability: `wrlc run` killed with SIGKILL (no chance to clean up) at two points — right
//! after SFT (during the evaluation after it or the first rollouts) and after the first RL
//! iteration (during the next rollouts or update) — and resumed each time
//! with `wrlc run --resume`, ends with the same run directory shape as an uninterrupted run:
//! every trajectory logged exactly once, ids consecutive, both evaluations in the summary.
//! SIGTERM in the middle of an SFT stage stops it at the next step, with a checkpoint, and the
//! resumed stage ends with the very weights and figures of an uninterrupted one. A resume
//! trusts nothing it has not checked: a damaged committed line, a length off a line boundary,
//! a count that does not match, a checkpoint outside the run, a checkpoint state edited or
//! without checksums are refused or fallen back from before anything is appended, and the
//! temporaries of a save killed midway are removed.

#![allow(clippy::unwrap_used)] // test helpers fail loudly, like the tests they serve

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

/// An SFT-only recipe on the search expert's demonstrations (no browser): 3 epochs of ~36
/// steps, a checkpoint every 4 steps.
fn sft_recipe(dir: &Path) -> PathBuf {
    let p = dir.join("sft.wrl");
    std::fs::write(
        &p,
        "model policy = std::models::tiny\n\
         dataset demos = std::sandbox::demos(count: 24) { env = search_api }\n\
         stage warmup = sft(policy, demos) {\n\
         \x20 epochs = 3 epochs\n\
         \x20 lr = 1e-3\n\
         \x20 batch = 2\n\
         \x20 checkpoint_steps = 4\n\
         }\n",
    )
    .unwrap();
    p
}

/// The SFT lines of `metrics.jsonl`: step, epoch, loss, lr and gradient norm (times and measured
/// memory left out).
fn sft_figures(out: &Path) -> Vec<(u64, Option<u64>, f64, f64, f64)> {
    let run = wrl_exec::RunDir::resume(out).expect("the run directory");
    run.read_metrics()
        .expect("metrics")
        .into_iter()
        .filter_map(|m| match m {
            wrl_exec::MetricLine::Sft(s) => Some((s.step, s.epoch, s.loss, s.lr, s.grad_norm)),
            wrl_exec::MetricLine::Rl(_) | wrl_exec::MetricLine::Eval(_) => None,
        })
        .collect()
}

/// SIGTERM at SFT step ~10 of ~100 stopped the run only after the whole stage, and SFT saved
/// nothing before its end: a kill mid-stage lost it. Now the stage checkpoints every
/// `checkpoint_steps`, SIGTERM stops it at the next step (committed), and the resumed stage
/// ends with the same weights and the same per-step figures as an uninterrupted run.
#[test]
fn sigterm_mid_sft_stops_at_a_step_and_resumes_to_the_same_weights() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let recipe = sft_recipe(dir.path());
    let whole = dir.path().join("whole");
    let status = wrlc().arg("run").arg(&recipe).arg("--out").arg(&whole).status().unwrap();
    assert!(status.success(), "the uninterrupted run failed");

    let cut = dir.path().join("cut");
    let mut child = wrlc().arg("run").arg(&recipe).arg("--out").arg(&cut).spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // The second progress line of the stage (a tenth of it, then two tenths).
    let mut said = Vec::new();
    let mut progress = 0;
    while progress < 2 {
        let line = rx.recv_timeout(Duration::from_secs(300)).expect("no progress from SFT");
        if line.contains("stage warmup: step ") {
            progress += 1;
        }
        said.push(line);
    }
    let pid = child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let signalled = Instant::now();
    let status = child.wait().unwrap();
    let stopped_in = signalled.elapsed();
    // Every line the run wrote: the reader forwards them until standard error closes (a loaded
    // machine may not have forwarded the last ones yet when the process has exited).
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(30)) {
        said.push(line);
    }
    let said = said.join("\n");
    assert_eq!(status.code(), Some(130), "{said}");
    assert!(said.contains("stopped; resume with `wrlc run --resume"), "{said}");
    assert!(stopped_in < Duration::from_secs(20), "stopped {stopped_in:?} after SIGTERM");
    let committed = wrl_exec::RunDir::inspect(&cut).unwrap();
    assert!(!committed.cursor.done.iter().any(|d| d == "stage:warmup"), "{committed:?}");
    assert!(committed.checkpoint.is_some(), "no checkpoint inside the stage: {committed:?}");
    let partial = sft_figures(&cut).len();
    assert!(partial > 0 && partial < sft_figures(&whole).len(), "{partial} steps before the stop");

    let status = wrlc().arg("run").arg("--resume").arg(&cut).status().unwrap();
    assert!(status.success(), "the resumed run failed");
    assert_eq!(sft_figures(&cut), sft_figures(&whole), "the resumed stage's figures differ");
    for f in ["model.safetensors", "optimizer.safetensors"] {
        let a = std::fs::read(whole.join("checkpoints/stage-warmup").join(f)).unwrap();
        let b = std::fs::read(cut.join("checkpoints/stage-warmup").join(f)).unwrap();
        assert!(a == b, "the final `{f}` differs from the uninterrupted run's");
    }
}

/// A search agent's GRPO (no browser), two iterations with a checkpoint each: a finished run
/// with trajectories to damage.
fn rl_run(dir: &Path) -> PathBuf {
    let recipe = dir.join("rl.wrl");
    std::fs::write(
        &recipe,
        "use std::rewards::answer_match\n\
         model policy = std::models::tiny\n\
         dataset questions = std::sandbox::qa(count: 4)\n\
         env web = search_api(\"http://127.0.0.1:9\") {\n\
         \x20 target = std::sandbox::search\n\
         \x20 tools = std::tools::webdancer\n\
         \x20 step_text = 64 tokens\n\
         }\n\
         agent dancer = react(policy, web) { max_turns = 2 turns, max_response = 16 tokens, history = action_only }\n\
         stage online = grpo(policy, questions, dancer) {\n\
         \x20 reward = answer_match\n\
         \x20 prompts = 2\n\
         \x20 group = 2\n\
         \x20 phases = [{ iters = 2, horizon = 2 steps, lr = 1e-4 }]\n\
         }\n",
    )
    .unwrap();
    let out = dir.join("run");
    let status = wrlc().arg("run").arg(&recipe).arg("--out").arg(&out).status().unwrap();
    assert!(status.success(), "the run to damage failed");
    out
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let t = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), t).unwrap();
        }
    }
}

/// `wrlc ARGS`: exit code and standard error.
fn wrlc_says(args: &[&std::ffi::OsStr]) -> (Option<i32>, String) {
    let out = wrlc().args(args).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn edit_json(p: &Path, f: impl FnOnce(&mut serde_json::Value)) {
    let mut v: serde_json::Value = serde_json::from_str(&read(p)).unwrap();
    f(&mut v);
    std::fs::write(p, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

#[test]
fn a_resume_checks_what_it_trusts_before_it_writes() {
    let dir = tempfile::tempdir().unwrap();
    let run = rl_run(dir.path());
    let state = |o: &Path| o.join("state.json");
    // What is damaged, how, and what the refusal must name.
    type Damage = (&'static str, Box<dyn Fn(&Path)>, &'static str);
    let damaged: Vec<Damage> = vec![
        (
            "a committed line made invalid, same length",
            Box::new(|o: &Path| {
                let p = o.join("trajectories.jsonl");
                let text = read(&p);
                let second = text.match_indices('\n').next().unwrap().0 + 1;
                let line = &text[second..];
                let at = second + line.find("\"node\":").unwrap();
                let mut bytes = text.into_bytes();
                bytes[at + 4] = b'x';
                std::fs::write(&p, bytes).unwrap();
            }),
            "trajectories.jsonl` line 2",
        ),
        (
            "a committed length off a line boundary",
            Box::new(move |o: &Path| {
                edit_json(&state(o), |v| {
                    let n = v["trajectories_len"].as_u64().unwrap();
                    v["trajectories_len"] = (n - 3).into();
                })
            }),
            "trajectories.jsonl",
        ),
        (
            "a count of lines that shifts every later id",
            Box::new(move |o: &Path| {
                edit_json(&state(o), |v| {
                    let n = v["trajectories"].as_u64().unwrap();
                    v["trajectories"] = (n + 1).into();
                })
            }),
            "lines",
        ),
        (
            "a checkpoint outside the run directory",
            Box::new(move |o: &Path| {
                edit_json(&state(o), |v| v["checkpoint"] = "../../other/checkpoints/x".into())
            }),
            "outside the run directory",
        ),
    ];
    for (what, damage, named) in &damaged {
        let copy = dir.path().join(what.replace(' ', "-"));
        copy_dir(&run, &copy);
        damage(&copy);
        let traj = std::fs::read(copy.join("trajectories.jsonl")).unwrap();
        let (code, err) = wrlc_says(&[
            "run".as_ref(),
            "--dry-run".as_ref(),
            "--resume".as_ref(),
            copy.as_os_str(),
        ]);
        assert_ne!(code, Some(0), "{what}: the dry run passed: {err}");
        assert!(err.contains("E0508") && err.contains(named), "{what}: {err}");
        let (code, err) = wrlc_says(&["run".as_ref(), "--resume".as_ref(), copy.as_os_str()]);
        assert_ne!(code, Some(0), "{what}: the resume passed: {err}");
        assert!(err.contains("E0508"), "{what}: {err}");
        let after = std::fs::read(copy.join("trajectories.jsonl")).unwrap();
        assert!(after == traj, "{what}: the resume wrote to the file it refused");
    }

    // The last checkpoint's state edited outside its checksums (`optimizer_t`), or written
    // without checksums: the resume goes back to the previous checkpoint, saying why.
    let last = wrl_exec::RunDir::inspect(&run).unwrap().checkpoint.unwrap();
    for (what, edit) in [
        (
            "optimizer_t",
            Box::new(|v: &mut serde_json::Value| v["optimizer_t"] = 7.into())
                as Box<dyn Fn(&mut serde_json::Value)>,
        ),
        (
            "checksums",
            Box::new(|v: &mut serde_json::Value| {
                v.as_object_mut().unwrap().remove("checksums");
            }),
        ),
    ] {
        let copy = dir.path().join(format!("state-{what}"));
        copy_dir(&run, &copy);
        edit_json(&copy.join("checkpoints").join(&last).join("trainer_state.json"), edit);
        let out = wrlc().args(["run", "--dry-run", "--resume"]).arg(&copy).output().unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(said.contains("trainer_state.json") && said.contains("damaged"), "{what}: {said}");
    }

    // A save killed midway leaves `.tmpXXXXXX` (a whole model) in a checkpoint: removed.
    let copy = dir.path().join("leftover");
    copy_dir(&run, &copy);
    let tmp = copy.join("checkpoints").join(&last).join(".tmpAb12Cd");
    std::fs::write(&tmp, b"half a model").unwrap();
    let status = wrlc().arg("run").arg("--resume").arg(&copy).status().unwrap();
    assert!(status.success());
    assert!(!tmp.exists(), "the temporary of a killed save is still there");
}
