//! The `search_api` environment over real HTTP: the scripted expert answers the sandbox's QA
//! pairs through its `search` and `visit` endpoints; a wrong URL is the agent's mistake; a
//! failing or silent search service ends the episode as an environment error.

#![allow(clippy::unwrap_used)] // test helpers fail loudly, like the tests they serve

use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::get;
use wrl_browser::{AgentTurn, EpisodeCfg};
use wrl_exec::env::search::{SearchExpert, last_response};
use wrl_exec::env::{Agent, Env, SearchEnv};
use wrl_sandbox::{Sandbox, Split, Task, generate_qa};

mod format;
mod mcp;
mod simulated;

// The reference MCP server, for the browser env's MCP tests too (`browser_mcp`).
pub(crate) use mcp::{http_server, python, stdio, tool};

fn cfg() -> EpisodeCfg {
    EpisodeCfg { max_agent_errors: 2, ..EpisodeCfg::default() }
}

/// The embedded tiny candle policy with seed `seed`.
pub(crate) fn tiny_trainer(seed: u64) -> wrl_trainer::Trainer {
    let config = wrl_trainer::TrainerConfig {
        policy: wrl_trainer::PolicyConfig::Tiny(wrl_trainer::TinyConfig::default()),
        optim: Default::default(),
        seed,
        device: Default::default(),
    };
    wrl_trainer::Trainer::new(config).unwrap()
}

