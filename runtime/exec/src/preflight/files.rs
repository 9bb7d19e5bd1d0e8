//! The files a run reads before it starts and the directory it writes into: task, QA and
//! trajectory JSONL (every line checked, a bad one named by file, line and column), and the run
//! directory a new run may use.

use std::path::Path;

use wrl_plan::params::RecordKind;
use wrl_sandbox::{Task, Trajectory};

use crate::error::{Fault, RunError};

/// The records of a task or trajectory JSONL file.
pub(crate) enum Records {
    Tasks(Vec<Task>),
    Trajectories(Vec<Trajectory>),
}

/// Reads a task (`kind = tasks`) or trajectory JSONL file; on failure, the message and a label
/// for the place: a file that cannot be read, a malformed line (with its line and column), or
/// a file with no records.
pub(crate) fn read_jsonl(path: &str, kind: RecordKind) -> Result<Records, (String, String)> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| (format!("cannot read `{path}`: {e}"), "cannot be read".to_string()))?;
    let mut tasks = Vec::new();
    let mut trajectories = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let parsed = match kind {
            RecordKind::Tasks => serde_json::from_str::<Task>(line).map(|t| tasks.push(t)),
            RecordKind::Qa => {
                serde_json::from_str::<QaPair>(line).map(|q| tasks.push(q.task(i + 1)))
            }
            RecordKind::Trajectories => {
                serde_json::from_str::<Trajectory>(line).map(|t| trajectories.push(t))
            }
        };
        if let Err(e) = parsed {
            let what = match kind {
                RecordKind::Tasks => "task",
                RecordKind::Qa => "QA",
                RecordKind::Trajectories => "trajectory",
            };
            let message = format!(
                "`{path}` line {}, column {}: not a valid {what} record: {}",
                i + 1,
                e.column(),
                crate::rundir::without_place(&e)
            );
            return Err((message, format!("line {} of this file is malformed", i + 1)));
        }
    }
    if tasks.is_empty() && trajectories.is_empty() {
        return Err((format!("`{path}` holds no records"), "this file is empty".into()));
    }
    // The same split as the parse above: tasks and QA pairs are tasks, the rest trajectories.
    Ok(match kind {
        RecordKind::Tasks | RecordKind::Qa => Records::Tasks(tasks),
        RecordKind::Trajectories => Records::Trajectories(trajectories),
    })
}

impl Records {
    /// No records yet, of the kind `kind` reads into.
    pub(crate) fn empty(kind: RecordKind) -> Records {
        match kind {
            RecordKind::Tasks | RecordKind::Qa => Records::Tasks(Vec::new()),
            RecordKind::Trajectories => Records::Trajectories(Vec::new()),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Records::Tasks(t) => t.len(),
            Records::Trajectories(t) => t.len(),
        }
    }
}

/// Parses one record of `kind` (the `n`-th, 1-based, which names a QA pair without an id) from
/// a JSON value (a Parquet row's columns) into `out`; on failure, why, without a place.
pub(crate) fn parse_record(
    v: serde_json::Value,
    kind: RecordKind,
    n: usize,
    out: &mut Records,
) -> Result<(), String> {
    let what = match kind {
        RecordKind::Tasks => "task",
        RecordKind::Qa => "QA",
        RecordKind::Trajectories => "trajectory",
    };
    let bad = |e: serde_json::Error| {
        format!("not a valid {what} record: {}", crate::rundir::without_place(&e))
    };
    match (kind, out) {
        (RecordKind::Tasks, Records::Tasks(t)) => t.push(serde_json::from_value(v).map_err(bad)?),
        (RecordKind::Qa, Records::Tasks(t)) => {
            t.push(serde_json::from_value::<QaPair>(v).map_err(bad)?.task(n))
        }
        (RecordKind::Trajectories, Records::Trajectories(t)) => {
            t.push(serde_json::from_value(v).map_err(bad)?)
        }
        _ => return Err(format!("a {what} record in a dataset of another kind")),
    }
    Ok(())
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
            Fault::RunDir,
            format!("the run directory `{shown}` is a file, not a directory"),
        )
        .help(choose));
    }
    if let Some(pid) = crate::rundir::lock::Lock::holder(root) {
        return Err(RunError::from(crate::rundir::RunDirError::Busy {
            path: shown.to_string(),
            pid,
        }));
    }
    if root.join(crate::rundir::STATE).exists() {
        return Err(RunError::new(Fault::RunDir, format!("`{shown}` already holds a run"))
            .help(format!("resume it with `wrlc run --resume {shown}`, or {choose}")));
    }
    match std::fs::read_dir(root).map(|mut entries| entries.next().is_none()) {
        Ok(true) => Ok(()),
        Ok(false) => Err(RunError::new(
            Fault::RunDir,
            format!("`{shown}` is not a run directory, and it holds other files"),
        )
        .help(choose)),
        Err(e) => {
            Err(RunError::new(Fault::RunDir, format!("cannot read `{shown}`: {e}")).help(choose))
        }
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
        let (message, label) = read_jsonl(&path, RecordKind::Tasks).err().unwrap();
        assert!(message.starts_with(&format!("`{path}` line 2, column ")), "{message}");
        assert!(message.contains("missing field"), "{message}");
        assert!(!message.contains(" at line 1"), "{message}");
        assert_eq!(label, "line 2 of this file is malformed");
        std::fs::write(&p, "\n\n").unwrap();
        assert!(
            read_jsonl(&path, RecordKind::Tasks).err().unwrap().0.ends_with("holds no records")
        );
    }

    #[test]
    fn qa_pairs_are_read_as_tasks_checked_against_their_answer() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("qa.jsonl");
        let lines = "{\"question\": \"Capital of France?\", \"answer\": \"Paris\"}\n\n\
                     {\"id\": \"q2\", \"question\": \"2+2?\", \"answer\": \"4\"}\n";
        std::fs::write(&p, lines).unwrap();
        let path = p.to_string_lossy().into_owned();
        let Ok(Records::Tasks(tasks)) = read_jsonl(&path, RecordKind::Qa) else {
            panic!("not tasks")
        };
        assert_eq!((tasks[0].id.as_str(), tasks[1].id.as_str()), ("qa-00001", "q2"));
        assert_eq!(crate::rollout::reference(&tasks[0]), Some("Paris"));
        std::fs::write(&p, "{\"question\": \"x\"}\n").unwrap();
        let (message, _) = read_jsonl(&path, RecordKind::Qa).err().unwrap();
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
