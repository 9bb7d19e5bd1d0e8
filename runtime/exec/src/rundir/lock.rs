//! The run directory's lock: one process writes a run at a time. An advisory `flock` on
//! `DIR/run.lock` (std's `File::try_lock`), held by the open [`RunDir`](super::RunDir) for
//! as long as the run goes on and released by the kernel when the process ends, however it
//! ends (a SIGKILL too). The file holds the holder's pid so a refusal can name it.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use super::RunDirError;

/// The lock file's name inside the run directory.
pub(crate) const LOCK: &str = "run.lock";

/// A held lock; dropping it releases the lock.
#[derive(Debug)]
pub struct Lock {
    _file: File,
}

impl Lock {
    /// Takes the lock of the run directory `root` (which must exist), or says who holds it.
    pub fn take(root: &Path) -> Result<Lock, RunDirError> {
        let path = root.join(LOCK);
        let io = |what: &'static str| {
            let path = path.display().to_string();
            move |source| RunDirError::Io { what, path, source }
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io("open"))?;
        // [`Lock::holder`] holds a shared lock for an instant: a few tries tell that apart
        // from a writer.
        let mut tries = 0;
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) if tries < 10 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(RunDirError::Busy {
                        path: root.display().to_string(),
                        pid: read_pid(&mut file),
                    });
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(io("lock")(e)),
            }
        }
        file.set_len(0).map_err(io("write"))?;
        file.seek(SeekFrom::Start(0)).map_err(io("write"))?;
        file.write_all(format!("{}\n", std::process::id()).as_bytes()).map_err(io("write"))?;
        file.sync_data().map_err(io("sync"))?;
        Ok(Lock { _file: file })
    }

    /// The pid of the process holding `root`'s lock now, if one does; changes nothing (a
    /// shared lock taken and dropped at once, which [`Lock::take`] waits out).
    pub fn holder(root: &Path) -> Option<Option<u32>> {
        let mut file = OpenOptions::new().read(true).write(true).open(root.join(LOCK)).ok()?;
        match file.try_lock_shared() {
            Ok(()) => None,
            Err(std::fs::TryLockError::WouldBlock) => Some(read_pid(&mut file)),
            Err(std::fs::TryLockError::Error(_)) => None,
        }
    }
}

fn read_pid(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_ones_pid_until_it_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let first = Lock::take(dir.path()).unwrap();
        // flock locks belong to the open file, so a second open in this process conflicts too.
        let e = Lock::take(dir.path()).unwrap_err();
        let RunDirError::Busy { pid, .. } = &e else { panic!("{e}") };
        assert_eq!(*pid, Some(std::process::id()));
        assert_eq!(Lock::holder(dir.path()), Some(Some(std::process::id())));
        drop(first);
        assert_eq!(Lock::holder(dir.path()), None);
        assert!(Lock::take(dir.path()).is_ok());
    }
}