/// Turns a candle policy writes again as a branch replays its parent's: each text's tokens,
/// token for token (for tests that script what a real policy writes).
pub(crate) fn replayed<S: AsRef<str>>(
    tok: &wrl_trainer::Tokenizer,
    texts: &[S],
) -> Vec<wrl_exec::agent::sample::Turn> {
    texts
        .iter()
        .map(|text| {
            let tokens = tok.encode(text.as_ref()).unwrap();
            wrl_exec::agent::sample::Turn {
                logprobs: vec![-1.0; tokens.len()],
                completion_tokens: tokens,
                text: text.as_ref().to_string(),
                ..Default::default()
            }
        })
        .collect()
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
        "p"
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_expert_answers_through_the_sandbox_api_and_mistakes_are_the_agents() {
    let sb = Sandbox::start(0, 0).await.unwrap();
    let env =
        SearchEnv::new(&format!("{}/api", sb.base_url()), 1500, Duration::from_secs(5)).unwrap();
    let tasks = generate_qa(sb.content(), Split::Test, 6, 2);
    for task in &tasks {
        let t = env.run_task(task, &mut SearchExpert, &cfg()).await;
        assert!(t.outcome.success, "{}: {:?}", task.goal, t.outcome);
        let calls: Vec<&str> = t.steps.iter().map(|s| s.actions[0].as_str()).collect();
        assert!(calls[0].starts_with("search ") && calls[1].starts_with("visit /wiki/article/"));
        assert!(t.steps[1].observation.contains("\nresult: [1] "), "{:?}", t.steps[1]);
    }

    // A page that does not exist is read as an error, and the agent goes on; a wrong answer
    // completes the episode unsuccessfully; malformed turns end it as an agent error.
    let task = &tasks[0];
    let t = env
        .run_task(task, &mut Script(vec!["visit /wiki/article/nowhere", "answer 1"]), &cfg())
        .await;
    assert_eq!(t.steps[0].feedback, "error: no such page: /wiki/article/nowhere");
    assert_eq!((t.outcome.reason.word(), t.outcome.success), ("completed", false));
    let t = env.run_task(task, &mut Script(vec!["click 3"]), &cfg()).await;
    assert_eq!(t.outcome.reason.word(), "agent_error");
    assert_eq!(t.steps.len(), 2, "two agent errors in a row end the episode");
    let t = env.run_task(task, &mut Script(vec!["search Zzz"]), &cfg()).await;
    assert_eq!((t.outcome.reason.word(), t.steps.len()), ("max_steps", 4));
    assert_eq!(t.steps[0].feedback, "no results");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_or_silent_service_is_an_environment_error() {
    let app = Router::new()
        .route("/search", get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "down") }))
        .route(
            "/visit",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                "late"
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let env = SearchEnv::new(&base, 64, Duration::from_millis(300)).unwrap();
    let sb_content = wrl_sandbox::Content::new(0);
    let task = &generate_qa(&sb_content, Split::Train, 1, 0)[0];
    let t = env.run_task(task, &mut Script(vec!["search x"]), &cfg()).await;
    assert_eq!(t.outcome.reason.word(), "env_error");
    assert!(t.outcome.message.contains("HTTP 500"), "{}", t.outcome.message);
    let t = env.run_task(task, &mut Script(vec!["visit /a"]), &cfg()).await;
    assert_eq!(t.outcome.reason.word(), "env_error");
    assert!(t.outcome.message.contains("timed out"), "{}", t.outcome.message);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn episodes_ending_in_environment_errors_are_retried_then_counted() {
    use wrl_exec::agent::prompt::History;
    use wrl_exec::reward::judges::Judges;
    use wrl_exec::reward::{RewardExpr, Rewards};
    use wrl_exec::rollout::{RolloutCfg, Scoring, rollout};
    let sb = Sandbox::start(0, 0).await.unwrap();
    let env =
        SearchEnv::new(&format!("{}/api", sb.base_url()), 64, Duration::from_secs(5)).unwrap();
    let tasks = generate_qa(sb.content(), Split::Train, 2, 0);
    let cfg = RolloutCfg {
        group: 2,
        concurrency: 2,
        sample: wrl_trainer::SampleParams::default(),
        history: History::ActionOnly,
        window: wrl_exec::agent::prompt::Window::default(),
        hermes: None,
        tags: None,
        exclude: Vec::new(),
        process: None,
        graph: None,
        api: None,
        screens_for: 0,
        episode: cfg(),
        retries: 2,
        seed: Some(5),
        branching: None,
    };
    let (reward, rewards, judges) =
        (RewardExpr::Const { value: 0.0 }, Rewards::new(), Judges::default());
    let scoring = Scoring { reward: &reward, rewards: &rewards, judges: &judges };
    // Without a policy every attempt fails in the environment: run 3 times, then counted.
    let env: std::sync::Arc<dyn Env> = std::sync::Arc::new(env);
    let episodes = rollout(&env, &tasks, None, &cfg, scoring).await;
    assert_eq!(episodes.len(), 4);
    for e in &episodes {
        assert_eq!((e.end_reason().word(), e.retried), ("env_error", 2));
    }
}

/// A frozen `api(…)` module whose endpoint fails (a real HTTP server on loopback that answers
/// 500, or too late) ends the episode as the environment's failure, `env_error` or
/// `infra_timeout`, with why — never an empty reply acted on — and the episode leaves the loss
/// and is counted like any other exclusion.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_api_module_that_fails_ends_the_episode_as_an_environment_failure() {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use axum::routing::post;
    use wrl_exec::agent::graph::{Brain, EdgeSpec, GraphSpec, ModuleSpec};
    use wrl_exec::agent::prompt::{History, Window};
    use wrl_exec::reward::client::{JudgeClient, JudgeConfig};
    use wrl_exec::reward::judges::Judges;
    use wrl_exec::reward::{Exclusion, RewardExpr, RewardValue, Rewards};
    use wrl_exec::rollout::{RolloutCfg, Scoring, rollout};
    use wrl_plan::params::FailureClass;
    use wrl_sandbox::Ending;

    let app = Router::new()
        .route(
            "/broken/v1/chat/completions",
            post(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "down") }),
        )
        .route(
            "/slow/v1/chat/completions",
            post(|| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                "late"
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    // The episode never reaches the search service: its first turn fails.
    let env: Arc<dyn Env> =
        Arc::new(SearchEnv::new(&format!("{base}/search"), 64, Duration::from_secs(5)).unwrap());
    let tasks = generate_qa(&wrl_sandbox::Content::new(0), Split::Train, 1, 0);
    let actor = ModuleSpec {
        name: "actor".into(),
        model: "model:frontier".into(),
        frozen: true,
        trainable: false,
        acts: true,
        emits: Vec::new(),
        inputs: Vec::new(),
        max_response: 16,
        prompt: String::new(),
        role: "actor".into(),
        hermes: None,
    };
    let start =
        EdgeSpec { from: "start".into(), to: "actor".into(), when: Vec::new(), limit: None };
    let spec = Arc::new(GraphSpec {
        modules: BTreeMap::from([("actor".to_string(), actor)]),
        edges: vec![start],
        max_parse_failures: 2,
    });
    let (reward, rewards, judges) =
        (RewardExpr::Const { value: 1.0 }, Rewards::new(), Judges::default());
    let scoring = Scoring { reward: &reward, rewards: &rewards, judges: &judges };
    let cases = [
        ("broken", Ending::EnvError, FailureClass::EnvError, "its model answered HTTP 500"),
        ("slow", Ending::InfraTimeout, FailureClass::InfraTimeout, "did not answer in time"),
    ];
    for (path, ending, class, why) in cases {
        let client = JudgeClient::new(JudgeConfig {
            base_url: format!("{base}/{path}/v1"),
            timeout: Duration::from_millis(300),
            retries: 0,
            ..JudgeConfig::default()
        })
        .unwrap();
        let brains = BTreeMap::from([("actor".to_string(), Brain::Api(client, 4096))]);
        let cfg = RolloutCfg {
            group: 1,
            concurrency: 1,
            sample: wrl_trainer::SampleParams::default(),
            history: History::ActionOnly,
            window: Window::default(),
            hermes: None,
            tags: None,
            exclude: vec![FailureClass::EnvError, FailureClass::InfraTimeout],
            process: None,
            graph: Some((spec.clone(), Arc::new(brains))),
            api: None,
            screens_for: 0,
            episode: cfg(),
            retries: 0,
            seed: Some(1),
            branching: None,
        };
        let episodes = rollout(&env, &tasks, None, &cfg, scoring).await;
        let e = &episodes[0];
        let outcome = &e.trajectory.outcome;
        assert_eq!(e.end_reason(), ending, "{outcome:?}");
        assert!(outcome.message.contains(why), "{outcome:?}");
        assert!(outcome.message.starts_with("module `actor`: "), "{outcome:?}");
        let steps = &e.trajectory.steps;
        assert_eq!(steps.len(), 1, "{steps:?}");
        assert!(steps[0].actions.is_empty(), "no reply was acted on: {steps:?}");
        assert_eq!(steps[0].feedback, format!("error: {}", outcome.message));
        let excluded = Exclusion::Class(class);
        assert_eq!(excluded.counted_as(), ending.word(), "counted under its ending's word");
        assert_eq!(e.reward, RewardValue::Excluded(excluded));
    }
}

/// The search expert reads the last response from the observation the env shows it.
#[test]
fn the_last_response_is_read_back_from_the_observation() {
    let content = wrl_sandbox::Content::new(0);
    let task = &generate_qa(&content, Split::Train, 1, 0)[0];
    let obs = wrl_exec::env::search::observation(&task.goal, "[1] Barvel\nresult: x");
    assert_eq!(last_response(task, &obs), "[1] Barvel\nresult: x");
    assert_eq!(last_response(task, &wrl_exec::env::search::observation(&task.goal, "")), "");
}

/// A real tiny candle policy (seed 3, `action_only` history, its own sampling stream) that
/// writes at most `max_tokens` a turn at temperature 1 under `window`, and its tokenizer.
fn tiny_policy(
    max_tokens: usize,
    window: wrl_exec::agent::prompt::Window,
) -> (wrl_exec::agent::policy::TrainerPolicy, wrl_trainer::Tokenizer) {
    use std::sync::{Arc, Mutex};
    use wrl_exec::agent::policy::TrainerPolicy;
    use wrl_exec::agent::prompt::History;
    use wrl_trainer::SampleParams;
    let trainer = tiny_trainer(3);
    let tok = trainer.tokenizer().clone();
    let params = SampleParams { max_tokens, temperature: 1.0, ..SampleParams::default() };
    let policy =
        TrainerPolicy::new(Arc::new(Mutex::new(trainer)), params, History::ActionOnly, "policy")
            .with_window(window)
            .with_stream(Some(1));
    (policy, tok)
}

/// `trajectory_tokens`: every reply is cut to what is left of the episode's budget, and the
/// episode ends as the agent error `trajectory_tokens` when nothing is left — with a real tiny
/// candle policy sampling real tokens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reply_budget_ends_the_episode() {
    use wrl_exec::agent::prompt::Window;
    let sb = Sandbox::start(0, 0).await.unwrap();
    let env =
        SearchEnv::new(&format!("{}/api", sb.base_url()), 64, Duration::from_secs(5)).unwrap();
    let task = &generate_qa(sb.content(), Split::Train, 1, 0)[0];
    let window = Window { reply_budget: Some(6), ..Window::default() };
    let (mut policy, _) = tiny_policy(16, window);
    let t = env.run_task(task, &mut policy, &EpisodeCfg { max_agent_errors: 10, ..cfg() }).await;
    let written: Vec<usize> = policy.turns.iter().map(|t| t.completion_tokens.len()).collect();
    // The random policy's first reply is cut at the 6 tokens the budget allows (not the turn's
    // 16); the next turn finds nothing left and ends the episode, naming the budget.
    assert_eq!(written, vec![6], "{:?}", t.outcome);
    assert_eq!(t.outcome.reason.word(), "agent_error");
    assert!(t.outcome.message.starts_with("trajectory_tokens"), "{}", t.outcome.message);
}

