//! `wrlc run` end to end with a vision-language policy: the tiny random Qwen3-VL that
//! `wrl_trainer::hf::tiny_vl` writes, offline in real Chromium — GRPO on screenshot episodes
//! (`tests/recipes/vl_browser.wrl`) and SFT on the expert's demonstrations with a screenshot of
//! every step (`tests/recipes/vl_sft.wrl`); and OpenWebRL's `smoke_vl` profiles, 4B and 8B, with
//! OpenWebRL's own tools on the copy the repository ships (`recipes/models/tiny-qwen3-vl`, held
//! to the writer by `shipped_models.rs`).

use std::path::{Path, PathBuf};

use wrl_exec::{MetricLine, RunDir};
use wrl_trainer::hf::tiny::{TinySpec, TokenizerSource};
use wrl_trainer::hf::tiny_vl::{TinyVision, write_vl};

/// The tiny Qwen3-VL under `dir`, its tokenizer learned from a sandbox page, Hermes calls (an
/// element click, a grounded one) and the element tools' and OpenWebRL's tools' schemas
/// (`bench/hf-parity/recipe-tools.json`, which `wrl-exec`'s `hermes_chat` keeps true): every
/// prompt shows its set's, and a byte-level tokenizer would spend most of an example's tokens
/// on them.
pub(crate) fn tiny_vl(dir: &Path) -> PathBuf {
    tiny_vl_of(dir, "tiny-qwen3-vl", &TinyVision::default())
}

/// The tiny VL model of `vision` (Qwen3-VL or Qwen2.5-VL) under `dir/name`, its tokenizer
/// learned as [`tiny_vl`]'s.
pub(crate) fn tiny_vl_of(dir: &Path, name: &str, vision: &TinyVision) -> PathBuf {
    tiny_vl_learning(dir, name, vision, &["elements", "openwebrl"])
}

/// The tiny Qwen2.5-VL under `dir` that recipes/opagent.wrl's `smoke_vl` grounds with
/// (`recipes/models/tiny-qwen2.5-vl`): its tokenizer learned as [`tiny_vl`]'s and from
/// OpAgent's coordinate tools' schemas too, which every grounder prompt shows.
pub(crate) fn tiny_qwen25_vl(dir: &Path) -> PathBuf {
    tiny_vl_learning(
        dir,
        "tiny-qwen2.5-vl",
        &TinyVision::qwen25(),
        &["elements", "openwebrl", "opagent"],
    )
}

