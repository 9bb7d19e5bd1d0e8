//! A module graph with a vision-language policy in real Chromium: recipes/opagent.wrl's
//! `smoke_vl` grounder (inputs `[screenshot, instruction]`, OpAgent's coordinate tools, the env's
//! `screenshot(last: 1)`) on the tiny random Qwen2.5-VL is shown each step's screenshot as
//! `<|vision_start|><|image_pad|>…<|vision_end|>` at the head of its one message, the pads as
//! many as the processor gives the viewport, and its recorded turns carry the image to the
//! update; a module of the same policy that does not list `screenshot` is shown none.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use wrl_exec::agent::AgentCfg;
use wrl_exec::agent::graph::{Brain, EdgeSpec, GraphPolicy, GraphSpec, ModuleSpec};
use wrl_exec::agent::prompt::Screens;
use wrl_exec::env::Agent;
use wrl_plan::params::{ModuleInput, Params, TypedPlan};
use wrl_trainer::SampleParams;
use wrl_trainer::hf::tiny::{TinySpec, TokenizerSource};
use wrl_trainer::hf::tiny_vl::{TinyVision, write_vl};

use super::hermes_chat::{plan, shop_episode, vl_trainer};

#[test]
fn a_graph_module_that_lists_screenshot_sees_each_steps_screenshot() {
    let typed_plan = plan("opagent.wrl", "smoke_vl");
    let typed = TypedPlan::decode(&typed_plan).unwrap();
    let framework = typed
        .nodes
        .iter()
        .find_map(|(_, p)| match p {
            Params::Agent(a @ wrl_plan::params::Agent::Graph(_)) => {
                Some(AgentCfg::in_plan(a, &typed))
            }
            _ => None,
        })
        .unwrap();
    let screens = framework.window.screens;
    assert_eq!(screens, Some(Screens { last: 1, placeholder: false }));
    assert!(framework.shown_screens().is_some(), "the grounder lists `screenshot`");
    let observe = typed
        .nodes
        .iter()
        .find_map(|(_, p)| match p {
            Params::Env(wrl_plan::params::Env::Browser(b)) => Some(b.observe.clone()),
            _ => None,
        })
        .unwrap();
    let grounder = framework.graph.as_ref().unwrap().modules["grounder"].clone();
    assert_eq!(grounder.inputs, [ModuleInput::Screenshot, ModuleInput::Instruction]);
    assert!(grounder.acts && grounder.trainable);
    // A module of the same policy that lists only the URL: it writes the instruction.
    let looker = ModuleSpec {
        name: "looker".into(),
        acts: false,
        inputs: vec![ModuleInput::Url],
        hermes: None,
        role: "looker".into(),
        max_response: 8,
        ..grounder.clone()
    };
    let edge = |from: &str, to: &str| EdgeSpec {
        from: from.into(),
        to: to.into(),
        when: Vec::new(),
        limit: None,
    };
    let spec = GraphSpec {
        modules: BTreeMap::from([
            ("grounder".to_string(), grounder),
            ("looker".to_string(), looker),
        ]),
        edges: vec![
            edge("start", "looker"),
            edge("looker", "grounder"),
            edge("grounder", "looker"),
        ],
        max_parse_failures: 2,
    };

    let dir = tempfile::tempdir().unwrap();
    let corpus = vec![
        "url: /shop [1] link \"Blue mug\" task: buy the blue mug".to_string(),
        "<tool_call>\n{\"name\": \"click\", \"arguments\": {\"coords\": [391, 300]}}\n</tool_call>"
            .into(),
    ];
    let tok = TokenizerSource::Generated { corpus, merges: 60 };
    write_vl(dir.path(), &TinySpec::narrow(), &TinyVision::qwen25(), &tok).unwrap();
    // OpAgent's 15 schemas take some 4,300 tokens of this 60-merge tokenizer.
    let (trainer, pads) = vl_trainer(dir.path(), 8192);
    let brains = BTreeMap::from([
        ("grounder".to_string(), Brain::Local(trainer.clone())),
        ("looker".to_string(), Brain::Local(trainer.clone())),
    ]);
    let params = SampleParams { max_tokens: 16, ..SampleParams::default() };
    let mut graph = GraphPolicy::new(Arc::new(spec), Arc::new(brains), params, "framework")
        .with_stream(Some(3))
        .with_screens(screens);
    assert!(Agent::sees_screens(&graph), "a VL module that lists `screenshot` sees them");

    let traj = shop_episode(&mut graph, &observe, 3);
    let tok = trainer.lock().unwrap().tokenizer().clone();
    let runs = |ids: &[u32]| pads.runs(ids);
    let grounded: Vec<_> = graph.turns.iter().filter(|t| t.role == "grounder").collect();
    assert!(traj.steps.len() >= 2, "{traj:?}");
    assert_eq!(grounded.len(), traj.steps.len(), "one grounder turn a step: {traj:?}");
    for (k, turn) in grounded.iter().enumerate() {
        assert_eq!(turn.images.len(), 1, "turn {k} carries its screenshot to the update");
        assert_eq!(runs(&turn.prompt_tokens), [pads.count], "turn {k}: the last screenshot only");
        let text = tok.decode(&turn.prompt_tokens).unwrap();
        assert!(text.contains("<tools>") && text.contains("coords"), "OpAgent's tools: {text}");
        assert!(text.contains("role: grounder"), "{text}");
    }
    let looked: Vec<_> = graph.turns.iter().filter(|t| t.role == "looker").collect();
    assert!(!looked.is_empty());
    for turn in looked {
        assert!(turn.images.is_empty() && runs(&turn.prompt_tokens).is_empty(), "no screenshot");
    }
}

