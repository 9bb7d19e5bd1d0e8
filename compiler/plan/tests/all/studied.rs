//! `wrlc check` without `--profile` judges each variant on top of each profile whose study runs
//! it: a claim stated for a profile is lowered in its variants' plans, where neither the profile
//! alone nor the variant alone shows the mistake.

/// `tests/recipes/variants.wrl` with a profile `mini`, the claim `horizon` stated for `mini`
/// only and taking `held_out` after `warmup` on both sides, and the variant `short` (which
/// `horizon` compares) evaluating `held_out` at the start instead: the study under `mini` could
/// not decide `horizon` (E0455), which neither `mini` alone nor `short` alone shows.
#[test]
fn a_variant_is_judged_under_the_profile_whose_claims_compare_it() {
    let text = include_str!("../../../../tests/recipes/variants.wrl")
        .replace(
            "  over_variant = short\n",
            "  over_variant = short\n  after = warmup\n  over_after = warmup\n  profiles = [mini]\n",
        )
        .replace(
            "  dancer.max_turns = 1 turns\n",
            "  dancer.max_turns = 1 turns\n  held_out.after = [start]\n",
        )
        + "\nprofile mini {\n  warmup.lr = 2e-3\n}\n";
    let (_, checked) =
        wrl_check::check_source("variants.wrl", &text, &wrl_check::MemLoader::default());
    assert!(!checked.diagnostics.iter().any(|d| d.is_error()), "{:?}", checked.diagnostics);
    let recipe = &checked.recipes[0];
    let ds = wrl_plan::plan_diagnostics(recipe);
    let e: Vec<&str> =
        ds.iter().filter(|d| d.code == "E0455").map(|d| d.message.as_str()).collect();
    assert_eq!(
        e,
        ["`held_out` does not run after `warmup` (variant `short` under profile `mini`)"]
    );
    // Nor does anything the profile alone says come again under its variants.
    let w: Vec<&str> =
        ds.iter().filter(|d| d.code == "W0230").map(|d| d.message.as_str()).collect();
    assert!(w.iter().all(|m| !m.contains("under profile")), "{w:?}");
    let mini = recipe.with_profile("mini").expect("mini");
    assert!(wrl_plan::lower_diagnostics(&mini).iter().all(|d| d.code != "E0455"));
    let short = recipe.with_variant("short").expect("short");
    assert!(wrl_plan::lower_diagnostics(&short).iter().all(|d| d.code != "E0455"));
}
