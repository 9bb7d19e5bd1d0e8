//! A profile's slice (what the rules and the planner re-check per profile or variant) holds
//! exactly the profiled recipe's declarations that the profile can change, and nothing else
//! differs: on every shipped recipe, each declaration of the slice equals the one `with_named`
//! gives, and every declaration left out is unchanged by the profile or variant.

use wrl_check::{FsLoader, ProfileSlicer, check_source};

#[test]
fn slices_agree_with_the_whole_profiled_recipe() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../recipes");
    let mut profiles = 0;
    let mut entries: Vec<_> = std::fs::read_dir(dir).expect("recipes/").flatten().collect();
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let path = e.path();
        if path.extension().is_none_or(|x| x != "wrl") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a recipe");
        let name = format!("recipes/{}", e.file_name().to_string_lossy());
        let (_, checked) = check_source(&name, &text, &FsLoader);
        for recipe in &checked.recipes {
            let slicer = ProfileSlicer::new(recipe);
            for p in &recipe.profiles {
                profiles += 1;
                // A profile, or a variant (OpenWebRL's `flat`): the slicer takes either.
                let whole = recipe.with_named(&p.name).expect("a declared profile or variant");
                let slice = slicer.slice(p);
                assert_eq!((&slice.profile, &slice.variant), (&whole.profile, &whole.variant));
                for d in &slice.decls {
                    assert_eq!(whole.decl(&d.name), Some(&**d), "{name} --profile {}", p.name);
                }
                for (plain, profiled) in recipe.decls.iter().zip(&whole.decls) {
                    if slice.decl(&plain.name).is_none() {
                        assert_eq!(plain, profiled, "{name} --profile {}: {}", p.name, plain.name);
                    }
                }
                // Every overridden declaration is in the slice.
                for o in &p.overrides {
                    assert!(slice.decl(&o.decl).is_some(), "{name}: {}", o.decl);
                }
            }
        }
    }
    assert!(profiles >= 3, "the shipped recipes declare profiles");
}
