//! The run directory: the resolved plan, append-only `trajectories.jsonl` and `metrics.jsonl`,
//! `checkpoints/`, `summary.json`, `report.html`. Logs are appended and fsynced per batch; a
//! commit records their lengths next to the checkpoint it belongs to, atomically (write a
//! temporary file, fsync, rename). Resuming truncates the logs to the last commit, so a run
//! killed at any point loses and duplicates no logged line.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    #[error("cannot {what} `{path}`: {source}")]
    Io { what: &'static str, path: String, source: std::io::Error },
    #[error(
        "`{path}` is not a wrl run directory (no `state.json`); start a new run with `wrlc run FILE --out DIR`"
    )]
    NotARun { path: String },
    #[error("`{path}` is damaged: {reason}")]
    Damaged { path: String, reason: String },
    #[error(
        "`{path}` already holds a run; resume it with `wrlc run --resume {path}`, or choose another `--out`"
    )]
    Exists { path: String },
}

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> RunDirError + use<> {
    let path = path.display().to_string();
    move |source| RunDirError::Io { what, path, source }
}

/// What the last commit guarantees: log lengths, the checkpoint, and where the run stands.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Committed {
    /// Bytes of `trajectories.jsonl` that belong to committed work.
    pub trajectories_len: u64,
    /// Lines of `trajectories.jsonl` that belong to committed work.
    pub trajectories: u64,
    /// Bytes of `metrics.jsonl` that belong to committed work.
    pub metrics_len: u64,
    /// The checkpoint directory (relative to the run directory) to resume from.
    pub checkpoint: Option<String>,
    /// Where the run stands, in the executor's terms (stage, phase, iteration, …).
    pub cursor: serde_json::Value,
    /// Whether the whole plan finished.
    pub finished: bool,
}

/// An open run directory.
#[derive(Debug)]
pub struct RunDir {
    root: PathBuf,
    committed: Committed,
    trajectories: File,
    metrics: File,
}

pub(crate) const STATE: &str = "state.json";
const TRAJ: &str = "trajectories.jsonl";
const METRICS: &str = "metrics.jsonl";

impl RunDir {
    /// Creates a new run directory (it must not already hold a run) and writes the plan.
    pub fn create(root: &Path, plan_json: &str) -> Result<RunDir, RunDirError> {
        if root.join(STATE).exists() {
            return Err(RunDirError::Exists { path: root.display().to_string() });
        }
        fs::create_dir_all(root.join("checkpoints")).map_err(io("create", root))?;
        write_atomic(&root.join("plan.json"), plan_json.as_bytes())?;
        for f in [TRAJ, METRICS] {
            File::create(root.join(f)).map_err(io("create", &root.join(f)))?;
        }
        let committed = Committed::default();
        write_atomic(&root.join(STATE), &to_json(&committed)?)?;
        RunDir::open_files(root, committed)
    }

    /// Opens an existing run and rolls its logs back to the last commit.
    pub fn resume(root: &Path) -> Result<RunDir, RunDirError> {
        let state_path = root.join(STATE);
        let text = match fs::read_to_string(&state_path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(RunDirError::NotARun { path: root.display().to_string() });
            }
            Err(e) => return Err(io("read", &state_path)(e)),
        };
        let committed: Committed = serde_json::from_str(&text).map_err(|e| {
            RunDirError::Damaged { path: state_path.display().to_string(), reason: e.to_string() }
        })?;
        for (f, len) in [(TRAJ, committed.trajectories_len), (METRICS, committed.metrics_len)] {
            let p = root.join(f);
            let file = OpenOptions::new().write(true).open(&p).map_err(io("open", &p))?;
            let actual = file.metadata().map_err(io("read", &p))?.len();
            if actual < len {
                return Err(RunDirError::Damaged {
                    path: p.display().to_string(),
                    reason: format!("it has {actual} bytes but {len} were committed"),
                });
            }
            file.set_len(len).map_err(io("truncate", &p))?;
            file.sync_all().map_err(io("sync", &p))?;
        }
        RunDir::open_files(root, committed)
    }

    fn open_files(root: &Path, committed: Committed) -> Result<RunDir, RunDirError> {
        let open = |f: &str| {
            let p = root.join(f);
            OpenOptions::new().append(true).open(&p).map_err(io("open", &p))
        };
        Ok(RunDir {
            root: root.to_path_buf(),
            trajectories: open(TRAJ)?,
            metrics: open(METRICS)?,
            committed,
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn committed(&self) -> &Committed {
        &self.committed
    }

    /// The plan this run executes.
    pub fn plan_json(&self) -> Result<String, RunDirError> {
        let p = self.root.join("plan.json");
        fs::read_to_string(&p).map_err(io("read", &p))
    }

    /// Appends records to `trajectories.jsonl` and fsyncs; they count once committed.
    pub fn append_trajectories<T: Serialize>(&mut self, records: &[T]) -> Result<(), RunDirError> {
        let p = self.root.join(TRAJ);
        append(&mut self.trajectories, &p, records)
    }

    /// Appends records to `metrics.jsonl` and fsyncs; they count once committed.
    pub fn append_metrics<T: Serialize>(&mut self, records: &[T]) -> Result<(), RunDirError> {
        let p = self.root.join(METRICS);
        append(&mut self.metrics, &p, records)
    }

    /// Where checkpoints go: `checkpoints/<name>`.
    pub fn checkpoint_dir(&self, name: &str) -> PathBuf {
        self.root.join("checkpoints").join(name)
    }

    /// Makes everything appended so far durable, with the checkpoint and cursor to resume from.
    pub fn commit(
        &mut self,
        checkpoint: Option<&str>,
        cursor: serde_json::Value,
        finished: bool,
    ) -> Result<(), RunDirError> {
        let tp = self.root.join(TRAJ);
        let mp = self.root.join(METRICS);
        let trajectories_len = self.trajectories.metadata().map_err(io("read", &tp))?.len();
        let metrics_len = self.metrics.metadata().map_err(io("read", &mp))?.len();
        let new_lines = count_lines(&tp, self.committed.trajectories_len, trajectories_len)?;
        let next = Committed {
            trajectories_len,
            trajectories: self.committed.trajectories + new_lines,
            metrics_len,
            checkpoint: checkpoint
                .map(str::to_string)
                .or_else(|| self.committed.checkpoint.clone()),
            cursor,
            finished,
        };
        write_atomic(&self.root.join(STATE), &to_json(&next)?)?;
        self.committed = next;
        Ok(())
    }

    /// Writes a file in the run directory atomically (`summary.json`, `report.html`,
    /// `screens/….png`), making its folder first.
    pub fn write_file(&self, name: &str, bytes: &[u8]) -> Result<(), RunDirError> {
        let path = self.root.join(name);
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(io("create", dir))?;
        }
        write_atomic(&path, bytes)
    }

    /// Reads back the committed lines of a log (for reports and tests).
    pub fn read_log(&self, name: &str) -> Result<Vec<serde_json::Value>, RunDirError> {
        let p = self.root.join(name);
        let text = fs::read_to_string(&p).map_err(io("read", &p))?;
        let limit = match name {
            TRAJ => self.committed.trajectories_len,
            METRICS => self.committed.metrics_len,
            _ => text.len() as u64,
        } as usize;
        text.get(..limit.min(text.len()))
            .unwrap_or("")
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                serde_json::from_str(l).map_err(|e| RunDirError::Damaged {
                    path: p.display().to_string(),
                    reason: e.to_string(),
                })
            })
            .collect()
    }
}

