//! `wrlc run` end to end with a Hugging Face policy: a tiny random Qwen3 in HF layout (written
//! by `wrl_trainer::hf::tiny`, its own byte-level BPE tokenizer and Qwen3's chat template) in
//! place of the tiny byte model in WebDancer's smoke profile: SFT on the expert's search-API
//! demonstrations lowers the loss, a DAPO iteration and both evaluations run, the checkpoint is
//! a Hugging Face model directory that loads back, `--resume` of the finished run adds nothing,
//! and `wrlc serve` answers from it.

use std::path::Path;

use wrl_exec::{MetricLine, RunDir, Summary};
use wrl_trainer::hf::tiny::{TinySpec, TokenizerSource};

/// Writes the model: 2 layers, width 32, a BPE of 300 merges learned from sandbox-like text.
fn tiny_model(dir: &Path) {
    let corpus = [
        "task: What is the population of Barvel? Answer with a number.",
        "<think>\nI will search.\n</think>\n<tool_call>\nsearch Barvel population\n</tool_call>",
        "visit /wiki/barvel\nanswer 1543\n<answer>1543</answer>",
        "[1] Barvel - a town in the north. Population 1543. Founded 1820.",
    ];
    let spec = TinySpec {
        hidden: 32,
        intermediate: 64,
        heads: 2,
        kv_heads: 1,
        head_dim: 16,
        ..TinySpec::default()
    };
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
    let policy = format!("policy=hf(\"{}\") {{ dtype = f32, family = qwen3 }}", model.display());
    let sets = [
        policy.as_str(),
        "trajectories=std::sandbox::demos(count: 4) { env = search_api }",
        "rl_qa=std::sandbox::qa(count: 4)",
        "gaia=std::sandbox::qa(count: 1) { split = test }",
        "webwalker=std::sandbox::qa(count: 1) { split = test, seed = 1 }",
        "warmup.epochs=3",
        "warmup.lr=3e-3",
        "warmup.batch=4",
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
    let losses: Vec<f64> = metrics
        .iter()
        .filter_map(|m| match m {
            MetricLine::Sft(s) => Some(s.loss),
            _ => None,
        })
        .collect();
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
