//! `wrlc run` end to end with a Hugging Face policy: a tiny random Qwen3 in HF layout (written
//! by `wrl_trainer::hf::tiny`, its own byte-level BPE tokenizer and Qwen3's chat template) in
//! place of the tiny byte model in WebDancer's smoke profile, in bf16: SFT on the expert's search-API
//! demonstrations lowers the loss, a DAPO iteration and both evaluations run, the checkpoint is
//! a Hugging Face model directory that loads back, `--resume` of the finished run adds nothing,
//! and `wrlc serve` answers from it.

use std::path::Path;

use wrl_exec::{MetricLine, RunDir, Summary};
use wrl_trainer::hf::tiny::{TinySpec, TokenizerSource};

/// The loss of every SFT step among a run's metric lines, in order.
pub(crate) fn sft_losses(metrics: &[MetricLine]) -> Vec<f64> {
    metrics
        .iter()
        .filter_map(|m| match m {
            MetricLine::Sft(s) => Some(s.loss),
            _ => None,
        })
        .collect()
}

/// Writes the model: 2 layers, width 32, a BPE of 300 merges learned from sandbox-like text.
fn tiny_model(dir: &Path) {
    let corpus = [
        "task: What is the population of Barvel? Answer with a number.",
        "<think>\nI will search.\n</think>\n<tool_call>\nsearch Barvel population\n</tool_call>",
        "visit /wiki/barvel\nanswer 1543\n<answer>1543</answer>",
        "[1] Barvel - a town in the north. Population 1543. Founded 1820.",
    ];
    let spec = TinySpec::narrow();
    let corpus = corpus.iter().map(|s| s.to_string()).collect();
    wrl_trainer::hf::tiny::write(dir, &spec, &TokenizerSource::Generated { corpus, merges: 300 })
        .expect("the tiny model");
}

