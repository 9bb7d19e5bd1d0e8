//! The preflight: everything `wrlc run` can find wrong with a plan before any work starts —
//! nodes that do not decode into their constructor's type, `unknown` values the runtime needs,
//! data files that are missing or malformed, models it cannot build, settings it does not
//! implement, no Chromium — every problem at once, each with its code and, where a declaration
//! is to blame, that declaration and field.

mod api_policy;
mod chat;
mod critic;
mod device;
pub mod files;
pub mod fit;
pub mod footprint;
mod limits;
mod lora;
mod mcp;
mod memory;
mod quiet;
mod refusals;
mod refuse;
mod rewards;
mod secrets;
mod sft_room;
pub(crate) mod subsets;
pub(crate) mod tables;
pub(crate) mod vision;

use std::collections::BTreeMap;
use std::path::Path;

use wrl_plan::params::{self, Dataset, DemoEnv, Env, Params, TypedPlan, shape::Shape};
use wrl_plan::{Node, PVal, Plan};

use crate::error::{Fault, RunError};

pub use device::device_choice;
pub use files::check_out;

pub use crate::error::INSTALL_CHROMIUM;

/// Every credential written into a URL of `plan` (E0520): what a command that writes the plan
/// out (`wrlc run`'s `plan.json`, `wrlc lower`'s job) must refuse first.
pub fn credentials(plan: &Plan) -> Vec<RunError> {
    plan.nodes.iter().flat_map(secrets::secrets).collect()
}

/// Decodes the plan and refuses one the runtime cannot run, listing every problem, before any
/// work; the decoded plan is what the executor runs.
pub fn preflight<'p>(
    plan: &'p Plan,
    chromium: Option<&Path>,
) -> Result<TypedPlan<'p>, Vec<RunError>> {
    let mut errs = Vec::new();
    let mut nodes = Vec::new();
    for n in &plan.nodes {
        errs.extend(unknowns(n));
        errs.extend(secrets::secrets(n));
        match params::decode(n) {
            Ok(p) => nodes.push((n, p)),
            Err(e) => errs.extend(decode_error(n, &e)),
        }
    }
    // The nodes that decoded are checked too: every problem at once.
    let typed = TypedPlan { plan, nodes };
    if let Some((n, p)) = typed.nodes.iter().find(|(_, p)| needs_chromium(p))
        && let Err(e) = wrl_browser::find_chromium(chromium)
    {
        // `find_chromium` only ever says where it looked; its own advice is the help below.
        let why = match e {
            wrl_browser::LaunchError::NotFound(why) => why,
            other => other.to_string(),
        };
        let label = match p {
            Params::Env(_) => "this environment runs in Chromium",
            _ => "the scripted expert records these demonstrations in Chromium",
        };
        errs.push(
            RunError::new(
                Fault::NoChromium,
                format!("no Chromium to run the browser environment: {why}"),
            )
            .help(INSTALL_CHROMIUM)
            .at(n, None, label),
        );
    }
    let mut validated = std::collections::BTreeSet::new();
    for (n, p) in &typed.nodes {
        if let Params::Dataset(d) = p {
            errs.extend(dataset(n, d));
        }
        if let Params::Eval(e) = p
            && let params::OrNone::Value(by) = &e.by
        {
            errs.extend(subset_column(&typed, n, (e.tasks.id(), by), None));
        }
        // A validation's `by`, once per stage (every phase carries the stage's `validate`).
        if let Params::RlPhase(r) = p
            && let Some(v) = r.algo.validate()
            && let params::OrNone::Value(by) = &v.by
            && validated.insert(r.run.stage.clone())
        {
            errs.extend(subset_column(&typed, n, (v.tasks.id(), by), Some("validate")));
        }
        if let Params::Env(params::Env::SearchApi(s)) = p
            && let params::Site::Retriever { corpus, .. } = &s.target
            && let Err(why) = wrl_sandbox::retriever::read_docs(corpus)
        {
            errs.push(
                RunError::new(Fault::Data, format!("env `{}`: {why}", n.decl))
                    .help("a corpus is JSONL, one {\"url\", \"title\", \"text\"} document per line (docs/sandbox.md); paths are relative to the directory `wrlc run` is started in")
                    .at(n, Some("target"), "this retriever's corpus"),
            );
        }
        if let Params::Env(e) = p {
            errs.extend(mcp::mcp(n, e));
        }
        errs.extend(refusals::refusals(&typed, n, p));
        errs.extend(rewards::inline(&typed, n, p));
    }
    // Only a plan whose nodes all decoded is sized: the estimate reads them all.
    if errs.is_empty() {
        errs.extend(memory::refusals(&typed));
    }
    // A stage's phases share its fields: what is refused in one is said once, at the field.
    let mut seen = std::collections::BTreeSet::new();
    errs.retain(|e| {
        let at = e.subject.as_ref().map(|s| (s.decl.clone(), s.param.clone()));
        seen.insert((e.code(), e.message.clone(), at))
    });
    if errs.is_empty() { Ok(typed) } else { Err(errs) }
}

