//! Every recipe rule (E04xx) has a failing example here, with what its message, labels and help
//! must say; valid recipes in the shape of the seed systems check clean; profile variants are
//! checked too, and say which profile a problem comes from.

use crate::common;

use common::{codes, diags, help, only, rl};
use wrl_diagnostics::{CODES, Phase};

#[test]
fn group_below_two() {
    let d = only(&rl("group = 1"), "E0402");
    assert!(d.message.contains("at least 2"), "{}", d.message);
    assert!(help(&d).contains("group = 2"));
    assert!(!codes(&rl("group = 2")).contains(&"E0402"));
}

#[test]
fn reversed_clip_has_clip_help() {
    let d = only(&rl("clip = 0.28 .. 0.2"), "E0401");
    assert!(d.message.starts_with("clip range is reversed"), "{}", d.message);
    assert!(help(&d).contains("0.2 .. 0.28"), "{}", help(&d));
}

#[test]
fn mini_batch_must_divide_prompts_times_group() {
    let d =
        only(&rl("prompts = 48, group = 5, level = trajectory, mini_batch = 64 samples"), "E0403");
    assert!(d.message.contains("240"), "{}", d.message);
    assert_eq!(
        help(&d),
        "set `mini_batch` to 60 or 80 (divisors of 240), or `prompts` to 64; or say what the rest of 48 does: `mini_batch_rest = train` (a shorter last mini-batch, 192 + 48, as verl splits it) or `drop` (slime's trimming)"
    );
    assert_eq!(d.labels.len(), 3, "mini_batch, prompts and group are labelled");
    // At turn level the number of samples is known only at run time.
    assert!(!codes(&rl("prompts = 48, group = 5, mini_batch = 64 turns")).contains(&"E0403"));
    assert!(
        !codes(&rl("prompts = 48, group = 5, level = trajectory, mini_batch = 80 samples"))
            .contains(&"E0403")
    );
}

#[test]
fn mini_batches_in_prompts_are_groups_of_trajectories() {
    let ok = "prompts = 48, group = 5, level = trajectory, mini_batch = 12 prompts";
    assert!(codes(&rl(ok)).is_empty(), "12 prompts × 5 = 60 divides 240: {:?}", codes(&rl(ok)));
    let d =
        only(&rl("prompts = 48, group = 5, level = trajectory, mini_batch = 7 prompts"), "E0403");
    assert!(d.message.ends_with("mini-batches of 7 prompts × 5 = 35"), "{}", d.message);
    let ok = "prompts = 48, group = 5, level = trajectory, mini_batch = 60 trajectories";
    assert!(codes(&rl(ok)).is_empty());
}

#[test]
fn a_mini_batch_must_count_what_the_level_trains() {
    let d = only(&rl("level = trajectory, mini_batch = 64 turns"), "E0440");
    assert!(d.message.starts_with("a mini-batch of turns cannot be split"), "{}", d.message);
    assert_eq!(d.labels.len(), 2, "the mini-batch and the level written beside it");
    assert!(help(&d).contains("`64 trajectories`"), "{}", help(&d));
    assert!(!codes(&rl("mini_batch = 64 turns")).contains(&"E0440"));
    // At level turn, prompts and trajectories take all their turns along (OpAgent's one group
    // per optimiser step), and `prompts × group` must still split into them.
    for fields in [
        "mini_batch = 64 turns",
        "mini_batch = 64 samples",
        "level = turn, mini_batch = 4 prompts",
        "mini_batch = 16 trajectories",
        "level = trajectory, mini_batch = 16 samples",
    ] {
        assert!(codes(&rl(fields)).is_empty(), "{fields}: {:?}", codes(&rl(fields)));
    }
    let d = only(&rl("prompts = 48, group = 5, level = turn, mini_batch = 7 prompts"), "E0403");
    assert!(d.message.ends_with("mini-batches of 7 prompts × 5 = 35"), "{}", d.message);
    let d = only(&rl("prompts = 16, group = 4, mini_batch = 24 trajectories"), "E0403");
    assert!(d.message.ends_with("mini-batches of 24"), "{}", d.message);
}