/// `actions = K` (#47): the prompt a real tiny candle policy sampled its last turn on lists only
/// the last K actions of the episode, each numbered as it was, after a line counting the rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_action_window_keeps_the_last_actions_in_the_policys_prompt() {
    use wrl_exec::agent::prompt::Window;
    let sb = Sandbox::start(0, 0).await.unwrap();
    let env =
        SearchEnv::new(&format!("{}/api", sb.base_url()), 64, Duration::from_secs(5)).unwrap();
    let task = &generate_qa(sb.content(), Split::Train, 1, 0)[0];
    let window = Window { actions: Some(2), ..Window::default() };
    let (mut policy, tok) = tiny_policy(8, window);
    let cfg = EpisodeCfg { max_agent_errors: 10, ..cfg() };
    let t = env.run_task(task, &mut policy, &cfg).await;
    // The random policy's turns are mistakes the episode goes on after, to the task's 4 steps.
    assert_eq!(policy.turns.len(), 4, "{:?}", t.outcome);
    let action = |i: usize| t.steps[i].actions.join("; ");
    let last = tok.decode(&policy.turns[3].prompt_tokens).unwrap();
    let listed = format!("done: [1 earlier action omitted] 2. {}; 3. {}\n", action(1), action(2));
    assert!(last.contains(&listed), "{last:?} lacks {listed:?}");
    let second = tok.decode(&policy.turns[1].prompt_tokens).unwrap();
    assert!(second.contains(&format!("done: 1. {}\n", action(0))), "{second:?}");
}

