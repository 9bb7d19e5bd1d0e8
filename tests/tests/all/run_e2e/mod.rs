//! `wrlc run` end to end on a shrunken quickstart: expert demos in real Chromium, SFT, GRPO
//! rollouts, both held-out evaluations, the run directory and the report; then `--resume` of
//! the finished run adds nothing; GiGPO's step-level credit on the search sandbox. Studies over
//! seeds and their claims are in `study.rs`, in the same test binary.

pub mod deep_research;
mod eval_env;
mod mcp;
mod study;
mod tags;

use std::path::Path;

use wrl_exec::{MetricLine, RunDir, Summary, TrajectoryLine};

/// The committed records of a finished run, read back through the runtime's own types.
pub(crate) fn records(out: &Path) -> (Summary, Vec<MetricLine>, Vec<TrajectoryLine>) {
    let text = std::fs::read_to_string(out.join("summary.json")).expect("summary.json");
    let summary: Summary = serde_json::from_str(&text).expect("a summary");
    let run = RunDir::resume(out).expect("the run directory");
    (summary, run.read_metrics().expect("metrics"), run.read_trajectories().expect("trajectories"))
}

/// Runs `tests/recipes/NAME` under its `offline` profile into `out`; fails the test on a
/// non-zero exit. Returns `out`.
pub(crate) fn offline_run(name: &str, out: std::path::PathBuf) -> std::path::PathBuf {
    let recipe = Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes").join(name);
    let args: Vec<std::ffi::OsString> = vec![
        "run".into(),
        recipe.into(),
        "--profile".into(),
        "offline".into(),
        "--out".into(),
        out.clone().into(),
    ];
    let (code, _, stderr) = wrl_cli::run_captured(args);
    assert_eq!(code, 0, "{stderr}");
    out
}