#[test]
fn epochs_need_a_counted_task_set() {
    // The recipe's tasks are `std::sandbox::tasks(count: 256)`: epochs count.
    let epochs = |fields: &str, n: &str| rl(fields).replace("iters = 12", &format!("iters = {n}"));
    let ok = epochs("prompts = 16", "2 epochs");
    assert!(!codes(&ok).contains(&"E0441"), "{:?}", codes(&ok));
    let d = only(&epochs("prompts = unknown", "1 epochs"), "E0441");
    assert!(d.message.ends_with("1 epoch with `prompts` unknown"), "{}", d.message);
    let file = ok.replace("std::sandbox::tasks(count: 256)", "jsonl(\"t.jsonl\") { kind = tasks }");
    let d = only(&file, "E0441");
    assert!(d.message.contains("2 epochs of `tasks`, whose size"), "{}", d.message);
    let counted = file.replace("{ kind = tasks }", "{ kind = tasks, count = 64 }");
    assert!(!codes(&counted).contains(&"E0441"));
    // A count is whole: half an epoch is refused where it is written, not by the runtime.
    let d = only(&epochs("prompts = 16", "1.5 epochs"), "E0308");
    assert_eq!(d.message, "expected a whole number of epochs, found 1.5 epochs");
    assert!(codes(&epochs("prompts = 16", "1.5k")).is_empty(), "1.5k iterations are 1500");
}

#[test]
fn a_bare_mini_batch_is_warned_about() {
    let d = only(&rl("mini_batch = 64"), "W0214");
    assert!(d.labels[0].message.contains("64 turns at level turn"), "{:?}", d.labels);
    assert!(help(&d).contains("write `64 samples` to keep its meaning"), "{}", help(&d));
    let d = only(&rl("level = trajectory, mini_batch = 32k"), "W0214");
    assert!(d.labels[0].message.contains("32000 trajectories"), "{:?}", d.labels);
    for fields in ["mini_batch = 64 samples", "prompts = 32", "mini_batch = 64 turns"] {
        assert!(!codes(&rl(fields)).contains(&"W0214"), "{fields}");
    }
}

#[test]
fn sft_batch_must_divide_into_micro_batches() {
    let text = "model policy = std::models::tiny\nstage warmup = sft(policy, std::sandbox::demos(count: 8)) { batch = 16, micro_batch = 6 }\n";
    let d = only(text, "E0403");
    assert!(help(&d).contains("4 or 8"), "{}", help(&d));
    assert!(help(&d).contains("12 or 18"), "{}", help(&d));
}

const BUDGET: &str = r#"use std::rewards::{judge}
model policy = hf("Qwen/Qwen3-VL-4B-Thinking") { context = 16k tokens }
dataset tasks = parquet("data/tasks.parquet") { kind = tasks, count = 2102 }
env web = browser {
  target = live(allow: ["*"])
  tools = std::tools::openwebrl
  observe = [screenshot(last: 3), url]
  step_text = 200 tokens
}
agent actor = react(policy, web) { history = HISTORY, pages = PAGES, step_response = 600 tokens }
stage online = grpo(policy, tasks, actor) {
  group = 5
  reward = judge(model: "gpt-4.1", screenshots: 3)
  phases = [{ iters = 90, horizon = 10 steps, lr = 1e-6 }, { iters = 50, horizon = 30 steps, lr = 5e-7 }]
}
"#;