/// Reads the JSONL or Parquet data file at `path` as records of `kind` (by its extension), as
/// a dataset reads it: the number of records, or why it cannot be read. What the fuzz target
/// of the dataset readers (`fuzz/fuzz_targets/datasets.rs`) calls: it may fail, never panic.
pub fn read_data_file(path: &str, kind: params::RecordKind) -> Result<usize, String> {
    tables::read_records(path, kind, &files::Columns::new()).map(|r| r.len()).map_err(|(m, _)| m)
}

/// Reads a file of chat conversations (`kind = chat`, JSONL or Parquet by its extension) as an
/// SFT dataset reads it, through `columns`: each conversation checked and read into the
/// trainer's segments (tool calls and tools kept), or why not, naming the file and the line or
/// row.
pub fn read_chats(
    path: &str,
    columns: &BTreeMap<String, String>,
) -> Result<Vec<wrl_trainer::Trajectory>, String> {
    match tables::read_records(path, params::RecordKind::Chat, columns) {
        Ok(files::Records::Chats(c)) => Ok(c),
        Ok(_) => Err(format!("`{path}` is not read as chat conversations")),
        Err((message, _)) => Err(message),
    }
}

/// A node that does not decode: an `unknown` the runtime needs below its top level (E0500;
/// top-level ones are reported by [`unknowns`]), or a plan of another format (E0506).
fn decode_error(n: &Node, e: &params::DecodeError) -> Option<RunError> {
    let top = e.param().is_some_and(|p| n.params.get(p).is_some_and(PVal::is_unknown));
    match e.param() {
        Some(_) if e.is_unknown() && top => None,
        Some(p) if e.is_unknown() => Some(unknown(n, p, &e.path_text())),
        _ => Some(
            RunError::new(
                Fault::PlanFormat,
                match e.path.is_empty() {
                    true => format!("node `{}` ({}) {}", n.id, n.ctor, e.problem),
                    false => format!("node `{}` ({}): {e}", n.id, n.ctor),
                },
            )
            .help(format!(
                "the plan was written by another wrlc or edited by hand: wrlc {} reads its own \
                 plan format only (docs/plan-format.md). A run directory an older wrlc wrote \
                 cannot be resumed by this one; run the recipe again into a new directory \
                 (`wrlc run RECIPE --out NEW_DIR`)",
                env!("CARGO_PKG_VERSION")
            )),
        ),
    }
}

/// The `unknown` top-level parameters of `n` that its constructor's type needs.
fn unknowns(n: &Node) -> Vec<RunError> {
    // A stage's checkpoint node holds its `checkpoint_every` as `every`: the stage reports it.
    if n.kind == wrl_plan::NodeKind::Checkpoint {
        return Vec::new();
    }
    let Some(shape) = params::shape_of(n.kind, &n.ctor) else { return Vec::new() };
    n.params
        .iter()
        .filter(|(_, v)| v.is_unknown())
        .filter(|(k, _)| !matches!(shape.field(k), Some(Shape::Option(_)) | None))
        .map(|(k, _)| unknown(n, k, k))
        .collect()
}

fn unknown(n: &Node, param: &str, path: &str) -> RunError {
    RunError::new(Fault::Unknown, format!("`{path}` of `{}` is `unknown`", n.decl))
        .help("give it a value in the recipe, with a profile, or with `--set`")
        .at(n, Some(param), "the runtime needs this value")
}

fn needs_chromium(p: &Params) -> bool {
    match p {
        Params::Env(Env::Browser(_)) => true,
        Params::Dataset(Dataset::SandboxDemos(d)) => d.env == DemoEnv::Browser,
        _ => false,
    }
}