#[test]
fn webdancer_smoke_trains_a_hugging_face_qwen3_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("tiny-qwen3");
    tiny_model(&model);
    let out = dir.path().join("run");
    let recipe = Path::new(env!("CARGO_MANIFEST_DIR")).join("../recipes/webdancer.wrl");
    // bf16, the stdlib's default: activations in bf16 over f32 master weights.
    let policy = format!("policy=hf(\"{}\") {{ dtype = bf16, family = qwen3 }}", model.display());
    let sets = [
        policy.as_str(),
        "trajectories=std::sandbox::demos(count: 4) { env = search_api }",
        "rl_qa=std::sandbox::qa(count: 4)",
        "gaia=std::sandbox::qa(count: 1) { split = test }",
        "webwalker=std::sandbox::qa(count: 1) { split = test, seed = 1 }",
        "warmup.epochs=3",
        "warmup.lr=3e-3",
        "warmup.batch=4",
        // Tied embeddings and head frozen in the warm-up: its checkpoint keeps them as loaded.
        "warmup.frozen=[embeddings, lm_head]",
        "online.prompts=2",
        "online.group=2",
        "online.mini_batch=4",
        "online.dynamic_sampling={ metric = \"reward\", max_batches = 0 }",
        "online.phases=[{ iters = 1, horizon = 2 steps, lr = 3e-4 }]",
        "dancer.max_response=16 tokens",
        "gaia_eval.max_steps=2 steps",
        "webwalker_eval.max_steps=2 steps",
    ];
    let mut args: Vec<std::ffi::OsString> = vec![
        "run".into(),
        recipe.into_os_string(),
        "--profile".into(),
        "smoke".into(),
        "--out".into(),
        out.clone().into_os_string(),
    ];
    for s in sets {
        args.extend(["--set".into(), s.into()]);
    }
    let (code, _, stderr) = wrl_cli::run_captured(args);
    assert_eq!(code, 0, "{stderr}");
    let summary: Summary =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary.status, "finished");
    let metrics = RunDir::resume(&out).unwrap().read_metrics().unwrap();
    let losses = sft_losses(&metrics);
    assert!(losses.len() >= 3, "{losses:?}");
    assert!(losses.last().unwrap() < losses.first().unwrap(), "SFT loss did not fall: {losses:?}");
    assert!(metrics.iter().any(|m| matches!(m, MetricLine::Rl(_))), "no RL iteration");
    // Every checkpoint is a Hugging Face model directory.
    let ckpts = out.join("checkpoints");
    let mut dirs: Vec<_> =
        std::fs::read_dir(&ckpts).unwrap().filter_map(|e| e.ok().map(|e| e.path())).collect();
    dirs.sort();
    assert!(!dirs.is_empty());
    for d in &dirs {
        let files = wrl_trainer::hf::inspect(d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        assert_eq!(files.config.arch, wrl_trainer::hf::Arch::Qwen3);
        assert!(files.template.is_some());
    }
    let embeddings = |t: &wrl_trainer::Trainer| -> Vec<f32> {
        let w = t.model().params().get("model.embed_tokens.weight").unwrap();
        w.flatten_all().unwrap().to_vec1::<f32>().unwrap()
    };
    let source = wrl_trainer::Trainer::new(wrl_trainer::TrainerConfig {
        policy: wrl_trainer::PolicyConfig::Qwen3(wrl_trainer::PretrainedSource::new(&model)),
        optim: wrl_trainer::OptimConfig::default(),
        seed: 0,
        device: wrl_trainer::DeviceChoice::Cpu,
    })
    .unwrap();
    let warm = wrl_trainer::Trainer::load(&ckpts.join("stage-warmup")).unwrap();
    assert_eq!(warm.config.policy.precision(), wrl_trainer::precision::Precision::Bf16);
    assert_eq!(embeddings(&warm), embeddings(&source), "a frozen part moved in the warm-up");
    let (code, _, stderr) =
        wrl_cli::run_captured(["run".as_ref(), "--resume".as_ref(), out.as_os_str()]);
    assert_eq!(code, 0, "{stderr}");
    let again = RunDir::resume(&out).unwrap().read_metrics().unwrap();
    assert_eq!(again.len(), metrics.len(), "resume of a finished run added metrics");
    // The source may go: a checkpoint loads (and serves) from itself alone.
    std::fs::remove_dir_all(&model).unwrap();
    let trainer = wrl_trainer::Trainer::load(dirs.last().unwrap()).expect("the last checkpoint");
    assert!(trainer.tokenizer().chat().is_some());
    eprintln!("SFT losses {losses:?}");
}

