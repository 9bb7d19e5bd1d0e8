//! Code actions: a quick fix for every diagnostic whose help is a mechanical edit — each
//! did-you-mean (replace the word with the suggestion), a quoted enum word (drop the quotes),
//! a reversed range (swap the bounds), a mini-batch without its unit (write it), an unused
//! import or a self-import (remove it), an unused declaration (remove it), a field left to its
//! stdlib default under `use std::explicit` (write the default, or `unknown`: explicit.rs), a
//! field renamed since the recipe was written (its migration, `wrl_check::migrate`), a
//! misspelt tool of a tool-use reward (the tool's name, quoted). The
//! fixes come from the current analysis, not from the diagnostics the client echoes back.

use std::collections::HashMap;

use lsp_types::{
    CodeAction, CodeActionKind, CodeActionOrCommand, CodeActionParams, TextEdit, WorkspaceEdit,
};
use wrl_diagnostics::{Diagnostic, Span};
use wrl_syntax::ast::{ItemKind, Use};

use crate::analysis::{Analysis, DOC};
use crate::fix::Fix;
use crate::view::View;

pub fn actions(view: &View<'_>, p: &CodeActionParams) -> Option<Vec<CodeActionOrCommand>> {
    let an = view.analysis()?;
    let (from, to) = (view.offset(p.range.start), view.offset(p.range.end));
    let lsp_diags = view.conv.diagnostics(an, &view.doc.lines);
    let mut out = Vec::new();
    for (d, lsp_d) in an.diagnostics.iter().zip(lsp_diags) {
        let Some(span) = d.primary_span().filter(|s| s.file == DOC) else { continue };
        if (span.end as usize) < from || (span.start as usize) > to {
            continue;
        }
        for fix in fixes(an, d) {
            let edits = fix
                .edits
                .iter()
                .map(|(s, e, t)| {
                    TextEdit::new(
                        view.doc.lines.range(&view.doc.text, *s, *e, view.conv.enc),
                        t.clone(),
                    )
                })
                .collect();
            out.push(CodeActionOrCommand::CodeAction(CodeAction {
                title: fix.title,
                kind: Some(CodeActionKind::QUICKFIX),
                diagnostics: Some(vec![lsp_d.clone()]),
                edit: Some(WorkspaceEdit::new(HashMap::from([(view.doc.uri.clone(), edits)]))),
                is_preferred: Some(fix.preferred),
                ..CodeAction::default()
            }));
        }
    }
    Some(out)
}

/// The mechanical fixes of one diagnostic of the document.
pub fn fixes(an: &Analysis, d: &Diagnostic) -> Vec<Fix> {
    let Some(span) = d.primary_span().filter(|s| s.file == DOC) else { return Vec::new() };
    let help = d.help.as_deref().unwrap_or("");
    let text = an.slice(span);
    let (s, e) = (span.start as usize, span.end as usize);
    let mut out = Vec::new();
    if let Some(suggestion) = quoted_after(help, "did you mean `")
        && is_word(text)
        && is_word(&suggestion)
    {
        out.push(Fix {
            title: format!("Replace `{text}` with `{suggestion}`"),
            edits: vec![(s, e, suggestion)],
            preferred: true,
        });
    }
    match d.code {
        // A reward endpoint's misspelt scheme: the string literal, rewritten whole.
        "E0314" => {
            if let Some(url) = quoted_after(help, "did you mean `")
                && text.starts_with('"')
            {
                out.push(Fix {
                    title: format!("Write `{url}`"),
                    edits: vec![(s, e, format!("\"{url}\""))],
                    preferred: true,
                });
            }
        }
        "E0300" => {
            if let Some(word) = quoted_after(help, "write it without quotes: `")
                && text.starts_with('"')
            {
                out.push(Fix {
                    title: format!("Write `{word}` without quotes"),
                    edits: vec![(s, e, word)],
                    preferred: true,
                });
            }
        }
        "E0401" => {
            if let Some(swapped) = quoted_after(help, "write `")
                && let [hi, lo, ..] = d.labels.as_slice()
                && lo.span.file == DOC
            {
                let whole = lo.span.to(hi.span);
                out.push(Fix {
                    title: format!("Swap the bounds: `{swapped}`"),
                    edits: vec![(whole.start as usize, whole.end as usize, swapped)],
                    preferred: true,
                });
            }
        }
        "W0214" => {
            if let Some(with_unit) = quoted_after(help, "write `") {
                out.push(Fix {
                    title: format!("Write `{with_unit}` (the same mini-batch, with its unit)"),
                    edits: vec![(s, e, with_unit)],
                    preferred: true,
                });
            }
        }
        "W0202" | "E0203" => {
            if let Some(edits) = remove_import(an, span) {
                out.push(Fix { title: "Remove the import".into(), edits, preferred: true });
            }
        }
        "W0220" => out.extend(crate::explicit::fixes(an, d, span)),
        "E0311" => out.extend(migration(an, span)),
        // A `by` column that is not a field of the sandbox's tasks: the string's first part.
        "E0419" => {
            if let Some(field) = quoted_after(help, "did you mean `")
                && let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"'))
                && is_word(&field)
            {
                let rest = &inner[inner.find(['.', '[']).unwrap_or(inner.len())..];
                out.push(Fix {
                    title: format!("Split on \"{field}{rest}\""),
                    edits: vec![(s, e, format!("\"{field}{rest}\""))],
                    preferred: true,
                });
            }
        }
        // A name written as a string (`called`'s tool, a tag `tags_ok` requires): the literal.
        "E0313" | "E0316" => {
            if let Some(tool) = quoted_after(help, "did you mean `")
                && text.starts_with('"')
                && is_word(&tool)
            {
                out.push(Fix {
                    title: format!("Replace {text} with \"{tool}\""),
                    edits: vec![(s, e, format!("\"{tool}\""))],
                    preferred: true,
                });
            }
        }
        "W0201" => {
            if let Some(item) = item_around(an, span) {
                let name = an.slice(span);
                out.push(Fix {
                    title: format!("Remove the unused declaration `{name}`"),
                    edits: vec![whole_lines(an, item)],
                    preferred: false,
                });
            }
        }
        _ => {}
    }
    out
}

