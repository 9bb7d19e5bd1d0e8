//! Finding punctuation the AST does not record (brackets of parameter lists, `..`, `then`):
//! small scans over the source between known spans.

/// The offset of the first character from `pos` that is not whitespace or a comment.
pub(crate) fn skip_trivia(src: &str, mut pos: usize) -> usize {
    let b = src.as_bytes();
    while pos < b.len() {
        match b[pos] {
            b' ' | b'\t' | b'\r' | b'\n' => pos += 1,
            b'/' if b.get(pos + 1) == Some(&b'/') => {
                pos = src[pos..].find('\n').map_or(src.len(), |e| pos + e);
            }
            _ => break,
        }
    }
    pos
}

/// Where `token` starts after the trivia from `pos` (or `pos` if it is not there).
pub(crate) fn find(src: &str, pos: usize, token: &str) -> usize {
    let at = skip_trivia(src, pos);
    if src.get(at..).is_some_and(|s| s.starts_with(token)) { at } else { pos }
}

/// The offset just past the closing `close` of a list whose last element ends at `last_end`,
/// allowing a trailing comma.
pub(crate) fn list_end(src: &str, last_end: usize, close: char) -> usize {
    let mut at = skip_trivia(src, last_end);
    if src.get(at..).is_some_and(|s| s.starts_with(',')) {
        at = skip_trivia(src, at + 1);
    }
    if src.get(at..).is_some_and(|s| s.starts_with(close)) { at + 1 } else { last_end }
}

/// Which bytes of the source are whitespace or comment. Pest spans of repeated rules take in
/// the trivia after them, so the formatter trims span ends with this table.
pub(crate) fn trivia_map(src: &str) -> Vec<bool> {
    let b = src.as_bytes();
    let mut map = vec![false; b.len()];
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b' ' | b'\t' | b'\r' | b'\n' => {
                map[i] = true;
                i += 1;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = src[i..].find('\n').map_or(b.len(), |e| i + e);
                map[i..end].iter_mut().for_each(|t| *t = true);
                i = end;
            }
            b'"' if src[i..].starts_with("\"\"\"") => {
                i = src[i + 3..].find("\"\"\"").map_or(b.len(), |e| i + 3 + e + 3);
            }
            b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' && b[j] != b'\n' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                i = j + 1;
            }
            0xEF if src[i..].starts_with('\u{feff}') => {
                map[i..i + 3].iter_mut().for_each(|t| *t = true);
                i += 3;
            }
            _ => i += 1,
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_punctuation_past_comments() {
        let src = "a // x\n  , ) then";
        assert_eq!(list_end(src, 1, ')'), 12);
        assert_eq!(find(src, 12, "then"), 13);
        assert_eq!(find(src, 12, "else"), 12);
    }
}
