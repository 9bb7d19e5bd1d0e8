//! The embedded stdlib as the editor sees it: each module's text (served read-only under
//! `wrl-stdlib:` URIs), parsed once per process, with the doc comments of every builtin and of
//! every field of its block (the `///` lines above a field, as `docs/stdlib.md` reads them).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use wrl_diagnostics::{FileId, Span};
use wrl_syntax::ast::{self, ItemKind};

use crate::lines::LineIndex;

/// One builtin's documentation and where its parts are.
#[derive(Debug)]
pub struct BuiltinDoc {
    pub doc: Option<String>,
    /// `builtin grpo(init: checkpoint, …) -> stage`, on one line.
    pub signature: String,
    /// Each parameter and field: its span and its doc.
    pub slots: BTreeMap<String, (Span, Option<String>)>,
}

#[derive(Debug)]
pub struct StdModule {
    /// `std::prelude`.
    pub path: &'static str,
    /// `std/prelude.wrl`, the name diagnostics and URIs use.
    pub name: &'static str,
    pub text: &'static str,
    pub lines: LineIndex,
    pub file: ast::File,
    pub builtins: BTreeMap<String, BuiltinDoc>,
}

#[derive(Debug)]
pub struct StdIndex {
    pub modules: Vec<StdModule>,
}

/// The index, built on first use.
pub fn index() -> &'static StdIndex {
    static INDEX: OnceLock<StdIndex> = OnceLock::new();
    INDEX.get_or_init(|| StdIndex {
        modules: wrl_check::STDLIB_MODULES
            .iter()
            .enumerate()
            .map(|(i, (path, name, text))| module(i, path, name, text))
            .collect(),
    })
}

impl StdIndex {
    /// A module by its path (`std::rewards`) or its file name (`std/rewards.wrl`).
    pub fn module(&self, path_or_name: &str) -> Option<&StdModule> {
        self.modules.iter().find(|m| m.path == path_or_name || m.name == path_or_name)
    }

    /// A builtin of a module by its declared name.
    pub fn builtin(&self, module: &str, name: &str) -> Option<(&StdModule, &BuiltinDoc)> {
        let m = self.module(module)?;
        Some((m, m.builtins.get(name)?))
    }
}

fn module(i: usize, path: &'static str, name: &'static str, text: &'static str) -> StdModule {
    let id = FileId(u32::try_from(i).unwrap_or(0));
    let parsed = wrl_syntax::parse(id, text);
    let mut builtins = BTreeMap::new();
    for item in &parsed.file.items {
        if let ItemKind::Builtin(b) = &item.kind {
            builtins.insert(b.name.name.clone(), builtin_doc(text, &parsed.comments, item, b));
        }
    }
    StdModule { path, name, text, lines: LineIndex::new(text), file: parsed.file, builtins }
}

fn builtin_doc(
    text: &str,
    comments: &[wrl_syntax::Comment],
    item: &ast::Item,
    b: &ast::Builtin,
) -> BuiltinDoc {
    let sig_text = text.get(b.name.span.start as usize..b.returns.span.end as usize).unwrap_or("");
    let signature = format!("builtin {}", one_line(sig_text));
    let mut slots = BTreeMap::new();
    for p in &b.params {
        slots.insert(p.name.name.clone(), (p.span, None));
    }
    let mut prev = b.returns.span.start;
    for f in &b.fields {
        let lines: Vec<String> = comments
            .iter()
            .filter(|c| c.doc && c.span.start > prev && c.span.end <= f.span.start)
            .map(|c| c.text.trim_start_matches('/').trim().to_string())
            .collect();
        prev = f.span.start;
        let doc = (!lines.is_empty()).then(|| lines.join(" "));
        slots.insert(f.name.name.clone(), (f.span, doc));
    }
    BuiltinDoc { doc: item.doc.as_deref().map(doc_text), signature, slots }
}

/// A doc comment's lines joined into paragraphs (a blank `///` line starts a new one).
pub fn doc_text(doc: &str) -> String {
    let mut out = String::new();
    for line in doc.lines().map(str::trim) {
        if line.is_empty() {
            out.push_str("\n\n");
        } else {
            if !out.is_empty() && !out.ends_with('\n') {
                out.push(' ');
            }
            out.push_str(line);
        }
    }
    out.trim().to_string()
}

/// Source text on one line, whitespace collapsed (`record(a: int, b: string)`).
pub fn one_line(src: &str) -> String {
    let joined = src.split_whitespace().collect::<Vec<_>>().join(" ");
    joined.replace("( ", "(").replace(", )", ")").replace(",)", ")")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_and_field_docs_are_indexed() {
        let idx = index();
        let (m, browser) = idx.builtin("std::prelude", "browser").expect("browser");
        assert_eq!(m.name, "std/prelude.wrl");
        assert_eq!(browser.signature, "builtin browser() -> env");
        let (span, doc) = browser.slots.get("per_turn").expect("per_turn");
        assert!(m.text[span.range()].starts_with("per_turn"));
        assert!(doc.as_deref().is_some_and(|d| d.contains("only a turn's first action runs")));
        assert!(browser.doc.as_deref().is_some_and(|d| d.starts_with("Real Chromium")));
        assert!(idx.builtin("std::rewards", "judge").is_some());
        assert!(idx.module("std/tools.wrl").is_some());
    }
}
