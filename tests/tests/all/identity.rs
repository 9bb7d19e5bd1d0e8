//! Recipes shared: a plan's identity (the same for recipes that mean the same plan), `wrlc diff`
//! between two recipes, and `wrlc lock` / `wrlc run --locked` against a changed input.

// Helpers of this test file panic on purpose: a panic is a failed test.
#![allow(clippy::unwrap_used)]

use serde_json::Value;
use wrl_tests::{workspace_root, wrlc};

fn plan_args(recipe: &str, profile: Option<&str>) -> Vec<String> {
    let mut args = vec!["plan".to_string(), recipe.to_string(), "--format".into(), "json".into()];
    if let Some(p) = profile {
        args.push("--profile".into());
        args.push(p.into());
    }
    args
}

/// The identity `wrlc plan --format json` states for `file` (under `profile`).
fn identity_of(file: &std::path::Path, profile: Option<&str>) -> String {
    let (code, out, err) = wrlc(plan_args(&file.display().to_string(), profile));
    assert_eq!(code, 0, "{}: {err}", file.display());
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["identity"]["wrlc"], env!("CARGO_PKG_VERSION"));
    v["identity"]["plan"].as_str().unwrap().to_string()
}

#[test]
fn recipes_that_mean_the_same_plan_have_the_same_identity() {
    let dir = tempfile::tempdir().unwrap();
    let original =
        std::fs::read_to_string(workspace_root().join("recipes/quickstart.wrl")).unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let base = identity_of(&write("quickstart.wrl", &original), None);
    // Reformatted, with comments and doc comments of its own.
    let reformatted = original
        .replace("  prompts = 8\n", "  prompts   =   8 // eight tasks an iteration\n\n")
        .replace("/// The policy:", "// a comment\n/// A different doc comment. The policy:")
        .replace("eval after_sft", "\n\n// evaluations\neval after_sft");
    assert_eq!(identity_of(&write("reformatted.wrl", &reformatted), None), base, "reformatted");
    // Declarations in another order, fields of a stage in another order.
    let demos = "dataset demos = std::sandbox::demos(count: 24) {\n  sites = [shop, wiki]\n  augment = 4\n}\n";
    let reordered = original
        .replace(demos, "")
        .replace("eval after_sft", &format!("{demos}\neval after_sft"))
        .replace("  prompts = 8\n  group = 6\n", "  group = 6\n  prompts = 8\n");
    assert_ne!(reordered, original);
    assert_eq!(identity_of(&write("reordered.wrl", &reordered), None), base, "reordered");
    // A field moved into a profile that is applied; a path written another way.
    let profiled =
        original.replace("  group = 6\n", "") + "\nprofile same {\n  online.group = 6\n}\n";
    let p = write("profiled.wrl", &profiled);
    assert_eq!(identity_of(&p, Some("same")), base, "moved into an applied profile");
    assert_ne!(identity_of(&p, None), base, "the default group is another plan");
    // A value that differs is another plan.
    let other = original.replace("  group = 6\n", "  group = 5\n");
    assert_ne!(identity_of(&write("other.wrl", &other), None), base);
}

