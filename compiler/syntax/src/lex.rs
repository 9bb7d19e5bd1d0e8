//! A fast lexical pass over a file before pest sees it. It finds comments (kept for doc
//! comments and the formatter), the lines where top-level items start (for error recovery), and
//! nesting that would make the recursive parser overflow its stack (reported as `E0104`); and it
//! writes the text pest parses, in which trivia outside strings and text blocks is only spaces
//! and line breaks (see [`Scan::seen`]).

use wrl_diagnostics::{Diagnostic, FileId, Span};

use crate::tokens::DECL_KINDS;

/// Brackets may nest this deep.
pub const MAX_NESTING: usize = 64;
/// One top-level item may hold this many `if` expressions.
pub const MAX_IFS_PER_ITEM: usize = 64;
/// This many prefix operators (`-`, `not`) may follow each other.
pub const MAX_PREFIX_RUN: usize = 32;

/// A `//` comment; `doc` for `///`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Comment {
    pub span: Span,
    pub text: String,
    pub doc: bool,
}

#[derive(Debug, Default)]
pub(crate) struct Scan {
    pub comments: Vec<Comment>,
    /// Byte offsets of lines that look like the start of a top-level item.
    pub item_starts: Vec<usize>,
    /// Byte offsets of lines that begin with an item word (`use`, `extends`, `profile`,
    /// `builtin`, a declaration kind) however malformed the rest, and of `item_starts`: where
    /// recovery may resume after a broken item, so that a malformed head is reported too.
    pub head_starts: Vec<usize>,
    /// Places where nesting is too deep, each with its diagnostic.
    pub violations: Vec<(usize, Diagnostic)>,
    /// The text pest parses: the file with, outside strings and text blocks, each comment
    /// replaced by a line break and spaces, each tab by a space, each carriage return by a line
    /// break and each byte-order mark by a line break and two spaces. Every byte keeps its
    /// offset, so spans are the same in both; and since a tab is inline whitespace like a space,
    /// and comments, carriage returns and byte-order marks are whitespace that ends a unit's line
    /// like a line break, pest reads the same things. The grammar then needs no comment rule and
    /// only two whitespace strings: one of them is tried in every gap between tokens, and that
    /// was a third of the parse.
    pub seen: String,
}

/// Builds [`Scan::seen`]: the text, with replacements pushed in order.
struct Seen<'t> {
    text: &'t str,
    out: String,
    /// How much of `text` is in `out`.
    done: usize,
}

