//! The open documents: text, version, line index and the latest analysis. A change marks a
//! document stale; it is analysed again only when diagnostics are due or a request needs it,
//! so a burst of keystrokes costs one check.

use std::path::PathBuf;

use lsp_types::{TextDocumentContentChangeEvent, Uri};

use crate::analysis::Analysis;
use crate::lines::{Encoding, LineIndex};
use crate::workspace::DocName;

pub struct Doc {
    pub uri: Uri,
    pub name: DocName,
    pub text: String,
    pub version: i32,
    pub lines: LineIndex,
    /// The latest analysis; stale once the text has changed since.
    pub analysis: Option<Analysis>,
    pub stale: bool,
}

impl Doc {
    pub fn new(uri: Uri, name: DocName, text: String, version: i32) -> Doc {
        let lines = LineIndex::new(&text);
        Doc { uri, name, text, version, lines, analysis: None, stale: true }
    }

    /// The name diagnostics use for this document.
    pub fn display_name(&self) -> &str {
        match &self.name {
            DocName::File { name, .. } => name,
            DocName::Stdlib(n) => n,
            DocName::Other(n) => n,
        }
    }

    pub fn path(&self) -> Option<&PathBuf> {
        match &self.name {
            DocName::File { path, .. } => Some(path),
            DocName::Stdlib(_) | DocName::Other(_) => None,
        }
    }

    pub fn is_stdlib(&self) -> bool {
        matches!(self.name, DocName::Stdlib(_))
    }

    /// Applies the changes of one `didChange`, in order (a change without a range replaces
    /// the whole text).
    pub fn apply(
        &mut self,
        version: i32,
        changes: Vec<TextDocumentContentChangeEvent>,
        enc: Encoding,
    ) {
        for c in changes {
            match c.range {
                None => self.text = c.text,
                Some(r) => {
                    let start = self.lines.offset(&self.text, r.start, enc);
                    let end = self.lines.offset(&self.text, r.end, enc).max(start);
                    self.text.replace_range(start..end, &c.text);
                }
            }
            self.lines = LineIndex::new(&self.text);
        }
        self.version = version;
        self.stale = true;
    }

    /// Where the file on disk stops being UTF-8, when it does and the editor decoded it
    /// lossily (the text then holds U+FFFD): `wrlc check` reports E0106 there.
    pub fn utf8_error(&self) -> Option<usize> {
        if !self.text.contains('\u{fffd}') {
            return None;
        }
        let bytes = std::fs::read(self.path()?).ok()?;
        let err = std::str::from_utf8(&bytes).err()?;
        let at = err.valid_up_to();
        // Only while the text is still the disk's up to there (the user may have edited).
        (self.text.as_bytes().get(..at) == bytes.get(..at)).then_some(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lsp_types::{Position, Range};
    use std::str::FromStr;

    #[test]
    fn incremental_changes_apply_in_order() {
        let uri = Uri::from_str("file:///a.wrl").expect("uri");
        let mut d = Doc::new(uri, DocName::Other("a".into()), "param x = 1\n".into(), 1);
        let at = |l, c| Position::new(l, c);
        d.apply(
            2,
            vec![
                TextDocumentContentChangeEvent {
                    range: Some(Range::new(at(0, 10), at(0, 11))),
                    range_length: None,
                    text: "42".into(),
                },
                TextDocumentContentChangeEvent {
                    range: Some(Range::new(at(1, 0), at(1, 0))),
                    range_length: None,
                    text: "param y = 2\n".into(),
                },
            ],
            Encoding::Utf16,
        );
        assert_eq!(d.text, "param x = 42\nparam y = 2\n");
        assert_eq!((d.version, d.stale), (2, true));
        d.apply(
            3,
            vec![TextDocumentContentChangeEvent {
                range: None,
                range_length: None,
                text: "x".into(),
            }],
            Encoding::Utf16,
        );
        assert_eq!(d.text, "x");
    }
}
