//! An instruction-tuned policy's turns through its own chat template, token by token, on the
//! tiny random Qwen3 the trainer writes (its own BPE and Qwen3's template): the recipe's typed
//! tools (quickstart's `elements`, WebDancer's `webdancer`, decoded from the real plans) are
//! the template's `tools`; an expert step becomes the template's tool calls, trained exactly on
//! the assistant span the template produced; the rollout prompt is that example's prompt,
//! token for token; and a turn the model writes that is not a call is a format error.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::{Arc, Mutex};

use wrl_browser::AgentTurn;
use wrl_check::FsLoader;
use wrl_diagnostics::SourceMap;
use wrl_exec::agent::AgentCfg;
use wrl_exec::agent::hermes::{EnvKind, Hermes};
use wrl_exec::agent::policy::{TrainerPolicy, sft_examples};
use wrl_exec::agent::prompt::{History, Window};
use wrl_exec::env::{Agent, BrowserEnv, Env};
use wrl_plan::params::{Params, TypedPlan};
use wrl_trainer::chat::{self, ChatRole, Conversation, Message};
use wrl_trainer::hf::tiny::{TinySpec, TokenizerSource};
use wrl_trainer::{
    DeviceChoice, OptimConfig, PolicyConfig, PretrainedSource, Role, SampleParams, Segment,
    Trainer, TrainerConfig,
};

pub(crate) fn plan(name: &str, profile: &str) -> wrl_plan::Plan {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let text = std::fs::read_to_string(root.join("recipes").join(name)).unwrap();
    let mut sources = SourceMap::new();
    let id = sources.add(format!("recipes/{name}"), text.clone());
    let parsed = wrl_syntax::parse(id, &text);
    let checked = wrl_check::check(&mut sources, &[(id, &parsed.file)], &FsLoader);
    let recipe = checked.recipes.into_iter().next().unwrap();
    let recipe = if profile.is_empty() { recipe } else { recipe.with_profile(profile).unwrap() };
    wrl_plan::lower(&recipe).unwrap()
}

/// The tool set of the recipe's first ReAct agent, as the executor gives it to the policy.
pub(crate) fn hermes_of(plan: &wrl_plan::Plan) -> Hermes {
    let typed = TypedPlan::decode(plan).unwrap();
    let agent = typed
        .nodes
        .iter()
        .find_map(|(_, p)| match p {
            Params::Agent(a) => Some(AgentCfg::in_plan(a, &typed)),
            _ => None,
        })
        .unwrap();
    agent.hermes.as_deref().unwrap().clone()
}

fn tiny_qwen3(dir: &Path) -> Trainer {
    let corpus = vec![
        "[1] link \"Blue mug\" [2] button \"Buy\" task: buy the blue mug".to_string(),
        "<tool_call>\n{\"name\": \"click\", \"arguments\": {\"id\": 2}}\n</tool_call>".into(),
    ];
    qwen3_learnt_on(dir, corpus, 60)
}

/// A random Qwen3 (seed 5) with its chat template, written to `dir`, its byte-pair tokenizer
/// learnt on `corpus` with `merges` merges.
pub(crate) fn qwen3_learnt_on(dir: &Path, corpus: Vec<String>, merges: usize) -> Trainer {
    let tok = TokenizerSource::Generated { corpus, merges };
    wrl_trainer::hf::tiny::write(dir, &TinySpec::default(), &tok).unwrap();
    Trainer::new(TrainerConfig {
        policy: PolicyConfig::Qwen3(PretrainedSource::new(dir)),
        optim: OptimConfig::default(),
        seed: 5,
        device: DeviceChoice::Cpu,
    })
    .unwrap()
}

pub(crate) fn step(observation: &str, action: &str) -> wrl_sandbox::TrajStep {
    wrl_sandbox::TrajStep {
        observation: observation.into(),
        actions: vec![action.into()],
        feedback: String::new(),
        url: "/".into(),
        screenshot: None,
        boxes: None,
        said: None,
        malformed: false,
    }
}