impl<'t> Seen<'t> {
    fn new(text: &'t str) -> Seen<'t> {
        Seen { text, out: String::with_capacity(text.len()), done: 0 }
    }

    /// Replaces `text[start..end]` (after everything before it) with `with` and `fill` spaces.
    fn replace(&mut self, start: usize, end: usize, with: char, fill: usize) {
        self.out.push_str(&self.text[self.done..start]);
        self.out.push(with);
        self.out.extend(std::iter::repeat_n(' ', fill));
        self.done = end;
    }

    fn finish(mut self) -> String {
        self.out.push_str(&self.text[self.done..]);
        self.out
    }
}

/// Whether a line begins with an item word as a whole word.
fn begins_with_item_word(line: &str) -> bool {
    let word_end =
        line.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(line.len());
    let word = &line[..word_end];
    matches!(word, "use" | "extends" | "profile" | "variant" | "builtin")
        || DECL_KINDS.contains(&word)
}

fn looks_like_item_start(line: &str) -> bool {
    let word_end =
        line.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(line.len());
    let (word, rest) = line.split_at(word_end);
    // Only after an item word: trimming here on every line walked every blank line that
    // follows, once per line (quadratic in a run of blank lines).
    let next_is_name = || {
        rest.starts_with([' ', '\t'])
            && rest.trim_start().starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
    };
    match word {
        "use" => rest.starts_with([' ', '\t']),
        "extends" => rest.trim_start().starts_with('"'),
        "profile" | "variant" | "builtin" => next_is_name(),
        w if DECL_KINDS.contains(&w) => next_is_name(),
        _ => line.starts_with("///"),
    }
}

pub(crate) fn scan(file: FileId, text: &str) -> Scan {
    let bytes = text.as_bytes();
    let mut out = Scan::default();
    let mut seen = Seen::new(text);
    let mut i = 0;
    let mut opens: Vec<usize> = Vec::new();
    let mut ifs_in_item = 0usize;
    let mut prefix_run = 0usize;
    let mut at_line_start = true;
    let mut reported_depth = false;
    while i < bytes.len() {
        if at_line_start {
            at_line_start = false;
            let strong = looks_like_item_start(&text[i..]);
            if strong || begins_with_item_word(&text[i..]) {
                out.head_starts.push(i);
            }
            if strong {
                out.item_starts.push(i);
                // A `///` line only precedes an item; counting restarts at the item itself
                // (else `if` and `///` lines, alternating, would never reach the limit).
                if !text[i..].starts_with("///") {
                    ifs_in_item = 0;
                    reported_depth = false;
                }
            }
        }
        let b = bytes[i];
        match b {
            b'\n' => {
                at_line_start = true;
                i += 1;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                let end = text[i..].find('\n').map_or(text.len(), |e| i + e);
                let doc = text[i..].starts_with("///") && !text[i..].starts_with("////");
                let body = text[i + if doc { 3 } else { 2 }..end].trim_end_matches('\r');
                seen.replace(i, end, '\n', end - i - 1);
                out.comments.push(Comment {
                    span: Span::new(file, i, end),
                    text: body.to_string(),
                    doc,
                });
                i = end;
            }
            b'"' if text[i..].starts_with("\"\"\"") => {
                let end = text[i + 3..].find("\"\"\"").map_or(text.len(), |e| i + 3 + e + 3);
                i = end;
                prefix_run = 0;
            }
            b'"' => {
                let mut j = i + 1;
                while j < bytes.len() && bytes[j] != b'"' && bytes[j] != b'\n' {
                    j += if bytes[j] == b'\\' && bytes.get(j + 1).is_some_and(|c| *c != b'\n') {
                        2
                    } else {
                        1
                    };
                }
                if bytes.get(j) != Some(&b'"') {
                    out.violations.push((
                        i,
                        Diagnostic::new("E0101", "unterminated string")
                            .label(Span::new(file, i, j), "this string has no closing `\"` on its line")
                            .help("close the string with `\"`; for text over several lines use a `\"\"\"` block"),
                    ));
                }
                // Step over the closing quote, but not over the newline that ends an
                // unterminated string: the next line may start an item.
                i = if bytes.get(j) == Some(&b'"') { j + 1 } else { j };
                prefix_run = 0;
            }
            b'(' | b'[' | b'{' => {
                opens.push(i);
                if opens.len() > MAX_NESTING && !reported_depth {
                    reported_depth = true;
                    out.violations.push((
                        i,
                        Diagnostic::new("E0104", "brackets nest too deep")
                            .label(
                                Span::new(file, i, i + 1),
                                format!("more than {MAX_NESTING} levels deep here"),
                            )
                            .help(
                                "flatten the value, or name inner parts with `param` declarations",
                            ),
                    ));
                }
                prefix_run = 0;
                i += 1;
            }
            b')' | b']' | b'}' => {
                opens.pop();
                prefix_run = 0;
                i += 1;
            }
            b'-' if bytes.get(i + 1) != Some(&b'>') => {
                prefix_run += 1;
                check_run(file, i, 1, prefix_run, &mut out);
                i += 1;
            }
            b' ' => i += 1,
            b'\t' => {
                seen.replace(i, i + 1, ' ', 0);
                i += 1;
            }
            b'\r' => {
                seen.replace(i, i + 1, '\n', 0);
                i += 1;
            }
            // The grammar skips a byte-order mark as whitespace anywhere; so must the counts.
            0xEF if text[i..].starts_with('\u{feff}') => {
                seen.replace(i, i + 3, '\n', 2);
                i += 3;
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let end = text[i..]
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .map_or(text.len(), |e| i + e);
                match &text[i..end] {
                    "if" => {
                        ifs_in_item += 1;
                        if ifs_in_item == MAX_IFS_PER_ITEM + 1 {
                            out.violations.push((
                                i,
                                Diagnostic::new("E0104", "too many nested `if` expressions")
                                    .label(Span::new(file, i, end), format!("more than {MAX_IFS_PER_ITEM} in one declaration"))
                                    .help("split the expression into several `reward` or `param` declarations"),
                            ));
                        }
                        prefix_run = 0;
                    }
                    "not" => {
                        prefix_run += 1;
                        check_run(file, i, 3, prefix_run, &mut out);
                    }
                    _ => prefix_run = 0,
                }
                i = end;
            }
            _ => {
                prefix_run = 0;
                i += text[i..].chars().next().map_or(1, char::len_utf8);
            }
        }
    }
    out.violations.sort_by_key(|(p, _)| *p);
    out.seen = seen.finish();
    out
}

fn check_run(file: FileId, at: usize, len: usize, run: usize, out: &mut Scan) {
    if run == MAX_PREFIX_RUN + 1 {
        out.violations.push((
            at,
            Diagnostic::new("E0104", "too many prefix operators in a row")
                .label(
                    Span::new(file, at, at + len),
                    format!("more than {MAX_PREFIX_RUN} in a row"),
                )
                .help("remove the repeated `-` or `not`"),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_comments_item_starts_and_deep_nesting() {
        let text = "/// doc\nmodel a = x // c\n  model = 3\nstage b = \"// not\" \n";
        let s = scan(FileId(0), text);
        assert_eq!(s.comments.len(), 2);
        assert!(s.comments[0].doc && !s.comments[1].doc);
        assert_eq!(s.item_starts, vec![0, 8, 37]);
        let deep = format!("param p = {}1{}", "[".repeat(100), "]".repeat(100));
        assert_eq!(scan(FileId(0), &deep).violations.len(), 1);
        assert!(scan(FileId(0), "param p = -x - -y").violations.is_empty());
    }
}
