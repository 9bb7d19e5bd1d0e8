//! The preflight: everything `wrlc run` can find wrong with a plan before any work starts —
//! `unknown` values it needs, data files that are missing or malformed, models it cannot build,
//! constructors it does not implement, no Chromium, a run directory it must not write into —
//! each reported with its code and, where a declaration is to blame, that declaration.

use std::path::Path;

use wrl_plan::{Node, NodeKind, PVal, Plan};
use wrl_sandbox::{Task, Trajectory};
use wrl_trainer::TinyConfig;

use crate::exec::RunError;

/// Parameters the runtime may leave `unknown` (they mean "not given").
const OPTIONAL_UNKNOWN: &[&str] = &["count", "judge", "process_reward", "dual_clip", "judge_model"];

/// Dataset constructors this runtime reads.
const DATASETS: &[&str] =
    &["std::sandbox::tasks", "std::sandbox::demos", "std::sandbox::qa", "jsonl", "mixture"];

/// The help of E0501, here and when the pool cannot start (exec.rs).
pub(crate) const INSTALL_CHROMIUM: &str = "install it with `apt-get install \
    chromium-headless-shell` (or `chromium`), or point WRL_CHROMIUM or `--chromium` at a \
    Chromium binary";

/// Refuses a plan the runtime cannot run, listing every problem, before any work.
pub fn preflight(plan: &Plan, chromium: Option<&Path>) -> Result<(), Vec<RunError>> {
    let mut errs = Vec::new();
    if let Some(n) = plan.nodes.iter().find(|n| needs_chromium(n))
        && let Err(e) = wrl_browser::find_chromium(chromium)
    {
        // `find_chromium` only ever says where it looked; its own advice is the help below.
        let why = match e {
            wrl_browser::LaunchError::NotFound(why) => why,
            other => other.to_string(),
        };
        let label = match n.kind {
            NodeKind::Env => "this environment runs in Chromium",
            _ => "the scripted expert records these demonstrations in Chromium",
        };
        errs.push(
            RunError::new("E0501", format!("no Chromium to run the browser environment: {why}"))
                .help(INSTALL_CHROMIUM)
                .at(n, None, label),
        );
    }
    for n in &plan.nodes {
        for (k, v) in &n.params {
            if v.is_unknown() && !OPTIONAL_UNKNOWN.contains(&k.as_str()) {
                errs.push(
                    RunError::new("E0500", format!("`{}` of `{}` is `unknown`", k, n.decl))
                        .help("give it a value in the recipe, with a profile, or with `--set`")
                        .at(n, Some(k), "the runtime needs this value"),
                );
            }
        }
        match n.kind {
            NodeKind::LoadDataset => errs.extend(dataset(n)),
            NodeKind::LoadModel => errs.extend(model(n)),
            NodeKind::RlPhase => errs.extend(crate::rl_cfg::refusals(n)),
            NodeKind::Env => errs.extend(crate::env_cfg::refusals(n)),
            NodeKind::Agent => errs.extend(agent_refusal(plan, n).into_iter().chain(role_names(n))),
            _ => {}
        }
    }
    if errs.is_empty() { Ok(()) } else { Err(errs) }
}

fn needs_chromium(n: &Node) -> bool {
    match n.kind {
        NodeKind::Env => n.ctor != "search_api",
        NodeKind::LoadDataset => n.ctor == "std::sandbox::demos" && !crate::exec::search_demos(n),
        _ => false,
    }
}

/// Roles of a `weights = per_role` graph that cannot name a checkpoint directory.
fn role_names(n: &Node) -> Vec<RunError> {
    if n.ctor != "graph" || n.param("weights").and_then(PVal::as_str) != Some("per_role") {
        return Vec::new();
    }
    let Ok(spec) = crate::graph::GraphSpec::from_node(n) else { return Vec::new() };
    let ok = |r: &str| r.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    spec.modules
        .values()
        .filter(|m| m.trainable && !ok(&m.role))
        .map(|m| {
            RunError::new(
                "E0502",
                format!(
                    "agent `{}`: the role `{}` of module `{}` cannot name the directory its \
                     weights are saved in",
                    n.decl, m.role, m.name
                ),
            )
            .help("use letters, digits, `_` and `-` in the roles of a `weights = per_role` graph")
            .at(
                n,
                Some("weights"),
                "each role's weights are saved under `roles/ROLE/`",
            )
        })
        .collect()
}

/// A module graph acting in a `search_api` env: its modules observe browser pages.
fn agent_refusal(plan: &Plan, n: &Node) -> Option<RunError> {
    let Some(PVal::Ref { node: env }) = n.param("env") else { return None };
    let search = plan.nodes.iter().any(|e| &e.id == env && e.ctor == "search_api");
    (n.ctor == "graph" && search).then(|| {
        RunError::new(
            "E0502",
            format!("agent `{}`: module graphs in a `search_api` env are not implemented", n.decl),
        )
        .help("use a `react` agent with the search tools, or a `browser` env")
        .at(n, Some("env"), "this runtime runs graphs only in browsers")
    })
}