pub(crate) fn demo(steps: Vec<wrl_sandbox::TrajStep>) -> wrl_sandbox::Trajectory {
    wrl_sandbox::Trajectory {
        task_id: "t".into(),
        template: "x".into(),
        goal: "buy the blue mug".into(),
        agent: "expert".into(),
        steps,
        outcome: wrl_sandbox::TrajOutcome {
            reason: wrl_sandbox::Ending::Completed,
            message: String::new(),
            answer: None,
            success: true,
            detail: String::new(),
            reward: None,
        },
        elapsed_ms: 1,
    }
}

#[test]
fn the_recipes_tools_reach_the_template_and_the_demonstrations_train_its_calls() {
    let quick = hermes_of(&plan("quickstart.wrl", ""));
    assert_eq!(quick.env, EnvKind::Browser);
    let names: Vec<&str> = quick.tools.tools.iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"click") && names.contains(&"answer"), "{names:?}");
    let dancer = hermes_of(&plan("webdancer.wrl", "smoke"));
    assert_eq!((dancer.env, dancer.tools.answer_tag.as_str()), (EnvKind::Search, "answer"));
    // bench/hf-parity renders these schemas with transformers' `apply_chat_template`; the tiny
    // Qwen3-VL's tokenizer learns the element and OpenWebRL ones, the tiny Qwen2.5-VL's OpAgent's
    // too (wrl-tests' `run_vl`).
    let fixture =
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/hf-parity/recipe-tools.json"));
    let openwebrl = hermes_of(&plan("openwebrl.wrl", "smoke_vl"));
    // OpAgent's coordinate tools, which the shipped tiny Qwen2.5-VL's tokenizer learns too.
    let opagent = hermes_of(&plan("opagent.wrl", "smoke_vl"));
    let want = serde_json::to_string_pretty(&serde_json::json!({
        "elements": quick.schemas,
        "opagent": opagent.schemas,
        "openwebrl": openwebrl.schemas,
        "webdancer": dancer.schemas,
    }))
    .unwrap()
        + "\n";
    if std::env::var_os("WRL_BLESS").is_some() {
        std::fs::write(fixture, &want).unwrap();
    }
    assert_eq!(
        std::fs::read_to_string(fixture).unwrap_or_default(),
        want,
        "bench/hf-parity/recipe-tools.json is stale: WRL_BLESS=1 cargo test -p wrl-exec --test all hermes_chat"
    );

    let dir = tempfile::tempdir().unwrap();
    let t = tiny_qwen3(dir.path());
    let tok = t.tokenizer();
    let d = demo(vec![
        step("task: buy the blue mug\n[1] link \"Blue mug\"", "click 1"),
        step("task: buy the blue mug\n[2] button \"Buy\"", "type! 2 one mug"),
    ]);
    let examples = sft_examples(&d, History::ActionOnly, Window::default(), Some(&quick)).unwrap();
    assert_eq!(examples.len(), 2);
    for ex in &examples {
        assert_eq!(ex.tools, quick.schemas);
        let rendered = wrl_trainer::render(tok, ex, 100_000).unwrap();
        // The whole example is the template's text of the conversation, token for token.
        let user = ex.segments[0].text.clone();
        let call = &ex.segments[1].tool_calls[0];
        let conv = Conversation {
            messages: vec![
                Message::new(ChatRole::User, user.clone()),
                Message {
                    tool_calls: vec![call.clone()],
                    train: true,
                    ..Message::new(ChatRole::Assistant, "")
                },
            ],
            tools: quick.schemas.clone(),
        };
        let text = tok.chat().unwrap().text(&conv).unwrap();
        assert_eq!(rendered.tokens, tok.encode(&text).unwrap());
        // The tools block shows every schema, as Python's `json.dumps` writes it.
        let first: serde_json::Value = serde_json::from_str(&quick.schemas[0]).unwrap();
        assert!(
            text.contains("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"click\"")
        );
        assert!(text.contains(&format!("\"name\": {}", first["function"]["name"])));
        // Trained: exactly the template's call and its end token.
        let trained: Vec<u32> = rendered
            .tokens
            .iter()
            .zip(&rendered.weights)
            .filter(|(_, w)| **w != 0.0)
            .map(|(t, _)| *t)
            .collect();
        let args = chat::template::value_of_json(&call.arguments).unwrap();
        let style = chat::pyjson::Style { indent: None, ensure_ascii: false, sort_keys: false };
        let python = chat::pyjson::dumps(&args, style).unwrap();
        let span = format!(
            "<tool_call>\n{{\"name\": \"{}\", \"arguments\": {python}}}\n</tool_call><|im_end|>",
            call.name
        );
        assert_eq!(trained, tok.encode(&span).unwrap(), "{text}");
        // The untrained head is the prompt the policy is given in the loop, token for token.
        let head: Vec<u32> = rendered
            .tokens
            .iter()
            .zip(&rendered.weights)
            .take_while(|(_, w)| **w == 0.0)
            .map(|(t, _)| *t)
            .collect();
        let prompt =
            wrl_trainer::render_prompt_with(tok, &[Segment::new(Role::User, user)], &quick.schemas)
                .unwrap();
        assert_eq!(head, prompt);
        let before = Conversation { messages: conv.messages[..1].to_vec(), tools: conv.tools };
        assert_eq!(prompt, chat::prompt(tok, &before).unwrap());
    }
    // The second step's call as the template renders it.
    assert_eq!(examples[1].segments[1].tool_calls[0].name, "type");
    // A step the tool set cannot call is refused, naming it.
    let bad = demo(vec![step("task: x\n[1] link", "hover 1")]);
    let e = sft_examples(&bad, History::ActionOnly, Window::default(), Some(&quick)).unwrap_err();
    assert!(e.contains("`hover 1`"), "{e}");
}

