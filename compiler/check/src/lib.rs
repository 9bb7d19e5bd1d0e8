//! The checker: names and imports (E02xx), types, fields and units (E03xx) and recipe rules
//! (E04xx). It reads the stdlib's typed signatures, evaluates every declaration to a checked
//! value, and returns one `Recipe` per entry file with every diagnostic found in one pass.

mod builtins;
mod checker;
mod conform;
mod curricula;
mod driver;
pub mod epochs;
mod eval;
mod explicit;
mod fields;
mod imports;
mod loader;
pub mod migrate;
mod model;
mod name;
mod ops;
mod overrides;
mod paths;
pub mod provenance;
pub mod query;
mod rules;
pub mod sequence;
mod slice;
mod stdlib;
mod stdlib_doc;
mod suggest;
mod tables;
pub mod turns;
mod types;
pub mod value;

use wrl_diagnostics::{Diagnostic, FileId, SourceMap};
use wrl_syntax::ast;

pub use checker::warm_stdlib;
pub use fields::{Defaults, Fields};
pub use loader::{FsLoader, Loader, MemLoader, join_relative};
pub use model::{
    BASE_PROFILE, BASE_VARIANT, CheckedDecl, Override, Profile, Recipe, Seg, claim_profiles,
    claim_variants, scope_holds,
};
pub use name::Name;
pub use rules::columns::{RECORD_FIELDS, record_fields};
pub use rules::under_study;
pub use slice::ProfileSlicer;
pub use stdlib::MODULES as STDLIB_MODULES;
pub use stdlib_doc::stdlib_doc;
pub use tables::Tables;
pub use types::{Ty, parse_type};
pub use value::{EdgeV, ModuleV, Obj, SigExpr, ToolParamV, ToolV, V, Val};
pub use wrl_syntax::ast::ProfileKind;

/// What checking produced: a recipe per entry file and every diagnostic, sorted.
#[derive(Debug)]
pub struct Checked {
    pub recipes: Vec<Recipe>,
    pub diagnostics: Vec<Diagnostic>,
    /// For each recipe, its profiles' slices ([`ProfileSlicer::slice`], in profile order),
    /// as the recipe rules judged them: the planner's checks reuse them. Empty when the rules
    /// ran on one named profile.
    pub slices: Vec<Vec<Recipe>>,
    /// The checker's tables, for the caller to free when it suits it ([`Tables`]).
    pub tables: Tables,
}

/// Checks the given parsed entry files (already in `sources`). Imported files are read
/// through `loader` and added to `sources`; the stdlib is added too, under `std/…` names.
pub fn check(
    sources: &mut SourceMap,
    entries: &[(FileId, &ast::File)],
    loader: &dyn Loader,
) -> Checked {
    check_as(sources, entries, loader, None)
}

/// [`check`], with the recipe rules judging each recipe as `profile` resolves it (`wrlc check
/// --profile NAME`): they run on the profiled recipe only, and a recipe that declares no such
/// profile gets E0206. The recipes returned are the plain ones. With `None`, the rules run on
/// each recipe and on each of its profiles.
pub fn check_as(
    sources: &mut SourceMap,
    entries: &[(FileId, &ast::File)],
    loader: &dyn Loader,
    profile: Option<&str>,
) -> Checked {
    let judge = match profile {
        Some(name) => rules::Judge::Only(name),
        None => rules::Judge::All,
    };
    check_judged(sources, entries, loader, judge)
}

/// [`check`] for a run that layers the profile `top` (the CLI's `--set` overrides) on top of
/// the profile `under` (`--profile`; `None`: the recipe itself): the recipe rules judge the
/// recipe and each of its other profiles as [`check`] does, and `top` on top of `under`, as
/// the run resolves it, never on the plain recipe (where an override meant for `under` need not
/// fit).
pub fn check_layered(
    sources: &mut SourceMap,
    entries: &[(FileId, &ast::File)],
    loader: &dyn Loader,
    under: Option<&str>,
    top: &str,
) -> Checked {
    check_judged(sources, entries, loader, rules::Judge::Layered { under, top })
}

fn check_judged(
    sources: &mut SourceMap,
    entries: &[(FileId, &ast::File)],
    loader: &dyn Loader,
    judge: rules::Judge<'_>,
) -> Checked {
    let mut c = checker::Checker::new(sources, loader);
    let mut ids = Vec::new();
    for (file, parsed) in entries {
        let name = c.sources.get(*file).map(|f| f.name.clone()).unwrap_or_default();
        ids.push(c.register_module(&name, *file, false, checker::Parsed::Lent(parsed)));
    }
    for ((_, parsed), id) in entries.iter().zip(&ids) {
        c.link_module(*id, parsed);
    }
    let recipes = c.run(&ids);
    let std_files: std::collections::BTreeSet<FileId> =
        c.modules.iter().filter(|m| m.std).map(|m| m.file).collect();
    let mut diagnostics = std::mem::take(&mut c.diags);
    let tables = c.into_tables();
    let (found, slices) = rules::run(&recipes, sources, &std_files, judge);
    diagnostics.extend(found);
    diagnostics
        .sort_by(|a, b| a.sort_key().cmp(&b.sort_key()).then_with(|| a.message.cmp(&b.message)));
    diagnostics.dedup();
    Checked { recipes, diagnostics, slices, tables }
}

/// Parses and checks one source text (tests and tools). Syntax diagnostics are included.
pub fn check_source(name: &str, text: &str, loader: &dyn Loader) -> (SourceMap, Checked) {
    let mut sources = SourceMap::new();
    let id = sources.add(name, text);
    let parsed = wrl_syntax::parse(id, text);
    let mut checked = check(&mut sources, &[(id, &parsed.file)], loader);
    checked.diagnostics.extend(parsed.diagnostics);
    checked.diagnostics.sort_by_key(|d| d.sort_key());
    (sources, checked)
}