/// The SFT examples of such a module (`executor::sft` on a graph whose acting module lists
/// `screenshot`): each step one message with its screenshot's placeholder at its head, only the
/// last screenshot kept (`screenshot(last: 1, older: drop)`), OpAgent's call trained.
#[test]
fn a_seeing_modules_sft_examples_hold_each_steps_screenshot() {
    use wrl_exec::agent::graph_vision::module_sft_examples;
    use wrl_exec::agent::prompt::Window;
    use wrl_exec::agent::vision::Shot;
    use wrl_trainer::vision::{Grid, IMAGE_PLACEHOLDER, Pixels};

    let typed_plan = plan("opagent.wrl", "smoke_vl");
    let typed = TypedPlan::decode(&typed_plan).unwrap();
    let hermes = typed
        .nodes
        .iter()
        .find_map(|(_, p)| match p {
            Params::Agent(a @ wrl_plan::params::Agent::Graph(_)) => {
                AgentCfg::in_plan(a, &typed).hermes
            }
            _ => None,
        })
        .unwrap();
    // The grounder's recorded calls (a policy's turn stays as it is).
    let click =
        "<tool_call>\n{\"name\": \"click\", \"arguments\": {\"coords\": [500, 120]}}\n</tool_call>";
    let lines = hermes.read(click).unwrap();
    let steps = vec![
        super::hermes_chat::step("task: buy the blue mug\nurl: /shop", &lines),
        super::hermes_chat::step("task: buy the blue mug\nurl: /shop/mug", &lines),
    ];
    let demo = super::hermes_chat::demo(steps);
    let shot = |v: f32| {
        let pixels = Pixels { values: vec![v], rows: 1, cols: 1, grid: Grid { t: 1, h: 2, w: 2 } };
        Some(Shot { pixels, tokens: 7 })
    };
    let window = Window { room: 2000, ..Window::default() };
    let screens = Screens { last: 1, placeholder: false };
    let ex =
        module_sft_examples(&demo, (window, screens), &hermes, vec![shot(1.0), shot(2.0)]).unwrap();
    assert_eq!(ex.len(), 2);
    for (k, (t, images)) in ex.iter().enumerate() {
        let values: Vec<f32> = images.iter().map(|p| p.values[0]).collect();
        assert_eq!(values, [k as f32 + 1.0], "step {k}: its own screenshot, the older dropped");
        assert_eq!(t.segments.len(), 2);
        let user = &t.segments[0].text;
        assert!(user.starts_with(&format!("{IMAGE_PLACEHOLDER}\n")), "{user}");
        assert_eq!(user.matches(IMAGE_PLACEHOLDER).count(), 1, "{user}");
        assert!(user.ends_with("task: buy the blue mug"), "{user}");
        assert_eq!(t.segments[1].tool_calls[0].name, "click");
        assert_eq!(t.tools, hermes.schemas);
    }
    assert!(ex[1].0.segments[0].text.contains("done: "), "the actions so far");
}

