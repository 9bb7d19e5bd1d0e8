//! `env_server` against a real loopback environment server speaking the create / reset / step /
//! observe / close protocol (a word-guessing game written here with axum): episodes that the
//! server ends with its reward, the failure classes of a failing, slow or off-protocol server, a
//! bearer token, the `observe` endpoint, and `wrlc run` training on it end to end; tasks the
//! server draws itself at reset (`env_tasks`), their goals taken from its answer.

#![allow(clippy::unwrap_used)] // test helpers fail loudly, like the tests they serve

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};
use wrl_browser::AgentTurn;
use wrl_exec::env::{Agent, ServerEnv};
use wrl_plan::params::Endpoints;
use wrl_sandbox::Task;

/// The game's state: live instances (their task and guesses) and what happened.
#[derive(Default)]
struct Game {
    next: u64,
    live: BTreeMap<u64, (String, u32)>,
    created: u64,
    closed: u64,
    token: Option<String>,
    /// Every action stepped, in order.
    actions: Vec<String>,
    /// The slot index of every reset the server drew a goal for, in order.
    drawn: Vec<u64>,
}

type Shared = Arc<Mutex<Game>>;

/// The secret word of a task.
fn secret(task: &str) -> &'static str {
    if task.ends_with('1') { "red" } else { "blue" }
}

fn authorised(g: &Game, headers: &HeaderMap) -> bool {
    let want = g.token.as_ref().map(|t| format!("Bearer {t}"));
    want.is_none_or(|w| headers.get("authorization").is_some_and(|h| h == w.as_str()))
}

async fn create(State(g): State<Shared>, headers: HeaderMap) -> (StatusCode, Json<Value>) {
    let mut g = g.lock().unwrap();
    if !authorised(&g, &headers) {
        return (StatusCode::UNAUTHORIZED, Json(json!({"error": "bad token"})));
    }
    g.next += 1;
    g.created += 1;
    let id = g.next;
    g.live.insert(id, (String::new(), 0));
    (StatusCode::OK, Json(json!({ "id": id })))
}

/// The goal the server draws for slot `n` (as AgentGym's WebShop picks one by index).
fn drawn_goal(n: u64) -> String {
    format!("find the secret word of slot {n}")
}

async fn reset(State(g): State<Shared>, Json(b): Json<Value>) -> Json<Value> {
    let mut g = g.lock().unwrap();
    let id = b["id"].as_u64().unwrap();
    // A slot index: the server draws the goal itself, and sends none back for odd slots (the
    // goal is then in the observation, as WebShop's instruction is).
    if let Some(n) = b["task"].as_u64() {
        assert!(b.get("goal").is_none(), "a drawn slot is reset without a goal: {b}");
        g.drawn.push(n);
        let task = format!("slot{}", n % 2);
        let letters = secret(&task).len();
        g.live.insert(id, (task, 0));
        let observation = format!("{}\nguess the word: {letters} letters", drawn_goal(n));
        return Json(match n % 2 {
            0 => json!({ "observation": observation, "goal": drawn_goal(n) }),
            _ => json!({ "observation": observation }),
        });
    }
    let task = b["task"].as_str().unwrap().to_string();
    let letters = secret(&task).len();
    g.live.insert(id, (task, 0));
    Json(json!({ "observation": format!("guess the word: {letters} letters") }))
}

async fn step(State(g): State<Shared>, Json(b): Json<Value>) -> (StatusCode, Json<Value>) {
    let id = b["id"].as_u64().unwrap();
    let action = b["action"].as_str().unwrap_or("").to_string();
    let task = g.lock().unwrap().live.get(&id).map(|(t, _)| t.clone()).unwrap_or_default();
    match task.as_str() {
        "boom" => return (StatusCode::INTERNAL_SERVER_ERROR, Json(json!({"error": "down"}))),
        "slow" => tokio::time::sleep(Duration::from_secs(3)).await,
        "broken" => return (StatusCode::OK, Json(json!({ "observation": "no done here" }))),
        _ => {}
    }
    let mut g = g.lock().unwrap();
    g.actions.push(action.clone());
    let Some((task, guesses)) = g.live.get_mut(&id) else {
        return (StatusCode::NOT_FOUND, Json(json!({"error": "no such instance"})));
    };
    *guesses += 1;
    let right = action.contains(secret(task));
    let done = right || *guesses >= 3;
    let observation = if right { "right".to_string() } else { format!("wrong ({guesses} of 3)") };
    (
        StatusCode::OK,
        Json(
            json!({ "observation": observation, "reward": f64::from(u8::from(right)), "done": done }),
        ),
    )
}

