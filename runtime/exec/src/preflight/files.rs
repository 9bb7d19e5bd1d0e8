//! The files a run reads before it starts and the directory it writes into: task, QA,
//! trajectory and chat rows (every JSONL line checked, a bad one named by file, line and field; a
//! dataset's `columns` mapping read here for JSONL and Parquet alike), and the run directory a
//! new run may use.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value as Json;
use wrl_plan::params::RecordKind;
use wrl_sandbox::{Task, Trajectory};

use crate::error::{Fault, RunError};

/// The records of a task or trajectory JSONL file.
pub(crate) enum Records {
    Tasks(Vec<Task>),
    Trajectories(Vec<Trajectory>),
    /// Chat conversations (`kind = chat`), checked (`super::chat`).
    Chats(Vec<wrl_trainer::Trajectory>),
}

/// Reads a task, QA or trajectory JSONL file, each line's keys renamed by `columns`; on
/// failure, the message and a label for the place: a file that cannot be read, a line that is
/// not JSON (with its column) or not a record (with the field), or a file with no records.
pub(crate) fn read_jsonl(
    path: &str,
    kind: RecordKind,
    columns: &Columns,
) -> Result<Records, (String, String)> {
    let mut out = Records::empty(kind);
    // A regular file only, a line at a time, each line bounded (`wrl_sandbox::datafile`).
    let read = wrl_sandbox::datafile::each_line(Path::new(path), |n, line| {
        if line.trim().is_empty() {
            return Ok(());
        }
        let row = serde_json::from_str::<serde_json::Value>(line).map_err(|e| {
            format!(", column {}: not JSON: {}", e.column(), crate::rundir::without_place(&e))
        })?;
        parse_record(row, kind, columns, n, &mut out).map_err(|why| format!(": {why}"))
    });
    if let Err((line, why)) = read {
        return Err(match line {
            0 => (format!("cannot read `{path}`: {why}"), not_read_label(&why)),
            n if why.starts_with(',') || why.starts_with(':') => {
                (format!("`{path}` line {n}{why}"), format!("line {n} of this file is malformed"))
            }
            n => {
                (format!("`{path}` line {n} {why}"), format!("line {n} of this file is malformed"))
            }
        });
    }
    if out.is_empty() {
        return Err((format!("`{path}` holds no records"), "this file is empty".into()));
    }
    Ok(out)
}

/// The code of a data file's error: a chat conversation that is not well formed (E0527), or a
/// file that cannot be read as its records (E0503).
pub(crate) fn fault_of(message: &str) -> Fault {
    if message.contains(super::chat::NOT_A_CONVERSATION) { Fault::ChatData } else { Fault::Data }
}

/// The label of a data file that cannot be read at all.
pub(crate) fn not_read_label(why: &str) -> String {
    if why.starts_with("it is not a regular file") {
        "not a regular file".into()
    } else {
        "cannot be read".into()
    }
}

impl Records {
    /// No records yet, of the kind `kind` reads into.
    pub(crate) fn empty(kind: RecordKind) -> Records {
        match kind {
            // Grounding pairs are refused before any is read (`limits::grounding`).
            RecordKind::Tasks | RecordKind::Qa | RecordKind::Grounding => {
                Records::Tasks(Vec::new())
            }
            RecordKind::Trajectories => Records::Trajectories(Vec::new()),
            RecordKind::Chat => Records::Chats(Vec::new()),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Records::Tasks(t) => t.len(),
            Records::Trajectories(t) => t.len(),
            Records::Chats(c) => c.len(),
        }
    }
}

/// A dataset's `columns`: record field → the column it is read from.
pub(crate) type Columns = BTreeMap<String, String>;

