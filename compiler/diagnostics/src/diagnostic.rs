//! The neutral diagnostic every phase produces: a stable code, a severity, a lowercase message,
//! labelled spans and an optional help line. Rendering (miette, JSON) happens in the CLI only.

use serde::Serialize;

use crate::span::Span;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// A labelled place in the source. The first label of a diagnostic is the primary one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Label {
    pub span: Span,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// `E0101`, `W0201`, …: registered in [`crate::CODES`].
    pub code: &'static str,
    pub severity: Severity,
    /// Lowercase, no trailing period; user-written names in backticks.
    pub message: String,
    /// Primary label first, then related places ("first defined here").
    pub labels: Vec<Label>,
    /// A concrete action, only where one is known.
    pub help: Option<String>,
}

impl Diagnostic {
    /// An error whose severity comes from the code's registry entry (`W…` codes are warnings).
    pub fn new(code: &'static str, message: impl Into<String>) -> Diagnostic {
        let severity = if code.starts_with('W') { Severity::Warning } else { Severity::Error };
        Diagnostic { code, severity, message: message.into(), labels: Vec::new(), help: None }
    }

    /// Adds a label; the first one added is the primary label.
    pub fn label(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.labels.push(Label { span, message: message.into() });
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    pub fn maybe_help(mut self, help: Option<String>) -> Diagnostic {
        if help.is_some() {
            self.help = help;
        }
        self
    }

    pub fn primary_span(&self) -> Option<Span> {
        self.labels.first().map(|l| l.span)
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// Sort key: file, start, end, code — the order diagnostics are shown in.
    pub fn sort_key(&self) -> (u32, u32, u32, &'static str) {
        match self.primary_span() {
            Some(s) => (s.file.0, s.start, s.end, self.code),
            None => (u32::MAX, 0, 0, self.code),
        }
    }
}