#[test]
fn turn_budget_names_the_phase_and_turn() {
    let budget =
        |history: &str, pages: &str| BUDGET.replace("HISTORY", history).replace("PAGES", pages);
    let d = only(&budget("full_text", "all"), "E0404");
    // Every page kept, turn t: 64 + 200 t + 600 (t - 1) + 3 × 1280 + 1024 > 16000 first at
    // t = 15, in phase 2.
    assert!(d.message.starts_with("turn 15 of phase 2 of stage `online`"), "{}", d.message);
    assert!(help(&d).contains("at most 14 steps"), "{}", help(&d));
    assert!(help(&d).contains("`pages = 1`"), "{}", help(&d));
    assert!(d.labels.len() >= 3, "horizon, context and screenshots: {:#?}", d.labels);
    // The current page only: 64 + 200 + 600 (t - 1) + 3 × 1280 + 1024 > 16000 first at t = 20.
    let d = only(&budget("full_text", "1"), "E0404");
    assert!(d.message.starts_with("turn 20 of phase 2"), "{}", d.message);
    assert!(!help(&d).contains("`pages = 1`"), "{}", help(&d));
    // Keeping only actions in the history fits: 64 + 30 × 200 + 29 × 32 + 3 × 1280 + 1024 < 16000.
    assert!(!codes(&budget("action_only", "all")).contains(&"E0404"));
    // An agent that says what happens past its context is not judged by the estimate.
    let cut =
        budget("full_text", "all").replace("pages = all", "pages = all, overflow = truncate_left");
    assert!(!codes(&cut).contains(&"E0404"));
}

/// `actions = K` (#47): an `action_only` prompt that lists only the last K actions is bounded
/// where one listing every action is not.
#[test]
fn an_action_window_bounds_the_history_budget() {
    let text = |history: &str, actions: &str| {
        BUDGET
            .replace("16k tokens", "6000 tokens")
            .replace("HISTORY", history)
            .replace("PAGES", &format!("1, actions = {actions}"))
    };
    // Every action kept: 64 + 200 + 32 (t − 1) + 3 × 1280 + 1024 > 6000 first at t = 29.
    let d = only(&text("action_only", "all"), "E0404");
    assert!(d.message.starts_with("turn 29 of phase 2"), "{}", d.message);
    assert!(help(&d).contains("28 × 32 history"), "{}", help(&d));
    assert!(help(&d).contains("`actions = K`"), "{}", help(&d));
    // The last 14: 64 + 200 + 14 × 32 + 3 × 1280 + 1024 = 5576 at every turn from 15 on.
    let fits = codes(&text("action_only", "14"));
    assert!(!fits.contains(&"E0404") && !fits.contains(&"E0423"), "{fits:?}");
    // A window on a history that lists no actions would do nothing: refused at the field.
    let d = only(&text("full_text", "14"), "E0423");
    assert!(d.message.contains("history is `full_text`"), "{}", d.message);
    assert!(!codes(&text("full_text", "all")).contains(&"E0423"));
}

const DRAWN: &str = r#"use std::rewards::{answer_match, env_reward}
model policy = std::models::tiny
dataset goals = env_tasks(count: 100)
env shop = env_server("http://127.0.0.1:1") { tools = std::tools::webdancer, step_text = 64 tokens }
agent buyer = react(policy, shop) { max_turns = 3 turns, max_response = 16 tokens }
stage online = grpo(policy, goals, buyer) {
  prompts = 2
  group = 2
  reward = REWARD
  phases = [{ iters = 1, horizon = 3 steps, lr = 1e-4 }]
}
"#;

/// `env_tasks` (#47): goals the env server draws at reset; no reference answer to compare with,
/// and no other env can draw them (E0424). The estimate counts the slots.
#[test]
fn env_drawn_tasks_need_a_server_and_no_reference() {
    let with = |reward: &str| DRAWN.replace("REWARD", reward);
    let fine = codes(&with("env_reward"));
    assert!(fine.iter().all(|c| !c.starts_with('E')), "{fine:?}");
    let d = only(&with("answer_match(mode: normalized)"), "E0424");
    assert!(
        d.message.contains("`answer_match` compares with each task's reference"),
        "{}",
        d.message
    );
    assert!(help(&d).contains("env_reward"), "{}", help(&d));
    let browser = with("env_reward").replace(
        "env shop = env_server(\"http://127.0.0.1:1\") { tools = std::tools::webdancer, step_text = 64 tokens }",
        "env shop = search_api(\"http://127.0.0.1:1\") { target = std::sandbox::search, tools = std::tools::webdancer, step_text = 64 tokens }",
    );
    let d = only(&browser, "E0424");
    assert!(d.message.contains("`shop` is a `search_api`"), "{}", d.message);
}