#[test]
fn a_policy_with_a_template_calls_tools_and_a_stray_turn_is_a_format_error() {
    let dir = tempfile::tempdir().unwrap();
    let quick = Arc::new(hermes_of(&plan("quickstart.wrl", "")));
    let trainer = Arc::new(Mutex::new(tiny_qwen3(dir.path())));
    let params = SampleParams { max_tokens: 12, ..SampleParams::default() };
    let mut p = TrainerPolicy::new(trainer.clone(), params, History::ActionOnly, "policy")
        .with_hermes(Some(quick.clone()))
        .with_stream(Some(9));
    let AgentTurn::Malformed { text: out, error: err } =
        p.act_text("task: buy the blue mug\n[1] link \"Blue mug\"", &[])
    else {
        panic!("a random reply is a format error")
    };
    let turn = p.turns[0].clone();
    // The prompt carried the tools; the random model's reply is no call of them.
    let tok = trainer.lock().unwrap().tokenizer().clone();
    let prompt = tok.decode(&turn.prompt_tokens).unwrap();
    assert!(prompt.contains("<tools>") && prompt.contains("\"name\": \"click\""), "{prompt}");
    assert_eq!(out, tok.decode(&turn.completion_tokens).unwrap().trim(), "handed over as written");
    assert_eq!(quick.read(&out).unwrap_err(), err);
}

/// A policy with a chat template gets the room its context leaves, not the tiny policy's 900
/// bytes: a long page reaches it whole, and a model of a shorter context has the page cut to fit
/// (the task kept), with room for its reply.
#[test]
fn a_chat_policy_prompts_with_the_room_its_context_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let quick = Arc::new(hermes_of(&plan("quickstart.wrl", "")));
    let page = "[1] link \"Blue mug\"\n".repeat(150);
    let observation = format!("task: buy the blue mug\n{page}");
    let params = SampleParams { max_tokens: 4, ..SampleParams::default() };
    let prompt_of = |trainer: Trainer| {
        let trainer = Arc::new(Mutex::new(trainer));
        let mut p = TrainerPolicy::new(trainer.clone(), params.clone(), History::ActionOnly, "p")
            .with_window(Window::default())
            .with_hermes(Some(quick.clone()));
        p.act_text(&observation, &[]);
        let tokens = p.turns.first().map(|t| t.prompt_tokens.clone()).unwrap_or_default();
        let text = trainer.lock().unwrap().tokenizer().decode(&tokens).unwrap();
        (tokens.len(), text)
    };
    let whole = tiny_qwen3(dir.path());
    assert!(observation.len() > wrl_exec::agent::prompt::MAX_PROMPT_BYTES);
    // The template's own tokens with the tool set (this tokeniser has few merges).
    let overhead = 1 << 20usize;
    let overhead = overhead - Window::default().fit(&whole, overhead, 0, &quick.schemas).room;
    let (_, text) = prompt_of(whole);
    assert!(text.contains(&format!("{page}task: buy the blue mug")), "{text}");
    let context = overhead + 4 + 1000;
    let short = Trainer::new(TrainerConfig {
        policy: PolicyConfig::Qwen3(PretrainedSource {
            context: Some(context),
            ..PretrainedSource::new(dir.path())
        }),
        optim: OptimConfig::default(),
        seed: 5,
        device: DeviceChoice::Cpu,
    })
    .unwrap();
    let (n, text) = prompt_of(short);
    assert!(n > overhead && n + 4 <= context, "{n} prompt tokens, {overhead} of the template");
    assert!(text.contains("task: buy the blue mug") && !text.contains(&page), "{text}");
}

