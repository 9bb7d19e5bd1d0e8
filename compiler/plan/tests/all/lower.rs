//! Lowering recipes checked from memory: node ids, order, edges and ports, phases, evals,
//! aliases, the JSON round trip, the plan rules and the estimate's arithmetic.

// Helpers here panic on purpose: a panic is a failed test.
#![allow(clippy::unwrap_used)]

use wrl_check::{MemLoader, Recipe, check_source};
use wrl_plan::{
    DataKind, NodeKind, PVal, Plan, estimate, lower, parse_json, plan_diagnostics, render_json,
    render_text,
};

const BASE: &str = r#"
use std::rewards::{ended, task_check}
model policy = std::models::tiny
dataset demos = std::sandbox::demos(count: 64)
dataset tasks = std::sandbox::tasks(count: 256)
dataset heldout = std::sandbox::tasks(count: 64) { split = test }
env web = browser {
  target = std::sandbox::web
  tools = std::tools::elements
  observe = [elements(max: 32), url, feedback]
}
agent actor = react(policy, web) { history = action_only, max_turns = 6 turns, max_response = 48 tokens }
reward solved = if ended(format_error) then -1 else task_check
stage warmup = sft(policy, demos) { epochs = 2 epochs, batch = 16 }
stage online = grpo(warmup.model, tasks, actor) {
  prompts = 16
  group = 4
  mini_batch = 64 turns
  ppo_epochs = 2
  reward = solved
  phases = [{ iters = 3, horizon = 4 steps, lr = 1e-4 }, { iters = 2, horizon = 6 steps, lr = 5e-5 }]
}
eval both = evaluate(actor, heldout) { after = [warmup, online], max_steps = 10 steps }
"#;

