//! `wrlc run` refuses a recipe it cannot run before doing any work: every `unknown` value it
//! needs and every missing data file is reported with a code, and no run directory is made. And
//! what it accepts: `tests/recipes/qa_match.wrl`'s QA records with several references, and
//! `tool_use.wrl`'s tool-use rewards.

#[test]
fn unknown_values_and_missing_data_are_refused_before_starting() {
    let dir = tempfile::tempdir().unwrap();
    let recipe = dir.path().join("r.wrl");
    std::fs::write(
        &recipe,
        "model policy = std::models::tiny\n\
         dataset demos = jsonl(\"no/such/demos.jsonl\") { kind = trajectories }\n\
         stage warmup = sft(policy, demos) { lr = unknown }\n",
    )
    .unwrap();
    let out = dir.path().join("run");
    let (code, stdout, stderr) = wrl_cli::run_captured([
        "run".as_ref(),
        recipe.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stdout.is_empty());
    assert!(stderr.contains("E0500: `lr` of `warmup` is `unknown`"), "{stderr}");
    assert!(stderr.contains("E0503") && stderr.contains("no/such/demos.jsonl"), "{stderr}");
    assert!(stderr.contains("refused before starting: 2 problems"), "{stderr}");
    assert!(!out.exists(), "nothing may be written for a refused run");
}

#[test]
fn resume_of_a_directory_that_is_not_a_run_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let (code, _, stderr) =
        wrl_cli::run_captured(["run".as_ref(), "--resume".as_ref(), dir.path().as_os_str()]);
    assert_eq!(code, 2);
    assert!(stderr.contains("not a wrl run directory"), "{stderr}");
}