#[test]
fn reward_reading_what_the_env_does_not_produce() {
    let text = rl("")
        .replace("reward = task_check", "reward = judge(model: \"gpt-4.1\")")
        .replace("use std::rewards::task_check", "use std::rewards::judge");
    let d = only(&text, "E0405");
    assert!(d.message.contains("`judge` reads screenshots"), "{}", d.message);
    let on_live = rl("").replace("target = std::sandbox::web", "target = live(allow: [\"*\"])");
    assert!(only(&on_live, "E0405").message.contains("page_state"));
    let mut no_answer = rl("").replace("tools = std::tools::elements", "tools = mine");
    no_answer
        .push_str("tools mine = toolset {\n  tool click(id: int)\n  tool stop() { terminal }\n}\n");
    no_answer = no_answer
        .replace("reward = task_check", "reward = answer_match()")
        .replace("use std::rewards::task_check", "use std::rewards::answer_match");
    assert!(only(&no_answer, "E0405").message.contains("reads answer"));
}

#[test]
fn dataset_kinds_per_stage() {
    let sft = "model policy = std::models::tiny\nstage warmup = sft(policy, std::sandbox::tasks(count: 8))\n";
    assert!(only(sft, "E0406").message.contains("SFT learns from trajectories"));
    let rl_on_demos =
        rl("").replace("std::sandbox::tasks(count: 256)", "std::sandbox::demos(count: 64)");
    assert!(only(&rl_on_demos, "E0406").message.contains("RL rolls out on tasks"));
    let mix = "model policy = std::models::tiny\ndataset m = mixture([std::sandbox::demos(count: 8), std::sandbox::tasks(count: 8)])\nstage warmup = sft(policy, m)\n";
    assert!(codes(mix).contains(&"E0406"), "a mixture part of the wrong kind");
    let qa = rl("").replace("std::sandbox::tasks(count: 256)", "std::sandbox::qa(count: 64)");
    assert!(!codes(&qa).contains(&"E0406"), "RL on QA pairs is fine (WebDancer)");
}

#[test]
fn tool_set_without_terminal_tool() {
    let text = "model policy = std::models::tiny\ntools mine = toolset {\n  tool click(id: int)\n}\nenv web = browser { target = std::sandbox::web, tools = mine }\nagent actor = react(policy, web) { max_response = 48 tokens, history = none }\neval probe = evaluate(actor, std::sandbox::tasks(count: 8))\n";
    let d = only(text, "E0407");
    assert!(help(&d).contains("{ terminal }"));
}

fn graph(body: &str) -> String {
    format!(
        "model frontier = api(\"gpt-4.1\")\nmodel grounder = hf(\"Qwen/Qwen2.5-VL-7B-Instruct\")\nenv web = browser {{ target = std::sandbox::web, tools = std::tools::opagent, observe = [screenshot(last: 1)] }}\nagent a = graph {{\n  env = web\n  module planner = llm(frontier) {{ emits = [go, stop] }}\n  module grounder = policy_of(grounder) {{ tools = std::tools::opagent, trainable }}\n{body}\n}}\neval probe = evaluate(a, std::sandbox::tasks(count: 8))\n"
    )
}

const GOOD_EDGES: &str = "  start -> planner\n  planner -> grounder when go\n  planner -> end when stop\n  grounder -> planner\n  max_turns = 25 turns";

#[test]
fn agent_graph_rules() {
    assert_eq!(codes(&graph(GOOD_EDGES)), Vec::<&str>::new());
    let unknown = graph(&GOOD_EDGES.replace("grounder -> planner", "grounder -> planer"));
    let d = only(&unknown, "E0408");
    assert_eq!(help(&d), "did you mean `planner`?");
    assert_eq!(codes(&unknown), vec!["E0408"], "no echoes of the broken edge");
    let unreachable = graph(&format!("{GOOD_EDGES}\n  module spare = llm(frontier)"));
    assert!(only(&unreachable, "E0409").message.contains("`spare`"));
    let stuck = graph(&GOOD_EDGES.replace("  grounder -> planner\n", ""));
    assert!(only(&stuck, "E0410").message.contains("`grounder`"));
    let unbounded = graph(&GOOD_EDGES.replace("  max_turns = 25 turns", ""));
    assert!(only(&unbounded, "E0411").message.contains("planner → grounder → planner"));
    let limited = graph(
        &GOOD_EDGES
            .replace("grounder -> planner", "grounder -> planner limit 10")
            .replace("  max_turns = 25 turns", ""),
    );
    assert!(!codes(&limited).contains(&"E0411"));
    let unrouted =
        graph(&GOOD_EDGES.replace("  planner -> end when stop\n", "  grounder -> end\n"));
    assert!(only(&unrouted, "E0412").message.contains("`stop`"));
    let wrong_guard = graph(&GOOD_EDGES.replace("when stop", "when stopp"));
    assert_eq!(help(&only(&wrong_guard, "E0413")), "did you mean `stop`?");
    let api = graph(GOOD_EDGES).replace("policy_of(grounder)", "policy_of(frontier)");
    assert!(only(&api, "E0415").message.contains("`frontier` is a frozen API model"));
}