/// A graph's acting module on a policy with a chat template is shown its tool set and its turn
/// is read as calls: a random reply is a format error, as in a ReAct loop. Its trained turn is
/// recorded with the prompt that showed the tools.
#[test]
fn a_graph_module_with_a_template_calls_its_tools() {
    use std::collections::BTreeMap;
    use wrl_exec::agent::graph::{Brain, EdgeSpec, GraphPolicy, GraphSpec, ModuleSpec};
    use wrl_plan::params::ModuleInput;
    let dir = tempfile::tempdir().unwrap();
    let quick = Arc::new(hermes_of(&plan("quickstart.wrl", "")));
    let trainer = Arc::new(Mutex::new(tiny_qwen3(dir.path())));
    let actor = ModuleSpec {
        name: "actor".into(),
        model: "model:policy".into(),
        frozen: false,
        trainable: true,
        acts: true,
        emits: Vec::new(),
        inputs: vec![ModuleInput::Url, ModuleInput::Feedback, ModuleInput::History],
        max_response: 12,
        prompt: String::new(),
        role: "actor".into(),
        hermes: Some(quick.clone()),
    };
    let edge = |from: &str, to: &str| EdgeSpec {
        from: from.into(),
        to: to.into(),
        when: Vec::new(),
        limit: None,
    };
    let spec = GraphSpec {
        modules: BTreeMap::from([("actor".to_string(), actor)]),
        edges: vec![edge("start", "actor"), edge("actor", "actor")],
        max_parse_failures: 2,
    };
    let brains = BTreeMap::from([("actor".to_string(), Brain::Local(trainer.clone()))]);
    let params = SampleParams { max_tokens: 12, ..SampleParams::default() };
    let mut g =
        GraphPolicy::new(Arc::new(spec), Arc::new(brains), params, "g").with_stream(Some(9));
    let task =
        wrl_sandbox::generate(&wrl_sandbox::Content::new(0), wrl_sandbox::Split::Train, 1, 0);
    let AgentTurn::Malformed { text: out, error: err } =
        g.act(&task[0], "task: buy the blue mug\n[1] link \"Blue mug\"", &[])
    else {
        panic!("a random reply is a format error")
    };
    let tok = trainer.lock().unwrap().tokenizer().clone();
    let prompt = tok.decode(&g.turns[0].prompt_tokens).unwrap();
    assert!(prompt.contains("<tools>") && prompt.contains("\"name\": \"click\""), "{prompt}");
    assert!(prompt.contains("role: actor\ntask: buy the blue mug"), "{prompt}");
    assert_eq!(quick.read(&out).unwrap_err(), err);
}

