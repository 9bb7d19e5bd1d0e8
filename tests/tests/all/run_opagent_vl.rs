//! recipes/opagent.wrl's `smoke_vl` profile end to end in real Chromium (#43 item 8): the
//! framework's grounder, the tiny random Qwen2.5-VL the repository ships
//! (`recipes/models/tiny-qwen2.5-vl`), is shown each step's screenshot as an image — in its
//! MT-SFT examples (the expert's demonstrations recorded with a PNG a step) and in its GRPO
//! turns through the module graph, each sample carrying its screenshot to the update —, calls
//! OpAgent's own coordinate tools, and trains its text decoder while its tower stays as shipped;
//! the single model (the tiny Qwen3-VL) runs its GRPO and evaluation on screenshots too.

use std::path::Path;

use wrl_exec::{MetricLine, RunDir};
use wrl_trainer::vision::VlFamily;

use crate::run_vl::weights;

#[test]
fn opagent_smoke_vl_shows_the_frameworks_grounder_its_screenshots() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let args = ["run", "recipes/opagent.wrl", "--profile", "smoke_vl", "--out"];
    let mut args: Vec<std::ffi::OsString> = args.iter().map(|a| a.into()).collect();
    args.push(out.clone().into_os_string());
    let started = std::time::Instant::now();
    let (code, _, stderr) = wrl_tests::wrlc(args);
    assert_eq!(code, 0, "{stderr}");
    eprintln!("opagent smoke_vl ran in {:.1?}", started.elapsed());
    // The grounder's MT-SFT: every part of its mixture recorded a screenshot a step, which its
    // examples show; the loss falls.
    for part in ["planning", "acting", "grounding"] {
        let pngs = std::fs::read_dir(out.join("data").join(part)).unwrap().count();
        assert!(pngs >= 2, "{part}: one screenshot per expert step: {pngs}");
    }
    let metrics = RunDir::resume(&out).unwrap().read_metrics().unwrap();
    let sft = crate::run_hf::sft_losses(&metrics);
    assert!(sft.len() >= 3 && sft.last() < sft.first(), "SFT's loss does not fall: {sft:?}");
    // Each RL iteration's turns were shown screenshots, one a turn (`screenshot(last: 1)`).
    let rl = |stage: &str| {
        metrics
            .iter()
            .find_map(|m| match m {
                MetricLine::Rl(r) if r.stage == stage => Some(r.clone()),
                MetricLine::Rl(_) | MetricLine::Sft(_) | MetricLine::Eval(_) => None,
            })
            .unwrap_or_else(|| panic!("no iteration of `{stage}`"))
    };
    let grounder = rl("grounder_rl");
    assert!(grounder.samples > 0, "the grounder sampled no turn: {grounder:?}");
    assert_eq!(grounder.images, Some(grounder.samples), "one screenshot a grounder turn");
    let single = rl("rl");
    assert_eq!(single.images, Some(single.samples), "one screenshot a turn of the single model");
    // The grounder's turns reached the env through OpAgent's tool set: what ran is one of its
    // actions' JSON lines, else the turn was refused as no call of that set.
    let lines = std::fs::read_to_string(out.join("trajectories.jsonl")).unwrap();
    let mut turns = 0;
    for line in lines.lines() {
        let t: wrl_exec::TrajectoryLine = serde_json::from_str(line).unwrap();
        if t.node != "stage:grounder_rl/phase:1" {
            continue;
        }
        for s in &t.trajectory.steps {
            turns += 1;
            let own = |a: &String| a.starts_with("{\"toolset\":\"opagent\"");
            let ran = !s.actions.is_empty() && s.actions.iter().all(own);
            assert!(ran || s.feedback.starts_with("error:"), "{:?} → {}", s.actions, s.feedback);
        }
    }
    assert_eq!(turns, grounder.samples, "a sample per grounder turn");
    // Weights: SFT moved the grounder's text decoder, GRPO moved it again; its tower is the
    // shipped model's throughout, and each checkpoint is a Qwen2.5-VL directory.
    let shipped = wrl_tests::workspace_root().join("recipes/models/tiny-qwen2.5-vl");
    let ckpts = out.join("checkpoints");
    let (sft_ckpt, rl_ckpt) =
        (ckpts.join("stage-multitask"), ckpts.join("stage-grounder_rl-phase-1-iter-1"));
    let family = |d: &Path| wrl_trainer::hf::inspect(d).unwrap().vision.map(|v| v.family);
    assert_eq!(family(&rl_ckpt), Some(VlFamily::Qwen25Vl));
    let [before, tuned, trained] = [&shipped, &sft_ckpt, &rl_ckpt].map(|d| weights(d));
    let moved = |a: &std::collections::BTreeMap<String, Vec<f32>>,
                 b: &std::collections::BTreeMap<String, Vec<f32>>| {
        a.keys().filter(|k| k.starts_with("model.language_model.layers.") && a[*k] != b[*k]).count()
    };
    assert!(moved(&before, &tuned) > 0, "the MT-SFT left the text decoder as it was");
    assert!(moved(&tuned, &trained) > 0, "the grounder's GRPO left the text decoder as it was");
    let tower: Vec<&String> = before.keys().filter(|k| k.starts_with("model.visual.")).collect();
    assert!(!tower.is_empty());
    for k in tower {
        assert_eq!(before[k], trained[k], "the frozen tower moved: {k}");
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["status"], "finished");
}
