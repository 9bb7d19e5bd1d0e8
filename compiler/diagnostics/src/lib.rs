//! The vocabulary every compiler phase uses to talk about source text and mistakes: byte spans
//! tied to a file id, a map of loaded files, and one neutral `Diagnostic` type. Phases produce
//! diagnostics; only the CLI renders them.

mod cap;
mod codes;
mod diagnostic;
mod source;
mod span;
mod suggest;

pub use cap::{MAX_REPEATED, cap_repeated};
pub use codes::{CODES, CodeInfo, Phase, lookup};
pub use diagnostic::{Diagnostic, Label, Severity};
pub use source::{LineCol, SourceFile, SourceMap};
pub use span::{FileId, Span};
pub use suggest::{did_you_mean, suggest};
