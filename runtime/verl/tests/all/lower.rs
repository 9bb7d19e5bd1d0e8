//! The lowering over every shipped recipe and profile: every field of every node is accounted
//! for (a field the lowering does not know fails here, not in a user's job), the job has its
//! files, and the same plan lowers to the same bytes.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::Once;

use wrl_check::FsLoader;
use wrl_diagnostics::SourceMap;
use wrl_plan::Plan;

fn root() -> &'static Path {
    static ONCE: Once = Once::new();
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    ONCE.call_once(|| std::env::set_current_dir(root).unwrap());
    root
}

fn plans() -> Vec<(String, Plan)> {
    let root = root();
    let mut files: Vec<_> = std::fs::read_dir(root.join("recipes"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "wrl"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let name = format!("recipes/{}", f.file_name().unwrap().to_string_lossy());
        let text = std::fs::read_to_string(&f).unwrap();
        let mut sources = SourceMap::new();
        let id = sources.add(name.clone(), text.clone());
        let parsed = wrl_syntax::parse(id, &text);
        let checked = wrl_check::check(&mut sources, &[(id, &parsed.file)], &FsLoader);
        let recipe = checked.recipes.into_iter().next().unwrap();
        // The profiles (a variant is a study's control of one profile, not a lowering target).
        for p in recipe.profile_names().map(str::to_string).collect::<Vec<_>>() {
            let r = recipe.with_profile(&p).unwrap();
            out.push((format!("{name} --profile {p}"), wrl_plan::lower(&r).unwrap()));
        }
        out.push((name, wrl_plan::lower(&recipe).unwrap()));
    }
    out
}

#[test]
fn every_field_of_every_node_is_accounted_for() {
    for (name, plan) in plans() {
        let job = wrl_verl::lower(&plan);
        for n in &plan.nodes {
            let missing = wrl_verl::report::unaccounted(n, &job.entries);
            assert!(missing.is_empty(), "{name}: {}: fields without an entry: {missing:?}", n.id);
        }
        for e in &job.entries {
            let n = plan.nodes.iter().find(|n| n.id == e.node).unwrap();
            let leaves = wrl_verl::report::leaves(n);
            assert!(
                leaves.contains(&e.field),
                "{name}: {} has no field `{}` (its fields: {leaves:?})",
                e.node,
                e.field
            );
            let twice =
                job.entries.iter().filter(|x| x.node == e.node && x.field == e.field).count();
            assert_eq!(twice, 1, "{name}: {} `{}` is accounted for {twice} times", e.node, e.field);
        }
        let unknown: Vec<String> = job
            .entries
            .iter()
            .filter(|e| e.why.as_deref().is_some_and(|w| w.contains("does not know this field")))
            .map(|e| format!("{} {}", e.node, e.field))
            .collect();
        assert!(unknown.is_empty(), "{name}: fields the lowering does not know: {unknown:?}");
        for e in &job.entries {
            assert!(
                !(e.status == wrl_verl::Status::NotMapped
                    && (e.why.is_none() || e.instead.is_none())),
                "{name}: {} {}: a field not mapped says why and what happens instead",
                e.node,
                e.field
            );
        }
    }
}

#[test]
fn jobs_have_their_files_and_are_deterministic() {
    for (name, plan) in plans() {
        let a = wrl_verl::lower(&plan);
        let b = wrl_verl::lower(&plan);
        assert_eq!(a.files, b.files, "{name}: two lowerings differ");
        for f in [
            "portability.json",
            "portability.md",
            "agent_loops.yaml",
            "tools.yaml",
            "launch.sh",
            "ray-cluster.md",
            "README.md",
            "plan.json",
        ] {
            assert!(a.files.contains_key(f), "{name}: no {f}");
        }
        let configs = a.files.keys().filter(|k| k.starts_with("config/")).count();
        let phases = plan.nodes.iter().filter(|n| n.kind == wrl_plan::NodeKind::RlPhase).count();
        assert_eq!(configs, phases, "{name}: one config per RL phase");
        for (path, bytes) in &a.files {
            let text = String::from_utf8_lossy(bytes);
            assert!(!text.contains("/work/"), "{name}: {path} holds an absolute path");
        }
    }
}

/// `tests/ui/lower/E0602_unknown_group.wrl` (a small grpo job on the sandbox) with `edit`.
fn variant(edit: impl Fn(String) -> String) -> String {
    edit(std::fs::read_to_string(root().join("tests/ui/lower/E0602_unknown_group.wrl")).unwrap())
}

/// The verl job of a recipe's text, which must check without errors.
fn job_of(text: &str) -> wrl_verl::Job {
    let mut sources = SourceMap::new();
    let id = sources.add("variant.wrl".to_string(), text.to_string());
    let parsed = wrl_syntax::parse(id, text);
    let checked = wrl_check::check(&mut sources, &[(id, &parsed.file)], &FsLoader);
    assert!(checked.diagnostics.iter().all(|d| !d.is_error()), "{:?}", checked.diagnostics);
    wrl_verl::lower(&wrl_plan::lower(&checked.recipes.into_iter().next().unwrap()).unwrap())
}

/// The job's (one) RL run config.
fn config_of(job: &wrl_verl::Job) -> String {
    let cfg = job.files.iter().find(|(k, _)| k.starts_with("config/")).map(|(_, v)| v);
    String::from_utf8(cfg.unwrap().clone()).unwrap()
}

#[test]
fn an_unknown_turn_budget_caps_nothing() {
    let text = variant(|t| {
        t.replace("group = unknown", "group = 4")
            .replace("max_turns = 3 turns", "max_turns = unknown")
    });
    let job = job_of(&text);
    let loops = String::from_utf8(job.files["agent_loops.yaml"].clone()).unwrap();
    assert!(loops.contains("max_steps: 3"), "the horizon (3 steps) is the budget: {loops}");
}

/// `kl_in = reward` is verl's `use_kl_in_reward` with a fixed coefficient and its penalty
/// estimator; `kl_in = loss` its KL loss, never both.
#[test]
fn the_kl_goes_where_the_recipe_says() {
    let base = variant(|t| t.replace("group = unknown", "group = 4, kl = 0.01, kl_estimator = k2"));
    let reward = config_of(&job_of(&base.replace("kl = 0.01,", "kl = 0.01, kl_in = reward,")));
    assert!(reward.contains("use_kl_in_reward: true"), "{reward}");
    assert!(reward.contains("use_kl_loss: false"), "{reward}");
    assert!(reward.contains("kl_penalty: mse"), "{reward}");
    let loss = config_of(&job_of(&base));
    assert!(loss.contains("use_kl_in_reward: false"), "{loss}");
    assert!(loss.contains("use_kl_loss: true") && loss.contains("kl_loss_type: k2"), "{loss}");
}

/// verl counts `ppo_mini_batch_size` in prompts: a mini-batch in prompts is written as it is,
/// one in trajectories is divided by the group.
#[test]
fn a_mini_batch_reaches_verl_in_prompts() {
    let base = variant(|t| {
        t.replace("group = unknown", "group = 4, prompts = 16, level = trajectory, MB")
    });
    let cfg_of = |mb: &str| config_of(&job_of(&base.replace("MB", &format!("mini_batch = {mb}"))));
    assert!(cfg_of("8 prompts").contains("ppo_mini_batch_size: 8"));
    assert!(cfg_of("32 trajectories").contains("ppo_mini_batch_size: 8"));
    assert!(cfg_of("16 samples").contains("ppo_mini_batch_size: 4"));
}

/// `iters = 2 epochs` over 4 tasks, 2 per iteration, reaches verl as 4 training steps, and the
/// report says where they came from.
#[test]
fn epochs_reach_verl_as_steps() {
    let text = variant(|t| {
        t.replace("group = unknown", "group = 4, prompts = 2")
            .replace("iters = 1,", "iters = 2 epochs,")
    });
    let job = job_of(&text);
    let cfg = config_of(&job);
    assert!(cfg.contains("total_training_steps: 4"), "{cfg}");
    assert!(job.table().contains("2 epochs over the task set, written as `iters` (4 steps)"));
}

/// The portability tables of the seed recipes in docs/scale.md, as the lowering writes them.
#[test]
fn the_portability_tables_in_docs_scale_md_are_current() {
    let root = root();
    let doc_path = root.join("docs/scale.md");
    let doc = std::fs::read_to_string(&doc_path).unwrap();
    let (open, close) = ("<!-- generated: portability tables -->\n", "<!-- end generated -->");
    let start = doc.find(open).expect("docs/scale.md has the generated section") + open.len();
    let end = doc.find(close).expect("docs/scale.md ends the generated section");
    let mut tables = String::new();
    let plans = plans();
    for seed in ["quickstart", "openwebrl", "opagent", "webdancer"] {
        let name = format!("recipes/{seed}.wrl");
        let (_, plan) = plans.iter().find(|(n, _)| *n == name).unwrap();
        tables.push_str(&format!("\n### `{name}`\n\n{}", wrl_verl::lower(plan).table()));
    }
    tables.push('\n');
    if std::env::var_os("WRL_BLESS").is_some() {
        let text = format!("{}{tables}{}", &doc[..start], &doc[end..]);
        std::fs::write(&doc_path, text).unwrap();
        return;
    }
    assert!(
        doc[start..end] == tables,
        "docs/scale.md's portability tables are stale: WRL_BLESS=1 cargo test -p wrl-verl --test all lower"
    );
}

/// A task file whose keys differ from the task's fields reaches verl's rows through the
/// dataset's `columns`; without the mapping it is refused at its path.
#[test]
fn a_column_mapping_renames_task_keys_in_the_rows() {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("tasks.jsonl");
    let tasks =
        wrl_sandbox::generate(&wrl_sandbox::Content::new(0), wrl_sandbox::Split::Train, 2, 0);
    let lines: Vec<String> = tasks
        .iter()
        .map(|t| serde_json::to_string(t).unwrap().replace("\"goal\":", "\"instruction\":"))
        .collect();
    std::fs::write(&path, lines.join("\n")).unwrap();
    let with = |columns: &str| {
        variant(|t| {
            t.replace("group = unknown", "group = 4").replace(
                "std::sandbox::tasks(count: 4) { sites = [shop] }",
                &format!("jsonl(\"{}\") {{ kind = tasks{columns} }}", path.display()),
            )
        })
    };
    let job = job_of(&with(", columns = { goal = \"instruction\" }"));
    let (_, bytes) = job.files.iter().find(|(k, _)| k.ends_with(".parquet")).unwrap();
    let file = tmp.path().join("rows.parquet");
    std::fs::write(&file, bytes).unwrap();
    let reader = SerializedFileReader::new(std::fs::File::open(&file).unwrap()).unwrap();
    let rows: Vec<String> =
        reader.get_row_iter(None).unwrap().map(|r| r.unwrap().to_string()).collect();
    assert_eq!(rows.len(), 2);
    assert!(rows[0].contains(&format!("task: {}", tasks[0].goal)), "{}", rows[0]);
    let refused = job_of(&with("")).table();
    assert!(refused.contains("missing field `goal`"), "{refused}");
}

/// `ppo` with `advantage = gae(…)` and a critic started from the policy is verl's GAE with its
/// critic worker (the actor's model path, the critic's optimiser, value clipping, warm-up);
/// group-relative advantages keep the critic off; a critic started from weights the job does
/// not produce is refused, never dropped.
#[test]
fn a_critic_reaches_verl_as_its_critic_worker() {
    let ppo = |fields: &str| {
        variant(|t| {
            t.replace("grpo(", "ppo(")
                .replace("group = unknown", &format!("group = 1, mini_batch = 8 turns, {fields}"))
        })
    };
    let gae = ppo(
        "advantage = gae(lambda: 0.95), critic = critic(policy) { lr = 2e-5, value_clip = 0.2, warmup = 1 iters }",
    );
    let job = job_of(&gae);
    let cfg = config_of(&job);
    for want in [
        "adv_estimator: gae",
        "gamma: 1.0",
        "lam: 0.95",
        "enable: true",
        "path: '${actor_rollout_ref.model.path}'",
        "lr: 0.00002",
        "cliprange_value: 0.2",
        "critic_warmup: 1",
    ] {
        assert!(cfg.contains(want), "`{want}` not in\n{cfg}");
    }
    assert!(job.refusals().is_empty(), "{:?}", job.refusals());
    let grpo = config_of(&job_of(&ppo("group = 2").replace("group = 1, ", "")));
    assert!(grpo.contains("adv_estimator: grpo") && !grpo.contains("cliprange_value"), "{grpo}");
    // A critic started from another stage's weights: the job has none for it.
    let other = gae.replace("critic = critic(policy)", "critic = critic(warm.model)").replace(
        "stage online",
        "dataset demos = std::sandbox::demos(count: 4)\nstage warm = sft(policy, demos)\nstage online",
    );
    let refused = job_of(&other).refusals();
    assert!(refused.iter().any(|r| r.field == "critic" && r.code == "E0601"), "{refused:?}");
}

/// An `env_server` env reaches verl's agent loop through the env service, which opens the
/// server's instances: every field accounted for, none refused.
#[test]
fn an_environment_server_is_carried_by_the_env_service() {
    let text = variant(|t| {
        t.replace("group = unknown", "group = 4")
            .replace("use std::rewards::{ended, task_check}", "use std::rewards::{ended, env_reward}")
            .replace("else task_check", "else env_reward")
            .replace(
                "env web = browser {\n  target = std::sandbox::web\n  tools = std::tools::elements\n  observe = [elements(max: 32), url, feedback]\n  concurrency = 2\n}",
                "env web = env_server(\"http://127.0.0.1:36001\") { step_text = 64 tokens }",
            )
    });
    assert!(text.contains("env_server("), "the variant did not replace the env");
    let job = job_of(&text);
    assert!(job.refusals().is_empty(), "{:?}", job.refusals());
    let table = job.table();
    assert!(table.contains("the env service opens one of the server's instances"), "{table}");
}

/// A replay buffer and a per-phase reference have no verl counterpart: refused, never dropped
/// (a per-phase reference only from the second phase on; the first is the stage's start).
#[test]
fn replay_generated_tasks_and_a_per_phase_reference_are_refused() {
    let text = variant(|t| {
        t.replace("group = unknown", "group = 4, kl = 0.01, reference = phase, replay = replay(fraction: 50%), generate = from_failures(per_task: 2)")
            .replace(
                "phases = [{ iters = 1, horizon = 3 steps, lr = 1e-4 }]",
                "phases = [{ iters = 1, horizon = 3 steps, lr = 1e-4 }, { iters = 1, horizon = 3 steps, lr = 1e-4 }]",
            )
    });
    let refused = job_of(&text).refusals();
    let fields: Vec<(&str, &str)> =
        refused.iter().map(|r| (r.node.as_str(), r.field.as_str())).collect();
    assert!(fields.contains(&("stage:online/phase:1", "replay")), "{fields:?}");
    assert!(fields.contains(&("stage:online/phase:2", "generate")), "{fields:?}");
    assert!(fields.contains(&("stage:online/phase:2", "reference")), "{fields:?}");
    assert!(!fields.contains(&("stage:online/phase:1", "reference")), "{fields:?}");
}

/// A reward endpoint is called by the env service, as `wrlc run` calls it: the job refuses
/// nothing for it and says so at the reward, and verl's reward function stays wrl's.
#[test]
fn a_reward_endpoint_is_called_by_the_env_service() {
    let text = std::fs::read_to_string(root().join("tests/recipes/reward_endpoint.wrl")).unwrap();
    // Rows the job can write here: the recipe's own file is the user's.
    let text = text.replace(
        "jsonl(\"data/questions.jsonl\") { kind = qa, count = 1000 }",
        "std::sandbox::qa(count: 8)",
    );
    assert!(text.contains("std::sandbox::qa(count: 8)"));
    let job = job_of(&text);
    assert!(job.refusals().is_empty(), "{:?}", job.refusals());
    let table = job.table();
    assert!(table.contains("calls its reward endpoint as `wrlc run` does"), "{table}");
    assert!(config_of(&job).contains("pkg://wrl_verl.reward"));
}

/// Sandbox QA rows of every kind `questions` asks lower as the one-hop ones do: the row holds
/// the multi-hop question for the env service, which checks it as `wrlc run` does.
#[test]
fn multi_hop_sandbox_questions_lower_to_rows() {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let text = std::fs::read_to_string(root().join("tests/recipes/reward_endpoint.wrl")).unwrap();
    let text = text.replace(
        "jsonl(\"data/questions.jsonl\") { kind = qa, count = 1000 }",
        "std::sandbox::qa(count: 4) { questions = [compare, chain, difference, lookup] }",
    );
    assert!(text.contains("questions = [compare"));
    let job = job_of(&text);
    assert!(job.refusals().is_empty(), "{:?}", job.refusals());
    let (_, bytes) = job.files.iter().find(|(k, _)| k.ends_with(".parquet")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("rows.parquet");
    std::fs::write(&file, bytes).unwrap();
    let reader = SerializedFileReader::new(std::fs::File::open(&file).unwrap()).unwrap();
    let rows: Vec<String> =
        reader.get_row_iter(None).unwrap().map(|r| r.unwrap().to_string()).collect();
    assert_eq!(rows.len(), 4);
    assert!(rows[0].contains("Which was founded earlier"), "{}", rows[0]);
    assert!(rows[1].contains("that was founded in"), "{}", rows[1]);
    assert!(rows[2].contains("How many years after"), "{}", rows[2]);
    assert!(rows[3].contains("In what year was"), "{}", rows[3]);
}