fn to_json<T: Serialize>(v: &T) -> Result<Vec<u8>, RunDirError> {
    serde_json::to_vec_pretty(v)
        .map_err(|e| RunDirError::Damaged { path: STATE.into(), reason: e.to_string() })
}

fn append<T: Serialize>(file: &mut File, path: &Path, records: &[T]) -> Result<(), RunDirError> {
    let mut buf = Vec::new();
    for r in records {
        serde_json::to_writer(&mut buf, r).map_err(|e| RunDirError::Damaged {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        buf.push(b'\n');
    }
    file.write_all(&buf).map_err(io("write", path))?;
    file.sync_data().map_err(io("sync", path))
}

fn count_lines(path: &Path, from: u64, to: u64) -> Result<u64, RunDirError> {
    let bytes = fs::read(path).map_err(io("read", path))?;
    let slice = bytes.get(from as usize..(to as usize).min(bytes.len())).unwrap_or(&[]);
    Ok(slice.iter().filter(|b| **b == b'\n').count() as u64)
}

/// Writes `bytes` to `path` so that readers see the old or the new file, never a mix.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), RunDirError> {
    let tmp = path.with_extension("tmp");
    {
        let mut f = File::create(&tmp).map_err(io("create", &tmp))?;
        f.write_all(bytes).map_err(io("write", &tmp))?;
        f.sync_all().map_err(io("sync", &tmp))?;
    }
    fs::rename(&tmp, path).map_err(io("rename", path))?;
    if let Some(dir) = path.parent()
        && let Ok(d) = File::open(dir)
    {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn uncommitted_lines_are_rolled_back_on_resume() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("run");
        let mut run = RunDir::create(&root, "{\"version\":1}").unwrap();
        run.append_trajectories(&[json!({"i": 0}), json!({"i": 1})]).unwrap();
        run.commit(Some("iter-1"), json!({"iter": 1}), false).unwrap();
        run.append_trajectories(&[json!({"i": 2})]).unwrap(); // killed before the commit
        drop(run);
        let mut run = RunDir::resume(&root).unwrap();
        assert_eq!(run.committed().trajectories, 2);
        assert_eq!(run.committed().checkpoint.as_deref(), Some("iter-1"));
        assert_eq!(run.read_log(TRAJ).unwrap().len(), 2);
        run.append_trajectories(&[json!({"i": 2})]).unwrap();
        run.commit(None, json!({"iter": 2}), true).unwrap();
        let lines = run.read_log(TRAJ).unwrap();
        assert_eq!(
            lines.iter().map(|l| l["i"].as_i64().unwrap()).collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
        assert!(
            RunDir::create(&root, "{}").is_err(),
            "a second run in the same directory is refused"
        );
    }

    #[test]
    fn resume_of_a_non_run_says_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let err = RunDir::resume(dir.path()).unwrap_err().to_string();
        assert!(err.contains("not a wrl run directory"), "{err}");
    }
}
