//! One document as a feature sees it: its text and lines, its analysis, and the conversions
//! between LSP positions and the compiler's byte spans in the client's encoding.

use lsp_types::{Position, Range};
use wrl_diagnostics::Span;

use crate::analysis::Analysis;
use crate::convert::Conv;
use crate::docs::Doc;

/// One document as a feature sees it.
pub struct View<'a> {
    pub doc: &'a Doc,
    /// `None` for stdlib documents, which are not analysed on their own.
    pub an: Option<&'a Analysis>,
    pub conv: Conv<'a>,
}

impl View<'_> {
    pub fn offset(&self, pos: Position) -> usize {
        self.doc.lines.offset(&self.doc.text, pos, self.conv.enc)
    }

    pub fn range(&self, span: Span) -> Range {
        self.doc.lines.range(&self.doc.text, span.start as usize, span.end as usize, self.conv.enc)
    }

    pub fn position(&self, offset: usize) -> Position {
        self.doc.lines.position(&self.doc.text, offset, self.conv.enc)
    }

    /// The analysis, when it is of the text the client has (it always is: requests analyse
    /// a stale document first).
    pub fn analysis(&self) -> Option<&Analysis> {
        self.an
    }
}