/// The migration of the old field at `span`, where one edit makes it.
fn migration(an: &Analysis, span: Span) -> Option<Fix> {
    let found = wrl_check::migrate::find(an.file.as_ref()?, an.text());
    let f = found.into_iter().find(|f| (f.at.start, f.at.end) == (span.start, span.end))?;
    let edit = f.edit?;
    Some(Fix {
        title: format!("Migrate `{}` to {}", f.migration.old, f.migration.new),
        edits: vec![(edit.start, edit.end, edit.text)],
        preferred: true,
    })
}

/// The text between `prefix` and the next backtick in `help`.
fn quoted_after(help: &str, prefix: &str) -> Option<String> {
    let rest = &help[help.rfind(prefix)? + prefix.len()..];
    Some(rest[..rest.find('`')?].to_string())
}

fn is_word(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | ':' | '%'))
}

/// The item whose span holds `span`.
fn item_around(an: &Analysis, span: Span) -> Option<Span> {
    an.file
        .as_ref()?
        .items
        .iter()
        .map(|i| i.span)
        .find(|s| s.start <= span.start && span.end <= s.end)
}

/// The lines an item is on (with its doc comment and the newline after it).
fn whole_lines(an: &Analysis, item: Span) -> (usize, usize, String) {
    let text = an.text();
    let mut start = item.start as usize;
    start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    // Doc comments right above belong to the item.
    while start > 0 {
        let prev = text[..start - 1].rfind('\n').map_or(0, |i| i + 1);
        if text[prev..start].trim_start().starts_with("///") {
            start = prev;
        } else {
            break;
        }
    }
    let end =
        text[item.end as usize..].find('\n').map_or(text.len(), |i| item.end as usize + i + 1);
    (start, end, String::new())
}

/// Removes an unused import: the name from a `{…}` group, or the whole `use` line.
fn remove_import(an: &Analysis, span: Span) -> Option<Vec<(usize, usize, String)>> {
    let file = an.file.as_ref()?;
    for item in &file.items {
        let ItemKind::Use(u) = &item.kind else { continue };
        if !(item.span.start <= span.start && span.end <= item.span.end) {
            continue;
        }
        if let Use::Path { group: Some(g), .. } = u
            && g.len() > 1
            && let Some(i) = g.iter().position(|it| it.span == span)
        {
            // `{a, b}` without `b`: from the end of the previous name, or to the next one.
            let (s, e) = match (i.checked_sub(1).and_then(|p| g.get(p)), g.get(i + 1)) {
                (Some(prev), _) => (prev.span.end, span.end),
                (None, Some(next)) => (span.start, next.span.start),
                (None, None) => (span.start, span.end),
            };
            return Some(vec![(s as usize, e as usize, String::new())]);
        }
        return Some(vec![whole_lines(an, item.span)]);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(src: &str, code: &str) -> String {
        let a = Analysis::new("a.wrl", src, &wrl_check::MemLoader::default(), None);
        let d = a
            .diagnostics
            .iter()
            .find(|d| d.code == code)
            .unwrap_or_else(|| panic!("{code} in {:?}", a.diagnostics));
        let fix = fixes(&a, d).into_iter().next().unwrap_or_else(|| panic!("no fix for {d:?}"));
        let mut out = src.to_string();
        for (s, e, t) in fix.edits.iter().rev() {
            out.replace_range(*s..*e, t);
        }
        out
    }

    #[test]
    fn did_you_mean_and_imports() {
        let src = "model policy = std::models::tiny\nstage s = sft(policy, std::sandbox::demos(count: 8)) { epohcs = 2 }\n";
        assert!(fixed(src, "E0301").contains("{ epochs = 2 }"));
        let src = "use std::rewards::{judge, task_check}\nmodel policy = std::models::tiny\nreward r = task_check\nstage s = sft(policy, std::sandbox::demos(count: 8))\n";
        assert!(fixed(src, "W0202").starts_with("use std::rewards::{task_check}\n"));
        let src = "use std::rewards::judge\nmodel policy = std::models::tiny\nstage s = sft(policy, std::sandbox::demos(count: 8))\n";
        assert!(fixed(src, "W0202").starts_with("model policy"));
        let src = "model policy = std::models::tiny\n/// spare\nmodel spare = std::models::small\nstage s = sft(policy, std::sandbox::demos(count: 8))\n";
        assert!(!fixed(src, "W0201").contains("spare"));
    }

    #[test]
    fn a_bare_mini_batch_gets_its_unit() {
        let src = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/ui/check/W0214_bare_mini_batch.wrl"
        ))
        .unwrap_or_default();
        assert!(fixed(&src, "W0214").contains("  mini_batch = 256 samples\n"));
    }

    #[test]
    fn an_old_field_is_migrated() {
        let src = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/ui/check/E0311_eval_every.wrl"
        ))
        .unwrap_or_default();
        assert!(
            fixed(&src, "E0311").contains("  validate = validation(tasks) { every = 4 iters }\n")
        );
    }
}