/// Parses one record of `kind` (the `n`-th, 1-based, which names a QA pair without an id) from
/// a row (a JSONL line, a Parquet row's columns) read through `columns` into `out`; on failure,
/// why, without a place.
pub(crate) fn parse_record(
    row: Json,
    kind: RecordKind,
    columns: &Columns,
    n: usize,
    out: &mut Records,
) -> Result<(), String> {
    let what = match kind {
        RecordKind::Tasks => "task",
        RecordKind::Qa => "QA",
        RecordKind::Trajectories => "trajectory",
        RecordKind::Chat => "chat",
        RecordKind::Grounding => return Err("grounding pairs are not read by this runtime".into()),
    };
    let row = match row {
        Json::Object(m) if !columns.is_empty() => {
            Json::Object(wrl_sandbox::columns::select(&m, kind.fields(), columns)?)
        }
        other => other,
    };
    let bad = |e: serde_path_to_error::Error<serde_json::Error>| {
        let inner = crate::rundir::without_place(e.inner());
        let mut field = e.path().to_string();
        // An unknown key's path ends in the key, which the message already names.
        if inner.starts_with("unknown field") {
            field = field.rsplit_once('.').map_or(".".into(), |(parent, _)| parent.to_string());
        }
        if field == "." {
            return format!("not a valid {what} record: {inner}");
        }
        let top = field.split(['.', '[']).next().unwrap_or_default();
        let column = columns.get(top).map(|c| format!(" (column `{c}`)")).unwrap_or_default();
        format!("not a valid {what} record: `{field}`{column}: {inner}")
    };
    match (kind, out) {
        (RecordKind::Tasks, Records::Tasks(t)) => {
            let task: Task = serde_path_to_error::deserialize(row).map_err(bad)?;
            task.check_start_path()
                .map_err(|why| format!("not a valid task record: `start_path`: {why}"))?;
            t.push(task)
        }
        (RecordKind::Qa, Records::Tasks(t)) => {
            t.push(serde_path_to_error::deserialize::<_, QaPair>(row).map_err(bad)?.task(n))
        }
        (RecordKind::Trajectories, Records::Trajectories(t)) => {
            t.push(serde_path_to_error::deserialize(row).map_err(bad)?)
        }
        (RecordKind::Chat, Records::Chats(c)) => match &row {
            Json::Object(m) => c.push(super::chat::conversation(m)?),
            other => {
                return Err(format!(
                    "{}: the row is not an object with `messages`: {other}",
                    super::chat::NOT_A_CONVERSATION
                ));
            }
        },
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
    answer: QaAnswer,
}

/// A QA record's reference: one answer, or several (any one is right).
enum QaAnswer {
    One(String),
    Several(Vec<String>),
}

/// A string or a list of strings, with an error that says so (an untagged enum's says neither).
impl<'de> serde::Deserialize<'de> for QaAnswer {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<QaAnswer, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = QaAnswer;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or a list of strings")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<QaAnswer, E> {
                Ok(QaAnswer::One(v.to_string()))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<QaAnswer, E> {
                Ok(QaAnswer::One(v))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<QaAnswer, A::Error> {
                let mut all = Vec::new();
                while let Some(a) = seq.next_element::<String>()? {
                    all.push(a);
                }
                Ok(QaAnswer::Several(all))
            }
        }
        d.deserialize_any(V)
    }
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
                expected: match self.answer {
                    QaAnswer::One(a) => a,
                    QaAnswer::Several(all) => all.join(wrl_sandbox::REFERENCE_SEPARATOR),
                },
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
        let (message, label) = read_jsonl(&path, RecordKind::Tasks, &Columns::new()).err().unwrap();
        assert_eq!(
            message,
            format!("`{path}` line 2: not a valid task record: missing field `id`")
        );
        assert_eq!(label, "line 2 of this file is malformed");
        std::fs::write(&p, "\n\n").unwrap();
        assert!(
            read_jsonl(&path, RecordKind::Tasks, &Columns::new())
                .err()
                .unwrap()
                .0
                .ends_with("holds no records")
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
        let Ok(Records::Tasks(tasks)) = read_jsonl(&path, RecordKind::Qa, &Columns::new()) else {
            panic!("not tasks")
        };
        assert_eq!((tasks[0].id.as_str(), tasks[1].id.as_str()), ("qa-00001", "q2"));
        assert_eq!(crate::rollout::reference(&tasks[0]), Some("Paris"));
        std::fs::write(&p, "{\"question\": \"x\"}\n").unwrap();
        let (message, _) = read_jsonl(&path, RecordKind::Qa, &Columns::new()).err().unwrap();
        assert!(message.contains("not a valid QA record: missing field `answer`"), "{message}");
    }

    #[test]
    fn a_column_mapping_reads_fields_from_keys_of_other_names() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("qa.jsonl");
        let path = p.to_string_lossy().into_owned();
        let columns: Columns = [("question", "prompt"), ("answer", "ground_truth")]
            .map(|(f, c)| (f.to_string(), c.to_string()))
            .into();
        let row =
            "{\"prompt\": \"Capital of France?\", \"ground_truth\": \"Paris\", \"level\": 3}\n";
        std::fs::write(&p, row).unwrap();
        let Ok(Records::Tasks(tasks)) = read_jsonl(&path, RecordKind::Qa, &columns) else {
            panic!("not tasks")
        };
        assert_eq!(tasks[0].goal, "Capital of France?");
        assert_eq!(crate::rollout::reference(&tasks[0]), Some("Paris"));
        // Without the mapping the keys are not a QA record's.
        let (message, _) = read_jsonl(&path, RecordKind::Qa, &Columns::new()).err().unwrap();
        assert!(
            message.contains("line 1: not a valid QA record: unknown field `ground_truth`"),
            "{message}"
        );
        // A mapped column a row lacks, and a value of the wrong type, are named by line and field.
        std::fs::write(&p, format!("{row}{{\"prompt\": \"x\", \"answer\": \"y\"}}\n")).unwrap();
        let (message, label) = read_jsonl(&path, RecordKind::Qa, &columns).err().unwrap();
        assert_eq!(
            message,
            format!(
                "`{path}` line 2: no column `ground_truth`, which `columns` reads as `answer` \
                 (the row has `answer`, `prompt`)"
            )
        );
        assert_eq!(label, "line 2 of this file is malformed");
        std::fs::write(&p, "{\"prompt\": \"x\", \"ground_truth\": 4}\n").unwrap();
        let (message, _) = read_jsonl(&path, RecordKind::Qa, &columns).err().unwrap();
        assert!(
            message.ends_with(
                "line 1: not a valid QA record: `answer` (column `ground_truth`): invalid type: \
                 integer `4`, expected a string or a list of strings"
            ),
            "{message}"
        );
        // A line that is not JSON keeps its column.
        std::fs::write(&p, "{\"prompt\": \n").unwrap();
        let (message, _) = read_jsonl(&path, RecordKind::Qa, &columns).err().unwrap();
        assert!(message.contains("line 1, column 11: not JSON: EOF"), "{message}");
    }

    #[test]
    fn the_record_types_have_the_fields_the_language_lists() {
        let fields = |v: serde_json::Value| -> Vec<String> {
            let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            k.sort();
            k
        };
        let sorted = |kind: RecordKind| -> Vec<String> {
            let mut k: Vec<String> = kind.fields().iter().map(|f| f.to_string()).collect();
            k.sort();
            k
        };
        let task =
            wrl_sandbox::generate(&wrl_sandbox::Content::new(0), wrl_sandbox::Split::Train, 1, 0);
        assert_eq!(fields(serde_json::to_value(&task[0]).unwrap()), sorted(RecordKind::Tasks));
        let trajectory = wrl_sandbox::Trajectory {
            task_id: String::new(),
            template: String::new(),
            goal: String::new(),
            agent: String::new(),
            steps: Vec::new(),
            outcome: wrl_sandbox::TrajOutcome {
                reason: wrl_sandbox::Ending::Completed,
                message: String::new(),
                answer: None,
                success: true,
                detail: String::new(),
                reward: None,
            },
            elapsed_ms: 0,
        };
        assert_eq!(
            fields(serde_json::to_value(&trajectory).unwrap()),
            sorted(RecordKind::Trajectories)
        );
        // A QA pair takes exactly the listed keys (it refuses others).
        let qa: serde_json::Map<String, serde_json::Value> =
            RecordKind::Qa.fields().iter().map(|f| (f.to_string(), "x".into())).collect();
        let mut out = Records::empty(RecordKind::Qa);
        parse_record(qa.into(), RecordKind::Qa, &Columns::new(), 1, &mut out).unwrap();
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