#[test]
fn shrunken_quickstart_runs_end_to_end_and_resumes_without_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let recipe = Path::new(env!("CARGO_MANIFEST_DIR")).join("../recipes/quickstart.wrl");
    let args: Vec<std::ffi::OsString> = vec![
        "run".into(),
        recipe.into_os_string(),
        "--out".into(),
        out.clone().into_os_string(),
        "--set".into(),
        "demos=std::sandbox::demos(count: 4)".into(),
        "--set".into(),
        "heldout=std::sandbox::tasks(count: 3) { split = test }".into(),
        "--set".into(),
        "online.prompts=2".into(),
        "--set".into(),
        "online.group=2".into(),
        "--set".into(),
        // One epoch over 4 tasks, 2 per iteration: 2 iterations.
        "online.phases[0].iters=1 epochs".into(),
        "--set".into(),
        "tasks=std::sandbox::tasks(count: 4) { sites = [shop, wiki] }".into(),
        "--set".into(),
        "warmup.epochs=1".into(),
    ];
    let (code, stdout, stderr) = wrl_cli::run_captured(args);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.trim_end().ends_with("report.html"), "{stdout}");
    let (summary, metrics, trajs) = records(&out);
    assert_eq!(summary.status, "finished");
    let after: Vec<&str> = summary.evals.iter().map(|e| e.after.as_str()).collect();
    assert_eq!(after, ["warmup", "online"], "{summary:?}");
    // 2 iterations × 2 prompts × group 2, and 2 evaluations × 3 tasks, each logged once.
    assert_eq!(trajs.len(), 14);
    let ids: Vec<u64> = trajs.iter().map(|t| t.id).collect();
    assert_eq!(ids, (0..14).collect::<Vec<u64>>(), "ids are consecutive");
    let evals_logged = trajs.iter().filter(|t| t.node.starts_with("eval:")).count();
    assert_eq!(evals_logged, 6, "evaluation episodes are logged too");
    // Loopback sites are recorded by path: the sandbox's port changes from run to run.
    let text = std::fs::read_to_string(out.join("trajectories.jsonl")).unwrap();
    assert!(!text.contains("127.0.0.1:"), "a trajectory recorded the sandbox's port");
    assert!(metrics.iter().any(|m| matches!(m, MetricLine::Sft(_))));
    assert!(metrics.iter().any(|m| matches!(m, MetricLine::Rl(_))));
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    for id in ["evals", "curves", "by-iteration", "by-template", "episodes", "config"] {
        assert!(report.contains(&format!("<section id=\"{id}\">")), "no section {id}");
    }
    assert!(out.join("plan.json").exists());
    // The report embeds the pages of the chosen episodes: PNGs of the viewport, saved under
    // screens/ and named in the trajectory log; no other episode's pages are kept.
    let shown: Vec<&str> =
        report.split(" data-file=\"").skip(1).filter_map(|r| r.split('"').next()).collect();
    assert!(!shown.is_empty(), "no page in the report");
    let embedded: Vec<&str> = report
        .split("src=\"data:image/png;base64,")
        .skip(1)
        .filter_map(|r| r.split('"').next())
        .collect();
    assert_eq!(embedded.len(), shown.len());
    for (rel, data) in shown.iter().zip(&embedded) {
        assert!(rel.starts_with("screens/") && text.contains(rel), "{rel}");
        let png = std::fs::read(out.join(rel)).unwrap();
        use base64::Engine as _;
        let inline = base64::engine::general_purpose::STANDARD.decode(data).unwrap();
        assert_eq!(inline, png, "{rel}: the embedded page is its file");
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{rel} is not a PNG");
        let dim = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
        assert_eq!((dim(16), dim(20)), (1280, 720), "{rel}: the quickstart's viewport");
    }
    let kept = std::fs::read_dir(out.join("screens")).unwrap().count();
    assert_eq!(kept, shown.len(), "pages kept for episodes the report does not show");
    // `wrlc report` rebuilds the same page from the run directory, byte for byte.
    let (code, stdout, stderr) = wrl_cli::run_captured(["report".as_ref(), out.as_os_str()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout.trim_end(), out.join("report.html").display().to_string());
    assert_eq!(std::fs::read_to_string(out.join("report.html")).unwrap(), report);
    // Two runs compared: a copy of the run's records has the same configuration.
    let copy = dir.path().join("copy");
    std::fs::create_dir(&copy).unwrap();
    for f in ["plan.json", "state.json", "metrics.jsonl", "trajectories.jsonl", "summary.json"] {
        std::fs::copy(out.join(f), copy.join(f)).unwrap();
    }
    let page = dir.path().join("compare.html");
    let args =
        ["report".as_ref(), out.as_os_str(), copy.as_os_str(), "--out".as_ref(), page.as_os_str()];
    let (code, _, stderr) = wrl_cli::run_captured(args);
    assert_eq!(code, 0, "{stderr}");
    let cmp = std::fs::read_to_string(&page).unwrap();
    assert!(cmp.contains("The runs' plans have the same configuration."), "{cmp}");
    assert!(cmp.contains(&format!("{}: warmup", copy.display())), "a curve per run");
    let (code, _, stderr) =
        wrl_cli::run_captured(["report".as_ref(), out.as_os_str(), copy.as_os_str()]);
    assert_eq!(code, 2);
    assert!(stderr.contains("`--out FILE.html`"), "{stderr}");

    let (code, _, stderr) =
        wrl_cli::run_captured(["run".as_ref(), "--resume".as_ref(), out.as_os_str()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(records(&out).2.len(), 14, "resume of a finished run must not add trajectories");
}

/// `wrlc run recipes/RECIPE.wrl --profile smoke --out OUT --set …` for each of `sets`.
fn smoke_run(recipe: &str, out: &Path, sets: &[&str]) -> (u8, String, String) {
    let recipe = Path::new(env!("CARGO_MANIFEST_DIR")).join("../recipes").join(recipe);
    let mut args: Vec<std::ffi::OsString> = vec![
        "run".into(),
        recipe.into_os_string(),
        "--profile".into(),
        "smoke".into(),
        "--out".into(),
        out.as_os_str().to_owned(),
    ];
    for set in sets {
        args.extend(["--set".into(), (*set).into()]);
    }
    wrl_cli::run_captured(args)
}

#[test]
fn webdancer_smoke_runs_offline_with_search_and_visit() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let sets = [
        "trajectories=std::sandbox::demos(count: 6) { env = search_api }",
        "gaia=std::sandbox::qa(count: 2) { split = test }",
        "webwalker=std::sandbox::qa(count: 2) { split = test, seed = 1 }",
        "warmup.epochs=1",
        "online.phases[0].iters=1",
    ];
    let (code, _, stderr) = smoke_run("webdancer.wrl", &out, &sets);
    assert_eq!(code, 0, "{stderr}");
    // A second run writes the same trajectories: every episode samples from its own stream.
    let again = dir.path().join("again");
    let (code, _, stderr2) = smoke_run("webdancer.wrl", &again, &sets);
    assert_eq!(code, 0, "{stderr2}");
    let of = |out: &Path| episodes(records(out).2);
    assert_eq!(of(&out), of(&again), "two runs of one recipe differ");
    // Two evaluations after the same stage are named in the last line.
    assert!(stderr.contains("gaia_eval after online: "), "{stderr}");
    let (summary, _, trajs) = records(&out);
    assert_eq!(summary.status, "finished");
    let evals: Vec<&str> = summary.evals.iter().map(|e| e.eval.as_str()).collect();
    // SFT's Pass@3 too (the gap to it that RL closes part of, docs/run.md).
    let pass1 = ["gaia_pass1", "webwalker_eval", "webwalker_pass1"];
    let after_online = [
        "gaia_cons",
        "gaia_eval",
        "gaia_pass1",
        "webwalker_cons",
        "webwalker_eval",
        "webwalker_pass1",
    ];
    assert_eq!(evals, [&pass1[..], &after_online[..]].concat());
    // Each result keeps the paper's figure for its run.
    let pass1_online = summary.evals.iter().find(|e| e.eval == "gaia_pass1" && e.after == "online");
    let paper = &pass1_online.unwrap().published;
    assert_eq!(paper.len(), 1);
    assert!((paper[0].value - 0.515).abs() < 1e-9, "{paper:?}");
    // The expert's demonstrations search, visit and answer through the sandbox's search API
    let demos = std::fs::read_to_string(out.join("data/trajectories.jsonl")).unwrap();
    // (the cache's first line counts them, with the checksum of the lines after it).
    let body: String = demos.lines().skip(1).map(|l| format!("{l}\n")).collect();
    let header = format!(
        "{{\"demonstrations\":6,\"checksum\":\"{}\"}}",
        wrl_trainer::checkpoint::checksum(body.as_bytes())
    );
    assert_eq!(demos.lines().next(), Some(header.as_str()));
    let first: wrl_sandbox::Trajectory =
        serde_json::from_str(demos.lines().nth(1).unwrap()).unwrap();
    let calls: Vec<&str> = first.steps.iter().map(|s| s.actions[0].as_str()).collect();
    assert!(calls[0].starts_with("search ") && calls[1].starts_with("visit "), "{calls:?}");
    assert!(calls[2].starts_with("answer "), "{calls:?}");
    // DAPO: 4 prompts × group 4, refilled at most twice; pass@3 and cons@3 over 2 + 2
    // questions after `online`, pass@1 over them after `warmup` and after `online`, and
    // webwalker's pass@3 after `warmup` (6 episodes).
    let logged = trajs.len();
    assert!((16 + 38..=48 + 38).contains(&logged), "{logged}");
    assert!(out.join("report.html").exists());
}

/// WebDancer's smoke run with its search API replaced by a retriever over a corpus file: the
/// sandbox wiki's articles written as documents. The scripted expert's demonstrations, the RL
/// rollouts and the evaluations all search and visit through the retriever.
#[test]
fn webdancer_smoke_runs_on_a_retriever_over_a_corpus_file() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("wiki.jsonl");
    let content = wrl_sandbox::Content::new(0);
    let docs: Vec<String> = content
        .towns
        .iter()
        .map(|t| {
            let text = format!(
                "{n} is a town on the river {r}. {n} was founded in {f}. {n} has a population of {p}.",
                n = t.name,
                r = t.river,
                f = t.founded,
                p = t.population
            );
            let doc = serde_json::json!({"url": format!("/wiki/article/{}", t.slug), "title": t.name, "text": text});
            doc.to_string()
        })
        .collect();
    std::fs::write(&corpus, docs.join("\n")).unwrap();
    let out = dir.path().join("run");
    let target = format!("web.target=retriever(\"{}\")", corpus.display());
    let sets = [
        "trajectories=std::sandbox::demos(count: 4) { env = search_api }",
        "gaia=std::sandbox::qa(count: 2) { split = test }",
        "webwalker=std::sandbox::qa(count: 2) { split = test, seed = 1 }",
        "warmup.epochs=1",
        "online.phases[0].iters=1",
        target.as_str(),
    ];
    let (code, _, stderr) = smoke_run("webdancer.wrl", &out, &sets);
    assert_eq!(code, 0, "{stderr}");
    let plan = std::fs::read_to_string(out.join("plan.json")).unwrap();
    assert!(plan.contains("\"ctor\": \"retriever\""), "the env targets the retriever: {plan}");
    // The expert answered every question from the retriever's documents.
    let demos = std::fs::read_to_string(out.join("data/trajectories.jsonl")).unwrap();
    let solved: Vec<wrl_sandbox::Trajectory> =
        demos.lines().skip(1).map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(solved.len(), 4, "{demos}");
    for t in &solved {
        assert!(t.outcome.success, "{:?}", t.outcome);
        assert!(t.steps[0].feedback.starts_with("[1] "), "{:?}", t.steps[0]);
        assert!(t.steps[1].url.starts_with("/wiki/article/"), "{:?}", t.steps[1]);
    }
    let (summary, _, trajs) = records(&out);
    assert_eq!(summary.status, "finished");
    assert!(trajs.iter().any(|t| t.node.starts_with("eval:")));
}