/// A dataset this runtime cannot read, or whose file is missing, empty or malformed.
fn dataset(n: &Node, d: &Dataset) -> Vec<RunError> {
    if let Some(refused) = limits::grounding(n, d) {
        return vec![refused];
    }
    let path = match d {
        Dataset::Jsonl(f) | Dataset::Parquet(f) => Some(f.path.as_str()),
        _ => None,
    };
    let mut errs: Vec<RunError> = path.and_then(|p| missing_file(n, p)).into_iter().collect();
    // The declared `count` is what the estimate and `iters = N epochs` count with: it must be
    // the file's.
    let declared = match d {
        Dataset::Jsonl(f) | Dataset::Parquet(f) => f.count,
        Dataset::HfDataset(h) => h.count,
        _ => None,
    };
    let read = |path: &str, at: &str, errs: &mut Vec<RunError>| match tables::read_records(
        path,
        kind_of(d),
        columns_of(d),
    ) {
        Err((message, label)) => {
            let fault = files::fault_of(&message);
            let help =
                if fault == Fault::ChatData { chat::HELP } else { tables::format_help(path) };
            errs.push(
                RunError::new(fault, format!("dataset `{}`: {message}", n.decl)).help(help).at(
                    n,
                    Some(at),
                    label,
                ),
            )
        }
        Ok(records) if declared.is_some_and(|c| c != records.len() as u64) => {
            let (c, len) = (declared.unwrap_or_default(), records.len());
            let records = if len == 1 { "1 record".to_string() } else { format!("{len} records") };
            errs.push(
                RunError::new(
                    Fault::Data,
                    format!("dataset `{}` declares `count = {c}`, but `{path}` holds {records}", n.decl),
                )
                .help(format!("write `count = {len}` (or `count = unknown`): the estimate and phases given in epochs count with it"))
                .at(n, Some("count"), format!("{records} in the file")),
            )
        }
        Ok(_) => {}
    };
    match d {
        Dataset::Jsonl(f) | Dataset::Parquet(f) if errs.is_empty() => {
            read(&f.path, "path", &mut errs)
        }
        Dataset::HfDataset(h) => match tables::hf_dataset_file(&h.id, &h.file, h.split) {
            Ok(path) => read(&path, "id", &mut errs),
            Err(why) => errs.push(
                RunError::new(Fault::Data, format!("dataset `{}`: {why}", n.decl))
                    .help(
                        "put the dataset in the Hugging Face cache first (`huggingface-cli \
                         download --repo-type dataset ORG/NAME`), or use `parquet(…)` / `jsonl(…)` \
                         on a local file",
                    )
                    .at(n, Some("id"), "this dataset cannot be read on this machine"),
            ),
        },
        _ => {}
    }
    errs
}

/// The column an evaluation (or, under `field`, a stage's validation) splits its result by
/// (`by`), of the tasks of node `tasks`, when they lack it (E0528): a file's row without it (the
/// file's other faults are its dataset's), a generated task set's record without such a field.
fn subset_column(
    typed: &TypedPlan<'_>,
    n: &Node,
    (tasks, by): (&str, &str),
    field: Option<&str>,
) -> Vec<RunError> {
    let Some(Params::Dataset(d)) = typed.get(tasks) else { return Vec::new() };
    let who = match field {
        None => format!("eval `{}`", n.decl),
        Some(_) => format!("the validation of `{}`", n.decl),
    };
    let refuse = |message: String, label: String| {
        RunError::new(Fault::SubsetColumn, format!("{who}: {message}"))
            .help(
                "name a column every row has, by name or by a path into nested columns \
                 (`extra_info.split`), or leave `by` out for one result",
            )
            .at(n, Some(field.unwrap_or("by")), label)
    };
    if let Err(why) = subsets::known_before(d, by) {
        return vec![refuse(why, "not a field of these tasks".into())];
    }
    let path = match d {
        Dataset::Jsonl(f) | Dataset::Parquet(f) => Some(f.path.clone()),
        Dataset::HfDataset(h) => tables::hf_dataset_file(&h.id, &h.file, h.split).ok(),
        _ => None,
    };
    match path.filter(|p| Path::new(p).is_file()).map(|p| subsets::of_file(&p, by)) {
        Some(Err((message, label))) => vec![refuse(message, label)],
        Some(Ok(_)) | None => Vec::new(),
    }
}

/// The record kind of a file dataset (`tasks` for the rest, which read no file).
fn kind_of(d: &Dataset) -> params::RecordKind {
    match d {
        Dataset::Jsonl(f) | Dataset::Parquet(f) => f.kind,
        Dataset::HfDataset(h) => h.kind,
        _ => params::RecordKind::Tasks,
    }
}

/// The column mapping of a file dataset (none for the rest).
fn columns_of(d: &Dataset) -> &files::Columns {
    static NONE: files::Columns = files::Columns::new();
    match d {
        Dataset::Jsonl(f) | Dataset::Parquet(f) => &f.columns,
        Dataset::HfDataset(h) => &h.columns,
        _ => &NONE,
    }
}

/// The data file of a `jsonl` or `parquet` dataset, when it does not exist.
fn missing_file(n: &Node, path: &str) -> Option<RunError> {
    (!Path::new(path).exists()).then(|| {
        RunError::new(
            Fault::Data,
            format!("dataset `{}` reads `{path}`, which does not exist", n.decl),
        )
        .help("paths are relative to the directory `wrlc run` is started in")
        .at(n, Some("path"), "no such file")
    })
}
