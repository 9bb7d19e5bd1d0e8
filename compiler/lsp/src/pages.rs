//! Where diagnostics' code descriptions link: the error pages `docs/errors/<CODE>.md`. The
//! link must lead somewhere real, so it is made only from a base the user gave (a URL or a
//! directory: `--error-pages`, `initializationOptions.errorPages`, `WRL_ERROR_PAGES`) or from
//! a directory that exists: the workspace's own `docs/errors` (a checkout of wrl), else the
//! checkout this `wrlc` was built from. Otherwise diagnostics carry no link.

use std::path::{Path, PathBuf};

/// The base URI (ending in `/`) that `<CODE>.md` is appended to, if any.
pub fn base(configured: Option<&str>, root: Option<&Path>) -> Option<String> {
    let env = std::env::var("WRL_ERROR_PAGES").ok().filter(|v| !v.is_empty());
    if let Some(given) = configured.map(str::to_string).or(env) {
        return from_given(&given, root);
    }
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/errors");
    let candidates = root.map(|r| r.join("docs/errors")).into_iter().chain([built]);
    for dir in candidates {
        if dir.join("E0100.md").is_file() {
            return dir_uri(&dir);
        }
    }
    None
}

fn from_given(given: &str, root: Option<&Path>) -> Option<String> {
    let with_slash = |s: &str| if s.ends_with('/') { s.to_string() } else { format!("{s}/") };
    if given.contains("://") || given.starts_with("file:") {
        return Some(with_slash(given));
    }
    let p = PathBuf::from(given);
    let p = match (p.is_absolute(), root) {
        (true, _) | (false, None) => p,
        (false, Some(r)) => r.join(p),
    };
    dir_uri(&p)
}

fn dir_uri(dir: &Path) -> Option<String> {
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let uri = crate::uri::from_path(&dir)?;
    Some(format!("{}/", uri.as_str().trim_end_matches('/')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_bases_are_used_as_given() {
        assert_eq!(
            from_given("https://example.org/wrl/docs/errors", None).as_deref(),
            Some("https://example.org/wrl/docs/errors/")
        );
        assert_eq!(from_given("/srv/errors/", None).as_deref(), Some("file:///srv/errors/"));
        assert_eq!(from_given("errs", Some(Path::new("/w"))).as_deref(), Some("file:///w/errs/"));
    }

    #[test]
    fn this_checkout_has_its_pages() {
        // Built from this repository, whose docs/errors exists.
        let b = base(None, None).expect("a base");
        assert!(b.starts_with("file:///") && b.ends_with("/docs/errors/"), "{b}");
    }
}