/// The quickstart in real Chromium with the tiny Qwen3 as its policy: the expert's element
/// actions are taught as the template's `<tool_call>`s of `std::tools::elements`, the rollout
/// prompts show those tools, and each turn is read as calls checked against their schemas: a
/// turn that is not a valid call is the recipe's format error (reward −1), and none is run as
/// a terse line.
#[test]
fn quickstart_in_chromium_calls_the_element_tools_as_hermes_calls() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("tiny-qwen3");
    let corpus = [
        "task: Buy the blue mug. [1] link \"Blue mug\" [2] button \"Add to cart\" url: /shop",
        "<tool_call>\n{\"name\": \"click\", \"arguments\": {\"id\": 2}}\n</tool_call>",
        "{\"name\": \"type\", \"arguments\": {\"id\": 3, \"submit\": true, \"text\": \"mug\"}}",
        "{\"name\": \"answer\", \"arguments\": {\"text\": \"12.50\"}}",
    ];
    let spec = TinySpec::narrow();
    let corpus = corpus.iter().map(|s| s.to_string()).collect();
    wrl_trainer::hf::tiny::write(
        &model,
        &spec,
        &TokenizerSource::Generated { corpus, merges: 300 },
    )
    .unwrap();
    let out = dir.path().join("run");
    let recipe = Path::new(env!("CARGO_MANIFEST_DIR")).join("../recipes/quickstart.wrl");
    let policy = format!("policy=hf(\"{}\") {{ dtype = f32, family = qwen3 }}", model.display());
    let sets = [
        policy.as_str(),
        "demos=std::sandbox::demos(count: 3)",
        "heldout=std::sandbox::tasks(count: 1) { split = test }",
        "warmup.epochs=2",
        "online.prompts=2",
        "online.group=2",
        "online.phases=[{ iters = 1, horizon = 2 steps, lr = 3e-4 }]",
        "actor.max_response=24 tokens",
        // The first malformed turn ends the episode: the random model's turns are format errors.
        "actor.max_parse_failures=1",
    ];
    let mut args: Vec<std::ffi::OsString> =
        vec!["run".into(), recipe.into_os_string(), "--out".into(), out.clone().into_os_string()];
    for s in sets {
        args.extend(["--set".into(), s.into()]);
    }
    let (code, _, stderr) = wrl_cli::run_captured(args);
    assert_eq!(code, 0, "{stderr}");
    let run = RunDir::resume(&out).unwrap();
    let losses = sft_losses(&run.read_metrics().unwrap());
    assert!(losses.last().unwrap() < losses.first().unwrap(), "SFT loss did not fall: {losses:?}");
    let text = std::fs::read_to_string(out.join("trajectories.jsonl")).unwrap();
    let lines: Vec<wrl_exec::TrajectoryLine> =
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let rl: Vec<_> = lines.iter().filter(|l| !l.node.starts_with("eval:")).collect();
    assert_eq!(rl.len(), 4, "2 prompts × group 2");
    assert!(
        rl.iter().any(|l| l.trajectory.outcome.reason.word() == "agent_error"),
        "the random policy wrote a valid call every time"
    );
    for l in &lines {
        let t = &l.trajectory;
        match t.outcome.reason.word() {
            // A format error: the recipe's reward says −1 (evals score with the checker).
            "agent_error" if !l.node.starts_with("eval:") => {
                assert_eq!(
                    l.reward,
                    wrl_exec::rundir::records::Scored::Value(-1.0),
                    "{:?}",
                    t.outcome
                )
            }
            _ => {}
        }
    }
    eprintln!(
        "SFT losses {losses:?}; episode ends {:?}",
        lines.iter().map(|l| l.trajectory.outcome.reason.word()).collect::<Vec<_>>()
    );
}