/// `history = full_text` with a chat template: the episode is a conversation. SFT's second
/// example is the first page, the first call (not trained), the second page as the tool's
/// response and the trained second call; a rollout's second prompt holds its first turn as the
/// assistant's message and the new page as a tool response.
#[test]
fn full_text_history_is_a_conversation_of_turns_and_tool_responses() {
    let quick = Arc::new(hermes_of(&plan("quickstart.wrl", "")));
    let full = History::Conversation { hide_thinking: false };
    let d = demo(vec![
        step("task: buy the blue mug\n[1] link \"Blue mug\"", "click 1"),
        step("task: buy the blue mug\n[2] button \"Buy\"", "click 2"),
    ]);
    let window = Window { room: 8000, ..Window::default() };
    let examples = sft_examples(&d, full, window, Some(&quick)).unwrap();
    let roles: Vec<Role> = examples[1].segments.iter().map(|s| s.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool, Role::Assistant]);
    let trained: Vec<bool> = examples[1].segments.iter().map(|s| s.trained()).collect();
    assert_eq!(trained, [false, false, false, true]);
    assert_eq!(examples[1].segments[2].text, "[2] button \"Buy\"");
    assert_eq!(examples[1].segments[1].tool_calls[0].name, "click");
    // The tiny policy has no template: its prompt lists the actions, as before.
    let tiny = sft_examples(&d, full, Window::default(), None).unwrap();
    assert_eq!(
        tiny[1].segments[0].text,
        "[2] button \"Buy\"\ndone: click 1\ntask: buy the blue mug"
    );

    let dir = tempfile::tempdir().unwrap();
    let trainer = Arc::new(Mutex::new(tiny_qwen3(dir.path())));
    let params = SampleParams { max_tokens: 8, ..SampleParams::default() };
    let mut p = TrainerPolicy::new(trainer.clone(), params, full, "policy")
        .with_hermes(Some(quick.clone()))
        .with_stream(Some(3));
    let first = p.act_text("task: buy the blue mug\n[1] link \"Blue mug\"", &[]).text().to_string();
    p.act_text("task: buy the blue mug\n[2] button \"Buy\"", std::slice::from_ref(&first));
    let tok = trainer.lock().unwrap().tokenizer().clone();
    let prompt = tok.decode(&p.turns[1].prompt_tokens).unwrap();
    let said = tok.decode(&p.turns[0].completion_tokens).unwrap();
    assert!(prompt.contains(said.trim()), "the first turn is in the second prompt: {prompt}");
    assert!(prompt.contains("<tool_response>\n[2] button \"Buy\"\n</tool_response>"), "{prompt}");
    assert!(!prompt.contains("done: "), "{prompt}");
}

