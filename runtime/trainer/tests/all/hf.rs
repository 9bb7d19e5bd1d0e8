//! Hugging Face policies end to end on the tiny random Qwen3 the crate writes: its directory is
//! accepted and built, the chat template renders what Qwen3's template renders, the loss covers
//! exactly the assistant spans (token by token), frozen parts get no gradient and no optimiser
//! state, a checkpoint is a model directory that resumes exactly, the hub cache is resolved.

use std::path::Path;

use wrl_trainer::chat::{self, CallText, ChatRole, Conversation, Message};
use wrl_trainer::hf::tiny::{TinySpec, TokenizerSource};
use wrl_trainer::hf::{self, RepoKind};
use wrl_trainer::models::Frozen;
use wrl_trainer::{
    DeviceChoice, OptimConfig, PolicyConfig, PretrainedSource, Trainer, TrainerConfig,
};

/// Writes the tiny Qwen3 (tied embeddings) into `dir`.
pub fn tiny_qwen3(dir: &Path, spec: TinySpec) {
    let corpus = vec![
        "Find Barvel. I will search the web for the town of Barvel.".to_string(),
        "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": [\"Barvel\"]}}\n</tool_call>".into(),
    ];
    hf::tiny::write(dir, &spec, &TokenizerSource::Generated { corpus, merges: 40 }).unwrap();
}

/// A CPU trainer of the Qwen3 `src`, AdamW at `lr`.
pub fn qwen3_trainer(src: PretrainedSource, lr: f64) -> Trainer {
    Trainer::new(TrainerConfig {
        policy: PolicyConfig::Qwen3(src),
        optim: OptimConfig { lr, ..OptimConfig::default() },
        seed: 3,
        device: DeviceChoice::Cpu,
    })
    .unwrap()
}

fn trainer(dir: &Path, frozen: Vec<Frozen>, thinking: bool) -> Trainer {
    qwen3_trainer(PretrainedSource { frozen, thinking, ..PretrainedSource::new(dir) }, 1e-2)
}

const TOOL: &str = r#"{"type": "function", "function": {"name": "search", "description": "Search the web.", "parameters": {"type": "object", "properties": {"query": {"type": "array", "items": {"type": "string"}}}, "required": ["query"]}}}"#;

pub(crate) fn conversation() -> Conversation {
    let call = CallText { name: "search".into(), arguments: r#"{"query": ["Barvel"]}"#.into() };
    Conversation {
        messages: vec![
            Message::new(ChatRole::System, "You are a web agent."),
            Message::new(ChatRole::User, "Find Barvel."),
            Message {
                tool_calls: vec![call],
                train: true,
                ..Message::new(ChatRole::Assistant, "I will search.")
            },
            Message::new(ChatRole::Tool, "Barvel: a town"),
            Message { train: true, ..Message::new(ChatRole::Assistant, "<answer>1543</answer>") },
        ],
        tools: vec![TOOL.to_string()],
    }
}

const SYSTEM: &str = "<|im_start|>system\nYou are a web agent.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n";
const INSTRUCTIONS: &str = "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n";

#[test]
fn the_template_renders_as_qwen3s_and_trains_exactly_the_assistant_spans() {
    let dir = tempfile::tempdir().unwrap();
    tiny_qwen3(dir.path(), TinySpec::default());
    let t = trainer(dir.path(), Vec::new(), false);
    let tok = t.tokenizer();
    let c = conversation();
    let head = format!("{SYSTEM}{TOOL}{INSTRUCTIONS}<|im_start|>user\nFind Barvel.<|im_end|>\n");
    let call = "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": [\"Barvel\"]}}\n</tool_call>";
    let full = format!(
        "{head}<|im_start|>assistant\nI will search.\n{call}<|im_end|>\n<|im_start|>user\n<tool_response>\nBarvel: a town\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n<answer>1543</answer><|im_end|>\n"
    );
    assert_eq!(tok.chat().unwrap().text(&c).unwrap(), full);
    assert_eq!(chat::render_ids(tok, &c, false).unwrap(), tok.encode(&full).unwrap());
    // The last turn trains in the whole conversation; the first, whose thinking block the
    // template drops once later turns follow, in its own sequence, as it was written.
    let ex = chat::examples(tok, &c, 10_000).unwrap();
    assert_eq!(ex.len(), 2);
    let trained = |e: &wrl_trainer::Example| -> Vec<u32> {
        e.tokens.iter().zip(&e.weights).filter(|(_, w)| **w != 0.0).map(|(t, _)| *t).collect()
    };
    let untrained_prefix = |e: &wrl_trainer::Example| -> Vec<u32> {
        e.tokens.iter().zip(&e.weights).take_while(|(_, w)| **w == 0.0).map(|(t, _)| *t).collect()
    };
    assert_eq!(ex[0].tokens, tok.encode(&full).unwrap(), "one piece at a time, the same tokens");
    assert_eq!(trained(&ex[0]), tok.encode("<answer>1543</answer><|im_end|>").unwrap());
    let before_last = full.strip_suffix("<answer>1543</answer><|im_end|>\n").unwrap();
    assert_eq!(untrained_prefix(&ex[0]), tok.encode(before_last).unwrap());
    assert_eq!(
        *ex[0].weights.last().unwrap(),
        0.0,
        "the newline after the end token is not trained"
    );
    let first = format!(
        "{head}<|im_start|>assistant\n<think>\n\n</think>\n\nI will search.\n{call}<|im_end|>\n"
    );
    assert_eq!(ex[1].tokens, tok.encode(&first).unwrap());
    assert_eq!(trained(&ex[1]), tok.encode(&format!("I will search.\n{call}<|im_end|>")).unwrap());
    // The prompt of the next turn ends with the generation prompt, thinking off.
    let p = chat::prompt(
        tok,
        &Conversation { messages: c.messages[..2].to_vec(), tools: c.tools.clone() },
    )
    .unwrap();
    assert_eq!(
        p,
        tok.encode(&format!("{head}<|im_start|>assistant\n<think>\n\n</think>\n\n")).unwrap()
    );
    // Thinking on: the model opens its own think block.
    let t = trainer(dir.path(), Vec::new(), true);
    let p = chat::prompt(
        t.tokenizer(),
        &Conversation { messages: c.messages[..2].to_vec(), tools: c.tools },
    )
    .unwrap();
    assert_eq!(
        t.tokenizer().decode(&p).unwrap().rsplit("user\n").next().unwrap(),
        "Find Barvel.\nassistant\n"
    );
    assert!(t.tokenizer().is_stop(t.tokenizer().eos_id()));
}

#[test]
fn a_trajectory_carries_its_tools_and_calls_into_the_template() {
    use wrl_trainer::{Role, Segment, Trajectory};
    let dir = tempfile::tempdir().unwrap();
    tiny_qwen3(dir.path(), TinySpec::default());
    let t = trainer(dir.path(), Vec::new(), false);
    let tok = t.tokenizer();
    let call = CallText { name: "search".into(), arguments: r#"{"query": ["Barvel"]}"#.into() };
    let traj = Trajectory {
        segments: vec![
            Segment::new(Role::User, "Find Barvel."),
            Segment { tool_calls: vec![call], ..Segment::new(Role::Assistant, "") },
        ],
        tools: vec![TOOL.to_string()],
    };
    let ex = wrl_trainer::render(tok, &traj, 10_000).unwrap();
    let head = format!(
        "<|im_start|>system\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{TOOL}{INSTRUCTIONS}<|im_start|>user\nFind Barvel.<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    );
    let call = "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": [\"Barvel\"]}}\n</tool_call><|im_end|>";
    assert_eq!(ex.tokens, tok.encode(&format!("{head}{call}\n")).unwrap());
    let trained: Vec<u32> =
        ex.tokens.iter().zip(&ex.weights).filter(|(_, w)| **w != 0.0).map(|(t, _)| *t).collect();
    assert_eq!(trained, tok.encode(call).unwrap(), "only the template's call and its end token");
    // The prompt of that turn, with the same tools: the example's untrained head.
    let prompt = wrl_trainer::render_prompt_with(tok, &traj.segments[..1], &traj.tools).unwrap();
    assert_eq!(prompt, tok.encode(&head).unwrap());
    assert_eq!(&ex.tokens[..prompt.len()], &prompt[..]);
    // Without a template there is nowhere to show tools: the tiny byte model ignores them.
    let plain = wrl_trainer::render_prompt_with(
        &wrl_trainer::tokenizer::Tokenizer::Bytes,
        &traj.segments[..1],
        &traj.tools,
    )
    .unwrap();
    assert_eq!(
        plain,
        wrl_trainer::render_prompt(&wrl_trainer::tokenizer::Tokenizer::Bytes, &traj.segments[..1])
            .unwrap()
    );
}

#[test]
fn frozen_parts_get_no_gradient_and_no_optimiser_state() {
    let dir = tempfile::tempdir().unwrap();
    tiny_qwen3(dir.path(), TinySpec::default());
    let mut t = trainer(dir.path(), vec![Frozen::Embeddings, Frozen::LmHead], false);
    let c = conversation();
    let ex = chat::examples(t.tokenizer(), &c, 10_000).unwrap();
    let before = crate::common::snapshot(&t);
    let pairs: Vec<(&wrl_trainer::Example, f32)> = ex.iter().map(|e| (e, 1.0)).collect();
    let m = t.sft_step_on(&pairs, 2).unwrap();
    assert!(m.grad_norm > 0.0);
    let after = crate::common::snapshot(&t);
    assert_eq!(
        crate::common::unchanged(&before, &after),
        vec!["model.embed_tokens.weight".to_string()]
    );
    let ck = tempfile::tempdir().unwrap();
    t.save(ck.path()).unwrap();
    let moments = candle_core::safetensors::load(
        ck.path().join("optimizer.safetensors"),
        &candle_core::Device::Cpu,
    )
    .unwrap();
    assert!(!moments.contains_key("m.model.embed_tokens.weight"));
    assert!(moments.contains_key("m.model.norm.weight"));
    // Tied embeddings freeze together or not at all.
    let src =
        PretrainedSource { frozen: vec![Frozen::LmHead], ..PretrainedSource::new(dir.path()) };
    let cfg = TrainerConfig {
        policy: PolicyConfig::Qwen3(src),
        optim: OptimConfig::default(),
        seed: 0,
        device: DeviceChoice::Cpu,
    };
    assert!(Trainer::new(cfg).unwrap_err().to_string().contains("freeze both"));
}

#[test]
fn a_stage_freezes_parts_of_a_live_policy_and_its_moments_go() {
    let dir = tempfile::tempdir().unwrap();
    tiny_qwen3(dir.path(), TinySpec::default());
    let mut t = trainer(dir.path(), Vec::new(), false);
    let ex = chat::examples(t.tokenizer(), &conversation(), 10_000).unwrap();
    let pairs: Vec<(&wrl_trainer::Example, f32)> = ex.iter().map(|e| (e, 1.0)).collect();
    let emb = "model.embed_tokens.weight".to_string();
    let moments = |t: &Trainer| {
        let ck = tempfile::tempdir().unwrap();
        t.save(ck.path()).unwrap();
        candle_core::safetensors::load(
            ck.path().join("optimizer.safetensors"),
            &candle_core::Device::Cpu,
        )
        .unwrap()
        .into_keys()
        .collect::<std::collections::BTreeSet<String>>()
    };
    // A first stage trains everything; the embeddings get moments.
    t.sft_step_on(&pairs, 2).unwrap();
    assert!(moments(&t).contains(&format!("m.{emb}")));
    // The next freezes them: no gradient, no moments, unchanged by its steps.
    t.set_frozen(&[Frozen::Embeddings, Frozen::LmHead]).unwrap();
    assert!(!moments(&t).contains(&format!("m.{emb}")));
    let before = crate::common::snapshot(&t);
    t.sft_step_on(&pairs, 2).unwrap();
    assert_eq!(crate::common::unchanged(&before, &crate::common::snapshot(&t)), vec![emb.clone()]);
    assert!(!moments(&t).contains(&format!("m.{emb}")));
    // A checkpoint resumes with them frozen.
    let ck = tempfile::tempdir().unwrap();
    t.save(ck.path()).unwrap();
    let mut back = Trainer::load(ck.path()).unwrap();
    let before = crate::common::snapshot(&back);
    back.sft_step_on(&pairs, 2).unwrap();
    assert_eq!(
        crate::common::unchanged(&before, &crate::common::snapshot(&back)),
        vec![emb.clone()]
    );
    // A stage without `frozen` thaws them; tied parts freeze together or not at all.
    t.set_frozen(&[]).unwrap();
    let before = crate::common::snapshot(&t);
    t.sft_step_on(&pairs, 2).unwrap();
    assert!(crate::common::unchanged(&before, &crate::common::snapshot(&t)).is_empty());
    assert!(t.set_frozen(&[Frozen::LmHead]).unwrap_err().to_string().contains("freeze both"));
}

#[test]
fn a_checkpoint_is_a_model_directory_that_resumes_exactly() {
    let dir = tempfile::tempdir().unwrap();
    tiny_qwen3(dir.path(), TinySpec { tie: false, ..TinySpec::default() });
    let mut a = trainer(dir.path(), Vec::new(), false);
    let ex = chat::examples(a.tokenizer(), &conversation(), 10_000).unwrap();
    let pairs: Vec<(&wrl_trainer::Example, f32)> = ex.iter().map(|e| (e, 1.0)).collect();
    a.sft_step_on(&pairs, 1).unwrap();
    let ck = tempfile::tempdir().unwrap();
    a.save(ck.path()).unwrap();
    let files = hf::inspect(ck.path()).unwrap();
    assert!(files.template.is_some() && !files.config.tie_word_embeddings);
    let header = hf::files::header(&ck.path().join("model.safetensors")).unwrap();
    assert!(header.contains_key("lm_head.weight"));
    let cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(ck.path().join("config.json")).unwrap())
            .unwrap();
    assert_eq!(cfg["dtype"], "float32");
    // The source may go: the checkpoint holds everything.
    drop(dir);
    let mut b = Trainer::load(ck.path()).unwrap();
    assert_eq!(crate::common::snapshot(&a), crate::common::snapshot(&b));
    a.sft_step_on(&pairs, 1).unwrap();
    b.sft_step_on(&pairs, 1).unwrap();
    assert_eq!(crate::common::snapshot(&a), crate::common::snapshot(&b));
}

#[test]
fn the_generated_model_is_deterministic_and_sliding_windows_mask() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    tiny_qwen3(a.path(), TinySpec::default());
    tiny_qwen3(b.path(), TinySpec::default());
    for f in ["tokenizer.json", "config.json", "model.safetensors"] {
        assert_eq!(
            std::fs::read(a.path().join(f)).unwrap(),
            std::fs::read(b.path().join(f)).unwrap(),
            "{f}"
        );
    }
    // A window as long as the sequence changes nothing; a window of one sees only itself.
    let logits = |dir: &Path| {
        let t = trainer(dir, Vec::new(), false);
        let ids: Vec<u32> = t.tokenizer().encode("Find Barvel. I will search the web").unwrap();
        let x =
            candle_core::Tensor::from_vec(ids.clone(), (1, ids.len()), &candle_core::Device::Cpu)
                .unwrap();
        let l: Vec<Vec<f32>> =
            t.model().forward(&x).unwrap().squeeze(0).unwrap().to_vec2().unwrap();
        (ids.len(), l)
    };
    let (n, base) = logits(a.path());
    let set_window = |w: usize| {
        let p = b.path().join("config.json");
        let mut c: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        c["use_sliding_window"] = serde_json::json!(true);
        c["sliding_window"] = serde_json::json!(w);
        c["max_window_layers"] = serde_json::json!(0);
        std::fs::write(&p, c.to_string()).unwrap();
    };
    set_window(n);
    assert_eq!(logits(b.path()).1, base);
    set_window(1);
    let windowed = logits(b.path()).1;
    assert_eq!(windowed[0], base[0]);
    assert_ne!(windowed[n - 1], base[n - 1]);
}

#[test]
fn hub_ids_resolve_offline_in_the_cache_layout() {
    let cache = tempfile::tempdir().unwrap();
    let repo = cache.path().join("models--Org--Tiny");
    let snap = repo.join("snapshots").join("abc123");
    std::fs::create_dir_all(&snap).unwrap();
    std::fs::create_dir_all(repo.join("snapshots").join("old")).unwrap();
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs").join("main"), "abc123\n").unwrap();
    assert_eq!(hf::resolve_in("Org/Tiny", RepoKind::Model, Some(cache.path())).unwrap(), snap);
    let missing = hf::resolve_in("Org/Other", RepoKind::Model, Some(cache.path())).unwrap_err();
    assert!(missing.to_string().contains("never downloads"), "{missing}");
    std::fs::remove_file(repo.join("refs").join("main")).unwrap();
    let two = hf::resolve_in("Org/Tiny", RepoKind::Model, Some(cache.path())).unwrap_err();
    assert!(two.to_string().contains("2 snapshots"), "{two}");
    let ds = cache.path().join("datasets--Org--Data").join("snapshots").join("r1");
    std::fs::create_dir_all(&ds).unwrap();
    assert_eq!(hf::resolve_in("Org/Data", RepoKind::Dataset, Some(cache.path())).unwrap(), ds);
}