#[test]
fn stage_rules() {
    let cyc = rl("").replace("grpo(policy,", "grpo(warmup.model,")
        + "stage warmup = sft(online.model, std::sandbox::demos(count: 8))\n";
    let d = only(&cyc, "E0416");
    assert_eq!(d.labels.len(), 2);
    let api = rl("").replace("model policy = std::models::tiny", "model policy = api(\"gpt-4.1\")");
    assert!(only(&api, "E0415").message.contains("frozen API model"));
    let empty =
        rl("").replace("phases = [{ iters = 12, horizon = 6 steps, lr = 3e-4 }]", "phases = []");
    assert!(codes(&empty).contains(&"E0417"));
    for bad in ["iters = 0", "iters = -1", "horizon = 0 steps", "horizon = -5 steps"] {
        let t = rl("").replace(
            if bad.starts_with("iters") { "iters = 12" } else { "horizon = 6 steps" },
            bad,
        );
        assert!(codes(&t).contains(&"E0306"), "{bad}");
    }
}

#[test]
fn dynamic_sampling_metric() {
    let text =
        rl("dynamic_sampling = { metric = \"acc\", max_batches = 10 }").replace("grpo(", "dapo(");
    let d = only(&text, "E0418");
    assert!(help(&d).contains("`task_check`"), "{}", help(&d));
    let ok = rl("dynamic_sampling = { metric = \"task_check\", max_batches = 10 }")
        .replace("grpo(", "dapo(");
    assert!(!codes(&ok).contains(&"E0418"));
}

#[test]
fn profiles_are_checked_and_named() {
    let text = rl("group = 4") + "profile solo {\n  online.group = 1\n}\n";
    let all = diags(&text);
    let d = all.iter().find(|d| d.code == "E0402").expect("E0402 under the profile");
    assert!(d.message.ends_with("(profile `solo`)"), "{}", d.message);
    assert!(d.labels.iter().any(|l| l.message == "with profile `solo`"));
    // A problem the plain recipe has is reported once, not again per profile.
    let both = rl("group = 1")
        + "profile a {\n  online.lr = 1e-4\n}\nprofile b {\n  online.lr = 1e-5\n}\n";
    assert_eq!(codes(&both).iter().filter(|c| **c == "E0402").count(), 1);
}

#[test]
fn a_profile_may_swap_in_a_stdlib_declaration() {
    // `std::models::small` is named only by the profile; the variant must still see it.
    let text = rl("") + "profile wide {\n  policy = std::models::small\n}\n";
    assert_eq!(codes(&text), Vec::<&str>::new());
}

/// Every registered checker rule code has a UI case in `tests/ui/check/` that reports it.
#[test]
fn every_rule_code_has_a_failing_ui_case() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/ui/check");
    let mut missing = Vec::new();
    // E045x belong to the planner (tests/ui/plan); the checker owns E0400–E0449.
    let ours = |code: &str| code.as_bytes().get(3).is_some_and(|d| *d < b'5');
    for c in CODES.iter().filter(|c| c.phase == Phase::Rules && !c.retired && ours(c.code)) {
        let mut found = false;
        for e in std::fs::read_dir(dir).expect("tests/ui/check").flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.starts_with(c.code) || !name.ends_with(".wrl") {
                continue;
            }
            let path = format!("{dir}/{name}");
            let text = std::fs::read_to_string(&path).expect("case");
            let (_, checked) = wrl_check::check_source(&path, &text, &wrl_check::FsLoader);
            found |= checked.diagnostics.iter().any(|d| d.code == c.code);
        }
        if !found {
            missing.push(c.code);
        }
    }
    assert!(missing.is_empty(), "no failing UI case for {missing:?}");
}