/// Chat-format SFT data (`kind = chat`, TRL's conversational layout with tool calls) read as
/// the dataset reads it, rendered by the model's own template with the loss exactly on the
/// assistant turns — the call and the answer, each with its end token — and the system, user
/// and tool messages masked (TRL's `assistant_only_loss`); real steps on it lower its loss.
#[test]
fn chat_format_sft_trains_exactly_the_assistant_turns() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("chat.jsonl");
    let row = serde_json::json!({
        "conversations": [
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": "Capital of Osk?"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
              "function": {"name": "search", "arguments": "{\"query\": \"capital of Osk\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "Osk's capital is Varn."},
            {"role": "assistant", "content": "Varn."}
        ],
        "tools": [{"type": "function", "function": {"name": "search", "description": "Search.",
                   "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}}]
    });
    std::fs::write(&data, format!("{row}\n")).unwrap();
    let columns = [("messages".to_string(), "conversations".to_string())].into();
    let convs = wrl_exec::preflight::read_chats(&data.to_string_lossy(), &columns).unwrap();
    assert_eq!(convs.len(), 1);
    // A call whose arguments are not JSON is refused with the line and the message.
    let bad = data.with_file_name("bad.jsonl");
    std::fs::write(&bad, format!("{row}\n").replace("{\\\"query\\\"", "{query")).unwrap();
    let e = wrl_exec::preflight::read_chats(&bad.to_string_lossy(), &columns).unwrap_err();
    assert!(
        e.contains("line 1: not a valid chat conversation: `messages[2]`: `tool_calls[0]`"),
        "{e}"
    );

    let model = tempfile::tempdir().unwrap();
    let mut t = tiny_qwen3(model.path());
    let conv = wrl_trainer::data::conversation_of(&convs[0].segments, &convs[0].tools);
    let examples = chat::examples(t.tokenizer(), &conv, 100_000).unwrap();
    let tok = t.tokenizer();
    // Qwen3's template drops earlier turns' (empty) thinking blocks, so the call trains in its
    // own sequence, as the model saw it when it wrote it; the answer trains in the whole.
    assert_eq!(examples.len(), 2);
    let trained = |ex: &wrl_trainer::Example| -> Vec<u32> {
        ex.tokens.iter().zip(&ex.weights).filter(|(_, w)| **w != 0.0).map(|(t, _)| *t).collect()
    };
    assert_eq!(trained(&examples[0]), tok.encode("Varn.<|im_end|>").unwrap());
    let call = "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"capital of Osk\"}}\n</tool_call><|im_end|>";
    assert_eq!(trained(&examples[1]), tok.encode(call).unwrap());
    // Everything else is masked: the system prompt, the question, the tool result, the tools.
    let whole = tok.decode(&examples[0].tokens).unwrap();
    for masked in [
        "Answer briefly.",
        "Capital of Osk?",
        "Osk's capital is Varn.",
        "\"description\": \"Search.\"",
    ] {
        assert!(whole.contains(masked), "{masked} not in {whole}");
    }
    let weights: f32 = examples.iter().flat_map(|e| &e.weights).sum();
    assert_eq!(weights as usize, trained(&examples[0]).len() + trained(&examples[1]).len());

    // Real steps on the two sequences lower their loss.
    let before = t.sft_eval(&examples).unwrap();
    let data = wrl_trainer::Mixture {
        datasets: vec![wrl_trainer::Dataset { name: "chat".into(), examples: examples.clone() }],
        weights: wrl_trainer::MixtureWeights::Uniform,
    };
    let cfg = wrl_trainer::SftConfig { micro_batch: 2, grad_accum: 1, epochs: 1, seed: None };
    t.set_schedule(wrl_trainer::Schedule::default());
    for _ in 0..12 {
        t.sft_step(&data, &cfg).unwrap();
    }
    let after = t.sft_eval(&examples).unwrap();
    assert!(after < before, "loss {before} -> {after}");
}

/// A Qwen3-VL policy (the tiny random one `hf::tiny_vl` writes) acting in real Chromium on the
/// sandbox web with `tests/recipes/vl_browser.wrl`'s env (`screenshot(last: 2, older:
/// placeholder)`): every turn's prompt, rendered by the model's own template, holds one
/// `<|vision_start|><|image_pad|>…<|vision_end|>` run for each of the last two screenshots, each
/// run as many pads as the processor gives a screenshot of the viewport (grid / merge²), and
/// the line `[screenshot omitted]` for each older one; the turns' text all stays.
#[test]
fn a_vl_policy_sees_its_last_screenshots_as_image_pads_in_chromium() {
    use wrl_exec::agent::prompt::Screens;
    use wrl_trainer::hf::tiny_vl::{TinyVision, write_vl};

    let dir = tempfile::tempdir().unwrap();
    let corpus = vec![
        "[1] link \"Blue mug\" [2] button \"Buy\" task: buy the blue mug".to_string(),
        "<tool_call>\n{\"name\": \"click\", \"arguments\": {\"id\": 2}}\n</tool_call>".into(),
    ];
    let tok = TokenizerSource::Generated { corpus, merges: 60 };
    write_vl(dir.path(), &TinySpec::narrow(), &TinyVision::default(), &tok).unwrap();
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let text = std::fs::read_to_string(root.join("tests/recipes/vl_browser.wrl")).unwrap();
    let mut sources = SourceMap::new();
    let id = sources.add("tests/recipes/vl_browser.wrl".to_string(), text.clone());
    let parsed = wrl_syntax::parse(id, &text);
    let checked = wrl_check::check(&mut sources, &[(id, &parsed.file)], &FsLoader);
    let plan = wrl_plan::lower(&checked.recipes.into_iter().next().unwrap()).unwrap();
    let typed = TypedPlan::decode(&plan).unwrap();
    let (agent, observe) = typed
        .nodes
        .iter()
        .find_map(|(_, p)| match p {
            Params::Agent(a) => Some(AgentCfg::in_plan(a, &typed)),
            _ => None,
        })
        .zip(typed.nodes.iter().find_map(|(_, p)| match p {
            Params::Env(wrl_plan::params::Env::Browser(b)) => Some(b.observe.clone()),
            _ => None,
        }))
        .unwrap();
    assert_eq!(agent.window.screens, Some(Screens { last: 2, placeholder: true }));
    let (trainer, pads) = vl_trainer(dir.path(), 4096);
    let params = SampleParams { max_tokens: 16, ..SampleParams::default() };
    let mut policy = TrainerPolicy::new(trainer.clone(), params, agent.history, "policy")
        .with_window(agent.window)
        .with_hermes(agent.hermes.clone())
        .with_stream(Some(3));
    assert!(Agent::sees_screens(&policy), "a VL policy in a conversation sees screenshots");
    let traj = shop_episode(&mut policy, &observe, 4);
    assert_eq!(policy.turns.len(), 4, "{traj:?}");
    let tok = trainer.lock().unwrap().tokenizer().clone();
    for (k, turn) in policy.turns.iter().enumerate() {
        let runs = pads.runs(&turn.prompt_tokens);
        assert_eq!(runs, vec![pads.count; (k + 1).min(2)], "turn {k}: one run per kept screenshot");
        let text = tok.decode(&turn.prompt_tokens).unwrap();
        let omitted = text.matches("[screenshot omitted]").count();
        assert_eq!(omitted, (k + 1).saturating_sub(2), "turn {k}: older screenshots: {text}");
        assert!(text.contains("<tools>"), "the tools are in the template's prompt");
    }
    // Every turn's text stays: the last prompt holds the three replies before it.
    let last = tok.decode(&policy.turns[3].prompt_tokens).unwrap();
    for t in &policy.turns[..3] {
        assert!(last.contains(t.text.trim()), "{last}");
    }
}

/// One episode of a sandbox shop task in real Chromium at 640×400 (the viewport the tiny VL
/// tests read), at most `steps` steps, the env observing `observe`: what a VL test's agent did.
pub(crate) fn shop_episode(
    agent: &mut dyn Agent,
    observe: &[wrl_plan::params::Observation],
    steps: u32,
) -> wrl_sandbox::Trajectory {
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let sandbox = Arc::new(wrl_sandbox::Sandbox::start(0, 0).await.unwrap());
        let pool = wrl_browser::BrowserPool::launch(wrl_browser::PoolCfg {
            max_concurrent: 1,
            viewport: (640, 400),
            allow: wrl_browser::AllowList::only([format!("127.0.0.1:{}", sandbox.addr().port())]),
            ..wrl_browser::PoolCfg::default()
        })
        .await
        .unwrap();
        let mut task =
            wrl_sandbox::generate_on(sandbox.content(), wrl_sandbox::Split::Test, 1, 1, &["shop"])
                .remove(0);
        task.max_steps = steps;
        let cfg = wrl_browser::EpisodeCfg {
            max_steps: steps,
            max_agent_errors: 10,
            view: wrl_exec::env::settings::view(observe),
            ..wrl_browser::EpisodeCfg::default()
        };
        let env = BrowserEnv::new(pool, sandbox);
        env.run(&task, agent, 0, &cfg).await.unwrap().trajectory
    })
}

/// What a 640×400 screenshot becomes in a tiny VL policy's prompts: its pad count (the
/// processor's grid over merge²) and the image-pad and vision-start token ids.
pub(crate) struct Pads {
    pub(crate) count: usize,
    image: u32,
    start: u32,
}

impl Pads {
    /// The runs of image pads in `ids`, each after its `<|vision_start|>`: one length a run.
    pub(crate) fn runs(&self, ids: &[u32]) -> Vec<usize> {
        let mut runs = Vec::new();
        for (i, &t) in ids.iter().enumerate() {
            if t == self.image && (i == 0 || ids[i - 1] != self.image) {
                assert_eq!(ids[i - 1], self.start, "a pad run opens with <|vision_start|>");
                runs.push(ids[i..].iter().take_while(|&&x| x == self.image).count());
            }
        }
        runs
    }
}

/// The tiny random VL model written in `dir` as a CPU trainer (seed 5, `context` tokens, at
/// most 65,536 pixels a screenshot), and what a 640×400 screenshot becomes in its prompts.
pub(crate) fn vl_trainer(dir: &Path, context: usize) -> (Arc<Mutex<Trainer>>, Pads) {
    let src = PretrainedSource {
        context: Some(context),
        image_max_pixels: Some(65536),
        ..PretrainedSource::new(dir)
    };
    let trainer = Trainer::new(TrainerConfig {
        policy: PolicyConfig::Qwen3Vl(src),
        optim: OptimConfig::default(),
        seed: 5,
        device: DeviceChoice::Cpu,
    })
    .expect("the tiny VL model loads");
    let side = trainer.model().vision().expect("a VL model").clone();
    let grid = side.processor.grid(400, 640).expect("a 640×400 screenshot's grid");
    let count = grid.tokens(side.config.mrope.merge);
    assert!(count > 1);
    let (image, start) = (side.config.mrope.image_token_id, side.config.vision_start_token_id);
    (Arc::new(Mutex::new(trainer)), Pads { count, image, start })
}