fn recipe(src: &str) -> Recipe {
    let (_, checked) = check_source("r.wrl", src, &MemLoader::default());
    let errors: Vec<_> = checked.diagnostics.iter().filter(|d| d.is_error()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    checked.recipes.into_iter().next().unwrap()
}

fn plan(src: &str) -> Plan {
    lower(&recipe(src)).unwrap_or_else(|d| panic!("{d:#?}"))
}

fn inputs(p: &Plan, id: &str) -> Vec<(String, String)> {
    p.inputs(id).map(|e| (e.port.clone(), e.from.clone())).collect()
}

#[test]
fn nodes_have_stable_ids_in_topological_order() {
    let p = plan(BASE);
    let ids: Vec<&str> = p.nodes.iter().map(|n| n.id.as_str()).collect();
    for id in [
        "model:policy",
        "dataset:demos",
        "env:web",
        "agent:actor",
        "reward:solved",
        "stage:warmup",
        "checkpoint:warmup",
        "stage:online/phase:1",
        "stage:online/phase:2",
        "checkpoint:online",
        "eval:both/after:warmup",
        "eval:both/after:online",
    ] {
        assert!(ids.contains(&id), "{id} missing from {ids:?}");
    }
    let pos = |id: &str| ids.iter().position(|x| *x == id).unwrap();
    for e in &p.edges {
        assert!(pos(&e.from) < pos(&e.to), "{} -> {} out of order", e.from, e.to);
    }
    assert_eq!(p.node("model:policy").unwrap().alias_of.as_deref(), Some("std::models::tiny"));
}

#[test]
fn phases_chain_and_checkpoints_hand_over() {
    let p = plan(BASE);
    assert_eq!(
        inputs(&p, "stage:online/phase:1"),
        [
            ("agent".into(), "agent:actor".into()),
            ("init".into(), "checkpoint:warmup".into()),
            ("reward".into(), "reward:solved".into()),
            ("tasks".into(), "dataset:tasks".into()),
        ]
    );
    let p2 = p.node("stage:online/phase:2").unwrap();
    assert_eq!(p2.param("init"), Some(&PVal::Ref { node: "stage:online/phase:1".into() }));
    assert_eq!(p2.num("iters"), Some(2.0));
    assert_eq!(p2.num("horizon"), Some(6.0));
    assert_eq!(p2.num("lr"), Some(5e-5));
    assert_eq!(p2.param("resume").and_then(PVal::as_str), Some("weights_and_optimizer"));
    let init = p.edges.iter().find(|e| e.to == "stage:online/phase:2" && e.port == "init").unwrap();
    assert_eq!(init.data, DataKind::Checkpoint);
    assert_eq!(inputs(&p, "checkpoint:online"), [("model".into(), "stage:online/phase:2".into())]);
    let ev = p.node("eval:both/after:online").unwrap();
    assert_eq!(ev.kind, NodeKind::Eval);
    assert_eq!(
        ev.param("binds"),
        Some(&PVal::List { items: vec![PVal::Str { value: "policy".into() }] })
    );
}

#[test]
fn json_round_trips_and_text_is_stable() {
    let p = plan(BASE);
    let json = render_json(&p);
    let back: Plan = serde_json::from_str(&json).unwrap();
    assert_eq!(back, p);
    assert_eq!(parse_json(&json), Ok(p.clone()));
    let newer = json.replacen("\"version\": 1", "\"version\": 2", 1);
    assert!(parse_json(&newer).unwrap_err().contains("version 2"));
    assert_eq!(render_text(&p), render_text(&plan(BASE)));
    assert!(render_text(&p).contains("  clip = 0.2 .. 0.2\n"));
}

#[test]
fn estimate_multiplies_what_the_plan_says() {
    let e = estimate(&plan(BASE), None);
    // 16 × 4 × (3 + 2) trajectories; 64 × (3 × 4 + 2 × 6) steps.
    assert_eq!(e.trajectories, Some(320));
    assert_eq!(e.max_env_steps, Some(1536));
    assert_eq!(e.max_generated_tokens, Some(1536 * 48));
    // SFT: 2 epochs × ⌈64 / 16⌉; RL: 3 × 2 × ⌈256 / 64⌉ + 2 × 2 × ⌈384 / 64⌉.
    assert_eq!(e.optimizer_steps, Some(8 + 24 + 24));
    assert_eq!(e.sft_examples, Some(128));
    // Two eval runs of 64 tasks, at most min(10 steps, 6 turns) each.
    assert_eq!(e.evaluation.trajectories, Some(128));
    assert_eq!(e.evaluation.max_env_steps, Some(128 * 6));
    // At turn level, a mini-batch of prompts takes all its groups' turns: 16 prompts in
    // mini-batches of 4 are 4 steps, whatever the turns (OpAgent's one group per step); so are
    // 16 trajectories of the 64.
    for mb in ["4 prompts", "16 trajectories"] {
        let e = estimate(&plan(&BASE.replace("64 turns", mb)), None);
        assert_eq!(e.optimizer_steps, Some(8 + 3 * 2 * 4 + 2 * 2 * 4), "{mb}");
    }
    // An unknown count makes the figure unknown, never zero.
    let src = BASE.replace("prompts = 16", "prompts = unknown");
    let e = estimate(&plan(&src), None);
    assert_eq!((e.trajectories, e.max_env_steps, e.optimizer_steps), (None, None, None));
}

#[test]
fn an_unknown_input_has_no_producer() {
    let src = BASE.replace("sft(policy, demos)", "sft(unknown, demos)");
    let diags = lower(&recipe(&src)).unwrap_err();
    assert!(diags.iter().any(|d| d.code == "E0450"), "{diags:#?}");
}

#[test]
fn an_rl_stage_must_start_from_its_agents_model() {
    let src = BASE
        .replace(
            "model policy = std::models::tiny",
            "model policy = std::models::tiny\nmodel other = std::models::small",
        )
        .replace("grpo(warmup.model,", "grpo(other,");
    let diags = lower(&recipe(&src)).unwrap_err();
    // The stage, and the eval that loads the stage's weights into `actor`.
    assert_eq!(diags.iter().map(|d| d.code).collect::<Vec<_>>(), ["E0452", "E0452"]);
    assert!(
        diags
            .iter()
            .any(|d| d.message.starts_with("stage `online` starts from weights of `other`"))
    );
}

#[test]
fn stage_cycles_are_caught_even_without_the_checker() {
    let src = BASE.replace("sft(policy, demos)", "sft(online.model, demos)");
    let (_, checked) = check_source("r.wrl", &src, &MemLoader::default());
    let r = checked.recipes.into_iter().next().unwrap();
    let diags = lower(&r).unwrap_err();
    assert!(diags.iter().any(|d| d.code == "E0416"), "{diags:#?}");
}

#[test]
fn a_mistake_only_a_profile_makes_names_the_profile() {
    let src = format!(
        "{BASE}\nmodel other = std::models::small\nprofile wide {{ online.init = other }}\n"
    );
    let r = recipe(&src);
    assert!(lower(&r).is_ok());
    let diags = plan_diagnostics(&r);
    assert!(!diags.is_empty());
    for d in &diags {
        assert_eq!(d.code, "E0452");
        assert!(d.message.ends_with("(profile `wide`)"), "{}", d.message);
        assert_eq!(d.labels.len(), 3);
    }
}

#[test]
fn an_eval_after_a_stage_runs_that_stages_model() {
    let src = format!(
        "{BASE}\nmodel other = std::models::small\nagent wide = react(other, web) {{ history = action_only, max_turns = 4 turns, max_response = 32 tokens }}\neval mixed = evaluate(wide, heldout) {{ after = [online] }}\n"
    );
    let diags = lower(&recipe(&src)).unwrap_err();
    assert_eq!(diags.len(), 1, "{diags:#?}");
    assert!(
        diags[0].message.starts_with("eval `mixed` loads the weights of `online`"),
        "{}",
        diags[0].message
    );
}

/// `wrlc check` lowers leanly (no node order, only the parameters the checks read): it must
/// report exactly what `lower` reports, on every plan UI case and shipped recipe, plain and
/// with each profile.
#[test]
fn lean_lowering_reports_what_lower_reports() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for dir in ["tests/ui/plan", "recipes"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "wrl") {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut compared = 0;
    for p in &files {
        let src = std::fs::read_to_string(p).unwrap();
        let loader = MemLoader::default();
        let (_, checked) = check_source("r.wrl", &src, &loader);
        for r in &checked.recipes {
            let mut variants = vec![r.clone()];
            for name in r.profile_names() {
                variants.push(r.with_profile(name).unwrap());
            }
            for v in &variants {
                let full = lower(v).err().unwrap_or_default();
                assert_eq!(wrl_plan::lower_diagnostics(v), full, "{}", p.display());
                compared += 1;
            }
        }
    }
    assert!(compared >= files.len(), "{compared} recipes compared");
}

/// A profile override of a graph module's field (`g.actor.max_response`) reaches the plan; the
/// other modules and the recipe without the profile keep their values.
#[test]
fn profile_overrides_reach_graph_modules() {
    let src = r#"
use std::rewards::task_check
model policy = std::models::tiny
dataset tasks = std::sandbox::tasks(count: 8)
env web = browser { target = std::sandbox::web, tools = std::tools::elements }
agent g = graph {
  env = web
  module planner = policy_of(policy) { trainable, tools = std::tools::elements, max_response = 100 tokens }
  module actor = policy_of(policy) {
    trainable
    tools = std::tools::elements
    emits = [acted, answered]
    max_response = 100 tokens
  }
  start -> planner
  planner -> actor
  actor -> planner when acted
  actor -> end when answered
  max_turns = 4 turns
}
stage online = grpo(policy, tasks, g) {
  reward = task_check
  phases = [{ iters = 1, horizon = 2 steps, lr = 1e-4 }]
}
profile small {
  g.actor.max_response = 24 tokens
}
"#;
    let base = recipe(src);
    let max_response = |r: &Recipe, module: &str| {
        let p = lower(r).unwrap();
        let agent = p.nodes.iter().find(|n| n.id == "agent:g").unwrap();
        let Some(PVal::Record { fields }) = agent.param("modules") else { panic!("no modules") };
        fields[module].field("max_response").and_then(PVal::num).unwrap()
    };
    let small = base.with_profile("small").unwrap();
    assert_eq!(max_response(&small, "actor"), 24.0);
    assert_eq!(max_response(&small, "planner"), 100.0);
    assert_eq!(max_response(&base, "actor"), 100.0);
}

/// A claim lowers into the plan's `claims` with each side named as the runtime's records name
/// it (a stage, or the evaluation itself before any); it survives the JSON round trip, does not
/// change the identity, and a stage its evaluation does not run after is E0455.
#[test]
fn claims_lower_with_their_sides_and_leave_the_identity() {
    let src = format!(
        "{BASE}eval first = evaluate(actor, heldout) {{ after = [start] }}\n\
         claim lifts = std::claims::gain(both, over: first, after: online, at_least: 10%) {{\n\
           expect = 40%\n  paper = \"+11\"\n}}\n"
    );
    let p = plan(&src);
    let c = &p.claims[0];
    assert_eq!((c.eval.eval.as_str(), c.eval.after.as_str()), ("both", "online"));
    assert_eq!((c.over.eval.as_str(), c.over.after.as_str()), ("first", "first"));
    assert!((c.at_least - 0.1).abs() < 1e-12 && c.expect == Some(0.4));
    assert_eq!(c.paper.as_deref(), Some("+11"));
    let json = render_json(&p);
    assert_eq!(parse_json(&json).unwrap(), p);
    let mut without = p.clone();
    without.claims.clear();
    assert_eq!(wrl_plan::Identity::of(&without), wrl_plan::Identity::of(&p));
    assert!(render_text(&p).contains("states both after online − first ≥ 10 points"));

    let wrong = src.replace("after: online", "after: online, over_after: warmup");
    let codes: Vec<&str> = plan_diagnostics(&recipe(&wrong)).iter().map(|d| d.code).collect();
    assert_eq!(codes, ["E0455"]);
}

/// #45: a claim stated for some profiles (`profiles = [big]`) is in the plan under those
/// alone, and only there are its evaluations held to it: W0230 where it is in scope (also
/// under a profile that changes nothing it reaches), none where it is not; a name that is no
/// profile is E0457 with the nearest one, an empty list E0458.
#[test]
fn a_claim_is_lowered_and_checked_only_under_the_profiles_it_is_stated_for() {
    let claim = |profiles: &str| {
        format!(
            "{BASE}dataset spare = std::sandbox::tasks(count: 4)\n\
             profile big {{ heldout = std::sandbox::tasks(count: 1000) {{ split = test }} }}\n\
             profile other {{ spare = std::sandbox::tasks(count: 8) }}\n\
             claim lifts = std::claims::gain(both, over: both, after: online, at_least: 10%) {{\n\
               over_after = warmup\n  expect = 15%\n{profiles}}}\n"
        )
    };
    let codes = |src: &str| -> Vec<(&'static str, String)> {
        plan_diagnostics(&recipe(src)).iter().map(|d| (d.code, d.message.clone())).collect()
    };
    // Unscoped: 64 tasks cannot decide it in the recipe or under `other`.
    let all = codes(&claim(""));
    assert_eq!(all.iter().filter(|(c, _)| *c == "W0230").count(), 1, "{all:#?}");
    // For `big` alone: clean, and in `big`'s plan only.
    let big = claim("  profiles = [big]\n");
    assert_eq!(codes(&big), []);
    let r = recipe(&big);
    assert!(lower(&r).unwrap().claims.is_empty());
    let p = lower(&r.with_profile("big").unwrap()).unwrap();
    assert_eq!(p.claims.len(), 1);
    assert_eq!(p.claims[0].profiles.as_deref(), Some(&["big".to_string()][..]));
    assert!(p.claims[0].in_scope(Some("big")) && !p.claims[0].in_scope(None));
    assert!(render_text(&p).contains("  profiles = [big]"));
    assert!(lower(&r.with_profile("other").unwrap()).unwrap().claims.is_empty());
    // For `other`, which changes nothing the claim reaches: its 64 tasks are still too few.
    let other = codes(&claim("  profiles = [other]\n"));
    assert!(
        matches!(other.as_slice(), [("W0230", m)] if m.ends_with("(profile `other`)")),
        "{other:#?}"
    );
    // For `base` and `big`: the recipe's 64 tasks warn, `big`'s do not.
    let both = codes(&claim("  profiles = [base, big]\n"));
    assert!(matches!(both.as_slice(), [("W0230", m)] if !m.contains("profile")), "{both:#?}");
    let wrong = plan_diagnostics(&recipe(&claim("  profiles = [bgi]\n")));
    assert_eq!(wrong.iter().map(|d| d.code).collect::<Vec<_>>(), ["E0457"]);
    assert_eq!(wrong[0].help.as_deref(), Some("did you mean `big`?"));
    let none = codes(&claim("  profiles = []\n"));
    assert_eq!(none.iter().map(|(c, _)| *c).collect::<Vec<_>>(), ["E0458"]);
}