/// OpAgent's released dual-model script (`opagent-dual.wrl`, derived from `opagent.wrl`, whose
/// RL trains the single model of the published figures).
#[test]
fn opagent_dual_smoke_trains_planner_and_grounder_as_separate_weights() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let sets = [
        "planning=std::sandbox::demos(count: 3)",
        "acting=std::sandbox::demos(count: 3) { seed = 2 }",
        "grounding=std::sandbox::demos(count: 3) { seed = 3 }",
        "arena_test=std::sandbox::tasks(count: 2) { split = test }",
        "multitask.epochs=1",
        "rl.prompts=2",
        "rl.group=2",
        "rl.phases=[{ iters = 1, horizon = 3 steps, lr = 3e-4 }]",
        "rl_pass5.k=1",
        "grounder_rl.phases=[{ iters = 1, horizon = 3 steps, lr = 3e-4 }]",
    ];
    let (code, _, stderr) = smoke_run("opagent-dual.wrl", &out, &sets);
    assert_eq!(code, 0, "{stderr}");
    // The framework runs with the post-trained grounder (MT-SFT, then RL), beside the paper's
    // figure.
    assert!(stderr.contains("after grounder_rl: "), "{stderr}");
    let (summary, _, _) = records(&out);
    let framework = summary.evals.iter().find(|e| e.eval == "framework_sr").unwrap();
    assert_eq!(framework.after, "grounder_rl");
    assert!(framework.published.iter().any(|p| (p.value - 0.716).abs() < 1e-9), "{framework:?}");
    // Each role was updated on the turns it sampled, and the RL iteration's checkpoint holds
    // each role's weights.
    let (_, metrics, _) = records(&out);
    let rl = metrics
        .iter()
        .find_map(|m| match m {
            MetricLine::Rl(r) if r.stage == "rl" => Some(r),
            MetricLine::Rl(_) | MetricLine::Sft(_) | MetricLine::Eval(_) => None,
        })
        .unwrap();
    let ckpt = out.join("checkpoints/stage-rl-phase-1-iter-1");
    let mut total = 0;
    let roles = rl.roles.clone().unwrap_or_default();
    for role in ["planner", "grounder"] {
        let n = roles.get(role).map_or(0, |r| r.samples);
        assert!(n > 0, "{role} sampled no turn: {rl:?}");
        total += n;
        assert!(ckpt.join("roles").join(role).join("model.safetensors").exists(), "{role}");
    }
    assert_eq!(rl.samples, total, "{rl:?}");
}