/// A `retriever(corpus)` backend speaks the same protocol: BM25 search over a corpus file the
/// test writes, `visit` by the document's url; an agent answers from what it read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retriever_over_a_corpus_file_answers_like_the_sandbox_api() {
    use wrl_sandbox::retriever::{Corpus, Retriever};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("corpus.jsonl");
    let docs = [
        r#"{"url": "kb/basel", "title": "Basel", "text": "Basel lies on the Rhine. Basel was founded in 44 BC."}"#,
        r#"{"url": "kb/oslo", "title": "Oslo", "text": "Oslo was founded in 1040. It is a capital."}"#,
    ];
    std::fs::write(&path, docs.join("\n")).unwrap();
    let corpus = Corpus::from_file(path.to_str().unwrap()).unwrap();
    let r = Retriever::start(std::sync::Arc::new(corpus), 5, 4000).await.unwrap();
    let env = SearchEnv::new(&r.base_url(), 1500, Duration::from_secs(5)).unwrap();
    let mut task =
        generate_qa(wrl_sandbox::Sandbox::start(0, 0).await.unwrap().content(), Split::Test, 1, 0)
            .remove(0);
    task.goal = "In what year was Oslo founded?".into();
    task.checker = wrl_sandbox::Checker::Answer {
        expected: "1040".into(),
        mode: wrl_sandbox::AnswerMode::Number,
    };
    let mut agent =
        Script(vec!["search Oslo founded", "visit kb/oslo | when was Oslo founded", "answer 1040"]);
    let t = env.run_task(&task, &mut agent, &cfg()).await;
    assert!(t.outcome.success, "{:?}", t);
    assert!(
        t.steps[0].feedback.starts_with("[1] Oslo kb/oslo: Oslo was founded in 1040."),
        "{:?}",
        t.steps[0]
    );
    assert!(t.steps[1].feedback.starts_with("Oslo. Oslo was founded in 1040."), "{:?}", t.steps[1]);
    let t = env.run_task(&task, &mut Script(vec!["visit kb/nowhere", "answer 1"]), &cfg()).await;
    assert_eq!(t.steps[0].feedback, "error: no such document: kb/nowhere");
}

