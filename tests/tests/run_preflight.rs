//! `wrlc run` refuses a recipe it cannot run before doing any work: every `unknown` value it
//! needs and every missing data file is reported with a code, and no run directory is made.

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
