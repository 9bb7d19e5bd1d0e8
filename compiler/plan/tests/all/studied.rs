//! `wrlc check` without `--profile` judges each variant on top of each profile whose study runs
//! it: a claim stated for a profile is lowered in its variants' plans, where neither the profile
//! alone nor the variant alone shows the mistake.

/// `tests/recipes/variants.wrl` with a profile `mini`, the claim `horizon` stated for `mini`
/// only, and the variant `short` (which `horizon` compares) reporting a mean reward: a claim
/// compares rates (E0456), so the study under `mini` could not decide `horizon`.
#[test]
fn a_variant_is_judged_under_the_profile_whose_claims_compare_it() {
    let text = include_str!("../../../../tests/recipes/variants.wrl")
        .replace("  over_variant = short\n", "  over_variant = short\n  profiles = [mini]\n")
        .replace("  dancer.max_turns = 1 turns\n", "  dancer.max_turns = 1 turns\n  held_out.metric = mean_reward\n")
        + "\nprofile mini {\n  warmup.lr = 2e-3\n}\n";
    let (_, checked) =
        wrl_check::check_source("variants.wrl", &text, &wrl_check::MemLoader::default());
    assert!(!checked.diagnostics.iter().any(|d| d.is_error()), "{:?}", checked.diagnostics);
    let recipe = &checked.recipes[0];
    let ds = wrl_plan::plan_diagnostics(recipe);
    let e: Vec<&str> = ds.iter().filter(|d| d.code == "E0456").map(|d| d.message.as_str()).collect();
    assert_eq!(e.len(), 1, "{ds:?}");
    assert!(e[0].ends_with("(variant `short` under profile `mini`)"), "{}", e[0]);
    // Without the profile the claim is not stated, and with it alone `short` is not applied.
    assert!(wrl_plan::lower_diagnostics(recipe).iter().all(|d| d.code != "E0456"));
    let mini = recipe.with_profile("mini").expect("mini");
    assert!(wrl_plan::lower_diagnostics(&mini).iter().all(|d| d.code != "E0456"));
}
