//! `wrlc run --seeds N` end to end: a study over two seeds on a small recipe (its directories,
//! `study.json`, resuming it), claims decided over the seeds and required, and the baseline a
//! claim compares with: an evaluation at `start`.

use std::path::Path;

use super::{episodes, records, run_into};

/// `wrlc run RECIPE --seeds 2 [EXTRA…] --out STUDY`: its exit code, stdout and stderr.
fn two_seeds(recipe: &Path, study: &Path, extra: &[&str]) -> (u8, String, String) {
    let mut args: Vec<std::ffi::OsString> =
        vec!["run".into(), recipe.into(), "--seeds".into(), "2".into()];
    args.extend(extra.iter().map(Into::into));
    args.extend(["--out".into(), study.into()]);
    wrl_cli::run_captured(args)
}

/// `wrlc run tests/recipes/seeds.wrl --seeds 2`: two run directories under the study's, each
/// recording its seed; `study.json` aggregating both (sorted keys, no directory of this
/// machine); the two seeds differ, and seed 0 is the plain run. Resuming the finished study
/// skips both seeds; resuming it with a seed's directory gone runs that seed again, the same.
#[test]
fn a_study_over_two_seeds_aggregates_them_and_seed_zero_is_the_plain_run() {
    let recipe = Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes/seeds.wrl");
    let dir = tempfile::tempdir().unwrap();
    let study = dir.path().join("study");
    let (code, stdout, stderr) = two_seeds(&recipe, &study, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("seeds.wrl over 2 seeds (0, 1):"), "{stdout}");
    assert!(stdout.contains("held_out after warmup"), "{stdout}");
    for k in [0, 1] {
        let (summary, _, _) = records(&study.join(format!("seed-{k}")));
        assert_eq!(summary.status, "finished");
    }
    assert!(!study.join("seed-0/seed.json").exists(), "seed 0 is a plain run");
    assert_eq!(wrl_exec::study::seed_offset_of(&study.join("seed-1")), 1);

    let text = std::fs::read_to_string(study.join("study.json")).unwrap();
    assert!(!text.contains(&*dir.path().to_string_lossy()), "{text}");
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    // serde_json's maps are sorted: written in the order read, the keys were sorted.
    assert_eq!(serde_json::to_string_pretty(&json).unwrap() + "\n", text);
    assert_eq!(json["seeds"], serde_json::json!([0, 1]));
    assert_eq!(json["runs"], serde_json::json!(["seed-0", "seed-1"]));
    assert_eq!(json["status"], "finished");
    let evals = json["evals"].as_array().unwrap();
    let kinds: Vec<(&str, &str, &str)> = evals
        .iter()
        .map(|e| {
            (
                e["eval"].as_str().unwrap(),
                e["metric"].as_str().unwrap(),
                e["interval"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [("held_out", "success", "wilson"), ("pass2", "pass_at_k", "bootstrap+wilson")]
    );
    for e in evals {
        let (lo, mean, hi) =
            (e["low"].as_f64().unwrap(), e["mean"].as_f64().unwrap(), e["high"].as_f64().unwrap());
        assert!(lo <= mean && mean <= hi && hi <= 1.0, "{e}");
        assert_eq!(e["per_seed"].as_array().unwrap().len(), 2);
        assert_eq!(e["tasks"], 12, "6 questions a seed");
    }

    let of = |out: &Path| episodes(records(out).2);
    assert_ne!(of(&study.join("seed-0")), of(&study.join("seed-1")), "the two seeds are the same");
    let plain = run_into(&recipe, &dir.path().join("plain"));
    assert_eq!(of(&study.join("seed-0")), of(&plain), "seed 0 is not the plain run");

    let resume = || {
        let args: Vec<std::ffi::OsString> =
            vec!["run".into(), "--resume".into(), study.clone().into()];
        wrl_cli::run_captured(args)
    };
    let (code, _, stderr) = resume();
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("seed 0: finished, skipped")
            && stderr.contains("seed 1: finished, skipped"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(study.join("study.json")).unwrap(), text);
    let seed1 = of(&study.join("seed-1"));
    std::fs::remove_dir_all(study.join("seed-1")).unwrap();
    let (code, _, stderr) = resume();
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("seed 1: started"), "{stderr}");
    assert_eq!(of(&study.join("seed-1")), seed1, "seed 1 run again is not the same");
    assert_eq!(std::fs::read_to_string(study.join("study.json")).unwrap(), text);
}

/// `wrlc run tests/recipes/claims.wrl --seeds 2 --require-claims`: every claim decided from
/// the seeds' records, its verdict the rule's over its own interval (lower end above the
/// margin: holds; upper end below it: fails), its difference the mean of the seeds' own;
/// `--require-claims` fails the study for the two that do not hold (E0550). A single run
/// decides them over its episodes only, in `summary.json`.
#[test]
fn claims_are_decided_over_the_seeds_and_required() {
    let recipe = Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes/claims.wrl");
    let dir = tempfile::tempdir().unwrap();
    let study = dir.path().join("study");
    let (code, stdout, stderr) = two_seeds(&recipe, &study, &["--require-claims"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stdout.contains("claim no_worse: holds"), "{stdout}");
    assert!(stderr.contains("E0550") && stderr.contains("claim `better` is undecided"), "{stderr}");
    assert!(!stderr.contains("claim `no_worse`"), "{stderr}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(study.join("study.json")).unwrap()).unwrap();
    // Each seed's rate of an evaluation, from its own figures in the study.
    let per_seed = |eval: &str| -> Vec<f64> {
        let e = json["evals"].as_array().unwrap().iter().find(|e| e["eval"] == eval).unwrap();
        e["per_seed"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
    };
    let (a, b) = (per_seed("pass2"), per_seed("held_out"));
    let diff = (a[0] - b[0] + a[1] - b[1]) / 2.0;
    let claims = json["claims"].as_array().unwrap();
    let mut verdicts = Vec::new();
    for c in claims {
        let f = |k: &str| c[k].as_f64().unwrap();
        let (low, high, margin) = (f("low"), f("high"), f("at_least"));
        assert!(low <= f("difference") && f("difference") <= high, "{c}");
        assert!((f("difference") - diff).abs() < 1e-6, "{c} against {diff}");
        assert!(high - low > 0.1, "six questions a seed leave a wide interval: {c}");
        let rule = if low > margin {
            "holds"
        } else if high < margin {
            "fails"
        } else {
            "undecided"
        };
        assert_eq!(c["verdict"], rule, "{c}");
        assert_eq!((c["seeds"].as_u64(), c["eval_tasks"].as_u64()), (Some(2), Some(12)), "{c}");
        verdicts.push((c["name"].as_str().unwrap().to_string(), rule));
    }
    let names: Vec<(&str, &str)> = verdicts.iter().map(|(n, v)| (n.as_str(), *v)).collect();
    assert_eq!(names, [("no_worse", "holds"), ("better", "undecided"), ("much_better", "fails")]);
    let page = std::fs::read_to_string(study.join("report.html")).unwrap();
    assert!(page.contains("<h2>Claims</h2>") && page.contains("<b>fails</b>"), "{page}");
    assert!(page.contains("href=\"seed-1/report.html\""), "{page}");

    // One seed's own run: over its six questions only, the same rule, a wider interval.
    let (summary, _, _) = records(&study.join("seed-0"));
    let one = summary.claims.iter().find(|c| c.name == "much_better").unwrap();
    let pooled = claims.iter().find(|c| c["name"] == "much_better").unwrap();
    assert!(one.high > pooled["high"].as_f64().unwrap(), "{one:?}");
    assert_eq!(one.verdict, wrl_exec::study::claims::Verdict::Undecided, "{one:?}");
}

/// `eval … { after = [start] }` evaluates a ReAct agent's policy as declared (here the tiny
/// model's seeded initial weights) before any stage, the baseline a claim such as "SFT lifts
/// over the base model" needs; it used to stop the run ("nothing produced a policy", E0506).
#[test]
fn an_evaluation_at_start_runs_the_policy_as_declared() {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes/claims.wrl"))
            .unwrap();
    let cut = text.find("claim no_worse").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let recipe = dir.path().join("start.wrl");
    let base = "eval base = evaluate(dancer, questions) { after = [start] }\n";
    std::fs::write(&recipe, format!("{}{base}", &text[..cut])).unwrap();
    let (summary, _, _) = records(&run_into(&recipe, &dir.path().join("run")));
    let evals: Vec<(&str, usize)> =
        summary.evals.iter().map(|e| (e.eval.as_str(), e.episodes)).collect();
    // pass@2 samples each of its six questions twice.
    assert_eq!(evals, [("base", 6), ("held_out", 6), ("pass2", 12)], "{:?}", summary.evals);
}

/// `wrlc run tests/recipes/variants.wrl --seeds 2`: the recipe (`base`) and its two variants,
/// each with the same two seeds in `NAME/seed-K`; `study.json` lays them side by side (each
/// its own plan identity, evaluations and compute), says that the shorter horizon's compute
/// differs, and decides the claims across variants, paired by seed (the same tasks), each
/// verdict the rule's over its own interval and its difference the seeds' own. Resuming the
/// finished study skips every run.
#[test]
fn variants_run_with_the_same_seeds_side_by_side_and_claims_across_them() {
    let recipe = Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes/variants.wrl");
    let dir = tempfile::tempdir().unwrap();
    let study = dir.path().join("study");
    let (code, stdout, stderr) = two_seeds(&recipe, &study, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("variants.wrl and 2 variants over 2 seeds (0, 1):"), "{stdout}");
    assert!(stdout.contains("compute differs: short:"), "{stdout}");
    for v in ["base", "short", "slow"] {
        for k in [0, 1] {
            assert_eq!(records(&study.join(format!("{v}/seed-{k}"))).0.status, "finished");
        }
    }
    let text = std::fs::read_to_string(study.join("study.json")).unwrap();
    assert!(!text.contains(&*dir.path().to_string_lossy()), "{text}");
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(serde_json::to_string_pretty(&json).unwrap() + "\n", text);
    let variants = json["variants"].as_array().unwrap();
    let names: Vec<&str> = variants.iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["base", "short", "slow"]);
    let ids: std::collections::BTreeSet<&str> =
        variants.iter().map(|v| v["identity"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 3, "each variant is its own plan: {ids:?}");
    assert_eq!(variants[1]["runs"], serde_json::json!(["short/seed-0", "short/seed-1"]));
    // Each variant's figure of `held_out`, seed by seed.
    let per_seed = |v: &serde_json::Value| -> Vec<f64> {
        let e = &v["evals"][0];
        assert_eq!((e["eval"].as_str(), e["tasks"].as_u64()), (Some("held_out"), Some(12)));
        e["per_seed"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
    };
    let [base, short, slow] = [&variants[0], &variants[1], &variants[2]].map(per_seed);
    let steps = |v: &serde_json::Value, k: &str| v["compute"][k].as_u64();
    assert!(
        steps(&variants[1], "estimated_env_steps") < steps(&variants[0], "estimated_env_steps")
    );
    assert_eq!(
        steps(&variants[2], "estimated_env_steps"),
        steps(&variants[0], "estimated_env_steps")
    );
    assert!(steps(&variants[0], "env_steps").unwrap() > 0);
    assert_eq!(json["compute"]["matches"], false);
    assert!(json["compute"]["note"].as_str().unwrap().contains("short: estimated env steps"));

    let claims = json["claims"].as_array().unwrap();
    let expected = [("horizon", &base, &short), ("slower", &slow, &base)];
    for (c, (name, a, b)) in claims.iter().zip(expected) {
        assert_eq!(c["name"], name, "{c}");
        assert_eq!(c["pairing"], "seed", "{c}");
        let f = |k: &str| c[k].as_f64().unwrap();
        let diff = (a[0] - b[0] + a[1] - b[1]) / 2.0;
        assert!((f("difference") - diff).abs() < 1e-6, "{c} against {diff}");
        let (low, high, margin) = (f("low"), f("high"), f("at_least"));
        assert!(low <= f("difference") && f("difference") <= high, "{c}");
        let rule = if low > margin {
            "holds"
        } else if high < margin {
            "fails"
        } else {
            "undecided"
        };
        assert_eq!(c["verdict"], rule, "{c}");
        assert_eq!(c["seeds"], 2, "{c}");
    }
    assert_eq!(claims.len(), 2);
    let page = std::fs::read_to_string(study.join("report.html")).unwrap();
    assert!(page.contains("Variants side by side") && page.contains("compute differs"), "{page}");
    assert!(page.contains("href=\"short/seed-1/report.html\""), "{page}");

    let args: Vec<std::ffi::OsString> = vec!["run".into(), "--resume".into(), study.into()];
    let (code, _, stderr) = wrl_cli::run_captured(args);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("short, seed 1: finished, skipped"), "{stderr}");
}

/// Held-out tasks that repeat goals are not independent: an evaluation over four questions asked
/// three times each records its 4 goals and what its 12 tasks are worth (4 where the tiny policy
/// solves none), and so does each subset (`by`), its report shows both, and the study's intervals and claims count that worth, not the
/// tasks (#45: the quickstart's 256 held-out tasks held 85 goals).
#[test]
fn repeated_goals_count_as_the_tasks_they_are_worth() {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes/claims.wrl"))
            .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("repeated.jsonl");
    let questions = [
        ("In what year was Barvel founded?", "1543"),
        ("On which river does Barvel lie?", "Osk"),
        ("What is the population of Barvel?", "1"),
        ("Who founded Barvel?", "x"),
    ];
    let lines: String = (0..12)
        .map(|i| {
            let (q, a) = questions[i % 4];
            let source = if i % 4 < 2 { "a" } else { "b" };
            let row = serde_json::json!({"id": format!("q{i}"), "question": q, "answer": a, "data_source": source});
            format!("{row}\n")
        })
        .collect();
    std::fs::write(&data, lines).unwrap();
    let asked = format!(
        "dataset questions = jsonl({:?}) {{ kind = qa, columns = {{ question = \"question\", answer = \"answer\" }} }}",
        data.display()
    );
    let text =
        text.replace("dataset questions = std::sandbox::qa(count: 6) { split = test }", &asked);
    assert!(text.contains("repeated.jsonl"));
    // Split by source: two questions (six tasks) each.
    let held = "eval held_out = evaluate(dancer, questions) {\n  after = [warmup]\n";
    assert!(text.contains(held));
    let text = text.replace(held, &format!("{held}  by = \"data_source\"\n"));
    let recipe = dir.path().join("repeated.wrl");
    std::fs::write(&recipe, text).unwrap();
    let study = dir.path().join("study");
    let (code, stdout, stderr) = two_seeds(&recipe, &study, &[]);
    assert_eq!(code, 0, "{stderr}");
    let (summary, _, _) = records(&study.join("seed-0"));
    let held = summary.evals.iter().find(|e| e.eval == "held_out").unwrap();
    let rep = held.repeats.expect("12 tasks on 4 goals repeat");
    assert_eq!((held.episodes, rep.goals), (12, 4), "{held:?}");
    assert!((1..=12).contains(&rep.worth), "{rep:?}");
    if held.success == 0.0 {
        // Every repeat failed: Kish's count, the four goals.
        assert_eq!(rep.worth, 4, "{rep:?}");
    }
    // Each subset's six tasks on two goals: the tiny policy solves none, worth the 2 goals.
    for (name, sub) in &held.subsets {
        assert_eq!((sub.out_of, sub.worth), (6, Some(2)), "{name}: {sub:?}");
    }
    let page = std::fs::read_to_string(study.join("seed-0/report.html")).unwrap();
    assert!(page.contains(&format!("4 goals, worth {} independent", rep.worth)), "{page}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(study.join("study.json")).unwrap()).unwrap();
    let eval = |name: &str| {
        json["evals"].as_array().unwrap().iter().find(|e| e["eval"] == name).unwrap().clone()
    };
    let (h, p) = (eval("held_out"), eval("pass2"));
    assert_eq!(h["tasks"], 24, "{h}");
    assert_eq!(h["subsets"]["a"]["worth"], 4, "{h}");
    let worth = h["worth"].as_u64().expect("the study says what the tasks are worth");
    assert!(worth < 24, "{h}");
    assert!(stdout.contains(&format!("worth {worth} tasks")), "{stdout}");
    // The claims count the worth of each side over both seeds; their difference is still the
    // seeds' recorded rates', not the rounded counts'.
    let mean = |e: &serde_json::Value| {
        let v = e["per_seed"].as_array().unwrap();
        v.iter().map(|x| x.as_f64().unwrap()).sum::<f64>() / v.len() as f64
    };
    for c in json["claims"].as_array().unwrap() {
        let diff = c["difference"].as_f64().unwrap();
        assert!((diff - (mean(&p) - mean(&h))).abs() < 1e-6, "{c}");
        assert_eq!(c["over_tasks"].as_u64(), Some(worth), "{c}");
        assert_eq!(c["eval_tasks"], p["worth"], "{c}");
    }
}