/// With several entry files (`wrlc check recipes/`) each recipe's references stay in its own
/// file, even when the files use the same names.
#[test]
fn entry_files_with_the_same_names_do_not_mix() {
    let good = rl("");
    let bad = rl("").replace("model policy = std::models::tiny", "model policy = api(\"gpt-4.1\")");
    let mut sources = wrl_diagnostics::SourceMap::new();
    let a = sources.add("a.wrl", good.as_str());
    let b = sources.add("b.wrl", bad.as_str());
    let pa = wrl_syntax::parse(a, &good);
    let pb = wrl_syntax::parse(b, &bad);
    let checked =
        wrl_check::check(&mut sources, &[(a, &pa.file), (b, &pb.file)], &wrl_check::FsLoader);
    let codes: Vec<(&str, u32)> =
        checked.diagnostics.iter().map(|d| (d.code, d.labels[0].span.file.0)).collect();
    assert_eq!(codes, vec![("E0415", b.0)], "{:#?}", checked.diagnostics);
    assert!(checked.diagnostics[0].labels.iter().all(|l| l.span.file == b));
    let ctx = |r: &wrl_check::Recipe| match &r.decl("policy").expect("policy").value.v {
        wrl_check::V::Ref { decl, .. } => decl.to_string(),
        wrl_check::V::Obj(o) => o.ctor.to_string(),
        _ => String::new(),
    };
    assert_eq!(ctx(&checked.recipes[0]), "std::models::tiny");
    assert_eq!(ctx(&checked.recipes[1]), "api");
}

#[test]
fn a_tool_defined_twice() {
    let text = "model policy = std::models::tiny\ntools mine = toolset {\n  tool click(id: int)\n  tool click(x: int)\n  tool done() { terminal }\n}\nenv web = browser { target = std::sandbox::web, tools = mine }\nagent actor = react(policy, web) { max_response = 48 tokens, history = none }\neval probe = evaluate(actor, std::sandbox::tasks(count: 8))\n";
    let d = only(text, "E0201");
    assert_eq!(d.labels.len(), 2);
    assert_eq!(codes(text), vec!["E0201"]);
}

/// A param's value is inlined where it is used; a profile that overrides the param changes
/// those places too (else `profile solo { g = 1 }` would silently keep the old group).
#[test]
fn profile_override_of_a_param_reaches_its_uses() {
    let text = format!(
        "param g = 4\nparam h = 6 steps\n{}profile solo {{\n  g = 1\n  h = 9\n}}\n",
        rl("group = g")
    )
    .replace("horizon = 6 steps", "horizon = h");
    let (_, checked) =
        wrl_check::check_source("recipe.wrl", &text, &wrl_check::MemLoader::default());
    let d = checked.diagnostics.iter().find(|d| d.code == "E0402").expect("E0402 under solo");
    assert!(d.message.ends_with("(profile `solo`)"), "{}", d.message);
    let solo = checked.recipes[0].with_profile("solo").expect("solo");
    let online = solo.decl("online").expect("online");
    let horizon = online.value.field("phases").and_then(|p| match &p.v {
        wrl_check::V::List { items } => items[0].field("horizon").and_then(|h| h.as_f64()),
        _ => None,
    });
    assert_eq!(horizon, Some(9.0));
}