/// The tiny VL model of `vision` under `dir/name`, its tokenizer learned from a sandbox page, a
/// Hermes call or two and the schemas of the tool `sets` of `recipe-tools.json`.
fn tiny_vl_learning(dir: &Path, name: &str, vision: &TinyVision, sets: &[&str]) -> PathBuf {
    let model = dir.join(name);
    let mut corpus: Vec<String> = [
        "task: Buy the blue mug. [1] link \"Blue mug\" [2] button \"Add to cart\" url: /shop",
        "<tool_call>\n{\"name\": \"click\", \"arguments\": {\"id\": 2}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"click\", \"arguments\": {\"point_2d\": [391, 300]}}\n</tool_call>",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let tools = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/hf-parity/recipe-tools.json");
    let tools = std::fs::read_to_string(tools).expect("bench/hf-parity/recipe-tools.json");
    let tools: serde_json::Value = serde_json::from_str(&tools).expect("its JSON");
    let sets = sets.iter().map(|k| tools[*k].as_array().expect("a set's schemas"));
    for schema in sets.flatten() {
        // As the template writes them (Python's `json.dumps`).
        let text = schema.as_str().expect("a schema's text");
        let v: serde_json::Value = serde_json::from_str(text).expect("a schema");
        corpus.push(v.to_string().replace("\":", "\": ").replace(",\"", ", \""));
    }
    let tok = TokenizerSource::Generated { corpus, merges: 600 };
    write_vl(&model, &TinySpec::narrow(), vision, &tok).expect("the tiny VL model");
    model
}

/// `--set`'s value putting `model` of `family` in the recipes' `policy`.
pub(crate) fn policy_of(model: &Path, family: &str) -> String {
    format!(
        "policy=hf(\"{}\") {{ family = {family}, dtype = f32, context = 4Ki tokens, \
         image_max_pixels = 65536 px }}",
        model.display()
    )
}

/// Runs `tests/recipes/NAME.wrl` under `dir` with the tiny Qwen3-VL as its policy; the model's
/// directory and the run's.
fn run_recipe(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let model = tiny_vl(dir);
    (model.clone(), run_recipe_with(dir, name, &model, "qwen3_vl"))
}

/// Runs `tests/recipes/NAME.wrl` under `dir` with `model` (of `family`) as its policy; the run's
/// directory.
pub(crate) fn run_recipe_with(dir: &Path, name: &str, model: &Path, family: &str) -> PathBuf {
    let out = dir.join("run");
    let recipe = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("recipes/{name}.wrl"));
    let policy = policy_of(model, family);
    let started = std::time::Instant::now();
    let (code, _, stderr) = wrl_cli::run_captured([
        "run".as_ref(),
        recipe.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
        "--set".as_ref(),
        policy.as_ref(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    eprintln!("{name} ran in {:.1?}", started.elapsed());
    out
}

/// The last checkpoint of a run's GRPO stage `online`.
pub(crate) fn last_online_checkpoint(out: &Path) -> PathBuf {
    let mut dirs: Vec<_> = std::fs::read_dir(out.join("checkpoints"))
        .expect("the run's checkpoints")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("stage-online")))
        .collect();
    dirs.sort();
    dirs.last().expect("the GRPO stage's checkpoint").clone()
}

/// Every tensor of the model directory `d`, as f32 values by name.
pub(crate) fn weights(d: &Path) -> std::collections::BTreeMap<String, Vec<f32>> {
    let mut all = std::collections::BTreeMap::new();
    for f in wrl_trainer::hf::inspect(d).expect("a model directory").weights {
        let shard = candle_core::safetensors::load(&f, &candle_core::Device::Cpu);
        for (k, t) in shard.expect("a safetensors shard") {
            let v = t.to_dtype(candle_core::DType::F32).and_then(|t| t.flatten_all());
            all.insert(k, v.and_then(|v| v.to_vec1::<f32>()).expect("a tensor"));
        }
    }
    all
}

/// `tests/recipes/vl_browser.wrl` with the tiny random Qwen3-VL `hf::tiny_vl` writes, offline in
/// real Chromium: a GRPO iteration on screenshot episodes (each sample carrying its images to
/// the update) and an evaluation run; the checkpoint is a Qwen3-VL model directory whose text
/// decoder moved while its vision tower (frozen: no variables, no optimiser state) is the
/// source's bit for bit.
#[test]
fn vl_browser_trains_the_text_decoder_of_a_qwen3_vl_on_screenshots_not_its_tower() {
    let dir = tempfile::tempdir().unwrap();
    let (model, out) = run_recipe(dir.path(), "vl_browser");
    let metrics = RunDir::resume(&out).unwrap().read_metrics().unwrap();
    assert!(metrics.iter().any(|m| matches!(m, MetricLine::Rl(_))), "no RL iteration");
    let ckpt = last_online_checkpoint(&out);
    let files = wrl_trainer::hf::inspect(&ckpt).unwrap();
    assert!(files.vision.is_some(), "the checkpoint is a Qwen3-VL directory");
    let (before, after) = (weights(&model), weights(&ckpt));
    assert_eq!(before.keys().collect::<Vec<_>>(), after.keys().collect::<Vec<_>>());
    let tower: Vec<&String> = before.keys().filter(|k| k.starts_with("model.visual.")).collect();
    assert!(!tower.is_empty());
    for k in &tower {
        assert_eq!(before[*k], after[*k], "the frozen tower moved: {k}");
    }
    let moved = before
        .keys()
        .filter(|k| k.starts_with("model.language_model.layers.") && before[*k] != after[*k])
        .count();
    assert!(moved > 0, "the GRPO update left the text decoder as it was");
    // The checkpoint loads back as the policy it was.
    let t = wrl_trainer::Trainer::load(&ckpt).expect("the VL checkpoint");
    assert!(t.model().vision().is_some());
}

/// `tests/recipes/vl_sft.wrl`: the expert's demonstrations recorded in Chromium with a
/// screenshot of every step, kept in the run directory beside the cache that names them; SFT
/// on them lowers the loss, a resumed run reads the cache and its screenshots back, and the
/// same demonstrations train from a trajectory file ([`from_a_file`]).
#[test]
fn vl_sft_trains_on_the_experts_screenshots() {
    let dir = tempfile::tempdir().unwrap();
    let (model, out) = run_recipe(dir.path(), "vl_sft");
    let cache = std::fs::read_to_string(out.join("data/demos.jsonl")).unwrap();
    let demos: Vec<wrl_sandbox::Trajectory> =
        cache.lines().skip(1).map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(!demos.is_empty(), "no demonstration recorded");
    for (k, d) in demos.iter().enumerate() {
        for (i, s) in d.steps.iter().enumerate() {
            let name = format!("demos/{k}-{i}.png");
            assert_eq!(s.screenshot.as_deref(), Some(name.as_str()), "relative to data/");
            let png = std::fs::read(out.join("data").join(&name)).unwrap();
            assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{name} is a PNG");
        }
    }
    let losses = crate::run_hf::sft_losses(&RunDir::resume(&out).unwrap().read_metrics().unwrap());
    assert!(losses.len() >= 3, "{losses:?}");
    assert!(losses.iter().all(|l| l.is_finite() && *l > 0.0), "{losses:?}");
    assert!(
        losses.last() < losses.first(),
        "SFT on the screenshots did not lower the loss: {losses:?}"
    );
    // The finished run resumes to nothing new, reading its cache and screenshots back.
    let (code, _, stderr) =
        wrl_cli::run_captured(["run".as_ref(), "--resume".as_ref(), out.as_os_str()]);
    assert_eq!(code, 0, "{stderr}");
    let again = RunDir::resume(&out).unwrap().read_metrics().unwrap();
    let sft_lines = again.iter().filter(|m| matches!(m, MetricLine::Sft(_))).count();
    assert_eq!(sft_lines, losses.len(), "the finished run's resume trained again");
    from_a_file(dir.path(), &model, &out);
}

/// The same demonstrations as a trajectory file whose steps name their PNGs relative to it
/// (`screenshot`, docs/sandbox.md): they train, also grounded in OpenWebRL's coordinate tools
/// at the boxes the expert recorded (`boxes`); a PNG that is no image, a file that names no
/// screenshot at all, and under coordinate tools a file without boxes, are errors that name
/// them before any step.
fn from_a_file(dir: &Path, model: &Path, run: &Path) {
    let files = dir.join("file");
    std::fs::create_dir_all(files.join("shots")).expect("a folder");
    let cache = std::fs::read_to_string(run.join("data/demos.jsonl")).expect("the cache");
    let mut with = String::new();
    let mut without = String::new();
    let mut unboxed = String::new();
    for line in cache.lines().skip(1) {
        let mut t: wrl_sandbox::Trajectory = serde_json::from_str(line).expect("a demo");
        for s in &mut t.steps {
            let name = s.screenshot.take().expect("a screenshot");
            let png = std::fs::read(run.join("data").join(&name)).expect("the PNG");
            let shot = format!("shots/{}", name.replace('/', "-"));
            std::fs::write(files.join(&shot), png).expect("a copy");
            s.screenshot = Some(shot);
        }
        assert!(t.steps.iter().all(|s| s.boxes.is_some()), "the expert records boxes");
        with.push_str(&serde_json::to_string(&t).expect("JSON"));
        with.push('\n');
        let mut bare = t.clone();
        bare.steps.iter_mut().for_each(|s| s.boxes = None);
        unboxed.push_str(&serde_json::to_string(&bare).expect("JSON"));
        unboxed.push('\n');
        t.steps.iter_mut().for_each(|s| s.screenshot = None);
        without.push_str(&serde_json::to_string(&t).expect("JSON"));
        without.push('\n');
    }
    std::fs::write(files.join("demos.jsonl"), with).expect("the file");
    std::fs::write(files.join("bare.jsonl"), without).expect("the file");
    std::fs::write(files.join("unboxed.jsonl"), unboxed).expect("the file");
    let recipe = Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes/vl_sft.wrl");
    let run_with = |file: &str, out: &str, more: &[&str]| {
        let demos =
            format!("demos=jsonl(\"{}\") {{ kind = trajectories }}", files.join(file).display());
        let mut args: Vec<std::ffi::OsString> = vec![
            "run".into(),
            recipe.clone().into_os_string(),
            "--out".into(),
            dir.join(out).into_os_string(),
            "--set".into(),
            policy_of(model, "qwen3_vl").into(),
            "--set".into(),
            demos.into(),
        ];
        args.extend(more.iter().flat_map(|m| ["--set".into(), (*m).into()]));
        wrl_cli::run_captured(args)
    };
    let run_on = |file: &str, out: &str| run_with(file, out, &[]);
    // OpenWebRL's own tools: the steps grounded at their boxes train; without boxes, E0503.
    let openwebrl = ["web.tools=std::tools::openwebrl", "web.per_turn=many"];
    let (code, _, stderr) = run_with("demos.jsonl", "grounded", &openwebrl);
    assert_eq!(code, 0, "{stderr}");
    let (code, _, stderr) = run_with("unboxed.jsonl", "unboxed", &openwebrl);
    assert_ne!(code, 0);
    // (The message wraps: its words are looked for one by one.)
    let said = ["E0503", "boxes", "std::sandbox::demos", "std::tools::elements"];
    assert!(said.iter().all(|w| stderr.contains(w)), "{stderr}");
    let (code, _, stderr) = run_on("demos.jsonl", "from-file");
    assert_eq!(code, 0, "{stderr}");
    let losses = crate::run_hf::sft_losses(
        &RunDir::resume(&dir.join("from-file")).expect("the run").read_metrics().expect("lines"),
    );
    assert!(losses.len() >= 3 && losses.iter().all(|l| l.is_finite()), "{losses:?}");
    let (code, _, stderr) = run_on("bare.jsonl", "bare");
    assert_ne!(code, 0);
    assert!(stderr.contains("E0503") && stderr.contains("hold no screenshot"), "{stderr}");
    let broken = std::fs::read_dir(files.join("shots")).expect("shots").next();
    let broken = broken.expect("a PNG").expect("an entry").path();
    std::fs::write(&broken, b"not a png").expect("a broken PNG");
    let (code, _, stderr) = run_on("demos.jsonl", "broken");
    assert_ne!(code, 0);
    let name = broken.file_name().expect("a name").to_string_lossy().into_owned();
    assert!(stderr.contains("E0503") && stderr.contains(&name), "{stderr}");
    assert!(stderr.contains("not an image"), "{stderr}");
}

/// recipes/openwebrl.wrl's `smoke_vl` profile (#43): the recipe's model class, a Qwen3-VL (the
/// tiny random one the repository ships), SFT on the expert's demonstrations with a screenshot
/// of each step, then both horizon phases of GRPO and every evaluation, on screenshots of the
/// sandbox web in Chromium. The run finishes, the demonstrations' PNGs are on disk, SFT's loss
/// falls, and each phase logs its iteration.
#[test]
fn openwebrl_smoke_vl_runs_the_recipes_model_class_on_screenshots() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let args = ["run", "recipes/openwebrl.wrl", "--profile", "smoke_vl", "--out"];
    let mut args: Vec<std::ffi::OsString> = args.iter().map(|a| a.into()).collect();
    args.push(out.clone().into_os_string());
    let (code, _, stderr) = wrl_tests::wrlc(args);
    assert_eq!(code, 0, "{stderr}");
    let pngs = std::fs::read_dir(out.join("data/demos")).unwrap().count();
    assert!(pngs >= 8, "one screenshot per expert step: {pngs}");
    let run = RunDir::resume(&out).unwrap();
    let metrics = run.read_metrics().unwrap();
    let sft = crate::run_hf::sft_losses(&metrics);
    assert!(sft.last().unwrap() < &(sft[0] - 1.0), "SFT's loss does not fall: {sft:?}");
    let rl = metrics.iter().filter(|m| matches!(m, MetricLine::Rl(_))).count();
    assert_eq!(rl, 2, "one iteration per phase");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["status"], "finished");
}

