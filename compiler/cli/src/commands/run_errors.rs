//! Runtime problems as diagnostics: a `RunError` that names a declaration (and parameter) is
//! given the span of that declaration in the recipe, so that `wrlc run` reports it like
//! `wrlc check` does — code, file and place, what to do — in human or JSON form.

use wrl_check::{Recipe, V, Val};
use wrl_diagnostics::{Diagnostic, FileId, Span};
use wrl_exec::{RunError, Subject};

/// The checked recipe a plan came from, to find declarations in.
pub struct Origin<'r> {
    pub recipe: &'r Recipe,
    /// The entry file (profile and `--set` overrides live there).
    pub entry: FileId,
}

/// `e` as a diagnostic, labelled at its subject when the recipe has it.
pub fn to_diagnostic(e: &RunError, origin: Option<&Origin>) -> Diagnostic {
    let mut d = Diagnostic::new(e.code(), e.message.clone()).maybe_help(e.help.clone());
    if let (Some(subject), Some(origin)) = (&e.subject, origin)
        && let Some(span) = locate(subject, origin)
    {
        d = d.label(span, subject.label.clone());
    }
    d
}

/// `d` labelled at `subject` when the recipe has it (a problem another command found at a
/// declaration: `wrlc lower`'s refusals, `wrlc env serve`'s).
pub fn placed(d: Diagnostic, subject: &Subject, origin: Option<&Origin>) -> Diagnostic {
    match origin.and_then(|o| locate(subject, o)) {
        Some(span) => d.label(span, subject.label.clone()),
        None => d,
    }
}

/// The place of a subject: its parameter's value when the recipe (or a profile, or `--set`)
/// wrote it, else the declaration's name. Nothing for a declaration of the standard library.
fn locate(subject: &Subject, origin: &Origin) -> Option<Span> {
    let decl = origin.recipe.decl(&subject.decl).filter(|d| !d.std)?;
    let written = |v: &Val| v.span.file == decl.span.file || v.span.file == origin.entry;
    let param = subject.param.as_deref().and_then(|p| {
        // A phase of an RL stage (`stage:online/phase:2`) reads `phases[1]` before the stage.
        let phase = phase_index(&subject.node)
            .and_then(|i| match &field(&decl.value, "phases")?.v {
                V::List { items } => items.get(i),
                _ => None,
            })
            .and_then(|item| field(item, p));
        phase.into_iter().chain(field(&decl.value, p)).find(|v| written(v))
    });
    Some(param.map_or(decl.name_span, |v| v.span))
}

/// The field `name` of an object or record value.
fn field<'v>(v: &'v Val, name: &str) -> Option<&'v Val> {
    match &v.v {
        V::Obj(o) => o.fields.get(name),
        V::Record { fields } => fields.get(name),
        _ => None,
    }
}

/// `stage:online/phase:2` → `Some(1)`: the index in `phases` of a phase node.
fn phase_index(node: &str) -> Option<usize> {
    let (_, n) = node.rsplit_once("/phase:")?;
    n.parse::<usize>().ok()?.checked_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_nodes_name_their_index() {
        assert_eq!(phase_index("stage:online/phase:1"), Some(0));
        assert_eq!(phase_index("stage:online/phase:3"), Some(2));
        assert_eq!(phase_index("stage:warmup"), None);
        assert_eq!(phase_index("stage:x/phase:0"), None);
    }
}