#[test]
fn diff_lists_every_field_that_differs_between_the_two_openwebrl_recipes() {
    let args = ["diff", "recipes/openwebrl.wrl", "recipes/openwebrl-8b.wrl"];
    let (code, out, err) = wrlc(args);
    assert_eq!(code, 1, "they differ: {err}");
    for line in [
        "  concurrency: 90 (recipe) -> 80 (recipe)",
        "  id: \"Qwen/Qwen3-VL-4B-Thinking\" (recipe) -> \"Qwen/Qwen3-VL-8B-Instruct\" (recipe)",
        "  validate: validation(…) (recipe) -> off (recipe)",
        "  judge_calls[gpt-4.1]: 43,207 -> ?",
    ] {
        assert!(out.contains(line), "no `{line}` in\n{out}");
    }
    let (code, json, _) = wrlc([&args[..], &["--format", "json"]].concat());
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["version"], 1);
    assert_eq!(v["identical"], false);
    let fields = v["fields"].as_array().unwrap();
    // Every row of the text is a field of the JSON, with the same values and sources.
    let rows = out.lines().filter(|l| l.starts_with("  ") && l.contains(") -> ")).count();
    let estimate = v["estimate"].as_array().unwrap().len();
    assert_eq!(rows, fields.len(), "text rows vs JSON fields");
    assert!(estimate > 10);
    let conc = fields
        .iter()
        .find(|f| f["node"] == "env:web" && f["field"] == "concurrency")
        .expect("concurrency differs");
    assert_eq!(conc["a"]["value"], "90");
    assert_eq!(conc["b"]["source"]["kind"], "recipe");
    // The same plan: exit 0; a profile's values are sourced to it.
    assert_eq!(wrlc(["diff", "recipes/quickstart.wrl", "recipes/quickstart.wrl"]).0, 0);
    let (_, smoke, _) =
        wrlc(["diff", "recipes/openwebrl.wrl", "recipes/openwebrl.wrl", "--profile-b", "smoke"]);
    assert!(smoke.contains("  max_turns: 30 turns (recipe) -> 6 turns (profile smoke)"), "{smoke}");
    // `--set` values are sourced to it.
    let (_, set, _) = wrlc([
        "diff",
        "recipes/quickstart.wrl",
        "recipes/quickstart.wrl",
        "--set-b",
        "online.group=5",
    ]);
    assert!(set.contains("  group: 6 (recipe) -> 5 (--set)"), "{set}");
    // A recipe that does not check: its diagnostics, no diff, exit 2.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.wrl");
    std::fs::write(&bad, "model policy = tiny_transformer { layerz = 2 }\n").unwrap();
    let (code, out, err) = wrlc(["diff", "recipes/quickstart.wrl", &bad.display().to_string()]);
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert!(err.contains("E0301"), "{err}");
}

#[test]
fn a_locked_run_refuses_a_dataset_changed_by_one_byte() {
    let dir = tempfile::tempdir().unwrap();
    let demos = dir.path().join("demos.jsonl");
    std::fs::copy(workspace_root().join("tests/ui/run/data/demos.jsonl"), &demos).unwrap();
    let recipe = dir.path().join("r.wrl");
    std::fs::write(
        &recipe,
        format!(
            "model policy = std::models::tiny\ndataset demos = jsonl(\"{}\") {{ kind = trajectories }}\n\
             stage warmup = sft(policy, demos) {{ lr = 1e-3 }}\n",
            demos.display()
        ),
    )
    .unwrap();
    let r = recipe.display().to_string();
    let out = dir.path().join("run").display().to_string();
    let (code, said, err) = wrlc(["lock", &r]);
    assert_eq!(code, 0, "{err}");
    assert!(said.contains("locked 1 input file(s)"), "{said}");
    let lock = std::fs::read_to_string(dir.path().join("r.wrl.lock")).unwrap();
    assert!(lock.contains("\"sha256\""), "{lock}");
    let dry =
        |extra: &[&str]| wrlc([&["run", "--dry-run", "--out", &out][..], extra, &[&r]].concat());
    assert_eq!(dry(&["--locked"]).0, 0, "unchanged: the run may start");
    // One byte changed, the size the same.
    let mut bytes = std::fs::read(&demos).unwrap();
    // A letter of the first goal, not of a key: still a valid record.
    let at = bytes.windows(8).position(|w| w == b"blue mug").unwrap();
    bytes[at] = b'g';
    std::fs::write(&demos, &bytes).unwrap();
    let (code, _, err) = dry(&["--locked"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("E0542") && err.contains("changed"), "{err}");
    let (code, _, err) = dry(&[]);
    assert_eq!(code, 0, "without --locked the run goes on: {err}");
    assert!(err.contains("W0240"), "{err}");
}
