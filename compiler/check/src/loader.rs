//! How the checker reads files named by `use "…"` and `extends "…"`: through a trait, so the
//! CLI reads the disk and tests can serve files from memory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Reads an imported file. `from` is the importing file's name, `path` the string as written.
pub trait Loader {
    /// Returns the name to show for the file (relative like its importer's) and its text.
    fn load(&self, from: &str, path: &str) -> Result<(String, String), String>;
}

/// Resolves imports relative to the importing file, on disk.
#[derive(Debug, Default)]
pub struct FsLoader;

/// The name of `path` relative to the directory of `from`, normalised (`a/../b` → `b`).
pub fn join_relative(from: &str, path: &str) -> String {
    let base = Path::new(from).parent().unwrap_or(Path::new(""));
    let mut out: Vec<String> = Vec::new();
    for comp in base.join(path).components() {
        match comp {
            std::path::Component::ParentDir => {
                if out.last().is_some_and(|c| c != "..") {
                    out.pop();
                } else {
                    out.push("..".into());
                }
            }
            std::path::Component::CurDir => {}
            c => out.push(c.as_os_str().to_string_lossy().into_owned()),
        }
    }
    let joined: PathBuf = out.iter().collect();
    joined.to_string_lossy().replace('\\', "/")
}

impl Loader for FsLoader {
    fn load(&self, from: &str, path: &str) -> Result<(String, String), String> {
        let name = join_relative(from, path);
        match std::fs::read(&name) {
            Ok(bytes) => String::from_utf8(bytes)
                .map(|t| (name.clone(), t))
                .map_err(|_| format!("`{name}` is not valid UTF-8")),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!("no file `{name}`")),
            Err(e) => Err(format!("cannot read `{name}`: {e}")),
        }
    }
}

/// Serves files from memory (tests).
#[derive(Debug, Default)]
pub struct MemLoader {
    pub files: BTreeMap<String, String>,
}

impl Loader for MemLoader {
    fn load(&self, from: &str, path: &str) -> Result<(String, String), String> {
        let name = join_relative(from, path);
        self.files
            .get(&name)
            .map(|t| (name.clone(), t.clone()))
            .ok_or_else(|| format!("no file `{name}`"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_names() {
        assert_eq!(join_relative("recipes/a.wrl", "b.wrl"), "recipes/b.wrl");
        assert_eq!(join_relative("recipes/a.wrl", "../x/b.wrl"), "x/b.wrl");
        assert_eq!(join_relative("a.wrl", "./b.wrl"), "b.wrl");
    }
}
