//! Rendering diagnostics: human (miette's graphical report, colour only on a terminal) and JSON
//! lines. This is the only place in the compiler that turns spans into lines and columns.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use miette::{GraphicalReportHandler, GraphicalTheme, LabeledSpan, NamedSource, SourceSpan};
use serde::Serialize;
use wrl_diagnostics::{Diagnostic, FileId, Severity, SourceMap, Span};

use crate::{ErrorFormat, Io};

/// Options for human rendering.
#[derive(Clone, Copy, Debug)]
pub struct RenderOptions {
    pub color: bool,
    pub width: usize,
}

/// Writes every diagnostic to `io.err` in the chosen format.
pub fn emit(diags: &[Diagnostic], sources: &SourceMap, format: ErrorFormat, io: &mut Io) {
    // One shared copy of each file's text, however many diagnostics point into it.
    let mut texts = Texts::default();
    for d in diags {
        let text = match format {
            ErrorFormat::Human => {
                render_with(d, sources, RenderOptions { color: io.color, width: 100 }, &mut texts)
                    + "\n"
            }
            ErrorFormat::Json => render_json(d, sources) + "\n",
        };
        let _ = io.err.write_all(text.as_bytes());
    }
}

/// A diagnostic in miette's shape: one source file, its labels, and related reports for
/// labels that point into other files.
#[derive(Debug)]
struct Report {
    message: String,
    code: Option<&'static str>,
    severity: miette::Severity,
    help: Option<String>,
    source: Option<NamedSource<Arc<str>>>,
    labels: Vec<LabeledSpan>,
    related: Vec<Report>,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Report {}

impl miette::Diagnostic for Report {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.code.map(|c| Box::new(c) as Box<dyn fmt::Display>)
    }
    fn severity(&self) -> Option<miette::Severity> {
        Some(self.severity)
    }
    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help.as_ref().map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }
    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.source.as_ref().map(|s| s as &dyn miette::SourceCode)
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        if self.labels.is_empty() { None } else { Some(Box::new(self.labels.iter().cloned())) }
    }
    fn related<'a>(&'a self) -> Option<Box<dyn Iterator<Item = &'a dyn miette::Diagnostic> + 'a>> {
        if self.related.is_empty() {
            None
        } else {
            Some(Box::new(self.related.iter().map(|r| r as &dyn miette::Diagnostic)))
        }
    }
}

fn source_span(span: Span, sources: &SourceMap) -> SourceSpan {
    let len = sources.get(span.file).map_or(0, |f| f.text.len());
    let start = (span.start as usize).min(len);
    let end = (span.end as usize).clamp(start, len);
    SourceSpan::new(start.into(), end - start)
}

/// Each file's text as a shared string, made once per rendering pass.
#[derive(Default)]
struct Texts(BTreeMap<FileId, Arc<str>>);

fn named_source(
    file: FileId,
    sources: &SourceMap,
    texts: &mut Texts,
) -> Option<NamedSource<Arc<str>>> {
    let f = sources.get(file)?;
    let text = texts.0.entry(file).or_insert_with(|| Arc::from(f.text.as_str())).clone();
    Some(NamedSource::new(f.name.clone(), text).with_language("wrl"))
}

fn to_report(d: &Diagnostic, sources: &SourceMap, texts: &mut Texts) -> Report {
    let primary_file = d.primary_span().map(|s| s.file);
    let mut labels = Vec::new();
    let mut related = Vec::new();
    for (i, l) in d.labels.iter().enumerate() {
        let ls = LabeledSpan::new_with_span(Some(l.message.clone()), source_span(l.span, sources));
        let ls = if i == 0 {
            LabeledSpan::new_primary_with_span(ls.label().map(String::from), *ls.inner())
        } else {
            ls
        };
        if Some(l.span.file) == primary_file {
            labels.push(ls);
        } else {
            related.push(Report {
                message: l.message.clone(),
                code: None,
                severity: miette::Severity::Advice,
                help: None,
                source: named_source(l.span.file, sources, texts),
                labels: vec![ls],
                related: Vec::new(),
            });
        }
    }
    Report {
        // The code leads the message (`E0103: unknown unit …`): easy to spot and to grep.
        message: format!("{}: {}", d.code, d.message),
        code: None,
        severity: match d.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        },
        help: d.help.clone(),
        source: primary_file.and_then(|f| named_source(f, sources, texts)),
        labels,
        related,
    }
}

/// Renders one diagnostic as miette's graphical report.
pub fn render_human(d: &Diagnostic, sources: &SourceMap, opts: RenderOptions) -> String {
    render_with(d, sources, opts, &mut Texts::default())
}

fn render_with(
    d: &Diagnostic,
    sources: &SourceMap,
    opts: RenderOptions,
    texts: &mut Texts,
) -> String {
    let theme =
        if opts.color { GraphicalTheme::unicode() } else { GraphicalTheme::unicode_nocolor() };
    let handler =
        GraphicalReportHandler::new_themed(theme).with_width(opts.width).with_links(false);
    let mut out = String::new();
    let report = to_report(d, sources, texts);
    if handler.render_report(&mut out, &report).is_err() {
        out = format!("{}[{}]: {}\n", severity_word(d.severity), d.code, d.message);
    }
    out
}

fn severity_word(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

#[derive(Serialize)]
struct JsonSpan {
    start: u32,
    end: u32,
}

#[derive(Serialize)]
struct JsonLabel<'a> {
    file: &'a str,
    span: JsonSpan,
    line: usize,
    column: usize,
    end_line: usize,
    end_column: usize,
    message: &'a str,
}

#[derive(Serialize)]
struct JsonDiagnostic<'a> {
    code: &'a str,
    severity: &'a str,
    message: &'a str,
    file: Option<&'a str>,
    span: Option<JsonSpan>,
    line: Option<usize>,
    column: Option<usize>,
    labels: Vec<JsonLabel<'a>>,
    help: Option<&'a str>,
}

/// Renders one diagnostic as a single JSON object (no trailing newline).
pub fn render_json(d: &Diagnostic, sources: &SourceMap) -> String {
    let labels: Vec<JsonLabel> = d
        .labels
        .iter()
        .filter_map(|l| {
            let f = sources.get(l.span.file)?;
            let a = f.line_col(l.span.start as usize);
            let b = f.line_col(l.span.end as usize);
            Some(JsonLabel {
                file: &f.name,
                span: JsonSpan { start: l.span.start, end: l.span.end },
                line: a.line,
                column: a.column,
                end_line: b.line,
                end_column: b.column,
                message: &l.message,
            })
        })
        .collect();
    let first = labels.first();
    let j = JsonDiagnostic {
        code: d.code,
        severity: severity_word(d.severity),
        message: &d.message,
        file: first.map(|l| l.file),
        span: first.map(|l| JsonSpan { start: l.span.start, end: l.span.end }),
        line: first.map(|l| l.line),
        column: first.map(|l| l.column),
        labels,
        help: d.help.as_deref(),
    };
    serde_json::to_string(&j).unwrap_or_else(|_| format!("{{\"code\":\"{}\"}}", d.code))
}
