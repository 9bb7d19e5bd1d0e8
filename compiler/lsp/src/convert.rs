//! A compiler diagnostic as an LSP diagnostic: the same code, message and help as `wrlc check`
//! prints, every label kept (the primary one and the related places, in other files too), and
//! a link to the code's error page. A diagnostic whose primary place is in an imported file is
//! shown on the `use` or `extends` that imports it, saying which file it is in.

use std::str::FromStr;

use lsp_types::{
    CodeDescription, DiagnosticRelatedInformation, DiagnosticSeverity, Location, NumberOrString,
    Range, Uri,
};
use wrl_diagnostics::{Diagnostic, Severity, Span};
use wrl_syntax::ast::{ItemKind, Use};

use crate::analysis::{Analysis, DOC};
use crate::lines::{Encoding, LineIndex};
use crate::workspace::Workspace;

/// What converting needs besides the diagnostics.
pub struct Conv<'a> {
    pub ws: &'a Workspace,
    pub enc: Encoding,
    /// The base the error pages' links are made from (`…/docs/errors/`), if any.
    pub pages: Option<&'a str>,
}

impl Conv<'_> {
    /// The place of a span of the analysis: its file's URI and range.
    pub fn location(&self, a: &Analysis, span: Span) -> Option<Location> {
        let file = a.sources.get(span.file)?;
        let uri = self.ws.uri_of_name(&file.name)?;
        let lines = LineIndex::new(&file.text);
        Some(Location::new(
            uri,
            lines.range(&file.text, span.start as usize, span.end as usize, self.enc),
        ))
    }

    /// A span of the document itself.
    pub fn range(&self, a: &Analysis, lines: &LineIndex, span: Span) -> Range {
        lines.range(a.text(), span.start as usize, span.end as usize, self.enc)
    }

    /// The link to a code's page: `<base><code>.md`.
    pub fn page(&self, code: &str) -> Option<Uri> {
        let base = self.pages?;
        Uri::from_str(&format!("{base}{code}.md")).ok()
    }

    /// Every diagnostic of the analysis, as the document shows them.
    pub fn diagnostics(&self, a: &Analysis, lines: &LineIndex) -> Vec<lsp_types::Diagnostic> {
        a.diagnostics.iter().map(|d| self.diagnostic(a, lines, d)).collect()
    }

    fn diagnostic(&self, a: &Analysis, lines: &LineIndex, d: &Diagnostic) -> lsp_types::Diagnostic {
        let primary = d.primary_span();
        let here = primary.filter(|s| s.file == DOC);
        let mut message = d.message.clone();
        let range = match (here, primary) {
            (Some(s), _) => self.range(a, lines, s),
            (None, Some(s)) => {
                let name = a.file_name(s.file).unwrap_or("another file");
                message = format!("in `{name}`: {message}");
                import_site(a, name).map_or_else(Range::default, |span| self.range(a, lines, span))
            }
            (None, None) => Range::default(),
        };
        if let Some(h) = &d.help {
            message.push_str("\nhelp: ");
            message.push_str(h);
        }
        let related: Vec<DiagnosticRelatedInformation> = d
            .labels
            .iter()
            .filter(|l| !l.message.is_empty())
            .filter_map(|l| {
                Some(DiagnosticRelatedInformation {
                    location: self.location(a, l.span)?,
                    message: l.message.clone(),
                })
            })
            .collect();
        lsp_types::Diagnostic {
            range,
            severity: Some(match d.severity {
                Severity::Error => DiagnosticSeverity::ERROR,
                Severity::Warning => DiagnosticSeverity::WARNING,
            }),
            code: Some(NumberOrString::String(d.code.to_string())),
            code_description: self.page(d.code).map(|href| CodeDescription { href }),
            source: Some("wrlc".into()),
            message,
            related_information: (!related.is_empty()).then_some(related),
            tags: None,
            data: None,
        }
    }
}

/// The `use "…"` or `extends "…"` of the document that reads the file named `name` (else the
/// first one that reads a file: the file is imported through it).
fn import_site(a: &Analysis, name: &str) -> Option<Span> {
    let file = a.file.as_ref()?;
    let doc_name = a.file_name(DOC)?;
    let mut first = None;
    for item in &file.items {
        let path = match &item.kind {
            ItemKind::Use(Use::File { path, .. }) => path,
            ItemKind::Extends(e) => &e.path,
            ItemKind::Use(Use::Path { .. })
            | ItemKind::Profile(_)
            | ItemKind::Builtin(_)
            | ItemKind::Decl(_) => continue,
        };
        if wrl_check::join_relative(doc_name, &path.value) == name {
            return Some(path.span);
        }
        first = first.or(Some(path.span));
    }
    first
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::StdlibDocs;

    #[test]
    fn labels_help_and_pages_survive() {
        let src = "model policy = std::models::tiny\nstage s = sft(policy, std::sandbox::demos(count: 8)) { epohcs = 2 }\n";
        let a = Analysis::new("a.wrl", src, &wrl_check::MemLoader::default(), None);
        let lines = LineIndex::new(src);
        let ws = Workspace { root: Some("/w".into()), stdlib: StdlibDocs::Virtual };
        let conv = Conv { ws: &ws, enc: Encoding::Utf16, pages: Some("file:///w/docs/errors/") };
        let ds = conv.diagnostics(&a, &lines);
        let d = ds
            .iter()
            .find(|d| d.code == Some(NumberOrString::String("E0301".into())))
            .expect("E0301");
        assert_eq!(d.range.start.line, 1);
        assert!(d.message.contains("help: did you mean `epochs`?"), "{}", d.message);
        assert_eq!(
            d.code_description.as_ref().map(|c| c.href.as_str()),
            Some("file:///w/docs/errors/E0301.md")
        );
        let rel = d.related_information.as_ref().expect("related");
        assert_eq!(rel[0].location.uri.as_str(), "file:///w/a.wrl");
        assert_eq!(rel[0].message, "unknown field");
    }

    #[test]
    fn a_broken_import_shows_on_the_use() {
        let mut loader = wrl_check::MemLoader::default();
        loader.files.insert("common.wrl".into(), "model broken = hf(\n".into());
        let src = "use \"common.wrl\"\nmodel policy = std::models::tiny\n";
        let a = Analysis::new("a.wrl", src, &loader, None);
        let ws = Workspace { root: None, stdlib: StdlibDocs::Virtual };
        let conv = Conv { ws: &ws, enc: Encoding::Utf16, pages: None };
        let ds = conv.diagnostics(&a, &LineIndex::new(src));
        let d = ds.iter().find(|d| d.message.starts_with("in `common.wrl`")).expect("relocated");
        assert_eq!((d.range.start.line, d.range.start.character), (0, 4));
        assert!(d.code_description.is_none());
    }
}
