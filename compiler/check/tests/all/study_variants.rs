//! Which variants a study runs beside the recipe: those the profile's claims compare and
//! those no claim compares, never one only another profile's claims compare.

/// `tests/recipes/variants.wrl` with a profile `mini`, the claim `horizon` (which compares
/// `short`) stated for `mini` only, and a variant `wide` that no claim compares.
fn recipe() -> wrl_check::Recipe {
    let text = include_str!("../../../../tests/recipes/variants.wrl")
        .replace("  over_variant = short\n", "  over_variant = short\n  profiles = [mini]\n")
        + "\nprofile mini {\n  warmup.lr = 2e-3\n}\n\nvariant wide {\n  dancer.max_turns = 3 turns\n}\n";
    let (_, checked) =
        wrl_check::check_source("variants.wrl", &text, &wrl_check::MemLoader::default());
    let errors: Vec<_> = checked.diagnostics.iter().filter(|d| d.is_error()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    checked.recipes.into_iter().next().expect("one recipe")
}

#[test]
fn a_variant_only_another_profiles_claims_compare_is_not_run() {
    let r = recipe();
    assert_eq!(r.variant_names().collect::<Vec<_>>(), ["short", "slow", "wide"]);
    // Without a profile: `slow` (compared by `slower`, stated for all) and `wide` (by none).
    assert_eq!(r.study_variants(), ["slow", "wide"]);
    let mini = r.with_profile("mini").expect("mini");
    assert_eq!(mini.study_variants(), ["short", "slow", "wide"]);
}
