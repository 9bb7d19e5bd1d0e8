//! Spawning Chromium so that it dies with us, even on SIGKILL: on Linux the child asks the kernel
//! for SIGKILL when its parent goes (`PR_SET_PDEATHSIG`). The kernel sends that signal when the
//! *thread* that forked the child exits, not the process, so every Chromium is forked from one
//! spawner thread that lives as long as the process (a tokio worker or a test's thread may exit
//! long before the pool does).

use std::io;
use std::process::{Child, Command, ExitStatus};
use std::sync::OnceLock;
use std::sync::mpsc;

use tokio::sync::oneshot;

/// A spawn request for the spawner thread.
struct Job {
    cmd: Command,
    reply: oneshot::Sender<io::Result<Child>>,
}

/// The spawner thread's queue, started on first use. `None` if the thread could not start.
fn spawner() -> Option<&'static mpsc::Sender<Job>> {
    static SPAWNER: OnceLock<Option<mpsc::Sender<Job>>> = OnceLock::new();
    SPAWNER
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Job>();
            let started =
                std::thread::Builder::new().name("wrl-chromium-spawner".into()).spawn(move || {
                    // The sender lives in a static, so this loop (and the thread) never ends.
                    for mut job in rx {
                        let res = job.cmd.spawn();
                        // Nobody waits any more (the launch was cancelled): do not leak it.
                        if let Err(Ok(mut child)) = job.reply.send(res) {
                            let _ = child.kill();
                            let _ = child.wait();
                        }
                    }
                });
            started.ok().map(|_| tx)
        })
        .as_ref()
}

/// Makes `cmd`'s process receive SIGKILL when the thread that forks it exits.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)] // pre_exec runs between fork and exec: only async-signal-safe calls, no allocation
fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id();
    // SAFETY: the closure calls only prctl and getppid (async-signal-safe) and builds its
    // errors from raw OS codes without allocating.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl: we were reparented already.
            if u32::try_from(libc::getppid()).ok() != Some(parent) {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_cmd: &mut Command) {}

/// The name of the file in a Chromium temp dir that says which process owns it.
const OWNER_FILE: &str = "owner";

/// This process as `"PID START"` (start time in clock ticks since boot, from /proc), so a
/// reused pid is not taken for us. `None` where /proc is unavailable.
fn identity(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Field 22 (starttime), counted after the parenthesised command name.
    let start = stat.rsplit_once(')')?.1.split_whitespace().nth(19)?;
    Some(format!("{pid} {start}"))
}

/// Marks `dir` as owned by this process, for [`sweep_stale`].
pub fn claim(dir: &std::path::Path) {
    if let Some(me) = identity(std::process::id()) {
        let _ = std::fs::write(dir.join(OWNER_FILE), me);
    }
}

