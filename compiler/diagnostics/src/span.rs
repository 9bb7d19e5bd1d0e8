//! Byte-offset spans plus a file id: the only position type stored in the AST and diagnostics.
//! Line and column numbers are computed when rendering, never stored.

use serde::Serialize;

/// Identifies one loaded source file inside a [`crate::SourceMap`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize)]
pub struct FileId(pub u32);

/// A half-open byte range `[start, end)` in one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize)]
pub struct Span {
    pub file: FileId,
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(file: FileId, start: usize, end: usize) -> Span {
        Span { file, start: clamp_u32(start), end: clamp_u32(end.max(start)) }
    }

    /// A zero-width span at `at`.
    pub fn point(file: FileId, at: usize) -> Span {
        Span::new(file, at, at)
    }

    /// The smallest span covering both (they must be in the same file; `self`'s file wins).
    pub fn to(self, other: Span) -> Span {
        Span { file: self.file, start: self.start.min(other.start), end: self.end.max(other.end) }
    }

    pub fn len(self) -> usize {
        (self.end - self.start) as usize
    }

    pub fn is_empty(self) -> bool {
        self.start == self.end
    }

    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

fn clamp_u32(v: usize) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}