/// A variant is checked like a profile, whole, and on top of `--profile`: a rule it alone
/// breaks says `(variant …)`; `with_variant` applies it (on top of a profile too), `base` is
/// the recipe itself, and an unknown name is E0208 with the nearest name.
#[test]
fn variants_are_checked_whole_and_on_top_of_a_profile() {
    let text = format!(
        "param g = 4\n{}variant solo {{\n  g = 1\n}}\nprofile wide {{\n  g = 8\n}}\n",
        rl("group = g")
    );
    let (mut sources, checked) =
        wrl_check::check_source("recipe.wrl", &text, &wrl_check::MemLoader::default());
    let d = checked.diagnostics.iter().find(|d| d.code == "E0402").expect("E0402 under solo");
    assert!(d.message.ends_with("(variant `solo`)"), "{}", d.message);
    let r = &checked.recipes[0];
    assert_eq!(r.variant_names().collect::<Vec<_>>(), ["solo"]);
    assert_eq!(r.profile_names().collect::<Vec<_>>(), ["wide"]);
    let group = |r: &wrl_check::Recipe| {
        r.decl("online").expect("online").value.field("group").and_then(|g| g.as_f64())
    };
    let solo = r.with_variant("solo").expect("solo");
    assert_eq!((group(&solo), solo.variant.as_deref()), (Some(1.0), Some("solo")));
    let both = r.with_profile("wide").and_then(|w| w.with_variant("solo")).expect("wide, solo");
    assert_eq!((both.profile.as_deref(), both.variant.as_deref()), (Some("wide"), Some("solo")));
    assert_eq!(group(&r.with_variant("base").expect("base")), Some(4.0));
    let e = r.with_variant("sole").expect_err("no such variant");
    assert_eq!((e.code, e.help.as_deref()), ("E0208", Some("did you mean `solo`?")));
    assert_eq!(r.with_profile("solo").expect_err("a variant, not a profile").code, "E0206");
    // Under `--profile wide`, the rules also judge the variant on top of it.
    let id = sources.add("p.wrl", &text);
    let parsed = wrl_syntax::parse(id, &text);
    let loader = wrl_check::MemLoader::default();
    let under = wrl_check::check_as(&mut sources, &[(id, &parsed.file)], &loader, Some("wide"));
    assert!(under.diagnostics.iter().any(|d| d.message.ends_with("(variant `solo`)")));
}

/// The CLI's `--set` overrides (a profile of their own) are judged on top of the chosen
/// `--profile`, as the run resolves them: a mini-batch that divides only the profile's batch is
/// no error there, and is one on the recipe itself (E0403, named by its own profile).
#[test]
fn a_layered_profile_is_judged_on_top_of_the_one_under_it() {
    let text = format!(
        "param g = 4\n{}profile wide {{\n  g = 6\n}}\nprofile top {{\n  online.mini_batch = 12 samples\n}}\n",
        rl("prompts = 4, group = g, level = trajectory, mini_batch = 8 samples")
    );
    let loader = wrl_check::MemLoader::default();
    let mut sources = wrl_diagnostics::SourceMap::new();
    let id = sources.add("recipe.wrl", &text);
    let parsed = wrl_syntax::parse(id, &text);
    let entries = [(id, &parsed.file)];
    let codes_of = |c: &wrl_check::Checked| -> Vec<(&'static str, String)> {
        c.diagnostics.iter().map(|d| (d.code, d.message.clone())).collect()
    };
    // On the recipe itself, 12 does not divide 4 × 4.
    let plain = wrl_check::check(&mut sources, &entries, &loader);
    assert!(
        plain
            .diagnostics
            .iter()
            .any(|d| d.code == "E0403" && d.message.ends_with("(profile `top`)")),
        "{:?}",
        codes_of(&plain)
    );
    let under_base = wrl_check::check_layered(&mut sources, &entries, &loader, None, "top");
    assert!(
        under_base.diagnostics.iter().any(|d| d.code == "E0403"),
        "{:?}",
        codes_of(&under_base)
    );
    // On top of `wide`, 12 divides 4 × 6: nothing to report.
    let layered = wrl_check::check_layered(&mut sources, &entries, &loader, Some("wide"), "top");
    assert!(layered.diagnostics.is_empty(), "{:?}", codes_of(&layered));
    // A profile under it that the recipe does not declare is E0206.
    let missing = wrl_check::check_layered(&mut sources, &entries, &loader, Some("wid"), "top");
    assert!(missing.diagnostics.iter().any(|d| d.code == "E0206"), "{:?}", codes_of(&missing));
}