/// tests/recipes/lora.wrl end to end: SFT trains rank-2 adapters on q and v only, GRPO merges
/// them and trains rank-4 adapters on every linear layer; each checkpoint holds its adapters in
/// PEFT's layout beside the merged model, the SFT one over the source model (step 0), the GRPO
/// one over the SFT stage's weights.
#[test]
fn the_lora_recipe_trains_adapters_per_stage() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let recipe = root.join("tests/recipes/lora.wrl");
    let model = root.join("tests/ui/run/data/hf-tiny");
    let policy =
        format!("policy=hf(\"{}\") {{ dtype = f32, context = 2048 tokens }}", model.display());
    let args: Vec<std::ffi::OsString> = vec![
        "run".into(),
        recipe.into_os_string(),
        "--out".into(),
        out.clone().into_os_string(),
        "--set".into(),
        policy.into(),
    ];
    let (code, _, stderr) = wrl_cli::run_captured(args);
    assert_eq!(code, 0, "{stderr}");
    let config = |ck: &str| -> serde_json::Value {
        let p = out.join("checkpoints").join(ck).join("adapter/adapter_config.json");
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    let (sft, rl) = (config("stage-warmup"), config("stage-online-phase-1-iter-1"));
    assert_eq!((sft["r"].as_u64(), sft["wrl_base_step"].as_u64()), (Some(2), Some(0)));
    assert_eq!(sft["target_modules"], serde_json::json!(["q_proj", "v_proj"]));
    assert_eq!(rl["r"].as_u64(), Some(4));
    assert_eq!(rl["target_modules"].as_array().map(Vec::len), Some(7));
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("checkpoints/stage-warmup/trainer_state.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(rl["wrl_base_step"], state["step"]);
    // The SFT checkpoint's model is the source with the q and v adapters merged in: q moved,
    // k (no adapter) bit for bit the source's.
    let load = |d: &Path| {
        use wrl_trainer::{DeviceChoice, OptimConfig, PolicyConfig, PretrainedSource};
        let policy = PolicyConfig::Qwen3(PretrainedSource::new(d));
        let cfg = wrl_trainer::TrainerConfig {
            policy,
            optim: OptimConfig::default(),
            seed: 0,
            device: DeviceChoice::Cpu,
        };
        wrl_trainer::Trainer::new(cfg).unwrap()
    };
    let (src, merged) = (load(&model), load(&out.join("checkpoints/stage-warmup")));
    let values = |t: &wrl_trainer::Trainer, k: &str| {
        t.model().params().get(k).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap()
    };
    let (q, k) =
        ("model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight");
    assert_ne!(values(&src, q), values(&merged, q));
    assert_eq!(values(&src, k), values(&merged, k));
}

/// tests/recipes/search_r1.wrl's offline profile with the tiny random Qwen3 (its chat
/// template): tag-style calls on a templated policy — the first turn's prompt rendered by the
/// template, each later turn continuing the same token sequence after the inline result — run,
/// train (GRPO's update over the joined, masked samples) and evaluate.
#[test]
fn tag_style_calls_run_with_a_templated_policy() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let model = root.join("tests/ui/run/data/hf-tiny");
    let policy =
        format!("policy=hf(\"{}\") {{ dtype = f32, context = 8192 tokens }}", model.display());
    let args: Vec<std::ffi::OsString> = vec![
        "run".into(),
        root.join("tests/recipes/search_r1.wrl").into_os_string(),
        "--profile".into(),
        "offline".into(),
        "--out".into(),
        out.clone().into_os_string(),
        "--set".into(),
        policy.into(),
    ];
    let (code, _, stderr) = wrl_cli::run_captured(args);
    assert_eq!(code, 0, "{stderr}");
    let run = RunDir::resume(&out).unwrap();
    let rl = run.read_metrics().unwrap().into_iter().filter(|m| matches!(m, MetricLine::Rl(_)));
    assert_eq!(rl.count(), 1);
    for t in run.read_trajectories().unwrap() {
        let parts = t.sequence.expect("a tag-style episode's sequence");
        assert_eq!(parts.len(), 2 * t.trajectory.steps.len() - 1);
        assert!(parts.iter().all(|p| p.loss != p.text.starts_with("\n<information>")), "{parts:?}");
    }
}

/// tests/recipes/deep_research.wrl's offline profile with the tiny random Qwen3: the chat-format
/// SFT data rendered by the model's own template, each tool call in Qwen3's call format. Its
/// template drops the (empty) thinking of earlier turns, so each of the three tool-calling
/// conversations trains its two call turns in sequences of their own and its answer in the
/// whole (3 each), the fourth in one: 10 sequences, 3 steps of a batch of 4; then GRPO and the
/// evaluation per `data_source`.
#[test]
fn chat_format_sft_renders_conversations_with_the_models_template() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("ui/run/data/hf-tiny");
    let policy =
        format!("policy=hf(\"{}\") {{ dtype = f32, context = 8192 tokens }}", model.display());
    let args = crate::run_e2e::deep_research::offline_args(&out, &[policy]);
    let (code, _, stderr) = wrl_cli::run_captured(args);
    assert_eq!(code, 0, "{stderr}");
    let run = RunDir::resume(&out).unwrap();
    let sft = sft_losses(&run.read_metrics().unwrap());
    assert_eq!(sft.len(), 3, "{sft:?}");
    assert!(sft.iter().all(|l| l.is_finite() && *l > 0.0), "{sft:?}");
    let summary: Summary =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary.evals[0].subsets.len(), 2);
}
