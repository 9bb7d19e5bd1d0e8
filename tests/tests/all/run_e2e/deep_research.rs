//! Chat-format SFT and an evaluation per subset end to end (#46 item 3):
//! `tests/recipes/deep_research.wrl --profile offline` — SFT of the embedded tiny model on
//! tool-calling conversations (renamed from `conversations` by `columns`, each call written as
//! its terse line), GRPO on the sandbox's search API, and an evaluation of a verl-layout Parquet
//! file (nested columns) with a result per `data_source`, and the RL stage's validation on the
//! same file split the same way (`validation(…) { by }`).

use std::path::Path;

use wrl_exec::MetricLine;

use super::records;

/// `wrlc run tests/recipes/deep_research.wrl --profile offline --out OUT` with its data files
/// named absolutely (the profile names them from the repository's root; the tests run from
/// `tests/`), then `--set` each of `sets`. run_hf.rs runs it with the tiny random Qwen3 too.
pub fn offline_args(out: &Path, sets: &[String]) -> Vec<std::ffi::OsString> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let data = root.join("recipes/data/deep_research");
    let chats = format!(
        "chats=jsonl(\"{}\") {{ kind = chat, columns = {{ messages = \"conversations\" }} }}",
        data.join("sft.jsonl").display()
    );
    let test = format!(
        "test=parquet(\"{}\") {{ kind = qa, columns = {{ question = \"prompt[0].content\", \
         answer = \"reward_model.ground_truth\" }} }}",
        data.join("test.parquet").display()
    );
    let mut args: Vec<std::ffi::OsString> = vec![
        "run".into(),
        root.join("recipes/deep_research.wrl").into(),
        "--profile".into(),
        "offline".into(),
        "--out".into(),
        out.into(),
    ];
    for set in [chats, test].iter().chain(sets) {
        args.extend(["--set".into(), set.into()]);
    }
    args
}

#[test]
fn deep_research_trains_on_chat_data_and_reports_each_data_source() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let args = offline_args(&out, &[]);
    let (code, _, stderr) = wrl_cli::run_captured(args);
    assert_eq!(code, 0, "{stderr}");
    let (summary, metrics, _) = records(&out);
    assert_eq!(summary.status, "finished");
    // Four conversations, a batch of four: one SFT step on them.
    let sft = metrics.iter().filter(|m| matches!(m, MetricLine::Sft(_))).count();
    assert_eq!(sft, 1, "{metrics:?}");
    // One result for the file, and one per `data_source` in it, each within its interval.
    let eval = &summary.evals[0];
    assert_eq!(eval.by.as_deref(), Some("data_source"));
    let subsets: Vec<(&str, u64)> =
        eval.subsets.iter().map(|(k, v)| (k.as_str(), v.out_of)).collect();
    assert_eq!(subsets, [("hotpotqa", 1), ("nq", 2)]);
    let solved: u64 = eval.subsets.values().map(|s| s.solved).sum();
    assert!((eval.success - solved as f64 / 3.0).abs() < 1e-9, "{eval:?}");
    for s in eval.subsets.values() {
        assert!(s.low <= s.success && s.success <= s.high && s.high > 0.0, "{s:?}");
    }
    let line = metrics.iter().find_map(|m| match m {
        MetricLine::Eval(e) if e.stage == "final" => Some(e),
        _ => None,
    });
    assert_eq!(line.map(|l| l.subsets.len()), Some(2));
    // The validation pass after the one iteration (`validate = validation(test) { by }`): its
    // line in metrics.jsonl has the same subsets, counted as its whole is, and each subset's
    // rate goes to TensorBoard under a stable name.
    let passes: Vec<&wrl_exec::rundir::records::EvalLine> = metrics
        .iter()
        .filter_map(|m| match m {
            MetricLine::Eval(e) if e.node.starts_with("validation:") => Some(e),
            _ => None,
        })
        .collect();
    assert_eq!(passes.len(), 1, "{metrics:?}");
    let v = passes[0];
    assert_eq!((v.stage.as_str(), v.after.as_str()), ("online", "online iter 1"));
    let subsets: Vec<(&str, u64)> = v.subsets.iter().map(|(k, s)| (k.as_str(), s.out_of)).collect();
    assert_eq!(subsets, [("hotpotqa", 1), ("nq", 2)]);
    let solved: u64 = v.subsets.values().map(|s| s.solved).sum();
    assert!((v.success - solved as f64 / 3.0).abs() < 1e-9, "{v:?}");
    let tags: Vec<String> = wrl_exec::rundir::tensorboard::scalars(&MetricLine::Eval(v.clone()))
        .into_iter()
        .map(|(t, _)| t)
        .collect();
    for tag in ["eval/online/subset/hotpotqa/success", "eval/online/subset/nq/success"] {
        assert!(tags.iter().any(|t| t == tag), "{tag}: {tags:?}");
    }
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(report.contains("↳ data_source = nq"), "the report has no row per subset");
}
