//! Writes a run directory's logs through the real `RunDir` (SFT steps, RL iterations of two
//! phases, an evaluation, a rolled-back uncommitted iteration, a resume), so that
//! `tests/scripts/tensorboard-read.sh` can read its event file with TensorBoard's own reader
//! without a training run.

use std::path::Path;
use std::process::ExitCode;

use wrl_exec::rundir::records::{EvalLine, RlIter, SftStep, StepMemory};
use wrl_exec::{Cursor, MetricLine, RunDir};

fn sft(step: u64, loss: f64) -> MetricLine {
    MetricLine::Sft(SftStep {
        stage: "warmup".into(),
        node: "stage:warmup".into(),
        step,
        loss,
        lr: 1e-3,
        grad_norm: 0.5 + step as f64,
        epoch: Some(0),
        global_step: 0,
        phase: None,
        time: 0.0,
        memory: StepMemory { host_peak_bytes: Some((300 + step) << 20), device_bytes: None },
    })
}

fn rl(phase: u64, iter: u64, reward: f64) -> MetricLine {
    MetricLine::Rl(RlIter {
        stage: "online".into(),
        node: format!("stage:online/phase:{phase}"),
        iter,
        reward,
        success: reward / 2.0,
        uniform_groups: 1,
        loss: 0.25,
        lr: 1e-5,
        grad_norm: 1.5,
        clip_frac: Some(0.125),
        replayed: None,
        branches: None,
        trimmed: None,
        generated: None,
        value_loss: None,
        critic_lr: None,
        step_advantage: None,
        samples: 16,
        images: None,
        rollout_s: 2.0,
        update_s: 1.0,
        retried: 0,
        // Every other iteration left two episodes out (their judge failed).
        excluded: if iter.is_multiple_of(2) {
            std::collections::BTreeMap::from([("judge_error".to_string(), 2)])
        } else {
            std::collections::BTreeMap::new()
        },
        components: std::collections::BTreeMap::new(),
        roles: None,
        global_step: 0,
        phase: None,
        time: 0.0,
        memory: StepMemory {
            host_peak_bytes: Some(512 << 20),
            device_bytes: Some((40 + iter) << 30),
        },
    })
}

fn run(dir: &Path) -> Result<(), String> {
    let e = |e: wrl_exec::RunDirError| e.to_string();
    // A plan of no nodes: enough for the run's identity, which the event file carries.
    let plan = wrl_plan::Plan {
        version: wrl_plan::PLAN_VERSION,
        recipe: "fixture.wrl".into(),
        profile: None,
        variant: None,
        nodes: Vec::new(),
        edges: Vec::new(),
        claims: Vec::new(),
    };
    let mut r = RunDir::create(dir, &wrl_plan::render_json(&plan)).map_err(e)?;
    r.log_metrics(vec![sft(1, 2.0), sft(2, 1.5), sft(3, 1.25)]).map_err(e)?;
    r.log_metrics(vec![MetricLine::Eval(EvalLine {
        stage: "heldout".into(),
        node: "eval:heldout".into(),
        after: "warmup".into(),
        success: 0.25,
        mean_reward: None,
        episodes: 8,
        subsets: Default::default(),
        global_step: 0,
        phase: None,
        time: 0.0,
    })])
    .map_err(e)?;
    r.log_metrics(vec![rl(1, 1, 0.5)]).map_err(e)?;
    r.commit(None, &Cursor::default(), false).map_err(e)?;
    // Logged but never committed (a kill): the resume rolls it back, in TensorBoard too.
    r.log_metrics(vec![rl(1, 2, 99.0)]).map_err(e)?;
    drop(r);
    let mut r = RunDir::resume(dir).map_err(e)?;
    r.log_metrics(vec![rl(1, 2, 0.75), rl(2, 1, 1.0)]).map_err(e)?;
    r.commit(None, &Cursor::default(), true).map_err(e)
}

fn main() -> ExitCode {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: metrics_fixture DIR");
        return ExitCode::from(2);
    };
    match run(Path::new(&dir)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