/// Runs `recipe` into `out` (which must succeed), and returns `out`.
pub(crate) fn run_into(recipe: &Path, out: &Path) -> std::path::PathBuf {
    run_with(recipe, out, &[])
}

/// [`run_into`] with `--set` each of `sets`.
pub(crate) fn run_with(recipe: &Path, out: &Path, sets: &[&str]) -> std::path::PathBuf {
    let mut args: Vec<std::ffi::OsString> =
        vec!["run".into(), recipe.into(), "--out".into(), out.into()];
    for set in sets {
        args.extend(["--set".into(), set.into()]);
    }
    let (code, _, stderr) = wrl_cli::run_captured(args);
    assert_eq!(code, 0, "{stderr}");
    out.to_path_buf()
}

/// A one-epoch SFT warm-up over 4 demonstrations, for the search recipes whose own warm-up (3
/// epochs over 32) is most of their run and is not what their tests test.
const SHORT_WARMUP: [&str; 2] =
    ["warmup.epochs=1", "demos=std::sandbox::demos(count: 4) { env = search_api }"];

/// Trajectory lines without their wall-clock times, for comparing runs.
pub(crate) fn episodes(t: Vec<TrajectoryLine>) -> Vec<TrajectoryLine> {
    t.into_iter()
        .map(|mut l| {
            l.trajectory.elapsed_ms = 0;
            l
        })
        .collect()
}

