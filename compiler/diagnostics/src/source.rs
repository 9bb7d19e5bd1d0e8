//! The loaded source files of one compilation, addressed by `FileId`, with line/column lookup
//! for rendering.

use crate::span::{FileId, Span};

/// One loaded file: the name shown to users (relative when possible) and its text.
#[derive(Clone, Debug)]
pub struct SourceFile {
    pub name: String,
    pub text: String,
    line_starts: Vec<usize>,
}

/// A 1-based line and column (column counted in characters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineCol {
    pub line: usize,
    pub column: usize,
}

impl SourceFile {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> SourceFile {
        let text = text.into();
        let mut line_starts = vec![0];
        line_starts
            .extend(text.bytes().enumerate().filter(|(_, b)| *b == b'\n').map(|(i, _)| i + 1));
        SourceFile { name: name.into(), text, line_starts }
    }

    /// Line and column of a byte offset (clamped to the text, snapped to a char boundary).
    pub fn line_col(&self, offset: usize) -> LineCol {
        let mut offset = offset.min(self.text.len());
        while offset > 0 && !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.line_starts[line];
        let column = self.text[start..offset].chars().count() + 1;
        LineCol { line: line + 1, column }
    }

    /// The 0-based line a byte offset is on (lines end at `\n`; offsets past the end are on
    /// the last line).
    pub fn line_index(&self, offset: usize) -> usize {
        match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        }
    }

    /// The byte offset where 0-based line `line` starts; the text's length past the last line.
    pub fn line_start(&self, line: usize) -> usize {
        self.line_starts.get(line).copied().unwrap_or(self.text.len())
    }

    /// The text a span covers (empty if the span does not fit this file).
    pub fn slice(&self, span: Span) -> &str {
        self.text.get(span.range()).unwrap_or("")
    }
}

/// All files of one compilation. File ids are indices into it.
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

impl SourceMap {
    pub fn new() -> SourceMap {
        SourceMap::default()
    }

    pub fn add(&mut self, name: impl Into<String>, text: impl Into<String>) -> FileId {
        let id = FileId(u32::try_from(self.files.len()).unwrap_or(u32::MAX));
        self.files.push(SourceFile::new(name, text));
        id
    }

    pub fn get(&self, id: FileId) -> Option<&SourceFile> {
        self.files.get(id.0 as usize)
    }

    pub fn files(&self) -> impl Iterator<Item = (FileId, &SourceFile)> {
        self.files.iter().enumerate().map(|(i, f)| (FileId(i as u32), f))
    }

    pub fn find(&self, name: &str) -> Option<FileId> {
        self.files.iter().position(|f| f.name == name).map(|i| FileId(i as u32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_from_one_and_handles_crlf_and_unicode() {
        let f = SourceFile::new("a.wrl", "ab\r\nçd\nx");
        assert_eq!(f.line_col(0), LineCol { line: 1, column: 1 });
        assert_eq!(f.line_col(4), LineCol { line: 2, column: 1 });
        assert_eq!(f.line_col(6), LineCol { line: 2, column: 2 });
        assert_eq!(f.line_col(5), LineCol { line: 2, column: 1 }); // inside 'ç': snapped back
        assert_eq!(f.line_col(999), LineCol { line: 3, column: 2 });
    }

    #[test]
    fn line_index_and_line_start_agree() {
        let f = SourceFile::new("a.wrl", "ab\ncd\n\nx");
        assert_eq!((f.line_index(0), f.line_index(2), f.line_index(3)), (0, 0, 1));
        assert_eq!((f.line_index(6), f.line_index(7), f.line_index(99)), (2, 3, 3));
        assert_eq!((f.line_start(1), f.line_start(3), f.line_start(4)), (3, 7, 8));
    }
}