/// A module whose brain is an `api(…)` model, listing `screenshot` in a browser that keeps the
/// last one (older ones leaving a placeholder line): each call's user message carries the
/// latest screenshot as an `image_url` part (a PNG data URL) before its text, and the older
/// ones as `[screenshot omitted]` lines, in real Chromium against a loopback endpoint.
#[test]
fn an_api_module_that_lists_screenshot_is_sent_the_screenshots_as_image_parts() {
    use axum::routing::post;
    use base64::Engine;
    use wrl_exec::reward::client::{JudgeClient, JudgeConfig};
    use wrl_plan::params::{FeedbackDetail, Observation, OlderPages};

    let bodies: Arc<Mutex<Vec<serde_json::Value>>> = Arc::default();
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let seen = bodies.clone();
    let base = rt.block_on(async move {
        let app = axum::Router::new().route(
            "/v1/chat/completions",
            post(move |axum::Json(body): axum::Json<serde_json::Value>| {
                let seen = seen.clone();
                async move {
                    let mut bodies = seen.lock().unwrap();
                    bodies.push(body);
                    // Two scrolls, then an answer: three calls, three screenshots taken.
                    let reply = if bodies.len() < 3 { "scroll down" } else { "answer 0" };
                    axum::Json(serde_json::json!({
                        "choices": [{"message": {"role": "assistant", "content": reply}}]
                    }))
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/v1", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        base
    });
    let actor = ModuleSpec {
        name: "actor".into(),
        model: "model:frontier".into(),
        frozen: true,
        trainable: false,
        acts: true,
        emits: Vec::new(),
        inputs: vec![ModuleInput::Screenshot, ModuleInput::Url],
        max_response: 16,
        prompt: "Act on the page.".into(),
        role: "actor".into(),
        hermes: None,
    };
    let start =
        EdgeSpec { from: "start".into(), to: "actor".into(), when: Vec::new(), limit: None };
    let again =
        EdgeSpec { from: "actor".into(), to: "actor".into(), when: Vec::new(), limit: None };
    let spec = GraphSpec {
        modules: BTreeMap::from([("actor".to_string(), actor)]),
        edges: vec![start, again],
        max_parse_failures: 2,
    };
    let client =
        JudgeClient::new(JudgeConfig { base_url: base, ..JudgeConfig::default() }).unwrap();
    let brains = BTreeMap::from([("actor".to_string(), Brain::Api(client, 32 * 1024))]);
    let screens = Some(Screens { last: 1, placeholder: true });
    let mut graph =
        GraphPolicy::new(Arc::new(spec), Arc::new(brains), SampleParams::default(), "framework")
            .with_screens(screens);
    assert!(Agent::sees_screens(&graph), "an api module that lists `screenshot` is shown them");
    let observe = [
        Observation::Screenshot { last: 1, older: OlderPages::Placeholder },
        Observation::Url,
        Observation::Feedback { detail: FeedbackDetail::Plain },
    ];
    // The graph's HTTP calls wait inside the episode's multi-threaded runtime.
    let traj = shop_episode(&mut graph, &observe, 4);
    assert_eq!(traj.outcome.reason, wrl_sandbox::Ending::Completed, "{:?}", traj.outcome);
    let bodies = bodies.lock().unwrap();
    assert_eq!(bodies.len(), 3, "one call a step");
    for (k, body) in bodies.iter().enumerate() {
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages[0]["role"], "system");
        let parts = messages[1]["content"].as_array().unwrap();
        assert_eq!(parts.len(), 2, "the kept screenshot, then the text: {parts:?}");
        let url = parts[0]["image_url"]["url"].as_str().unwrap();
        let png = base64::engine::general_purpose::STANDARD
            .decode(url.strip_prefix("data:image/png;base64,").unwrap())
            .unwrap();
        let (w, h) = image::load_from_memory(&png).unwrap().into_rgb8().dimensions();
        assert_eq!((w, h), (640, 400), "the viewport's screenshot");
        let text = parts[1]["text"].as_str().unwrap();
        let omitted = text.matches("[screenshot omitted]").count();
        assert_eq!(omitted, k, "call {k}: each older screenshot leaves its line: {text}");
    }
}