/// prompts × group beyond u64 once reached the batch rule (which must not overflow); now the
/// stdlib bounds them by what the runtime allocates, so they are refused at their fields
/// (E0306) and nothing else is reported, with no overflow panic (tests build with overflow
/// checks). A batch in range is named exactly, and so are its nearest divisors and multiples.
#[test]
fn huge_batch_numbers_do_not_overflow() {
    for (n, mini_batch) in [(99_999_999_999u64, 7), (4_294_967_311, 3), (4_294_967_311, 7)] {
        let fields = format!(
            "prompts = {n}, group = {n}, level = trajectory, mini_batch = {mini_batch} samples"
        );
        let all = diags(&rl(&fields));
        assert!(!all.is_empty() && all.iter().all(|d| d.code == "E0306"), "{fields}: {all:#?}");
    }
    // 65521 is prime: 196563 = 3 × 65521 has the divisors 1, 3, 65521 and 196563.
    let d = only(
        &rl("prompts = 65521, group = 3, level = trajectory, mini_batch = 7 samples"),
        "E0403",
    );
    assert!(d.message.contains("× 3 samples = 196563 trajectories"), "{}", d.message);
    assert_eq!(
        help(&d),
        "set `mini_batch` to 3 or 65521 (divisors of 196563), or `prompts` to 65520 or 65527; or say what the rest of 3 does: `mini_batch_rest = train` (a shorter last mini-batch, 196560 + 3, as verl splits it) or `drop` (slime's trimming)"
    );
}

/// #47: ARPO's 64 prompts × 5 = 320 trajectories in mini-batches of 256, which verl splits
/// 256 + 64 (`DataProto.split`, verl/protocol.py:925): a stated `mini_batch_rest` allows the
/// uneven split, whichever it says; left to its default, E0403 names the knob.
#[test]
fn a_stated_mini_batch_rest_allows_an_uneven_split() {
    let base = "prompts = 64, group = 5, level = trajectory, mini_batch = 256 trajectories";
    let d = only(&rl(base), "E0403");
    assert!(help(&d).contains("`mini_batch_rest = train` (a shorter last mini-batch, 256 + 64"));
    for rest in ["train", "drop"] {
        let fields = format!("{base}, mini_batch_rest = {rest}");
        assert!(!codes(&rl(&fields)).contains(&"E0403"), "{fields}: {:?}", codes(&rl(&fields)));
    }
}

/// A file imported `as c` keeps its names apart: `c::policy` is not the importer's `policy`.
#[test]
fn aliased_imports_do_not_collide_with_local_names() {
    let main = "use \"common.wrl\" as c\nmodel policy = std::models::tiny\nstage warmup = sft(c::policy, std::sandbox::demos(count: 8))\nstage other = sft(policy, std::sandbox::demos(count: 8))\n";
    let all = common::diags_with(
        "main.wrl",
        main,
        &[("common.wrl", "model policy = api(\"gpt-4.1\")\n")],
    );
    let codes: Vec<&str> = all.iter().map(|d| d.code).collect();
    assert_eq!(codes, vec!["E0415"], "{all:#?}");
    assert!(all[0].message.contains("`c::policy`"), "{}", all[0].message);
}

#[test]
fn a_param_override_that_cannot_reach_a_computed_use_warns() {
    let text = "param base_lr = 1e-5\nmodel policy = std::models::tiny\nstage warmup = sft(policy, std::sandbox::demos(count: 8)) { lr = base_lr }\nstage again = sft(warmup.model, std::sandbox::demos(count: 8)) { lr = base_lr * 10 }\nprofile fast {\n  base_lr = 1e-4\n}\n";
    assert_eq!(codes(text), vec!["W0203"]);
    let direct = text.replace("base_lr * 10", "base_lr");
    assert_eq!(codes(&direct), Vec::<&str>::new());
    // Overriding the computed field in the same profile is the fix.
    let fixed = text.replace("  base_lr = 1e-4\n", "  base_lr = 1e-4\n  again.lr = 1e-3\n");
    assert_ne!(fixed, text);
    assert_eq!(codes(&fixed), Vec::<&str>::new());
}
