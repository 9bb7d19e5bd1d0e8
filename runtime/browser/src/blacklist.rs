//! The host blacklist file: hosts that failed to load (DNS, connection, TLS errors) are
//! appended, one per line, and episodes refuse to navigate to them afterwards.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// Chromium error codes that blacklist a host (as OpenWebRL does). All traffic goes through the
/// allow-list proxy (proxy.rs), which closes without an answer when an allowed host does not
/// resolve or refuses the connection: Chromium then reports `ERR_EMPTY_RESPONSE` (plain HTTP)
/// or `ERR_TUNNEL_CONNECTION_FAILED` (HTTPS), not the underlying DNS or connection error, so
/// those two blacklist too (a server that itself closes without answering is blacklisted as
/// OpenWebRL blacklists `ERR_CONNECTION_CLOSED`).
pub const BLACKLIST_ERRORS: [&str; 9] = [
    "ERR_NAME_NOT_RESOLVED",
    "ERR_HTTP2_PROTOCOL_ERROR",
    "ERR_CONNECTION_RESET",
    "ERR_CONNECTION_CLOSED",
    "ERR_CONNECTION_REFUSED",
    "ERR_SSL_PROTOCOL_ERROR",
    "ERR_ADDRESS_UNREACHABLE",
    "ERR_EMPTY_RESPONSE",
    "ERR_TUNNEL_CONNECTION_FAILED",
];

/// A set of blacklisted hosts, optionally backed by a file.
#[derive(Debug, Default)]
pub struct Blacklist {
    path: Option<PathBuf>,
    hosts: Mutex<BTreeSet<String>>,
}

impl Blacklist {
    /// Loads `path` if it exists (a missing file is an empty list); later additions append to it.
    pub fn load(path: Option<&Path>) -> std::io::Result<Blacklist> {
        let mut hosts = BTreeSet::new();
        if let Some(p) = path {
            match std::fs::read_to_string(p) {
                Ok(text) => {
                    hosts.extend(
                        text.lines()
                            .map(str::trim)
                            .filter(|l| !l.is_empty() && !l.starts_with('#'))
                            .map(str::to_ascii_lowercase),
                    );
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Blacklist { path: path.map(Path::to_path_buf), hosts: Mutex::new(hosts) })
    }

    /// Whether `host` is blacklisted.
    pub fn contains(&self, host: &str) -> bool {
        self.hosts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&host.to_ascii_lowercase())
    }

    /// Adds `host` (and appends it to the file) if the error text names a blacklisting error.
    /// Returns true when the host was newly added.
    pub fn note_failure(&self, host: &str, error_text: &str) -> bool {
        if !BLACKLIST_ERRORS.iter().any(|e| error_text.contains(e)) {
            return false;
        }
        let host = host.to_ascii_lowercase();
        let mut hosts = self.hosts.lock().unwrap_or_else(PoisonError::into_inner);
        if !hosts.insert(host.clone()) {
            return false;
        }
        if let Some(p) = &self.path {
            let appended = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .and_then(|mut f| writeln!(f, "{host}"));
            if let Err(e) = appended {
                tracing::warn!("cannot append {host} to blacklist {}: {e}", p.display());
            }
        }
        true
    }

    /// All hosts, sorted.
    pub fn hosts(&self) -> Vec<String> {
        self.hosts.lock().unwrap_or_else(PoisonError::into_inner).iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_append_to_the_file_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("blacklist.txt");
        std::fs::write(&path, "# comment\nold.example\n").unwrap();
        let b = Blacklist::load(Some(&path)).unwrap();
        assert!(b.contains("OLD.example"));
        assert!(!b.note_failure("new.example", "net::ERR_ABORTED"));
        assert!(b.note_failure("new.example", "net::ERR_NAME_NOT_RESOLVED"));
        assert!(!b.note_failure("new.example", "net::ERR_NAME_NOT_RESOLVED"));
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.matches("new.example").count(), 1);
        assert!(Blacklist::load(Some(&path)).unwrap().contains("new.example"));
    }
}
