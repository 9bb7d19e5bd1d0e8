//! The estimate figures of the cases in tests/recipes, each fixed against the arithmetic of the
//! engine it follows: a critic's steps and warm-up, verl's epochs (ARPO), tasks generated from
//! failures, what fits a device, and a simulated search engine's calls (ZeroSearch).

#![allow(clippy::unwrap_used)] // test helpers fail loudly, like the tests they serve

use serde_json::Value;
use wrl_tests::wrlc;

use crate::golden_plans::{estimate, figures};

/// `tests/recipes/ppo_critic.wrl`: 2 + 1 iterations of 4 prompts × 1 × 3 turns = 12 turns in
/// mini-batches of 16, one epoch: one step per iteration. The critic takes all three; its
/// warm-up (1 iteration, counted from the stage's first) leaves the policy two.
#[test]
fn the_estimate_counts_a_critics_steps_and_its_warm_up() {
    let e = estimate("tests/recipes/ppo_critic.wrl", None);
    assert_eq!(e["critic_steps"], 3, "{e}");
    let phase = |k: u32| {
        e["stages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == format!("stage:online/phase:{k}"))
            .cloned()
            .unwrap()
    };
    assert_eq!(
        (phase(1)["optimizer_steps"].as_u64(), phase(1)["critic_steps"].as_u64()),
        (Some(1), Some(2))
    );
    assert_eq!(
        (phase(2)["optimizer_steps"].as_u64(), phase(2)["critic_steps"].as_u64()),
        (Some(1), Some(1))
    );
    // A recipe without a critic has no such figure.
    assert!(estimate("recipes/quickstart.wrl", None).get("critic_steps").is_none());
}

/// `tests/recipes/arpo.wrl` (#47), the figures by verl's arithmetic: 2 epochs over 1,320
/// questions at 64 a batch, each pass's last partial batch dropped (`drop_last=True`,
/// verl/trainer/ppo/ray_trainer.py:352; `total_training_steps = len(train_dataloader) *
/// total_epochs`, :378): 2 × ⌊1,320 / 64⌋ = 40 iterations, where ⌈2 × 1,320 / 64⌉ made 42;
/// 40 × 64 × 5 = 12,800 trajectories; 2 optimiser steps an iteration (320 = 256 + 64,
/// `DataProto.split`, verl/protocol.py:925). Every episode's replies stop at its 10,000
/// `trajectory_tokens`, in validation too: 8 passes (every 5 of 40 iterations) × 203 questions
/// = 1,624 episodes of at most 10 × 4,000 tokens, capped at 10,000 — 16,240,000, not
/// 64,960,000; the evaluation's at its own 8,000. Branching keeps the 5 trajectories of each
/// question (a tree that ends early is filled), of which at most 5 − 2 = 3 are branches:
/// 40 × 64 × 3 = 7,680; the steps and tokens above count every sample whole, upper bounds.
#[test]
fn the_arpo_like_estimate_follows_verls_arithmetic() {
    let e = estimate("tests/recipes/arpo.wrl", None);
    assert_eq!(figures(&e), [Some(12_800), Some(128_000), Some(0), Some(80)]);
    assert_eq!(e["branches"].as_u64(), Some(7_680));
    assert!(e["validation"].get("branches").is_none(), "validation samples whole episodes");
    let (code, text, _) = wrlc(["estimate", "tests/recipes/arpo.wrl"]);
    assert_eq!(code, 0);
    assert!(text.contains("branches (max)        7,680"), "{text}");
    assert_eq!(e["max_generated_tokens"].as_u64(), Some(12_800 * 10_000));
    assert_eq!(e["validation"]["trajectories"].as_u64(), Some(8 * 203));
    assert_eq!(e["validation"]["max_generated_tokens"].as_u64(), Some(16_240_000));
    assert_ne!(e["validation"]["max_generated_tokens"].as_u64(), Some(1_624 * 10 * 4_000));
    // The evaluation's own budget: 100 episodes of at most 10 × 4,000 tokens, capped at 8,000.
    assert_eq!(e["evaluation"]["max_generated_tokens"].as_u64(), Some(100 * 8_000));
    let (code, out, _) = wrlc(["plan", "tests/recipes/arpo.wrl"]);
    assert_eq!(code, 0);
    assert!(out.contains("iters = 40 iters"), "{out}");
    // The memory of the phase is sized for its episodes, by the one rule E0404 uses: at turn
    // 10, 256 task + 9 × 160 search results (none before the first call) + 10,000 replies =
    // 11,696 tokens, not the model's 12,000-token context (nor a 40,960 one).
    let (code, json, _) = wrlc(["plan", "tests/recipes/arpo.wrl", "--format", "json"]);
    assert_eq!(code, 0);
    let plan: wrl_plan::Plan = serde_json::from_str(&json).unwrap();
    let phase = plan.node("stage:online/phase:1").unwrap();
    assert_eq!(wrl_plan::episode_tokens(&plan, phase), Some(11_696));
}

/// `tests/recipes/from_failures.wrl`: 3 iterations of 4 prompts, each failed task making at
/// most 2 new ones: 24 generated tasks at most; they take fresh tasks' places, so the
/// trajectories are the 12 the batches hold.
#[test]
fn the_estimate_counts_the_tasks_generated_from_failures() {
    let e = estimate("tests/recipes/from_failures.wrl", None);
    assert_eq!((e["generated_tasks"].as_u64(), e["trajectories"].as_u64()), (Some(24), Some(12)));
    assert!(estimate("recipes/quickstart.wrl", None).get("generated_tasks").is_none());
}

/// `wrlc estimate --device`: each stage against a device's memory; a stage that does not fit
/// names the changes that would make it fit, with the figure they give; an unknown device is a
/// usage error that lists the names.
#[test]
fn estimates_say_what_fits_a_device() {
    let args = ["estimate", "tests/recipes/lora.wrl", "--set", "online.lora=off"];
    let (code, out, err) =
        wrlc(args.iter().copied().chain(["--format", "json", "--device", "69MiB"]));
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["fit"]["device"]["bytes"].as_u64(), Some(69 << 20));
    let stages = v["fit"]["stages"].as_array().unwrap();
    let peak = |id: &str, dtype: &str| {
        let m = v["models"][0]["stages"].as_array().unwrap();
        m.iter().find(|s| s["id"] == id).unwrap()["memory"][dtype]["total"].as_u64().unwrap()
    };
    assert_eq!(stages.len(), 2, "{stages:?}");
    for s in stages {
        let id = s["stage"].as_str().unwrap();
        assert_eq!(s["need"].as_u64(), Some(peak(id, "f32")), "{id}");
        assert_eq!(s["fits"].as_bool(), Some(peak(id, "f32") <= 69 << 20), "{id}");
    }
    // The GRPO phase (the trainer's forward batch of whole episodes, f32, layers recomputed
    // already) does not fit 69 MiB; in bf16 it would, at the bf16 row's figure.
    let rl = stages.iter().find(|s| s["stage"] == "stage:online/phase:1").unwrap();
    assert_eq!(rl["fits"].as_bool(), Some(false), "{rl}");
    let way = &rl["way_out"];
    assert_eq!(way["changes"].as_array().map(Vec::len), Some(1), "{way}");
    assert!(way["changes"][0].as_str().unwrap().contains("dtype = bf16"), "{way}");
    assert_eq!(way["need"].as_u64(), Some(peak("stage:online/phase:1", "bf16")), "{way}");
    let (code, out, _) = wrlc(args.iter().copied().chain(["--device", "69MiB"]));
    assert_eq!(code, 0);
    assert!(
        out.contains("fit on 69MiB (69.0 MiB)") && out.contains("fits with `dtype = bf16`"),
        "{out}"
    );
    let (code, _, err) = wrlc(["estimate", "recipes/quickstart.wrl", "--device", "h100"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown device `h100`") && err.contains("h100-80g"), "{err}");
}

/// ZeroSearch-like: every env step of training may search once (its `search` takes one query),
/// each search one call of the simulator, counted under its model with the judge calls; the
/// evaluation searches a real engine and calls none. 203 iterations × 64 prompts × group 5 ×
/// horizon 5 = 324,800 (the answer's own step included: an upper bound).
#[test]
fn the_estimate_counts_a_simulated_search_engines_calls() {
    let e = estimate("tests/recipes/zerosearch.wrl", None);
    let stages = e["stages"].as_array().unwrap();
    let rl = stages.iter().find(|s| s["kind"] == "rl_phase").unwrap();
    assert_eq!(figures(rl), [Some(64_960), Some(324_800), Some(324_800), Some(203)]);
    assert_eq!(rl["judge_calls_by_model"]["model:engine"].as_u64(), Some(324_800));
    let ev = stages.iter().find(|s| s["kind"] == "eval").unwrap();
    assert_eq!(ev["judge_calls_max"].as_u64(), Some(0));
    // A `search` that takes a list of queries asks the engine an unknown number of times.
    let text =
        std::fs::read_to_string(wrl_tests::workspace_root().join("tests/recipes/zerosearch.wrl"))
            .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let listed = dir.path().join("zerosearch.wrl");
    std::fs::write(
        &listed,
        text.replace("tool search(query: string)", "tool search(query: list(string))"),
    )
    .unwrap();
    let e = estimate(listed.to_str().unwrap(), None);
    assert_eq!(e["judge_calls_max"], Value::Null, "{e}");
}

/// `tests/recipes/api_policy.wrl`: a served policy is called once a turn, so an evaluation of 6
/// questions at 4 turns makes at most 24 calls, counted under its model.
#[test]
fn the_estimate_counts_a_served_policys_calls() {
    let e = estimate("tests/recipes/api_policy.wrl", None);
    let ev = &e["evaluation"];
    assert_eq!(
        (ev["max_env_steps"].as_u64(), ev["judge_calls_max"].as_u64()),
        (Some(24), Some(24))
    );
    let stage =
        e["stages"].as_array().unwrap().iter().find(|s| s["id"] == "eval:held_out").unwrap();
    assert_eq!(stage["judge_calls_by_model"]["model:policy"].as_u64(), Some(24), "{stage}");
    // A trained policy's evaluation calls nothing.
    let q = estimate("recipes/quickstart.wrl", None);
    assert_eq!(q["evaluation"]["judge_calls_max"].as_u64(), Some(0));
}