/// A dataset this runtime cannot read, or whose file is missing, empty or malformed.
fn dataset(n: &Node) -> Vec<RunError> {
    let mut errs: Vec<RunError> = ["jsonl", "parquet"]
        .contains(&n.ctor.as_str())
        .then(|| missing_file(n))
        .flatten()
        .into_iter()
        .collect();
    if !DATASETS.contains(&n.ctor.as_str()) {
        errs.push(
            RunError::new(
                "E0502",
                format!("dataset `{}` ({}) cannot be read by this runtime yet", n.decl, n.ctor),
            )
            .help(
                "use `jsonl(…)` or the sandbox generators (`std::sandbox::tasks`, \
                 `std::sandbox::demos`, `std::sandbox::qa`)",
            )
            .at(n, None, "this runtime does not read it"),
        );
    }
    if n.ctor == "jsonl" && errs.is_empty() {
        let path = n.param("path").and_then(PVal::as_str).unwrap_or("");
        let kind = n.param("kind").and_then(PVal::as_str).unwrap_or("trajectories");
        errs.extend(jsonl_problem(path, kind).map(|(message, label)| {
            RunError::new("E0503", format!("dataset `{}`: {message}", n.decl))
                .help("docs/sandbox.md describes the task and trajectory JSONL formats")
                .at(n, Some("path"), label)
        }));
    }
    errs
}

/// The data file of a `jsonl` or `parquet` dataset, when it does not exist.
fn missing_file(n: &Node) -> Option<RunError> {
    let path = n.param("path").and_then(PVal::as_str)?;
    (!Path::new(path).exists()).then(|| {
        RunError::new("E0503", format!("dataset `{}` reads `{path}`, which does not exist", n.decl))
            .help("paths are relative to the directory `wrlc run` is started in")
            .at(n, Some("path"), "no such file")
    })
}

/// What is wrong with a JSONL file of `kind` records (`tasks` or `trajectories`): a message
/// naming the file and line, and a label for the recipe. Reads the whole file, as the run will.
fn jsonl_problem(path: &str, kind: &str) -> Option<(String, String)> {
    read_jsonl(path, kind).err()
}

/// The records of a task or trajectory JSONL file.
pub(crate) enum Records {
    Tasks(Vec<Task>),
    Trajectories(Vec<Trajectory>),
}

/// Reads a task (`kind = tasks`) or trajectory JSONL file; on failure, the message and a label
/// for the place: a file that cannot be read, a malformed line (with its line and column), or
/// a file with no records.
pub(crate) fn read_jsonl(path: &str, kind: &str) -> Result<Records, (String, String)> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| (format!("cannot read `{path}`: {e}"), "cannot be read".to_string()))?;
    let mut tasks = Vec::new();
    let mut trajectories = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let parsed = match kind {
            "tasks" => serde_json::from_str::<Task>(line).map(|t| tasks.push(t)),
            "qa" => serde_json::from_str::<QaPair>(line).map(|q| tasks.push(q.task(i + 1))),
            _ => serde_json::from_str::<Trajectory>(line).map(|t| trajectories.push(t)),
        };
        if let Err(e) = parsed {
            let what = match kind {
                "tasks" => "task",
                "qa" => "QA",
                _ => "trajectory",
            };
            let message = format!(
                "`{path}` line {}, column {}: not a valid {what} record: {}",
                i + 1,
                e.column(),
                without_place(&e)
            );
            return Err((message, format!("line {} of this file is malformed", i + 1)));
        }
    }
    if tasks.is_empty() && trajectories.is_empty() {
        return Err((format!("`{path}` holds no records"), "this file is empty".into()));
    }
    // The same split as the parse above: tasks and QA pairs are tasks, the rest trajectories.
    Ok(match kind {
        "tasks" | "qa" => Records::Tasks(tasks),
        _ => Records::Trajectories(trajectories),
    })
}

/// One line of QA JSONL (`kind = qa`): a question and its reference answer (docs/sandbox.md).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct QaPair {
    #[serde(default)]
    id: Option<String>,
    question: String,
    answer: String,
}

impl QaPair {
    /// The pair as a task for a search agent: answered in at most 30 steps, checked by
    /// normalised text match against the reference.
    fn task(self, line: usize) -> Task {
        Task {
            id: self.id.unwrap_or_else(|| format!("qa-{line:05}")),
            split: wrl_sandbox::Split::Train,
            template: "qa".into(),
            site: "search".into(),
            start_path: String::new(),
            goal: self.question,
            params: Default::default(),
            checker: wrl_sandbox::Checker::Answer {
                expected: self.answer,
                mode: wrl_sandbox::AnswerMode::Text,
            },
            max_steps: 30,
            content_seed: 0,
        }
    }
}

/// serde_json's message without its ` at line L column C` (the line is always 1 here).
fn without_place(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let place = format!(" at line {} column {}", e.line(), e.column());
    text.strip_suffix(&place).map_or(text.clone(), str::to_string)
}

