//! How the server names files: a document under the workspace root is named relative to it,
//! as `wrlc check` run from the root names it (so messages read the same), anything else by
//! its absolute path; imports are read from open documents first, then from disk, with the
//! messages `wrlc check`'s loader gives.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use lsp_types::Uri;

use crate::uri;

/// Where the stdlib's documents live for the client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StdlibDocs {
    /// `wrl-stdlib:` URIs, read with the `wrl/virtualTextDocument` request.
    Virtual,
    /// Read-only copies written under this directory (`file:` URIs), for clients that open
    /// only files.
    Files(PathBuf),
}

/// What a document URI names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DocName {
    /// A file: its absolute path and its name in diagnostics.
    File { path: PathBuf, name: String },
    /// A stdlib module (`std/prelude.wrl`).
    Stdlib(&'static str),
    /// Anything else (`untitled:…`): named by the URI itself; its imports are not found.
    Other(String),
}

#[derive(Clone, Debug)]
pub struct Workspace {
    pub root: Option<PathBuf>,
    pub stdlib: StdlibDocs,
}

impl Workspace {
    /// The name diagnostics use for a file: relative to the root when under it.
    pub fn name_of(&self, path: &Path) -> String {
        let path = normalise(path);
        if let Some(root) = &self.root
            && let Ok(rel) = path.strip_prefix(root)
            && !rel.as_os_str().is_empty()
        {
            return rel.to_string_lossy().replace('\\', "/");
        }
        path.to_string_lossy().into_owned()
    }

    /// The absolute path of a name given by [`Workspace::name_of`] or joined from one.
    pub fn path_of(&self, name: &str) -> PathBuf {
        let p = Path::new(name);
        match (&self.root, p.is_absolute()) {
            (_, true) => p.to_path_buf(),
            (Some(root), false) => normalise(&root.join(p)),
            (None, false) => p.to_path_buf(),
        }
    }

    /// What a document URI names.
    pub fn classify(&self, uri: &Uri) -> DocName {
        if let Some(name) = uri::stdlib_name(uri) {
            return DocName::Stdlib(name);
        }
        match uri::to_path(uri) {
            Some(path) => {
                if let StdlibDocs::Files(dir) = &self.stdlib
                    && let Ok(rel) = path.strip_prefix(dir)
                {
                    let rel = rel.to_string_lossy();
                    if let Some(n) = stdlib_file(&rel) {
                        return DocName::Stdlib(n);
                    }
                }
                let name = self.name_of(&path);
                DocName::File { path: normalise(&path), name }
            }
            None => DocName::Other(uri.as_str().to_string()),
        }
    }

    /// The URI of a file by its name in a compilation (stdlib names included).
    pub fn uri_of_name(&self, name: &str) -> Option<Uri> {
        if let Some(n) = stdlib_file(name) {
            return match &self.stdlib {
                StdlibDocs::Virtual => uri::stdlib_uri(n),
                StdlibDocs::Files(dir) => uri::from_path(&dir.join(n)),
            };
        }
        if name.contains(':') && !Path::new(name).is_absolute() {
            // An `Other` document's own name is its URI.
            return name.parse().ok();
        }
        uri::from_path(&self.path_of(name))
    }
}

/// The stdlib file of that name (`std/prelude.wrl`), if there is one.
pub fn stdlib_file(name: &str) -> Option<&'static str> {
    wrl_check::STDLIB_MODULES.iter().map(|(_, n, _)| *n).find(|n| *n == name)
}

/// `a/./b/../c` → `a/c`, without touching the disk.
fn normalise(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Writes the stdlib's files under `dir` (read-only), for [`StdlibDocs::Files`].
pub fn write_stdlib(dir: &Path) -> std::io::Result<()> {
    for (_, name, text) in wrl_check::STDLIB_MODULES {
        let path = dir.join(name);
        if std::fs::read_to_string(&path).is_ok_and(|t| t == *text) {
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        if path.exists() {
            let mut perms = std::fs::metadata(&path)?.permissions();
            #[allow(clippy::permissions_set_readonly_false)] // replaced, then read-only again
            perms.set_readonly(false);
            std::fs::set_permissions(&path, perms)?;
        }
        std::fs::write(&path, text)?;
        let mut perms = std::fs::metadata(&path)?.permissions();
        perms.set_readonly(true);
        std::fs::set_permissions(&path, perms)?;
    }
    Ok(())
}

/// Reads imports: open documents by absolute path first, then the disk.
pub struct Overlay<'a> {
    pub ws: &'a Workspace,
    pub open: &'a BTreeMap<PathBuf, &'a str>,
}

impl wrl_check::Loader for Overlay<'_> {
    fn load(&self, from: &str, path: &str) -> Result<(String, String), String> {
        let name = wrl_check::join_relative(from, path);
        let abs = self.ws.path_of(&name);
        if let Some(text) = self.open.get(&abs) {
            return Ok((name, (*text).to_string()));
        }
        if from.contains(':') && !Path::new(from).is_absolute() {
            return Err(format!("no file `{name}` (save this document to import files)"));
        }
        match std::fs::read(&abs) {
            Ok(bytes) => String::from_utf8(bytes)
                .map(|t| (name.clone(), t))
                .map_err(|_| format!("`{name}` is not valid UTF-8")),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!("no file `{name}`")),
            Err(e) => Err(format!("cannot read `{name}`: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wrl_check::Loader;

    #[test]
    fn names_are_relative_to_the_root() {
        let ws = Workspace { root: Some(PathBuf::from("/w")), stdlib: StdlibDocs::Virtual };
        assert_eq!(ws.name_of(Path::new("/w/recipes/a.wrl")), "recipes/a.wrl");
        assert_eq!(ws.name_of(Path::new("/elsewhere/a.wrl")), "/elsewhere/a.wrl");
        assert_eq!(ws.path_of("recipes/../b.wrl"), PathBuf::from("/w/b.wrl"));
        let uri = ws.uri_of_name("std/rewards.wrl").expect("uri");
        assert_eq!(uri.as_str(), "wrl-stdlib:///std/rewards.wrl");
        assert_eq!(ws.classify(&uri), DocName::Stdlib("std/rewards.wrl"));
        let file = ws.uri_of_name("recipes/a.wrl").expect("uri");
        assert_eq!(file.as_str(), "file:///w/recipes/a.wrl");
        assert_eq!(
            ws.classify(&file),
            DocName::File { path: "/w/recipes/a.wrl".into(), name: "recipes/a.wrl".into() }
        );
    }

    #[test]
    fn open_documents_shadow_the_disk() {
        let ws = Workspace { root: Some(PathBuf::from("/nowhere")), stdlib: StdlibDocs::Virtual };
        let mut open = BTreeMap::new();
        open.insert(PathBuf::from("/nowhere/r/common.wrl"), "param x = 1");
        let l = Overlay { ws: &ws, open: &open };
        assert_eq!(
            l.load("r/a.wrl", "common.wrl"),
            Ok(("r/common.wrl".into(), "param x = 1".into()))
        );
        assert_eq!(l.load("r/a.wrl", "gone.wrl"), Err("no file `r/gone.wrl`".into()));
    }
}