/// `tests/recipes/ppo_critic.wrl`: PPO with GAE from a learned critic, one sample per question,
/// the KL on the reward to each phase's starting weights, and replay of unanswered questions.
/// Every iteration logs the critic's value loss and its replays, every checkpoint holds the
/// critic (its warm-up iteration counted), the critic's learning rate follows its schedule,
/// the second phase's reference is the first phase's
/// last weights, replayed questions are ones seen before, and two runs write the same episodes.
#[test]
fn ppo_with_a_critic_runs_end_to_end_on_the_search_sandbox() {
    let recipe = Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes/ppo_critic.wrl");
    let dir = tempfile::tempdir().unwrap();
    // What is tested is PPO, twice: a short warm-up.
    let run = |name: &str| run_with(&recipe, &dir.path().join(name), &SHORT_WARMUP);
    let out = run("run");
    let (summary, metrics, trajs) = records(&out);
    assert_eq!(summary.status, "finished");
    let rl: Vec<_> = metrics
        .iter()
        .filter_map(|m| match m {
            MetricLine::Rl(r) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(rl.len(), 3);
    assert!(rl.iter().all(|r| r.value_loss.is_some_and(f64::is_finite)), "{rl:?}");
    assert!(rl.iter().any(|r| r.value_loss.is_some_and(|v| v > 0.0)), "{rl:?}");
    // The critic's cosine schedule advances per iteration and starts again with each phase.
    let critic_lr: Vec<f64> = rl.iter().map(|r| r.critic_lr.unwrap()).collect();
    assert_eq!(critic_lr[0], 1e-3, "{critic_lr:?}");
    assert!(critic_lr[1] > 0.0 && critic_lr[1] < 1e-3, "{critic_lr:?}");
    assert_eq!(critic_lr[2], 1e-3, "{critic_lr:?}");
    assert_eq!(rl[0].replayed, Some(0), "nothing to replay in the first iteration");
    assert!(rl[1..].iter().any(|r| r.replayed.is_some_and(|n| n > 0)), "{rl:?}");
    // A replayed question was asked in an earlier iteration (its id appears more than once).
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    for t in &trajs {
        *seen.entry(t.trajectory.task_id.clone()).or_default() += 1;
    }
    assert!(seen.values().any(|&n| n > 1), "{seen:?}");
    // `reference = phase`: phase 2's KL reference is the weights phase 1 ended with.
    let phase1 =
        std::fs::read(out.join("checkpoints/stage-online-phase-1-iter-2/model.safetensors"));
    let reference =
        std::fs::read(out.join("checkpoints/stage-online-phase-2-iter-1/reference.safetensors"));
    assert_eq!(phase1.unwrap(), reference.unwrap(), "the reference is not phase 1's last weights");
    let last = out.join("checkpoints/stage-online-phase-2-iter-1");
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(last.join("trainer_state.json")).unwrap())
            .unwrap();
    assert_eq!(state["critic"]["updates"], 3, "{state}");
    let trainer = wrl_trainer::Trainer::load(&last).unwrap();
    assert_eq!(trainer.critic().map(|c| c.steps()), Some(3));
    assert!(trainer.has_reference(), "the KL on the reward holds its reference");
    let again = run("again");
    assert_eq!(episodes(trajs), episodes(records(&again).2), "two runs of one recipe differ");
}

/// `tests/recipes/from_failures.wrl`: PPO whose failures seed new questions. The first batch
/// draws none (the pool is empty); later ones draw half their questions from it, each one of
/// the sandbox's templates with another town, generated from a question failed before, and
/// scored by the critic within its band; the pool is saved in the cursor, two runs write the
/// same episodes, and a resume from the commit before the last draws the same questions.
#[test]
fn tasks_generated_from_failures_are_scored_drawn_and_saved() {
    let recipe = Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes/from_failures.wrl");
    let dir = tempfile::tempdir().unwrap();
    // What is tested is the generated tasks (a weaker policy fails more questions to generate
    // them from), twice: a short warm-up.
    let run = |name: &str| run_with(&recipe, &dir.path().join(name), &SHORT_WARMUP);
    let out = run("run");
    let (summary, metrics, trajs) = records(&out);
    assert_eq!(summary.status, "finished");
    let gens: Vec<_> = metrics
        .iter()
        .filter_map(|m| match m {
            MetricLine::Rl(r) => r.generated,
            _ => None,
        })
        .collect();
    assert_eq!(gens.len(), 3, "{metrics:?}");
    assert_eq!(gens[0].drawn, 0, "nothing to draw in the first iteration");
    assert!(gens[1..].iter().all(|g| g.drawn == 2), "{gens:?}");
    assert!(gens.iter().all(|g| g.kept <= g.made && g.made > 0 && g.pool <= 8), "{gens:?}");
    let goal_of: std::collections::BTreeMap<&str, &str> =
        trajs.iter().map(|t| (t.trajectory.task_id.as_str(), t.trajectory.goal.as_str())).collect();
    let generated: Vec<&TrajectoryLine> =
        trajs.iter().filter(|t| t.trajectory.task_id.contains("~g")).collect();
    assert_eq!(generated.len(), 4, "two generated questions in each of iterations 2 and 3");
    for t in &generated {
        // `{parent}~g{iter}-{k}`: its parent was asked in an earlier iteration and failed.
        let (parent, tail) = t.trajectory.task_id.rsplit_once("~g").unwrap();
        let made_in: u64 = tail.split('-').next().unwrap().parse().unwrap();
        assert!(made_in < t.iter, "{} in iteration {}", t.trajectory.task_id, t.iter);
        let parent_goal = goal_of[parent];
        assert_ne!(parent_goal, t.trajectory.goal);
        let asks = |g: &str| g.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
        assert_eq!(asks(parent_goal), asks(&t.trajectory.goal), "the same template");
        assert!(
            trajs.iter().any(|p| p.trajectory.task_id == parent && !p.trajectory.outcome.success)
        );
    }
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("state.json")).unwrap()).unwrap();
    let pool = state["cursor"]["generated"]["online"].as_array().unwrap();
    assert_eq!(pool.len(), gens[2].pool, "{state}");
    assert!(pool.iter().any(|t| t["id"].as_str().unwrap().contains("~g3-")), "{pool:?}");
    let again = run("again");
    let trajs = episodes(trajs);
    assert_eq!(trajs, episodes(records(&again).2), "two runs of one recipe differ");
    // A damaged last checkpoint sends a resume back to iteration 2's commit: its saved pool
    // gives iteration 3 the same generated questions.
    let last = again.join("checkpoints/stage-online-phase-1-iter-3/model.safetensors");
    let mut bytes = std::fs::read(&last).unwrap();
    let at = bytes.len() - 10;
    bytes[at] ^= 0xff;
    std::fs::write(&last, bytes).unwrap();
    let (code, _, stderr) =
        wrl_cli::run_captured(["run".as_ref(), "--resume".as_ref(), again.as_os_str()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("previous checkpoint `stage-online-phase-1-iter-2`"), "{stderr}");
    assert_eq!(trajs, episodes(records(&again).2), "the resumed iteration drew other tasks");
}

