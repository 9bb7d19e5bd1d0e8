//! `file:` URIs to paths and back (percent-encoding by hand: it is a dozen lines, not a
//! dependency), and the `wrl-stdlib:` URIs under which the embedded stdlib is served as
//! read-only documents.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use lsp_types::Uri;

/// The scheme of the embedded stdlib's documents: `wrl-stdlib:///std/prelude.wrl`.
pub const STDLIB_SCHEME: &str = "wrl-stdlib";

/// The path a `file:` URI names (`None` for other schemes or a remote host).
pub fn to_path(uri: &Uri) -> Option<PathBuf> {
    let s = uri.as_str();
    let rest = s.strip_prefix("file://")?;
    // `file:///a` has an empty host; `file://localhost/a` names this machine too.
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    let rest = rest.split(['?', '#']).next().unwrap_or(rest);
    let bytes = decode(rest)?;
    let text = String::from_utf8(bytes).ok()?;
    Some(PathBuf::from(text))
}

/// The `file:` URI of an absolute path.
pub fn from_path(path: &Path) -> Option<Uri> {
    let text = path.to_str()?;
    if !text.starts_with('/') {
        return None;
    }
    Uri::from_str(&format!("file://{}", encode(text))).ok()
}

/// The URI of a stdlib file by its name in diagnostics (`std/prelude.wrl`).
pub fn stdlib_uri(name: &str) -> Option<Uri> {
    Uri::from_str(&format!("{STDLIB_SCHEME}:///{}", encode(name))).ok()
}

/// The stdlib file name (`std/prelude.wrl`) a `wrl-stdlib:` URI names, if it is one of them.
pub fn stdlib_name(uri: &Uri) -> Option<&'static str> {
    let rest = uri.as_str().strip_prefix(STDLIB_SCHEME)?.strip_prefix(':')?;
    let rest = rest.trim_start_matches('/');
    let name = String::from_utf8(decode(rest)?).ok()?;
    wrl_check::STDLIB_MODULES.iter().map(|(_, n, _)| *n).find(|n| *n == name)
}

fn decode(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(out)
}

fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        let keep = b.is_ascii_alphanumeric() || b"/-._~".contains(&b);
        if keep {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_round_trip_with_escapes() {
        let p = Path::new("/tmp/a dir/é.wrl");
        let uri = from_path(p).expect("uri");
        assert_eq!(uri.as_str(), "file:///tmp/a%20dir/%C3%A9.wrl");
        assert_eq!(to_path(&uri).as_deref(), Some(p));
        let vscode = Uri::from_str("file:///tmp/a%20dir/x.wrl").expect("uri");
        assert_eq!(to_path(&vscode), Some(PathBuf::from("/tmp/a dir/x.wrl")));
        let other = Uri::from_str("untitled:Untitled-1").expect("uri");
        assert_eq!(to_path(&other), None);
        assert_eq!(from_path(Path::new("relative.wrl")), None);
    }

    #[test]
    fn stdlib_uris_name_only_stdlib_files() {
        let uri = stdlib_uri("std/prelude.wrl").expect("uri");
        assert_eq!(uri.as_str(), "wrl-stdlib:///std/prelude.wrl");
        assert_eq!(stdlib_name(&uri), Some("std/prelude.wrl"));
        let nope = Uri::from_str("wrl-stdlib:///std/nope.wrl").expect("uri");
        assert_eq!(stdlib_name(&nope), None);
    }
}
