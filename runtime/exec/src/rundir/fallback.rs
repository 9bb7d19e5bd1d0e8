//! A damaged last checkpoint (a bit flipped, a file cut short) does not end a run that has an
//! earlier whole one: `state.json` keeps the commit before the one that named the last
//! checkpoint ([`Committed::previous`]), and a resume goes back to it — logs rolled back to
//! its lengths, its cursor, its checkpoint — with a warning in the run's summary. Only when
//! neither is whole is the resume refused (E0508, naming both), since resuming again would
//! fail the same way.

use std::fs;
use std::path::Path;

use super::{Committed, METRICS, RunDir, RunDirError, TRAJ, io, write_atomic};

/// Which commit a resumed run goes on from.
#[derive(Debug, PartialEq)]
pub enum Usable {
    /// The last one (its checkpoint is whole, or it has none).
    Last,
    /// The previous one: the last checkpoint is damaged, for this reason.
    Previous { why: String },
}

/// Whether checkpoint `name` of the run in `root` is whole: its state reads and every file,
/// each role's too, matches its recorded checksum.
pub fn checkpoint_whole(root: &Path, name: &str) -> Result<(), String> {
    let dir = root.join("checkpoints").join(name);
    let mut dirs = vec![dir.clone()];
    if let Ok(entries) = fs::read_dir(dir.join("roles")) {
        let mut roles: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        roles.sort();
        dirs.extend(roles);
    }
    for d in dirs {
        wrl_trainer::Trainer::check(&d).map_err(|e| format!("`{}`: {e}", d.display()))?;
    }
    Ok(())
}

/// Which commit of `c` (the run in `root`) a resume can use, or why none can.
pub fn usable(root: &Path, c: &Committed) -> Result<Usable, RunDirError> {
    let Some(last) = &c.checkpoint else { return Ok(Usable::Last) };
    let Err(why) = checkpoint_whole(root, last) else { return Ok(Usable::Last) };
    let shown = root.join("checkpoints").join(last).display().to_string();
    let previous = c.previous.as_deref();
    match previous.map(|p| p.checkpoint.as_deref().map_or(Ok(()), |n| checkpoint_whole(root, n))) {
        Some(Ok(())) => Ok(Usable::Previous { why }),
        Some(Err(also)) => Err(RunDirError::Damaged {
            path: shown,
            reason: format!("{why}; the previous checkpoint is damaged too: {also}"),
        }),
        None => Err(RunDirError::Damaged {
            path: shown,
            reason: format!("{why}; no earlier checkpoint was committed"),
        }),
    }
}

impl RunDir {
    /// Opens an existing run as [`RunDir::resume`] does, going back to the previous commit
    /// when the last checkpoint is damaged; returns the warning it then recorded.
    pub fn resume_usable(root: &Path) -> Result<(RunDir, Option<String>), RunDirError> {
        let run = RunDir::resume(root)?;
        match usable(root, run.committed())? {
            Usable::Last => Ok((run, None)),
            Usable::Previous { why } => {
                let back = run.committed().previous.as_ref().and_then(|p| p.checkpoint.clone());
                let to = back.map_or_else(
                    || "the start of the run".to_string(),
                    |c| format!("the previous checkpoint `{c}`"),
                );
                let warning =
                    format!("the last checkpoint is damaged ({why}); the run goes back to {to}");
                Ok((run.fall_back(warning.clone())?, Some(warning)))
            }
        }
    }

