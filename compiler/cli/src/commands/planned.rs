//! A recipe checked and lowered for a command that goes on to run it, serve it or lower it
//! further (`wrlc run`, `estimate`, `lower`, `env serve`): `--set` overrides applied as a
//! synthetic profile, every problem emitted, and the sources kept to place runtime problems.

use std::path::Path;

use wrl_diagnostics::{Diagnostic, FileId, SourceMap};
use wrl_plan::Plan;

use crate::global::GlobalOpts;
use crate::render::emit;
use crate::{EXIT_USAGE, EXIT_USER, Io};

/// The synthetic profile that carries `--set` overrides.
pub(crate) const SET_PROFILE: &str = "__set__";

/// A recipe checked and lowered: the plan, and what it came from (to place runtime problems).
pub(crate) struct Planned {
    pub plan: Plan,
    pub sources: SourceMap,
    pub recipe: wrl_check::Recipe,
    pub entry: FileId,
}

/// Checks the recipe (with `--set` overrides as a synthetic profile) and lowers it.
pub(crate) fn plan_for(
    file: &Path,
    profile: Option<&str>,
    sets: &[String],
    global: &GlobalOpts,
    io: &mut Io,
) -> Result<Planned, u8> {
    // Read as `wrlc check` reads a file: not a FIFO or a device, and invalid UTF-8 is E0106.
    let mut sources = SourceMap::new();
    let id = match crate::load::read(file, &mut sources) {
        Ok(Ok(id)) => id,
        Ok(Err(d)) => {
            emit(&[d], &sources, global.error_format, io);
            return Err(EXIT_USER);
        }
        Err(crate::load::PathError(e)) => {
            let _ = writeln!(io.err, "error: {e}");
            return Err(EXIT_USAGE);
        }
    };
    let text = sources.get(id).map(|f| f.text.clone()).unwrap_or_default();
    let mut parsed = wrl_syntax::parse(id, &text);
    let mut diags: Vec<Diagnostic> = parsed.diagnostics;
    // `--set` overrides: a profile parsed from the arguments, never from spliced text.
    if !sets.is_empty() {
        match crate::commands::set::profile(&mut sources, sets, SET_PROFILE) {
            Ok(item) => parsed.file.items.push(item),
            Err(ds) => {
                diags.extend(ds);
                diags.retain(Diagnostic::is_error);
                emit(&diags, &sources, global.error_format, io);
                return Err(EXIT_USER);
            }
        }
    }
    // `--set` is judged on top of the chosen profile, as the run resolves it: not on the
    // recipe itself, where an override meant for the profile need not fit.
    let entries = [(id, &parsed.file)];
    let checked = if sets.is_empty() {
        wrl_check::check(&mut sources, &entries, &wrl_check::FsLoader)
    } else {
        wrl_check::check_layered(&mut sources, &entries, &wrl_check::FsLoader, profile, SET_PROFILE)
    };
    diags.extend(checked.diagnostics.into_iter().map(unprofiled));
    let errors = diags.iter().any(Diagnostic::is_error);
    let recipe = match checked.recipes.into_iter().next() {
        Some(r) if !errors => r,
        _ => {
            diags.retain(Diagnostic::is_error);
            emit(&diags, &sources, global.error_format, io);
            return Err(EXIT_USER);
        }
    };
    let mut recipe = match profile {
        Some(p) => match recipe.with_profile(p) {
            Ok(r) => r,
            Err(d) => {
                emit(&[d], &sources, global.error_format, io);
                return Err(EXIT_USER);
            }
        },
        None => recipe,
    };
    if !sets.is_empty() {
        match recipe.with_profile(SET_PROFILE) {
            Ok(r) => recipe = r,
            Err(d) => {
                emit(&[unprofiled(d)], &sources, global.error_format, io);
                return Err(EXIT_USER);
            }
        }
        recipe.profile = profile.map(str::to_string);
    }
    match wrl_plan::lower(&recipe) {
        Ok(plan) => Ok(Planned { plan, sources, recipe, entry: id }),
        Err(ds) => {
            let ds: Vec<Diagnostic> = ds.into_iter().map(unprofiled).collect();
            emit(&ds, &sources, global.error_format, io);
            Err(EXIT_USER)
        }
    }
}

/// The plan of the recipe's variant `name` (`base`: the recipe itself): its overrides on top
/// of the profile, and `--set` on top of them again; E0208 when there is none.
pub(crate) fn variant_plan(
    p: &Planned,
    name: &str,
    global: &GlobalOpts,
    io: &mut Io,
) -> Result<Plan, u8> {
    let varied = p.recipe.with_variant(name).and_then(|r| {
        if !r.profiles.iter().any(|q| q.name == SET_PROFILE) {
            return Ok(r);
        }
        let profile = r.profile.clone();
        r.with_profile(SET_PROFILE).map(|mut r| {
            r.profile = profile;
            r
        })
    });
    let recipe = match varied {
        Ok(r) => r,
        Err(d) => {
            emit(&[d], &p.sources, global.error_format, io);
            return Err(EXIT_USER);
        }
    };
    wrl_plan::lower(&recipe).map_err(|ds| {
        let ds: Vec<Diagnostic> = ds.into_iter().map(unprofiled).collect();
        emit(&ds, &p.sources, global.error_format, io);
        EXIT_USER
    })
}

/// A diagnostic of the `--set` overrides without the phases' "(profile `__set__`)": the
/// overrides are no profile of the file, and each already points at its own `--set #N`.
fn unprofiled(mut d: Diagnostic) -> Diagnostic {
    let tag = format!("profile `{SET_PROFILE}`");
    if let Some(m) = d.message.strip_suffix(&format!(" ({tag})")) {
        d.message = m.to_string();
    }
    d.labels.retain(|l| l.message != format!("with {tag}"));
    d
}
