//! Byte offsets (what spans hold) to LSP positions and back. LSP counts columns in UTF-16 code
//! units unless the client agrees to UTF-8; a position past the end of a line or of the text
//! is clamped, never an error (clients send such positions while the user types).

use lsp_types::{Position, Range};

/// How the client counts columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf16,
}

/// The line starts of one text, for converting in both directions.
#[derive(Clone, Debug)]
pub struct LineIndex {
    starts: Vec<usize>,
    len: usize,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(text.bytes().enumerate().filter(|(_, b)| *b == b'\n').map(|(i, _)| i + 1));
        LineIndex { starts, len: text.len() }
    }

    /// The position of a byte offset (clamped to the text, snapped back to a char boundary).
    pub fn position(&self, text: &str, offset: usize, enc: Encoding) -> Position {
        let mut offset = offset.min(self.len).min(text.len());
        while offset > 0 && !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = match self.starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        };
        let start = self.starts.get(line).copied().unwrap_or(0);
        let piece = text.get(start..offset).unwrap_or("");
        let col = match enc {
            Encoding::Utf8 => piece.len(),
            Encoding::Utf16 => piece.encode_utf16().count(),
        };
        Position::new(to_u32(line), to_u32(col))
    }

    /// The byte offset of a position; a column past the line's end is its end (before `\n`),
    /// a line past the last is the end of the text.
    pub fn offset(&self, text: &str, pos: Position, enc: Encoding) -> usize {
        let line = pos.line as usize;
        let Some(&start) = self.starts.get(line) else { return text.len() };
        let end = self.starts.get(line + 1).map_or(text.len(), |e| e.saturating_sub(1));
        let line_text = text.get(start..end.max(start)).unwrap_or("");
        let line_text = line_text.strip_suffix('\r').unwrap_or(line_text);
        let want = pos.character as usize;
        let mut units = 0;
        for (i, c) in line_text.char_indices() {
            if units >= want {
                return start + i;
            }
            units += match enc {
                Encoding::Utf8 => c.len_utf8(),
                Encoding::Utf16 => c.len_utf16(),
            };
        }
        start + line_text.len()
    }

    pub fn range(&self, text: &str, start: usize, end: usize, enc: Encoding) -> Range {
        Range::new(self.position(text, start, enc), self.position(text, end.max(start), enc))
    }
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_and_utf8_columns_round_trip() {
        let text = "a = \"é😀\"\r\nb = 1\n";
        let idx = LineIndex::new(text);
        let end_of_string = text.find("\"\r").map(|i| i + 1).unwrap_or(0);
        let p16 = idx.position(text, end_of_string, Encoding::Utf16);
        assert_eq!(p16, Position::new(0, 9)); // é is 1 unit, 😀 is 2
        let p8 = idx.position(text, end_of_string, Encoding::Utf8);
        assert_eq!(p8, Position::new(0, 12));
        assert_eq!(idx.offset(text, p16, Encoding::Utf16), end_of_string);
        assert_eq!(idx.offset(text, p8, Encoding::Utf8), end_of_string);
        // Past the end of a line: its end, before `\r\n`.
        assert_eq!(idx.offset(text, Position::new(0, 99), Encoding::Utf16), end_of_string);
        assert_eq!(
            idx.offset(text, Position::new(1, 2), Encoding::Utf16),
            text.find("= 1").unwrap_or(0)
        );
        assert_eq!(idx.offset(text, Position::new(9, 0), Encoding::Utf16), text.len());
        // Inside a surrogate pair or a multi-byte char: snapped.
        let inside = text.find('😀').unwrap_or(0) + 1;
        assert_eq!(idx.position(text, inside, Encoding::Utf16), Position::new(0, 6));
    }
}