/// `tests/recipes/gigpo.wrl`: GRPO over turns with GiGPO's step-level advantages on the search
/// sandbox. Both iterations update the policy on every turn of their episodes (each sample
/// carries its state from the rollout, or the trainer refuses the update), with a real
/// gradient.
#[test]
fn gigpo_runs_end_to_end_on_the_search_sandbox() {
    let recipe = Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes/gigpo.wrl");
    let dir = tempfile::tempdir().unwrap();
    let out = run_into(&recipe, &dir.path().join("run"));
    let (summary, metrics, trajs) = records(&out);
    assert_eq!(summary.status, "finished");
    let rl: Vec<_> = metrics
        .iter()
        .filter_map(|m| match m {
            MetricLine::Rl(r) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(rl.len(), 2, "{rl:?}");
    let turns: usize = trajs.iter().map(|t| t.trajectory.steps.len()).sum();
    assert_eq!(rl.iter().map(|r| r.samples).sum::<usize>(), turns, "{rl:?}");
    assert!(rl.iter().all(|r| r.loss.is_finite() && r.grad_norm.is_finite()), "{rl:?}");
    assert!(rl.iter().any(|r| r.grad_norm > 0.0), "{rl:?}");
    // The step level is logged every iteration, and credits some turns: episodes of a group
    // meet at the same search results with different returns.
    assert!(rl.iter().all(|r| r.step_advantage.is_some_and(f64::is_finite)), "{rl:?}");
    assert!(rl.iter().any(|r| r.step_advantage.is_some_and(|a| a > 0.0)), "{rl:?}");
}

/// `tests/recipes/arpo.wrl --profile offline`: GRPO with ARPO's branching rollouts on the
/// embedded tiny model and the sandbox's search API. Every question's tree holds its 5
/// samples, numbered 0..5 once each; every branch's steps before its branch point are its
/// parent's; the iterations log their branches, the report shows them, and two runs write the
/// same trajectories.
#[test]
fn arpo_branches_rollouts_offline_within_each_questions_budget() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str| offline_run("arpo.wrl", dir.path().join(name));
    let out = run("run");
    let (summary, metrics, trajs) = records(&out);
    assert_eq!(summary.status, "finished");
    let rl: Vec<_> = metrics
        .iter()
        .filter_map(|m| match m {
            MetricLine::Rl(r) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(rl.len(), 2, "{rl:?}");
    let online: Vec<&TrajectoryLine> = trajs.iter().filter(|t| t.node.contains("online")).collect();
    assert_eq!(online.len(), 2 * 2 * 5, "2 iterations × 2 questions × a budget of 5");
    for r in &rl {
        let here: Vec<&&TrajectoryLine> = online.iter().filter(|t| t.iter == r.iter).collect();
        let branches = here.iter().filter(|t| t.branch.is_some_and(|b| b.parent.is_some()));
        assert_eq!(r.branches, Some(branches.count()), "{r:?}");
        for g in 0..2 {
            let tree: Vec<_> = here.iter().filter(|t| t.group == g).collect();
            let mut samples: Vec<usize> = tree.iter().map(|t| t.branch.unwrap().sample).collect();
            samples.sort_unstable();
            assert_eq!(samples, [0, 1, 2, 3, 4]);
            for t in &tree {
                let b = t.branch.unwrap();
                let Some(p) = b.parent else { continue };
                let parent = tree.iter().find(|x| x.branch.unwrap().sample == p).unwrap();
                let (mine, theirs) = (&t.trajectory.steps, &parent.trajectory.steps);
                assert!(theirs.len() >= b.at, "branch {b:?} past its parent's steps");
                assert_eq!(mine.get(..b.at), theirs.get(..b.at), "branch {b:?} left its parent");
            }
        }
    }
    assert!(rl.iter().any(|r| r.branches.is_some_and(|n| n > 0)), "{rl:?}");
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(report.contains("branches per iteration"));
    let again = run("again");
    assert_eq!(episodes(trajs), episodes(records(&again).2), "two runs branched differently");
}

/// `shuffle = true` (verl's `data.shuffle`): `tests/recipes/gigpo.wrl` over one whole pass
/// through its 8 questions (4 iterations of 2) draws every question once, in an order other
/// than the set's; the same seed draws the same order again.
#[test]
fn shuffled_tasks_are_drawn_once_a_pass_in_a_seeded_order() {
    let recipe = Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes/gigpo.wrl");
    let order = |name: &str, shuffle: bool| -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join(name);
        // Only the draw order matters here: a short warm-up.
        let shuffle = format!("online.shuffle={shuffle}");
        let phases = "online.phases=[{ iters = 4, horizon = 1 steps, lr = 1e-4 }]";
        let [a, b] = SHORT_WARMUP;
        run_with(&recipe, &out, &[&shuffle, phases, a, b]);
        let (_, _, trajs) = records(&out);
        let mut firsts: Vec<(u64, usize, String)> = trajs
            .into_iter()
            .filter(|t| t.node.starts_with("stage:"))
            .map(|t| (t.iter, t.group, t.trajectory.task_id))
            .collect();
        firsts.sort();
        firsts.dedup_by(|a, b| (a.0, a.1) == (b.0, b.1));
        firsts.into_iter().map(|(_, _, id)| id).collect()
    };
    let drawn = order("a", true);
    assert_eq!(drawn.len(), 8, "{drawn:?}");
    let mut sorted = drawn.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), 8, "every question once: {drawn:?}");
    let in_order = order("b", false);
    assert_eq!(in_order.len(), 8, "{in_order:?}");
    assert_ne!(drawn, in_order, "not the set's order");
    assert_eq!(order("c", true), drawn, "seeded");
}