/// `--dry-run` stops after the preflight: a runnable recipe gets a one-line summary and exit 0,
/// and nothing is written.
#[test]
fn a_dry_run_says_what_would_run_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let demos = dir.path().join("demos.jsonl");
    std::fs::copy(wrl_tests::workspace_root().join("tests/ui/run/data/demos.jsonl"), &demos)
        .unwrap();
    let recipe = dir.path().join("r.wrl");
    std::fs::write(
        &recipe,
        format!(
            "model policy = std::models::tiny\n\
             dataset demos = jsonl(\"{}\") {{ kind = trajectories }}\n\
             stage warmup = sft(policy, demos) {{ lr = 1e-3 }}\n",
            demos.display()
        ),
    )
    .unwrap();
    let out = dir.path().join("run");
    let (code, stdout, stderr) = wrl_cli::run_captured([
        "run".as_ref(),
        "--dry-run".as_ref(),
        recipe.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!((code, stderr.as_str()), (0, ""), "{stdout}");
    assert!(stdout.starts_with("dry run: "), "{stdout}");
    assert!(stdout.contains("1 model, 1 dataset, 1 SFT stage"), "{stdout}");
    assert!(!out.exists(), "a dry run writes nothing");
}

/// An `unknown` in one phase of an RL stage is placed at that phase's value, and the JSON form
/// carries the place.
#[test]
fn a_phase_value_is_placed_in_its_phase() {
    let dir = tempfile::tempdir().unwrap();
    let recipe = dir.path().join("r.wrl");
    let text = "use std::rewards::task_check\n\
                model policy = std::models::tiny\n\
                dataset tasks = std::sandbox::tasks(count: 8)\n\
                env web = browser { target = std::sandbox::web\n tools = std::tools::elements, observe = [elements(max: 32), url, feedback] }\n\
                agent actor = react(policy, web) { max_turns = 3 turns\n max_response = 48 tokens }\n\
                stage online = grpo(policy, tasks, actor) {\n\
                \x20 reward = task_check\n\
                \x20 phases = [{ iters = 1, horizon = 3 steps, lr = 1e-4 },\n\
                \x20           { iters = 1, horizon = 3 steps, lr = unknown }]\n\
                }\n";
    std::fs::write(&recipe, text).unwrap();
    // The preflight only looks for the Chromium binary (any file will do); it never starts it.
    let (code, _, stderr) = wrl_cli::run_captured([
        "run".as_ref(),
        "--dry-run".as_ref(),
        "--error-format".as_ref(),
        "json".as_ref(),
        "--chromium".as_ref(),
        recipe.as_os_str(),
        recipe.as_os_str(),
    ]);
    assert_eq!(code, 1, "{stderr}");
    let reported = wrl_tests::parse_json_diagnostics(&stderr).unwrap();
    let places: Vec<_> = reported.iter().map(|r| (r.code.as_str(), r.line, r.column)).collect();
    assert_eq!(places, [("E0500", Some(11), Some(50))], "{stderr}");
}

/// The recipe the README opens with checks clean, is formatted, and is ready to run.
#[test]
fn the_readme_recipe_is_valid_and_ready_to_run() {
    let readme = std::fs::read_to_string(wrl_tests::workspace_root().join("README.md")).unwrap();
    let start = readme.find("```wrl\n").expect("a wrl block in the README") + "```wrl\n".len();
    let end = start + readme[start..].find("```").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let recipe = dir.path().join("readme.wrl");
    std::fs::write(&recipe, &readme[start..end]).unwrap();
    for args in [vec!["check"], vec!["fmt", "--check"]] {
        let mut argv: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
        argv.push(recipe.clone().into_os_string());
        let (code, _, stderr) = wrl_cli::run_captured(argv);
        assert_eq!(code, 0, "wrlc {}: {stderr}", args.join(" "));
    }
    // The preflight only looks for the Chromium binary (any file will do); it never starts it.
    let (code, stdout, stderr) = wrl_cli::run_captured([
        "run".as_ref(),
        "--dry-run".as_ref(),
        "--chromium".as_ref(),
        recipe.as_os_str(),
        recipe.as_os_str(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(format!("{stdout}{stderr}").contains("is ready to run"), "{stdout}{stderr}");
}

/// `--set` is parsed as a path and one value, never spliced into the recipe's text: a value
/// that closes the profile and declares a stage is one malformed value, and every diagnostic
/// about an override points at its argument (`--set #N`), not at lines of a generated
/// `profile __set__` the file does not have. Before, the first added a stage and the last
/// passed check.
#[test]
fn set_is_a_value_never_source() {
    let quickstart = wrl_tests::workspace_root().join("recipes/quickstart.wrl");
    let out = tempfile::tempdir().unwrap();
    let dry = |sets: &[&str]| {
        let mut args: Vec<std::ffi::OsString> =
            vec!["run".into(), "--dry-run".into(), quickstart.clone().into()];
        args.extend(["--out".into(), out.path().join("run").into()]);
        for s in sets {
            args.extend(["--set".into(), (*s).into()]);
        }
        wrl_cli::run_captured(args)
    };
    for (set, code) in [
        ("warmup.lr=1 } stage evil = sft(policy, demos) {", "E0100"),
        ("online.prompts=99999999999999999999", "E0105"),
        ("online.prompts=99999999", "E0306"),
        ("warmup.lr=-1", "E0306"),
        ("warmup.lr", "E0100"),
    ] {
        let (exit, stdout, stderr) = dry(&[set]);
        assert_eq!(exit, 1, "{set}: {stdout}{stderr}");
        assert!(stderr.contains(code), "{set}: {stderr}");
        assert!(stderr.contains("--set #1"), "{set}: {stderr}");
        // The source shown is the argument itself, and no profile is named.
        assert!(!stderr.contains("__set__") && !stderr.contains("profile"), "{set}: {stderr}");
    }
    // The second of two overrides is named as such; a good one passes.
    let (exit, _, stderr) = dry(&["warmup.lr=1e-3", "warmup.lr=oops"]);
    assert_eq!(exit, 1);
    assert!(stderr.contains("--set #2"), "{stderr}");
    let (exit, stdout, stderr) = dry(&["online.prompts=4", "demos=std::sandbox::demos(count: 4)"]);
    assert_eq!(exit, 0, "{stderr}");
    assert!(stdout.starts_with("dry run:"), "{stdout}");
    assert!(!out.path().join("run").exists());
}

/// A key in a judge's `base_url` is refused before any plan is written: by `wrlc run` (its
/// `plan.json`) and by `wrlc lower` (the job's `plan.json`). Before, both wrote it out.
#[test]
fn a_credential_in_a_url_is_never_written() {
    let dir = tempfile::tempdir().unwrap();
    let recipe = dir.path().join("leaky.wrl");
    std::fs::write(
        &recipe,
        "use std::rewards::judge\n\
         model policy = std::models::tiny\n\
         dataset tasks = std::sandbox::tasks(count: 8)\n\
         reward graded = judge(model: \"gpt-4.1\") { base_url = \"http://127.0.0.1:9/v1?api_key=sk-planted-42\" }\n\
         env web = browser { target = std::sandbox::web\n\
           tools = std::tools::elements, observe = [elements(max: 32), url, feedback, screenshot(last: 0)] }\n\
         agent actor = react(policy, web) { max_turns = 3 turns, max_response = 48 tokens }\n\
         stage online = grpo(policy, tasks, actor) {\n\
           reward = graded\n\
           phases = [{ iters = 1, horizon = 3 steps, lr = 1e-4 }]\n\
         }\n",
    )
    .unwrap();
    let run = dir.path().join("run");
    let job = dir.path().join("job");
    let (code, _, stderr) = wrl_cli::run_captured([
        "run".as_ref(),
        recipe.as_os_str(),
        "--out".as_ref(),
        run.as_os_str(),
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("E0520") && stderr.contains("`api_key` in its query"), "{stderr}");
    assert!(!run.exists());
    let (code, _, stderr) = wrl_cli::run_captured([
        "lower".as_ref(),
        recipe.as_os_str(),
        "--to".as_ref(),
        "verl".as_ref(),
        "--out".as_ref(),
        job.as_os_str(),
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("E0520"), "{stderr}");
    assert!(!job.exists());
}

/// A model the machine cannot hold passed check and the preflight ("ready to run") while
/// `wrlc estimate` said 24.7 TiB, then aborted on allocation. The preflight holds the
/// estimate's training memory against the machine's and refuses with both figures.
#[test]
fn a_model_beyond_the_machines_memory_is_refused_with_the_figure() {
    let dir = tempfile::tempdir().unwrap();
    let demos = dir.path().join("demos.jsonl");
    std::fs::copy(wrl_tests::workspace_root().join("tests/ui/run/data/demos.jsonl"), &demos)
        .unwrap();
    let recipe = dir.path().join("huge.wrl");
    std::fs::write(
        &recipe,
        format!(
            "model policy = tiny_transformer {{ layers = 48, d_model = 4096, context = 65536 tokens }}\n\
             dataset demos = jsonl(\"{}\") {{ kind = trajectories }}\n\
             stage warmup = sft(policy, demos) {{ lr = 1e-3, max_length = 65536 tokens }}\n",
            demos.display()
        ),
    )
    .unwrap();
    let (code, stdout, stderr) =
        wrl_cli::run_captured(["run".as_ref(), "--dry-run".as_ref(), recipe.as_os_str()]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stderr.contains("E0505"), "{stderr}");
    assert!(stderr.contains("TiB") && stderr.contains("this machine has"), "{stderr}");
    assert!(stderr.contains("warmup"), "names the stage: {stderr}");
}

/// `tests/recipes/qa_match.wrl` and `tool_use.wrl`: the answer and tool-use rewards plan with
/// every field of their signals typed, check clean, and dry-run (qa_match's QA records, a list
/// of references included, are read).
#[test]
fn qa_and_tool_use_recipes_plan_check_and_dry_run() {
    wrl_tests::enter_workspace_root();
    let cases: [(&str, &[&str]); 2] = [
        ("tests/recipes/qa_match.wrl", &["std::rewards::qa_match", "token_f1", "boxed", "<|>"]),
        ("tests/recipes/tool_use.wrl", &["std::rewards::called", "std::rewards::calls", "visit"]),
    ];
    for (recipe, words) in cases {
        let (code, out, err) = wrl_cli::run_captured(["plan", recipe]);
        assert_eq!(code, 0, "{recipe}: {err}");
        for w in words {
            assert!(out.contains(w), "{recipe}: {w} missing from the plan:\n{out}");
        }
        let (code, _, err) = wrl_cli::run_captured(["check", recipe]);
        assert!(code == 0 && err.contains("no problems"), "{recipe}: {err}");
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        let (code, _, err) =
            wrl_cli::run_captured(["run", "--dry-run", recipe, "--out", run.to_str().unwrap()]);
        assert_eq!(code, 0, "{recipe}: {err}");
    }
}