/// ARPO's branching rollouts with a real tiny candle policy on the sandbox's search API: with
/// `threshold = 1` every turn after a tool result would branch, and each group still holds
/// exactly `group` samples, numbered 0.. once each; every branch's turns before its branch
/// point are its parent's token for token, and the environment answered them alike (the replay
/// reached the parent's state); at least one branch was made. With no budget left for
/// branches (`initial = group`) the rollout is the one without branching, token for token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn branches_share_their_parents_prefix_and_never_exceed_the_budget() {
    use std::sync::{Arc, Mutex};
    use wrl_exec::agent::prompt::{History, Window};
    use wrl_exec::reward::judges::Judges;
    use wrl_exec::reward::{RewardExpr, Rewards};
    use wrl_exec::rollout::{RolloutCfg, Scoring, rollout};
    use wrl_plan::params::{Branching, Tokens};
    use wrl_trainer::SampleParams;
    let sb = Sandbox::start(0, 0).await.unwrap();
    let env =
        SearchEnv::new(&format!("{}/api", sb.base_url()), 64, Duration::from_secs(5)).unwrap();
    let env: Arc<dyn Env> = Arc::new(env);
    let tasks = generate_qa(sb.content(), Split::Train, 2, 0);
    let trainer = tiny_trainer(3);
    let trainer = Arc::new(Mutex::new(trainer));
    let tree = |initial: u32, threshold: f64| Branching {
        initial,
        beam: 2,
        threshold,
        weight: 0.2,
        tokens: Tokens(20),
    };
    let cfg = |branching: Option<Branching>| RolloutCfg {
        group: 5,
        concurrency: 2,
        sample: SampleParams {
            max_tokens: 12,
            entropy_tokens: branching.map_or(0, |b| b.tokens.0 as usize),
            ..SampleParams::default()
        },
        history: History::ActionOnly,
        window: Window::default(),
        hermes: None,
        tags: None,
        exclude: Vec::new(),
        process: None,
        graph: None,
        api: None,
        screens_for: 0,
        episode: EpisodeCfg { max_agent_errors: 4, ..cfg() },
        retries: 0,
        seed: Some(11),
        branching,
    };
    let (reward, rewards, judges) =
        (RewardExpr::Const { value: 0.0 }, Rewards::new(), Judges::default());
    let scoring = Scoring { reward: &reward, rewards: &rewards, judges: &judges };
    let run = |c: RolloutCfg| {
        let (env, tasks, trainer) = (env.clone(), tasks.clone(), trainer.clone());
        async move { rollout(&env, &tasks, Some(&trainer), &c, scoring).await }
    };
    let eps = run(cfg(Some(tree(1, 1.0)))).await;
    assert_eq!(eps.len(), 2 * 5, "every group holds its budget, no more");
    let mut branched = 0;
    for g in 0..2 {
        let group: Vec<_> = eps.iter().filter(|e| e.group == g).collect();
        let samples: Vec<usize> = group.iter().map(|e| e.branch.unwrap().sample).collect();
        assert_eq!(samples, (0..5).collect::<Vec<_>>());
        for e in &group {
            let b = e.branch.unwrap();
            let Some(p) = b.parent else { continue };
            branched += 1;
            let parent = group.iter().find(|x| x.branch.unwrap().sample == p).unwrap();
            assert!(b.at >= 1 && b.at <= parent.turns.len(), "{b:?}");
            for t in 0..b.at {
                let (mine, theirs) = (&e.turns[t], &parent.turns[t]);
                assert_eq!(mine.prompt_tokens, theirs.prompt_tokens, "{b:?} turn {t}");
                assert_eq!(mine.completion_tokens, theirs.completion_tokens, "{b:?} turn {t}");
                let (ms, ps) = (&e.trajectory.steps[t], &parent.trajectory.steps[t]);
                assert_eq!(
                    (&ms.observation, &ms.actions, &ms.feedback),
                    (&ps.observation, &ps.actions, &ps.feedback)
                );
            }
            assert!(e.turns.iter().all(|t| t.entropy.is_some()), "entropy measured");
        }
    }
    assert!(branched > 0, "every step may branch, and none did");
    // No budget left for branches: the same rollout as without branching.
    let plain = run(cfg(None)).await;
    let full = run(cfg(Some(tree(5, 1.0)))).await;
    let tokens = |eps: &[wrl_exec::rollout::Episode]| -> Vec<Vec<Vec<u32>>> {
        eps.iter().map(|e| e.turns.iter().map(|t| t.completion_tokens.clone()).collect()).collect()
    };
    assert_eq!(tokens(&plain), tokens(&full));
    assert!(full.iter().all(|e| e.branch.is_some_and(|b| b.parent.is_none())));
}