/// recipes/openwebrl-8b.wrl's `smoke_vl` profile (#43): the launcher's GRPO straight from the
/// tiny random Qwen3-VL, the last 3 screenshots in context and OpenWebRL's own tools. The run
/// finishes, each iteration logs, and every policy turn reached the env through OpenWebRL's
/// tool set: what the env ran is an OpenWebRL action's JSON line, else the turn was refused as
/// a turn of that set (a random model's calls do not parse).
#[test]
fn openwebrl_8b_smoke_vl_runs_grpo_with_openwebrls_tools() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let args = ["run", "recipes/openwebrl-8b.wrl", "--profile", "smoke_vl", "--out"];
    let mut args: Vec<std::ffi::OsString> = args.iter().map(|a| a.into()).collect();
    args.push(out.clone().into_os_string());
    let (code, _, stderr) = wrl_tests::wrlc(args);
    assert_eq!(code, 0, "{stderr}");
    let run = RunDir::resume(&out).unwrap();
    let metrics = run.read_metrics().unwrap();
    let rl = metrics.iter().filter(|m| matches!(m, MetricLine::Rl(_))).count();
    assert_eq!(rl, 2, "two iterations");
    let lines = std::fs::read_to_string(out.join("trajectories.jsonl")).unwrap();
    let mut turns = 0;
    for line in lines.lines() {
        let t: wrl_exec::TrajectoryLine = serde_json::from_str(line).unwrap();
        for s in &t.trajectory.steps {
            turns += 1;
            let own = |a: &String| a.starts_with("{\"toolset\":\"openwebrl_norm\"");
            let ran = !s.actions.is_empty() && s.actions.iter().all(own);
            let refused = s.feedback.starts_with("error:");
            assert!(ran || refused, "{:?} → {}", s.actions, s.feedback);
            assert!(s.actions.iter().all(|a| own(a) || !a.starts_with("{\"toolset\"")));
        }
    }
    assert!(turns > 0, "no policy turn");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["status"], "finished");
}
