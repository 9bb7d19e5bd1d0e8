//! Typed parameters: every node of every shipped recipe and profile decodes into its
//! constructor's type (or fails only where the recipe left a needed value `unknown`), and the
//! decoder refuses what the plan format does not allow.

// Helpers here panic on purpose: a panic is a failed test.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use wrl_check::{FsLoader, Recipe};
use wrl_diagnostics::SourceMap;
use wrl_plan::params::{self, Params, Problem};
use wrl_plan::{PVal, Plan, lower};

fn recipes() -> Vec<(String, Recipe)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../recipes");
    let mut files: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "wrl"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let mut sources = SourceMap::new();
        let name = format!("recipes/{}", f.file_name().unwrap().to_string_lossy());
        let id = sources.add(name.clone(), text.clone());
        let parsed = wrl_syntax::parse(id, &text);
        let checked = wrl_check::check(&mut sources, &[(id, &parsed.file)], &FsLoader);
        let recipe = checked.recipes.into_iter().next().unwrap();
        // Every profile and variant, and each variant under the profile whose study runs it.
        for p in &recipe.profiles {
            let flag = format!("--{}", p.kind.word());
            out.push((format!("{name} {flag} {}", p.name), recipe.with_named(&p.name).unwrap()));
        }
        for (p, v, varied) in recipe.studied_variants() {
            out.push((format!("{name} --profile {p} --variant {v}"), varied));
        }
        out.push((name, recipe));
    }
    out
}

fn plans() -> Vec<(String, Plan)> {
    recipes().into_iter().map(|(n, r)| (n, lower(&r).unwrap())).collect()
}

#[test]
fn every_node_of_every_recipe_decodes() {
    let mut decoded = 0;
    for (name, plan) in plans() {
        for n in &plan.nodes {
            match params::decode(n) {
                Ok(_) => decoded += 1,
                Err(e) if e.is_unknown() => {
                    let p = e.param().unwrap();
                    assert!(n.params.contains_key(p), "{name}: {}: {e}", n.id);
                }
                Err(e) => panic!("{name}: `{}` ({}) does not decode: {e}", n.id, n.ctor),
            }
        }
    }
    assert!(decoded >= 100, "only {decoded} nodes decoded");
}

#[test]
fn the_quickstart_decodes_to_what_it_says() {
    let (_, plan) = plans().into_iter().find(|(n, _)| n == "recipes/quickstart.wrl").unwrap();
    let typed = params::TypedPlan::decode(&plan).unwrap();
    let Some(Params::Model(params::Model::Tiny(m))) = typed.get("model:policy") else {
        panic!("the policy is a tiny transformer")
    };
    assert_eq!((m.layers, m.d_model, m.context), (2, 128, params::Tokens(1024)));
    assert_eq!(m.positions, params::Positions::Alibi);
    let Some(Params::Env(params::Env::Browser(b))) = typed.get("env:web") else { panic!() };
    assert_eq!(b.target, params::Site::SandboxWeb);
    assert_eq!(b.per_turn, params::PerTurn::Many);
    assert_eq!(b.timeout.step, params::Seconds(10.0));
    assert_eq!(b.tools.coordinates, params::Coordinates::ElementIds);
    assert!(b.tools.tools.iter().any(|t| t.name == "answer" && t.terminal));
    let Some(Params::RlPhase(p)) = typed.get("stage:online/phase:1") else { panic!() };
    assert_eq!(p.run.phase, 1);
    assert!(matches!(p.rollout.reward, params::RewardRef::Node(_)));
    let params::Algo::Grpo(g) = &p.algo else { panic!("the quickstart trains with GRPO") };
    assert_eq!(g.level, params::Level::Turn);
}

fn node_with(
    plan: &Plan,
    id: &str,
    edit: impl FnOnce(&mut std::collections::BTreeMap<String, PVal>),
) -> wrl_plan::Node {
    let mut n = plan.node(id).unwrap().clone();
    edit(&mut n.params);
    n
}

#[test]
fn the_decoder_refuses_what_the_format_does_not_allow() {
    let (_, plan) = plans().into_iter().find(|(n, _)| n == "recipes/quickstart.wrl").unwrap();
    let missing = node_with(&plan, "model:policy", |p| {
        p.remove("layers");
    });
    let e = params::decode(&missing).unwrap_err();
    assert_eq!(e.problem, Problem::MissingField("layers".into()), "{e}");
    let extra = node_with(&plan, "model:policy", |p| {
        p.insert("dropout".into(), PVal::Num { value: 0.1 });
    });
    assert_eq!(
        params::decode(&extra).unwrap_err().problem,
        Problem::UnknownField("dropout".into())
    );
    let word = node_with(&plan, "model:policy", |p| {
        p.insert("positions".into(), PVal::Enum { value: "rotary".into() });
    });
    let e = params::decode(&word).unwrap_err();
    assert!(matches!(e.problem, Problem::UnknownVariant { .. }), "{e}");
    assert_eq!(e.param(), Some("positions"));
    let unit = node_with(&plan, "env:web", |p| {
        let PVal::Record { fields } = p.get_mut("timeout").unwrap() else { panic!() };
        fields.insert("step".into(), PVal::Qty { value: 10.0, unit: "tokens".into() });
    });
    let e = params::decode(&unit).unwrap_err();
    assert_eq!(e.path_text(), "timeout.step");
    assert_eq!(e.to_string(), "`timeout.step` is 10 tokens, expected a quantity in s");
    let fraction = node_with(&plan, "model:policy", |p| {
        p.insert("layers".into(), PVal::Num { value: 2.5 });
    });
    assert!(params::decode(&fraction).is_err());
    // An `Option` field must be there too: absent is not `unknown`.
    let no_count = node_with(&plan, "stage:online/phase:1", |p| {
        p.remove("process_reward");
    });
    assert_eq!(
        params::decode(&no_count).unwrap_err().problem,
        Problem::MissingField("process_reward".into())
    );
    let mut ctor = plan.node("model:policy").unwrap().clone();
    ctor.ctor = "mamba".into();
    assert!(matches!(params::decode(&ctor).unwrap_err().problem, Problem::UnknownCtor { .. }));
}