/// Tag-style calls (`calls = tags()`, Search-R1) on the sandbox's search API, a tiny candle
/// policy writing scripted turns (a branch's replay, token for token): its `<search>` is run,
/// the hits come back inline in `<information>` in the same sequence, its `<answer>` ends the
/// episode; the episode trains as one sample whose loss mask leaves out exactly the
/// information's tokens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tag_style_results_are_inline_and_masked_out_of_the_loss() {
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex};
    use wrl_exec::agent::policy::TrainerPolicy;
    use wrl_exec::agent::prompt::History;
    use wrl_exec::agent::tags::TagCalls;
    use wrl_exec::reward::RewardValue;
    use wrl_exec::rollout::{Episode, samples};
    use wrl_plan::params::{CallsPerTurn, Coordinates, Tags, Tool, ToolParam, ToolTy, Toolset};
    use wrl_trainer::SampleParams;
    let sb = Sandbox::start(0, 0).await.unwrap();
    let env =
        SearchEnv::new(&format!("{}/api", sb.base_url()), 200, Duration::from_secs(5)).unwrap();
    let task = generate_qa(sb.content(), Split::Test, 1, 3).remove(0);
    let trainer = tiny_trainer(3);
    let query = wrl_sandbox::search_api::expert_action(&task, &[], "").unwrap();
    let query = query.strip_prefix("search ").unwrap().to_string();
    let answer = match &task.checker {
        wrl_sandbox::Checker::Answer { expected, .. } => expected.clone(),
        other => panic!("{other:?}"),
    };
    let script =
        [format!("Look it up. <search>{query}</search>"), format!("<answer>{answer}</answer>")];
    let turns = replayed(trainer.tokenizer(), &script);
    let trainer = Arc::new(Mutex::new(trainer));
    let tools = Toolset {
        coordinates: Coordinates::ElementIds,
        calls_per_turn: CallsPerTurn::One,
        answer_tag: "answer".into(),
        mcp: Vec::new(),
        tools: vec![Tool {
            name: "search".into(),
            params: vec![ToolParam {
                name: "query".into(),
                ty: ToolTy::parse("string").unwrap(),
                default: None,
            }],
            terminal: false,
        }],
    };
    let tags = TagCalls::new(tools, &Tags { result: "information".into(), tools: BTreeMap::new() });
    let mut policy =
        TrainerPolicy::new(trainer, SampleParams::default(), History::ActionOnly, "policy")
            .with_tags(Some(Arc::new(tags)))
            .with_replay(turns);
    let traj = env.run_task(&task, &mut policy, &cfg()).await;
    assert!(traj.outcome.success, "{:?}", traj.outcome);
    assert_eq!(traj.steps[0].actions, [format!("search {query}")]);
    assert_eq!(traj.steps[0].said.as_deref(), Some(script[0].as_str()), "the reply as written");
    let parts = policy.sequence().unwrap();
    let texts: Vec<(&str, bool)> = parts.iter().map(|p| (p.text.as_str(), p.loss)).collect();
    assert_eq!(texts.len(), 3, "{texts:?}");
    assert_eq!(texts[0], (script[0].as_str(), true));
    assert!(
        texts[1].0.starts_with("\n<information>[1] ") && texts[1].0.ends_with("</information>\n")
    );
    assert_eq!((texts[1].1, texts[2]), (false, (script[1].as_str(), true)));
    assert_eq!(texts[1].0.trim(), format!("<information>{}</information>", traj.steps[0].feedback));
    // One sample: the prompt, then the policy's tokens in the loss and the information out.
    let turns = std::mem::take(&mut policy.turns);
    assert!(!turns[0].continues && turns[1].continues);
    let lead = turns[1].lead.clone();
    let ep = Episode {
        group: 0,
        trajectory: traj,
        turns,
        reward: RewardValue::Value(1.0),
        process: Vec::new(),
        screens: Vec::new(),
        retried: 0,
        branch: None,
        sequence: Some(parts),
        components: Default::default(),
    };
    let s = samples(std::slice::from_ref(&ep), 0, None, None).remove(0);
    let mask = s.completion_mask.clone().unwrap();
    let first = ep.turns[0].completion_tokens.len();
    assert_eq!(mask.len(), s.completion_tokens.len());
    assert!(mask[..first].iter().all(|&m| m));
    assert!(mask[first..first + lead.len()].iter().all(|&m| !m));
    assert!(mask[first + lead.len()..].iter().all(|&m| m));
    assert_eq!(s.completion_tokens[first..first + lead.len()], lead[..]);
    assert_eq!(s.prompt_tokens, ep.turns[0].prompt_tokens);
}