    /// Goes back to the previous commit: `state.json` becomes it (with `warning` among its
    /// cursor's warnings), the logs are cut to its lengths and TensorBoard's events rebuilt.
    pub fn fall_back(self, warning: String) -> Result<RunDir, RunDirError> {
        let RunDir { root, committed, trajectories, metrics, events, global_step: _, _lock } = self;
        let Some(mut previous) = committed.previous.map(|p| *p) else {
            return Err(RunDirError::Damaged {
                path: root.join(super::STATE).display().to_string(),
                reason: "it records no earlier commit to go back to".into(),
            });
        };
        previous.previous = None;
        previous.cursor.warnings.push(warning);
        // The state first: killed between the two, a resume cuts the logs to it anyway.
        write_atomic(&root.join(super::STATE), &super::to_json(&previous)?)?;
        for (f, file, len) in [
            (TRAJ, &trajectories, previous.trajectories_len),
            (METRICS, &metrics, previous.metrics_len),
        ] {
            let p = root.join(f);
            file.set_len(len).map_err(io("truncate", &p))?;
            file.sync_all().map_err(io("sync", &p))?;
        }
        // `open_files` opens them again (and rewrites the events from the kept metrics).
        drop((trajectories, metrics, events));
        RunDir::open_files(&root, previous, _lock)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rundir::records::{Cursor, MetricLine, SftStep};

    fn sft(step: u64) -> MetricLine {
        MetricLine::Sft(SftStep {
            stage: "warmup".into(),
            node: "stage:warmup".into(),
            step,
            loss: 1.0,
            lr: 1e-3,
            grad_norm: 0.5,
            epoch: None,
            global_step: 0,
            phase: None,
            time: 0.0,
            memory: Default::default(),
        })
    }

    /// Writes a real (tiny) checkpoint named `name` into the run.
    fn save(root: &Path, name: &str) {
        let config: wrl_trainer::TrainerConfig = serde_json::from_str(
            r#"{ "policy": { "family": "tiny", "layers": 1, "d_model": 32, "heads": 2 }, "seed": 3, "device": "cpu" }"#,
        )
        .unwrap();
        wrl_trainer::Trainer::new(config)
            .unwrap()
            .save(&root.join("checkpoints").join(name))
            .unwrap();
    }

    fn flip(root: &Path, name: &str) {
        let f = root.join("checkpoints").join(name).join("model.safetensors");
        let mut bytes = fs::read(&f).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0x01;
        fs::write(&f, &bytes).unwrap();
    }

    /// A flipped bit in the last checkpoint sends the resume back to the previous commit, with
    /// its logs and cursor; before, the resume failed ("cannot load the last checkpoint") and
    /// suggested a resume that failed the same way.
    #[test]
    fn a_damaged_last_checkpoint_falls_back_to_the_previous_commit() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("run");
        let mut run = RunDir::create(&root, "{}").unwrap();
        let mut cursor = Cursor::default();
        run.log_metrics(vec![sft(1)]).unwrap();
        save(&root, "a");
        cursor.done.push("stage:a".into());
        run.commit(Some("a"), &cursor, false).unwrap();
        // A commit that names no new checkpoint keeps `a` as the one before the next.
        run.commit(None, &cursor, false).unwrap();
        run.log_metrics(vec![sft(2), sft(3)]).unwrap();
        save(&root, "b");
        cursor.done.push("stage:b".into());
        run.commit(Some("b"), &cursor, false).unwrap();
        let committed = run.committed().clone();
        assert_eq!(committed.previous.as_ref().and_then(|p| p.checkpoint.as_deref()), Some("a"));
        assert_eq!(usable(&root, &committed).unwrap(), Usable::Last);
        drop(run);

        flip(&root, "b");
        let committed = RunDir::inspect(&root).unwrap();
        let Usable::Previous { why } = usable(&root, &committed).unwrap() else { panic!() };
        assert!(why.contains("model.safetensors` is damaged"), "{why}");
        let run = RunDir::resume(&root).unwrap().fall_back(format!("went back: {why}")).unwrap();
        assert_eq!(run.committed().checkpoint.as_deref(), Some("a"));
        assert_eq!(run.committed().cursor.done, vec!["stage:a".to_string()]);
        assert!(run.committed().cursor.warnings[0].starts_with("went back"));
        assert_eq!(run.read_metrics().unwrap().len(), 1);
        assert_eq!(run.global_step(), 1);
        drop(run);
        // What was written is what a later resume reads.
        let again = RunDir::inspect(&root).unwrap();
        assert_eq!(again.checkpoint.as_deref(), Some("a"));
        assert!(again.previous.is_none());

        // Both damaged: refused, naming both, and no resume is suggested.
        flip(&root, "a");
        let mut both = committed.clone();
        both.checkpoint = Some("b".into());
        let e = crate::RunError::from(usable(&root, &both).unwrap_err());
        assert_eq!(e.code(), "E0508");
        assert!(
            e.message.contains("checkpoints/b") && e.message.contains("previous"),
            "{}",
            e.message
        );
        assert!(!e.help.as_deref().unwrap_or("").contains("--resume"));
    }
}
