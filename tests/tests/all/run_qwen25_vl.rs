//! `wrlc run` with a Qwen2.5-VL policy (#43 items 1 and 8): `family = qwen2_5_vl` loads through
//! the executor as Qwen3-VL does — `tests/recipes/vl_browser.wrl`'s GRPO iteration on Chromium
//! screenshots with the tiny random Qwen2.5-VL `wrl_trainer::hf::tiny_vl` writes, its checkpoint
//! a Qwen2.5-VL directory whose tower did not move —; a `family` that names the other VL family,
//! or a text one, is refused at `family` (E0511); and recipes/opagent.wrl's Qwen2.5-VL-72B
//! grounder is no longer refused for its model class by `--dry-run`, only for its weights.

use std::path::Path;

use wrl_exec::{MetricLine, RunDir};
use wrl_trainer::hf::tiny_vl::TinyVision;
use wrl_trainer::vision::VlFamily;

use crate::run_vl::{last_online_checkpoint, policy_of, run_recipe_with, tiny_vl_of, weights};

/// `tests/recipes/vl_browser.wrl` with the tiny Qwen2.5-VL: the run finishes one GRPO
/// iteration, its checkpoint reads back as a Qwen2.5-VL policy, and the tower is the source's.
#[test]
fn vl_browser_trains_a_qwen25_vl_policy_on_screenshots() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny_vl_of(dir.path(), "tiny-qwen2.5-vl", &TinyVision::qwen25());
    let out = run_recipe_with(dir.path(), "vl_browser", &model, "qwen2_5_vl");
    let metrics = RunDir::resume(&out).unwrap().read_metrics().unwrap();
    assert!(metrics.iter().any(|m| matches!(m, MetricLine::Rl(_))), "no RL iteration");
    let ckpt = last_online_checkpoint(&out);
    let files = wrl_trainer::hf::inspect(&ckpt).unwrap();
    assert_eq!(files.vision.map(|v| v.family), Some(VlFamily::Qwen25Vl));
    let tower = |d: &Path| -> Vec<(String, Vec<f32>)> {
        weights(d).into_iter().filter(|(k, _)| k.starts_with("model.visual.")).collect()
    };
    let before = tower(&model);
    assert!(before.iter().any(|(k, _)| k == "model.visual.merger.ln_q.weight"));
    assert_eq!(before, tower(&ckpt), "the frozen tower moved");
    let t = wrl_trainer::Trainer::load(&ckpt).expect("the Qwen2.5-VL checkpoint");
    assert_eq!(t.model().vision().map(|v| v.config.family), Some(VlFamily::Qwen25Vl));
}

/// A dry run of `vl_browser.wrl` over the tiny Qwen2.5-VL with `family` set to `family`.
fn dry_run(dir: &Path, model: &Path, family: &str) -> (u8, String) {
    let recipe = wrl_tests::workspace_root().join("tests/recipes/vl_browser.wrl");
    let policy = policy_of(model, family);
    let out = dir.join(format!("dry-{family}"));
    let (code, _, stderr) = wrl_cli::run_captured([
        "run".as_ref(),
        recipe.as_os_str(),
        "--dry-run".as_ref(),
        "--out".as_ref(),
        out.as_os_str(),
        "--set".as_ref(),
        policy.as_ref(),
    ]);
    (code, stderr)
}

#[test]
fn family_must_name_the_checkpoints_vl_family() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny_vl_of(dir.path(), "tiny-qwen2.5-vl", &TinyVision::qwen25());
    let (code, stderr) = dry_run(dir.path(), &model, "qwen2_5_vl");
    assert_eq!(code, 0, "{stderr}");
    // The other VL family's processor grid (32 pixels) would misjudge every screenshot.
    let (code, stderr) = dry_run(dir.path(), &model, "qwen3_vl");
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("E0511"), "{stderr}");
    assert!(
        stderr.contains("says `family = qwen3_vl`")
            && stderr.contains("is a vision-language model (`qwen2_5_vl`)"),
        "{stderr}"
    );
    assert!(stderr.contains("set `family = qwen2_5_vl`"), "{stderr}");
}

/// recipes/opagent.wrl names Qwen/Qwen2.5-VL-72B-Instruct (`family = qwen2_5_vl`) as its
/// grounder: with the values the recipe leaves `unknown` given, a dry run refuses it only for
/// weights this machine lacks (E0510, not in its Hugging Face cache), never for its family or
/// class (before, E0511: "not Qwen2.5-VL models").
#[test]
fn opagent_dry_run_refuses_its_grounder_only_for_its_weights() {
    let (_, _, stderr) = wrl_tests::wrlc([
        "run",
        "recipes/opagent.wrl",
        "--dry-run",
        "--set",
        "grounder72.context=32Ki tokens",
        "--set",
        "grounder72.dtype=bf16",
        "--set",
        "grounder72.image_tokens=1200 tokens",
        "--set",
        "grounder72.gradient_checkpointing=true",
    ]);
    assert!(!stderr.contains("Qwen2.5-VL models"), "{stderr}");
    assert!(!stderr.contains("this family does not run on this runtime"), "{stderr}");
    let grounder: Vec<&str> =
        stderr.split("\n\n").filter(|b| b.contains("model `grounder72`:")).collect();
    assert_eq!(grounder.len(), 1, "{stderr}");
    assert!(grounder[0].contains("E0510") && grounder[0].contains("cannot be found"), "{stderr}");
}
