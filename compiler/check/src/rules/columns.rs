//! Dataset column mappings (E0419): `columns = { question = "prompt" }` names fields of the
//! dataset's record kind, each read from a column that has a name. The runtime reads what the
//! mapping says; a field that is not one of the kind's would be read into nothing. An
//! evaluation's `by` names a column too: one with a name, and for the sandbox's generated tasks
//! (whose columns are known before any file) a field of their record.

use wrl_diagnostics::{Diagnostic, Span};

use super::{Ctx, word};
use crate::suggest::did_you_mean;
use crate::value::{Obj, V};

/// The fields of each record kind's rows (docs/sandbox.md): what a `columns` mapping may name.
/// The runtime's record types are held to these lists by a test in `wrl-exec`.
pub const RECORD_FIELDS: &[(&str, &[&str])] = &[
    (
        "tasks",
        &[
            "id",
            "split",
            "template",
            "site",
            "start_path",
            "goal",
            "params",
            "checker",
            "max_steps",
            "content_seed",
        ],
    ),
    ("trajectories", &["task_id", "template", "goal", "agent", "steps", "outcome", "elapsed_ms"]),
    ("qa", &["id", "question", "answer"]),
    ("grounding", &["id", "image", "instruction", "point"]),
    ("chat", &["messages", "tools"]),
];

/// The fields of records of `kind`, if it is a record kind.
pub fn record_fields(kind: &str) -> Option<&'static [&'static str]> {
    RECORD_FIELDS.iter().find(|(k, _)| *k == kind).map(|(_, f)| *f)
}

/// How a record kind reads in messages.
fn records(kind: &str) -> &str {
    match kind {
        "tasks" => "task records",
        "trajectories" => "trajectory records",
        "qa" => "QA records",
        "grounding" => "grounding pairs",
        "chat" => "chat conversations",
        other => other,
    }
}

pub(super) fn check(ctx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    super::each_written_obj(ctx, &mut |o| dataset(ctx, o, out));
    // An evaluation's `by`, and an RL stage's validation's (`validate = validation(…) { by }`).
    super::each_written_obj(ctx, &mut |o| match o.ctor.as_str() {
        "evaluate" => by(ctx, o, "evaluation", out),
        "validation" => by(ctx, o, "validation", out),
        _ => {}
    });
}

/// An evaluation's or a validation's (`what`) `by`: a column with a name; over the sandbox's
/// generated tasks, a field of their record (a file's columns are read by `wrlc run`, E0528).
fn by(ctx: &Ctx<'_>, o: &Obj, what: &str, out: &mut Vec<Diagnostic>) {
    let Some(b) = o.fields.get("by") else { return };
    let V::Str { value } = &b.v else { return };
    if value.trim().is_empty() {
        out.push(
            Diagnostic::new("E0419", format!("the column `by` splits the {what} on has no name"))
                .label(b.span, "an empty column name")
                .help("name the column each task's subset is read from (`by = \"data_source\"`), or write `by = none` for one result"),
        );
        return;
    }
    let Some(tasks) = o.fields.get("tasks").and_then(|t| ctx.obj(t)) else { return };
    if !matches!(tasks.ctor.as_str(), "std::sandbox::tasks" | "std::sandbox::qa") {
        return;
    }
    let fields = record_fields("tasks").unwrap_or_default();
    let top = value.split(['.', '[']).next().unwrap_or_default();
    if !fields.contains(&top) {
        let list = fields.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ");
        let help = match did_you_mean(top, fields.iter().copied()) {
            Some(dym) => format!("{dym} the sandbox's tasks have {list}"),
            None => format!("the sandbox's tasks have {list}; `template` splits them by kind"),
        };
        out.push(
            Diagnostic::new(
                "E0419",
                format!("`by` splits on `{top}`, which is not a field of the sandbox's tasks"),
            )
            .label(b.span, "not a field of these tasks")
            .help(help),
        );
    }
}

/// One dataset object's `columns`.
fn dataset(ctx: &Ctx<'_>, o: &Obj, out: &mut Vec<Diagnostic>) {
    if o.kind != "dataset" {
        return;
    }
    let (Some(cols), Some(kind)) = (o.fields.get("columns"), o.fields.get("kind").and_then(word))
    else {
        return;
    };
    let (V::Record { fields: map }, Some(allowed)) = (&cols.v, record_fields(kind)) else {
        return;
    };
    for (field, column) in map {
        if !allowed.contains(&field.as_str()) {
            // The key where the record is written; an entry set from the command line (into
            // the stdlib's `{}`) is shown at its value.
            let key = ctx.find_word(cols.span, field);
            let at = if key == cols.span { column.span } else { key };
            out.push(not_a_field(at, field, kind, allowed));
        }
        if let V::Str { value } = &column.v
            && value.trim().is_empty()
        {
            out.push(
                Diagnostic::new("E0419", format!("the column for `{field}` has no name"))
                    .label(column.span, "an empty column name")
                    .help(format!(
                        "write the name of the column `{field}` is read from, or leave `{field}` \
                         out of `columns` to read the column named `{field}`"
                    )),
            );
        }
    }
}

fn not_a_field(at: Span, field: &str, kind: &str, allowed: &[&str]) -> Diagnostic {
    let list = allowed.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ");
    let fields = format!("{} have {list} (docs/sandbox.md)", records(kind));
    let elsewhere = RECORD_FIELDS.iter().find(|(k, fs)| *k != kind && fs.contains(&field));
    let help = match (did_you_mean(field, allowed.iter().copied()), elsewhere) {
        (Some(dym), _) => format!("{dym} {fields}"),
        (None, Some((k, _))) => format!(
            "`{field}` is a field of {}, and this dataset is `kind = {kind}`: {fields}",
            records(k)
        ),
        (None, None) => format!("{fields}; a mapping is `field = \"column\"`"),
    };
    Diagnostic::new(
        "E0419",
        format!("`columns` maps `{field}`, which is not a field of {}", records(kind)),
    )
    .label(at, format!("not a field of `kind = {kind}`"))
    .help(help)
}