/// Deletes, once per process, the Chromium temp dirs (`PREFIX*` in `parent`) whose owner
/// process is gone: a process killed by SIGKILL, or one that exited with a pool still alive in
/// a static, cannot delete its own. Dirs without an owner file are left alone.
pub fn sweep_stale(parent: &std::path::Path, prefix: &str) {
    static DONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if DONE.swap(true, std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    sweep_stale_now(parent, prefix);
}

/// The sweep of [`sweep_stale`] itself, every time it is called (a test checks a directory
/// left by a killed process goes, in a process that has swept once already).
pub fn sweep_stale_now(parent: &std::path::Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for e in entries.flatten() {
        if !e.file_name().to_string_lossy().starts_with(prefix) {
            continue;
        }
        let Ok(owner) = std::fs::read_to_string(e.path().join(OWNER_FILE)) else { continue };
        let pid = owner.split_whitespace().next().and_then(|p| p.parse::<u32>().ok());
        let alive = pid.and_then(identity).is_some_and(|now| now == owner.trim());
        if !alive {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Sends SIGKILL to `child`'s process group (see [`ChromiumProcess::spawn`]). The child is not
/// reaped yet, so its pid, which is the group's id, cannot have been reused.
#[cfg(unix)]
#[allow(unsafe_code)] // kill(2) on our own child's group
fn kill_group(child: &Child) {
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: kill has no memory-safety preconditions; a negative pid names a group.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

#[cfg(not(unix))]
fn kill_group(_child: &Child) {}

/// Deletes `dir`, again while something recreates files in it: a helper process of a killed
/// browser may finish a write (its network service flushing state) after the group's SIGKILL
/// and while the directory is being deleted, which left directories holding only a profile.
/// Gives up after about two seconds.
fn remove_dir_settled(dir: &std::path::Path) {
    for _ in 0..20 {
        let _ = std::fs::remove_dir_all(dir);
        if !dir.exists() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// A Chromium process we started. Dropping it kills the process, then reaps it and deletes its
/// temporary directory on a background thread.
pub struct ChromiumProcess {
    child: Option<Child>,
    dir: Option<tempfile::TempDir>,
}

impl std::fmt::Debug for ChromiumProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChromiumProcess").field("pid", &self.pid()).finish()
    }
}

impl ChromiumProcess {
    /// Starts `cmd` from the spawner thread, set up to die with this process. `dir` (the
    /// user-data-dir and log) is deleted after the process is gone.
    pub async fn spawn(mut cmd: Command, dir: tempfile::TempDir) -> io::Result<ChromiumProcess> {
        die_with_parent(&mut cmd);
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            // Its own process group, killed whole on drop: a wrapper script that runs the
            // browser without `exec` would otherwise leave it running when the wrapper is killed.
            cmd.process_group(0);
        }
        let tx = spawner().ok_or_else(|| io::Error::other("cannot start the spawner thread"))?;
        let (reply, rx) = oneshot::channel();
        tx.send(Job { cmd, reply }).map_err(|_| io::Error::other("the spawner thread is gone"))?;
        let child = rx.await.map_err(|_| io::Error::other("the spawner thread is gone"))??;
        Ok(ChromiumProcess { child: Some(child), dir: Some(dir) })
    }

    /// The process id (0 once dropped; never seen by callers).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// The exit status if the process has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.as_mut().and_then(|c| c.try_wait().ok().flatten())
    }
}

impl Drop for ChromiumProcess {
    fn drop(&mut self) {
        let (Some(mut child), dir) = (self.child.take(), self.dir.take()) else { return };
        kill_group(&child);
        let _ = child.kill();
        // Reaping takes a moment after SIGKILL; do not block the caller (often an async task).
        let reaper =
            std::thread::Builder::new().name("wrl-chromium-reaper".into()).spawn(move || {
                let _ = child.wait();
                if let Some(dir) = dir {
                    remove_dir_settled(&dir.keep());
                }
            });
        match reaper {
            Ok(r) => reapers().lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(r),
            Err(e) => tracing::warn!("cannot start a thread to reap Chromium: {e}"),
        }
    }
}

/// The threads reaping dropped browsers and removing their folders.
fn reapers() -> &'static std::sync::Mutex<Vec<std::thread::JoinHandle<()>>> {
    static REAPERS: OnceLock<std::sync::Mutex<Vec<std::thread::JoinHandle<()>>>> = OnceLock::new();
    REAPERS.get_or_init(Default::default)
}

/// Waits (at most `patience`) until every dropped browser is reaped and its temporary folder
/// removed: a process about to exit calls it, or its `wrl-chromium-*` folders outlive it (the
/// reapers are detached threads, which exit does not wait for).
pub fn settle(patience: std::time::Duration) {
    let deadline = std::time::Instant::now() + patience;
    let pending: Vec<std::thread::JoinHandle<()>> =
        std::mem::take(&mut *reapers().lock().unwrap_or_else(std::sync::PoisonError::into_inner));
    for r in pending {
        while !r.is_finished() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        if r.is_finished() {
            let _ = r.join();
        }
    }
}
