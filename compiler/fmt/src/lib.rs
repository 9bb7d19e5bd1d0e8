//! The `.wrl` formatter: one canonical layout for every file, so that diffs show meaning.
//!
//! Layout rules (also in `editors/README.md`):
//! - two-space indentation; `name = value` with single spaces, no alignment of `=`;
//! - a block, record, list, argument or parameter list stays on one line
//!   (`{ a = 1, b = 2 }`, `[a, b]`) unless it spans several lines in the source, holds a
//!   comment, or would pass column 100; then it has one item per line (blocks without commas,
//!   lists/arguments/parameters with a trailing comma);
//! - top-level items are separated by one blank line, except consecutive one-line items
//!   (e.g. `use` lines) that the user wrote without one; inside blocks at most one blank line
//!   is kept where the user had any;
//! - a declaration whose value starts on the next line keeps it there (indented by two);
//!   a line break before `then`, `else` or a binary operator is kept (the operator moves to the
//!   start of the line); an `if` that would pass column 100 breaks before `else`;
//! - numbers are kept as written, strings are re-escaped canonically, text blocks are verbatim;
//! - every comment is kept: at the end of its line, or on its own line with its indentation
//!   normalised; comments ending consecutive lines of the same indentation are aligned one
//!   space after the longest of those lines.

mod align;
mod escape;
mod expr;
mod items;
mod printer;
mod scan;
mod seq;

use wrl_diagnostics::{Diagnostic, FileId};

/// Formats one file. A file with syntax errors is never formatted: its diagnostics are returned
/// (with spans in `FileId(0)`; use [`format_file`] to get them in the caller's file).
pub fn format_source(text: &str) -> Result<String, Vec<Diagnostic>> {
    format_file(FileId(0), text)
}

/// [`format_source`] for a file registered in a `SourceMap` as `file`, so that the syntax
/// diagnostics render against it.
pub fn format_file(file: FileId, text: &str) -> Result<String, Vec<Diagnostic>> {
    let parsed = wrl_syntax::parse(file, text);
    let errors: Vec<Diagnostic> =
        parsed.diagnostics.iter().filter(|d| d.is_error()).cloned().collect();
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut f = printer::Fmt::new(text, &parsed.comments);
    items::file(&mut f, &parsed.file);
    Ok(f.finish())
}

/// Whether `text` is already formatted (`wrlc fmt --check`). A file with syntax errors is not.
pub fn is_formatted(text: &str) -> Result<bool, Vec<Diagnostic>> {
    format_source(text).map(|out| out == text)
}