async fn observe(
    State(g): State<Shared>,
    Query(q): Query<BTreeMap<String, String>>,
) -> Json<Value> {
    let g = g.lock().unwrap();
    let id: u64 = q["id"].parse().unwrap();
    let guesses = g.live.get(&id).map_or(0, |(_, n)| *n);
    Json(json!({ "observation": format!("observed after {guesses} guesses") }))
}

async fn close(State(g): State<Shared>, Json(b): Json<Value>) -> Json<Value> {
    let mut g = g.lock().unwrap();
    g.live.remove(&b["id"].as_u64().unwrap());
    g.closed += 1;
    Json(json!({}))
}

/// The server on a free loopback port: its base URL and its state.
async fn serve(token: Option<&str>) -> (String, Shared) {
    let game: Shared =
        Arc::new(Mutex::new(Game { token: token.map(str::to_string), ..Game::default() }));
    let app = Router::new()
        .route("/create", post(create))
        .route("/reset", post(reset))
        .route("/step", post(step))
        .route("/observation", get(observe))
        .route("/close", post(close))
        .with_state(game.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), game)
}

/// An agent that writes the given turns, then repeats the last.
struct Script(Vec<&'static str>);

impl Agent for Script {
    fn act(&mut self, _: &Task, _: &str, _: &[String]) -> AgentTurn {
        let turn = self.0.first().copied().unwrap_or("");
        if self.0.len() > 1 {
            self.0.remove(0);
        }
        AgentTurn::Text(turn.to_string())
    }
    fn name(&self) -> &str {
        "script"
    }
}

fn task(id: &str) -> Task {
    Task {
        id: id.into(),
        split: wrl_sandbox::Split::Train,
        template: "guess".into(),
        site: String::new(),
        start_path: String::new(),
        goal: format!("the secret word of {id}"),
        params: Default::default(),
        checker: wrl_sandbox::Checker::Answer {
            expected: String::new(),
            mode: wrl_sandbox::AnswerMode::Text,
        },
        max_steps: 5,
        content_seed: 0,
    }
}

/// AgentGym's paths, without an observe endpoint.
fn paths() -> Endpoints {
    Endpoints {
        create: "/create".into(),
        reset: "/reset".into(),
        step: "/step".into(),
        observe: String::new(),
        close: "/close".into(),
    }
}

fn env(base: &str, endpoints: Endpoints, token: Option<&str>) -> ServerEnv {
    ServerEnv::new(base, endpoints, token.map(str::to_string), 200, Duration::from_secs(1)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_runs_the_episode_and_gives_its_reward() {
    let (base, game) = serve(None).await;
    let e = env(&base, paths(), None);
    let cfg = wrl_browser::EpisodeCfg::default();
    let t = e.run_task(&task("t1"), &mut Script(vec!["guess blue", "guess red"]), &cfg).await;
    assert_eq!((t.outcome.reason.word(), t.outcome.success), ("completed", true), "{t:?}");
    assert_eq!(t.outcome.reward, Some(1.0));
    assert_eq!(t.steps.len(), 2);
    assert!(t.steps[0].observation.contains("guess the word: 3 letters"), "{:?}", t.steps[0]);
    assert_eq!(
        (t.steps[0].actions[0].as_str(), t.steps[0].feedback.as_str()),
        ("guess blue", "wrong (1 of 3)")
    );
    // Three wrong guesses: the server ends it, reward 0; the step budget ends another first.
    let t = e.run_task(&task("t2"), &mut Script(vec!["guess red"]), &cfg).await;
    assert_eq!((t.outcome.reason.word(), t.outcome.reward), ("completed", Some(0.0)));
    assert!(!t.outcome.success);
    let mut short = task("t2");
    short.max_steps = 2;
    let t = e.run_task(&short, &mut Script(vec!["guess red"]), &cfg).await;
    assert_eq!(t.outcome.reason.word(), "max_steps");
    let g = game.lock().unwrap();
    assert_eq!((g.created, g.closed), (3, 3), "every instance is closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_slow_or_off_protocol_server_has_a_failure_class() {
    let (base, game) = serve(None).await;
    let e = env(&base, paths(), None);
    let cfg = wrl_browser::EpisodeCfg::default();
    let t = e.run_task(&task("boom"), &mut Script(vec!["guess"]), &cfg).await;
    assert_eq!(t.outcome.reason.word(), "env_error");
    assert!(t.outcome.message.contains("`step` answered HTTP 500"), "{}", t.outcome.message);
    let t = e.run_task(&task("slow"), &mut Script(vec!["guess"]), &cfg).await;
    assert_eq!(t.outcome.reason.word(), "infra_timeout", "{:?}", t.outcome);
    let t = e.run_task(&task("broken"), &mut Script(vec!["guess"]), &cfg).await;
    assert_eq!(t.outcome.reason.word(), "env_error");
    assert!(t.outcome.message.contains("no boolean `done`"), "{}", t.outcome.message);
    // Nothing listens: the episode could not start, an environment error.
    let none = env("http://127.0.0.1:9", paths(), None);
    let t = none.run_task(&task("t1"), &mut Script(vec!["guess"]), &cfg).await;
    assert_eq!((t.outcome.reason.word(), t.steps.len()), ("env_error", 0));
    assert!(t.outcome.message.contains("`create` failed"), "{}", t.outcome.message);
    assert_eq!(game.lock().unwrap().closed, 3, "failed episodes close their instance too");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_and_an_observe_endpoint() {
    let (base, _) = serve(Some("s3cret")).await;
    let cfg = wrl_browser::EpisodeCfg::default();
    let wrong = env(&base, paths(), Some("nope"));
    let t = wrong.run_task(&task("t1"), &mut Script(vec!["guess red"]), &cfg).await;
    assert_eq!(t.outcome.reason.word(), "env_error");
    assert!(t.outcome.message.contains("HTTP 401"), "{}", t.outcome.message);
    let observed = Endpoints { observe: "/observation".into(), ..paths() };
    let e = env(&base, observed, Some("s3cret"));
    let t = e.run_task(&task("t1"), &mut Script(vec!["guess blue", "guess red"]), &cfg).await;
    assert!(t.outcome.success, "{:?}", t.outcome);
    assert!(t.steps[0].observation.contains("observed after 0 guesses"), "{:?}", t.steps[0]);
    assert_eq!(t.steps[0].feedback, "observed after 1 guesses");
}

/// `wrlc env serve` of a recipe whose env is this server (what verl's agent loop talks to): an
/// episode opens an instance, each step goes to the server as written, the server's `done`
/// finishes it (a further step is refused), and ending it closes the instance.
#[test]
fn the_env_service_steps_an_environment_server_episode() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (base, game) = rt.block_on(serve(None));
    let dir = tempfile::tempdir().unwrap();
    let recipe = dir.path().join("guess.wrl");
    std::fs::write(
        &recipe,
        guess_recipe(&base, Path::new("tests/ui/run/data/env-server-tasks.jsonl")),
    )
    .unwrap();
    let task = json!({"id": "t1", "split": "train", "template": "guess", "site": "", "start_path": "",
        "goal": "the secret word of t1", "params": {}, "checker": {"kind": "answer", "expected": "", "mode": "text"},
        "max_steps": 3, "content_seed": 0});
    let script = json!([
        {"method": "POST", "path": "/v1/episodes", "body": {"node": "stage:online/phase:1", "task": task}},
        {"method": "POST", "path": "/v1/episodes/{episode}/step", "body": {"text": "guess blue"}},
        {"method": "POST", "path": "/v1/episodes/{episode}/step", "body": {"text": "guess red"}},
        {"method": "POST", "path": "/v1/episodes/{episode}/step", "body": {"text": "guess again"}},
        {"method": "POST", "path": "/v1/episodes/{episode}/end"},
    ]);
    let file = dir.path().join("script.json");
    std::fs::write(&file, script.to_string()).unwrap();
    let args: Vec<std::ffi::OsString> =
        vec!["env".into(), "serve".into(), recipe.into(), "--script".into(), file.into()];
    let (code, out, err) = wrl_cli::run_captured(args);
    assert_eq!(code, 1, "the step after `done` is refused: {out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[1..3], ["POST /v1/episodes/ep-000001/step -> 200"; 2][..], "{out}");
    assert!(lines[3].ends_with("409 E0615"), "{out}");
    assert!(lines[4].ends_with("-> 200"), "{out}");
    let g = game.lock().unwrap();
    assert_eq!(g.actions, ["guess blue", "guess red"]);
    assert_eq!((g.created, g.closed), (1, 1));
}

/// A recipe whose env is the server at `base`, its tasks QA rows from `tasks`.
fn guess_recipe(base: &str, tasks: &Path) -> String {
    format!(
        r#"use std::rewards::env_reward
model policy = std::models::tiny
dataset tasks = jsonl("{}") {{ kind = qa, count = {} }}
env game = env_server("{base}") {{ step_text = 64 tokens }}
agent guesser = react(policy, game) {{ max_turns = 3 turns, max_response = 16 tokens }}
reward solved = env_reward
stage online = ppo(policy, tasks, guesser) {{
  prompts = 2
  group = 2
  ppo_epochs = 1
  mini_batch = 8 turns
  reward = solved
  phases = [{{ iters = 1, horizon = 3 steps, lr = 1e-4 }}]
}}
"#,
        tasks.display(),
        std::fs::read_to_string(tasks).map_or(0, |t| t.lines().count())
    )
}

/// `wrlc run` of `recipe` (written to `dir/guess.wrl`) into `dir/run`, which it returns; the run
/// must succeed.
fn run_guess(dir: &std::path::Path, recipe: &str) -> std::path::PathBuf {
    let path = dir.join("guess.wrl");
    std::fs::write(&path, recipe).expect("the recipe");
    let out = dir.join("run");
    let args: Vec<std::ffi::OsString> =
        vec!["run".into(), path.into_os_string(), "--out".into(), out.clone().into()];
    let (code, _, stderr) = wrl_cli::run_captured(args);
    assert_eq!(code, 0, "{stderr}");
    out
}

/// The lines of run `out`'s `trajectories.jsonl`.
fn trajectories(out: &std::path::Path) -> Vec<Value> {
    let lines = std::fs::read_to_string(out.join("trajectories.jsonl")).expect("trajectories");
    lines.lines().map(|l| serde_json::from_str(l).expect("a trajectory line")).collect()
}

/// Four QA records `t1`…`t4` (the server's secret words are its own) in `dir/tasks.jsonl`.
fn guess_tasks(dir: &std::path::Path) -> std::path::PathBuf {
    let tasks = dir.join("tasks.jsonl");
    let rows: Vec<String> = (1..=4)
        .map(|i| {
            format!(r#"{{"id": "t{i}", "question": "the secret word of t{i}", "answer": ""}}"#)
        })
        .collect();
    std::fs::write(&tasks, rows.join("\n") + "\n").unwrap();
    tasks
}

/// `wrlc run` on a recipe whose env is this server: a PPO iteration of the tiny policy, every
/// episode run and closed by the server and scored by `env_reward`.
#[test]
fn wrlc_run_trains_on_an_environment_server() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (base, game) = rt.block_on(serve(None));
    let dir = tempfile::tempdir().unwrap();
    let tasks = guess_tasks(dir.path());
    let out = run_guess(dir.path(), &guess_recipe(&base, &tasks));
    let trajs = trajectories(&out);
    assert_eq!(trajs.len(), 4);
    for t in &trajs {
        let o = &t["trajectory"]["outcome"];
        assert!(o["reward"].is_number(), "{t}");
        assert!(["completed", "max_steps"].contains(&o["reason"].as_str().unwrap()), "{o}");
    }
    let g = game.lock().unwrap();
    assert_eq!((g.created, g.closed), (4, 4));
}

/// A validation in an env other than its stage's agent's (#47 item 6): the stage trains on one
/// server, and each validation pass runs its episodes on the other, which `env = other` names.
#[test]
fn a_validation_runs_in_the_env_it_names() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (base, game) = rt.block_on(serve(None));
    let (other, elsewhere) = rt.block_on(serve(None));
    let dir = tempfile::tempdir().unwrap();
    let tasks = guess_tasks(dir.path());
    // GRPO (PPO has no validation in the stdlib), the rest as the PPO run above.
    let recipe = guess_recipe(&base, &tasks)
        .replace("stage online = ppo(", "stage online = grpo(")
        .replace(
            "agent guesser",
            &format!("env other = env_server(\"{other}\") {{ step_text = 64 tokens }}\nagent guesser"),
        )
        .replace(
            "  reward = solved\n",
            "  reward = solved\n  validate = validation(tasks) { every = 1 iters, before_training = true, env = other }\n",
        );
    let out = run_guess(dir.path(), &recipe);
    // Training's 2 prompts × group 2 on its own server; two validation passes (before training
    // and after the one iteration) of the 4 tasks on the other.
    let g = game.lock().unwrap();
    assert_eq!((g.created, g.closed), (4, 4));
    let v = elsewhere.lock().unwrap();
    assert_eq!((v.created, v.closed), (8, 8));
    let metrics = std::fs::read_to_string(out.join("metrics.jsonl")).unwrap();
    let passes = metrics.lines().filter(|l| l.contains("\"validation:")).count();
    assert_eq!(passes, 2, "{metrics}");
}

/// Tasks the server draws itself (`env_tasks`): each slot is reset by its index, and the goal
/// the server answers (its `goal`, else its first observation) is the episode's, in the prompt
/// the agent sees and in the trajectory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_draws_its_own_goals_at_reset() {
    let (base, game) = serve(None).await;
    let e = env(&base, paths(), None);
    let cfg = wrl_browser::EpisodeCfg::default();
    let slots = wrl_exec::env::server::env_drawn(3);
    assert_eq!(slots.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["0", "1", "2"]);
    assert!(slots.iter().all(|t| t.goal.is_empty() && wrl_exec::rollout::reference(t).is_none()));
    let t = e.run_task(&slots[2], &mut Script(vec!["guess red", "guess blue"]), &cfg).await;
    assert_eq!(t.goal, drawn_goal(2), "the answer's `goal`");
    assert!(t.steps[0].observation.starts_with(&format!("task: {}\n", drawn_goal(2))));
    assert!(t.outcome.success, "{:?}", t.outcome);
    // No `goal` in the answer: the first observation is the goal.
    let t = e.run_task(&slots[1], &mut Script(vec!["guess red"]), &cfg).await;
    assert_eq!(t.goal, format!("{}\nguess the word: 3 letters", drawn_goal(1)));
    assert_eq!(t.task_id, "1");
    assert_eq!(game.lock().unwrap().drawn, [2, 1]);
}

/// `wrlc run` on tasks the server draws: the stage draws its slots as any task set, each
/// episode's reset sends the slot's index, and `trajectories.jsonl` records the goals the
/// server drew, scored by `env_reward`.
#[test]
fn wrlc_run_records_the_goals_the_server_drew() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (base, game) = rt.block_on(serve(None));
    let dir = tempfile::tempdir().unwrap();
    let recipe = guess_recipe(&base, Path::new("unused.jsonl")).replace(
        "dataset tasks = jsonl(\"unused.jsonl\") { kind = qa, count = 0 }",
        "dataset tasks = env_tasks(count: 6)",
    );
    assert!(recipe.contains("env_tasks(count: 6)"), "{recipe}");
    let out = run_guess(dir.path(), &recipe);
    let trajs = trajectories(&out);
    // 2 prompts × group 2: two slots, each reset twice.
    assert_eq!(trajs.len(), 4);
    let drawn = game.lock().unwrap().drawn.clone();
    assert_eq!(drawn.len(), 4);
    for t in &trajs {
        let tr = &t["trajectory"];
        let slot: u64 = tr["task_id"].as_str().unwrap().parse().unwrap();
        assert!(slot < 6 && drawn.contains(&slot), "{t}");
        let goal = tr["goal"].as_str().unwrap();
        assert!(goal.starts_with(&drawn_goal(slot)), "{goal:?} is slot {slot}'s drawn goal");
        assert!(tr["outcome"]["reward"].is_number(), "{t}");
    }
}