/// A model this runtime cannot build.
fn model(n: &Node) -> Option<RunError> {
    // An `api(…)` model runs frozen graph modules over HTTP (`brains.rs`).
    if n.ctor == "api" {
        return None;
    }
    if n.ctor != "tiny_transformer" {
        return Some(
            RunError::new(
                "E0502",
                format!("model `{}` ({}) cannot run on this runtime yet", n.decl, n.ctor),
            )
            .help("run the recipe's `smoke` profile, which uses `std::models::tiny`")
            .at(n, None, "this runtime trains only `tiny_transformer` models"),
        );
    }
    let size = |k: &str, default: usize| n.num(k).map_or(default, |v| v as usize);
    let defaults = TinyConfig::default();
    let cfg = TinyConfig {
        layers: size("layers", defaults.layers),
        d_model: size("d_model", defaults.d_model),
        heads: size("heads", defaults.heads),
        context: size("context", defaults.context),
        ..defaults
    };
    let e = cfg.validate().err()?;
    let cannot = format!("model `{}` cannot be built", n.decl);
    Some(if cfg.heads > 0 && !cfg.d_model.is_multiple_of(cfg.heads) {
        RunError::new(
            "E0505",
            format!(
                "{cannot}: `heads` = {} does not divide `d_model` = {}",
                cfg.heads, cfg.d_model
            ),
        )
        .help("choose `heads` that divides `d_model` (4 heads for `d_model = 128`)")
        .at(n, Some("heads"), "each head takes an equal share of `d_model`")
    } else {
        RunError::new("E0505", format!("{cannot}: {e}")).at(n, None, "this model cannot be built")
    })
}

/// Refuses a run directory a new run must not write into: a file, a directory that already
/// holds a run, or a directory with other files in it. A missing or empty directory is fine.
pub fn check_out(root: &Path) -> Result<(), RunError> {
    let shown = root.display();
    let choose = "choose a new or empty directory with `--out DIR`";
    if !root.exists() {
        return Ok(());
    }
    if !root.is_dir() {
        return Err(RunError::new(
            "E0504",
            format!("the run directory `{shown}` is a file, not a directory"),
        )
        .help(choose));
    }
    if root.join(crate::rundir::STATE).exists() {
        return Err(RunError::new("E0504", format!("`{shown}` already holds a run"))
            .help(format!("resume it with `wrlc run --resume {shown}`, or {choose}")));
    }
    match std::fs::read_dir(root).map(|mut entries| entries.next().is_none()) {
        Ok(true) => Ok(()),
        Ok(false) => Err(RunError::new(
            "E0504",
            format!("`{shown}` is not a run directory, and it holds other files"),
        )
        .help(choose)),
        Err(e) => Err(RunError::new("E0504", format!("cannot read `{shown}`: {e}")).help(choose)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_line_is_named_by_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        std::fs::write(&p, "\n{\"nope\": 1}\n").unwrap();
        let path = p.to_string_lossy().into_owned();
        let (message, label) = jsonl_problem(&path, "tasks").unwrap();
        assert!(message.starts_with(&format!("`{path}` line 2, column ")), "{message}");
        assert!(message.contains("missing field"), "{message}");
        assert!(!message.contains(" at line 1"), "{message}");
        assert_eq!(label, "line 2 of this file is malformed");
        std::fs::write(&p, "\n\n").unwrap();
        assert!(jsonl_problem(&path, "tasks").unwrap().0.ends_with("holds no records"));
    }

    #[test]
    fn qa_pairs_are_read_as_tasks_checked_against_their_answer() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("qa.jsonl");
        let lines = "{\"question\": \"Capital of France?\", \"answer\": \"Paris\"}\n\n\
                     {\"id\": \"q2\", \"question\": \"2+2?\", \"answer\": \"4\"}\n";
        std::fs::write(&p, lines).unwrap();
        let path = p.to_string_lossy().into_owned();
        let Ok(Records::Tasks(tasks)) = read_jsonl(&path, "qa") else { panic!("not tasks") };
        assert_eq!((tasks[0].id.as_str(), tasks[1].id.as_str()), ("qa-00001", "q2"));
        assert_eq!(crate::rollout::reference(&tasks[0]), Some("Paris"));
        std::fs::write(&p, "{\"question\": \"x\"}\n").unwrap();
        let (message, _) = jsonl_problem(&path, "qa").unwrap();
        assert!(message.contains("not a valid QA record: missing field `answer`"), "{message}");
    }

    #[test]
    fn the_run_directory_must_be_new_or_empty() {
        let dir = tempfile::tempdir().unwrap();
        assert!(check_out(&dir.path().join("new")).is_ok());
        assert!(check_out(dir.path()).is_ok());
        std::fs::write(dir.path().join("x"), "").unwrap();
        assert!(check_out(dir.path()).unwrap_err().message.contains("holds other files"));
        assert!(check_out(&dir.path().join("x")).unwrap_err().message.contains("is a file"));
        std::fs::write(dir.path().join(crate::rundir::STATE), "{}").unwrap();
        assert!(check_out(dir.path()).unwrap_err().message.contains("already holds a run"));
    }
}
