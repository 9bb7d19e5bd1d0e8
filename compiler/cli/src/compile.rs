//! Runs the compiler phases over a set of files and collects every diagnostic, sorted by file
//! and position.

use std::path::PathBuf;

use wrl_diagnostics::{Diagnostic, SourceMap};
use wrl_syntax::ast;

use crate::load::{PathError, discover, read};

/// Everything one run of the phases produced.
pub struct Compilation {
    pub sources: SourceMap,
    pub files: Vec<ast::File>,
    pub recipes: Vec<wrl_check::Recipe>,
    pub diagnostics: Vec<Diagnostic>,
    /// Warnings left out of `diagnostics` past [`wrl_diagnostics::MAX_REPEATED`] of a code.
    pub hidden: usize,
    /// The checker's tables and the profile slices: nothing reads them, they are only freed
    /// with the compilation (not in the middle of the run: see `wrl_check::Tables`).
    pub retained: (wrl_check::Tables, Vec<Vec<wrl_check::Recipe>>),
}

impl Compilation {
    pub fn error_count(&self) -> usize {
        self.diagnostics.iter().filter(|d| d.is_error()).count()
    }
}

/// Loads, parses and checks the given paths.
pub fn compile_paths(paths: &[PathBuf]) -> Result<Compilation, PathError> {
    compile_paths_as(paths, None)
}

/// [`compile_paths`], with the recipe rules and the plan checks judging each recipe as
/// `profile` resolves it (`wrlc check --profile NAME`); a recipe without that profile gets
/// E0206. The recipes returned are the plain ones.
pub fn compile_paths_as(
    paths: &[PathBuf],
    profile: Option<&str>,
) -> Result<Compilation, PathError> {
    let files = discover(paths)?;
    let mut sources = SourceMap::new();
    let mut parsed = Vec::new();
    let mut ids = Vec::new();
    let mut diagnostics = Vec::new();
    for path in &files {
        match read(path, &mut sources)? {
            Ok(id) => {
                let text = sources.get(id).map(|f| f.text.as_str()).unwrap_or("");
                let p = wrl_syntax::parse(id, text);
                diagnostics.extend(p.diagnostics);
                parsed.push(p.file);
                ids.push(id);
            }
            Err(d) => diagnostics.push(d),
        }
    }
    let entries: Vec<(wrl_diagnostics::FileId, &ast::File)> =
        ids.iter().copied().zip(parsed.iter()).collect();
    let checked = wrl_check::check_as(&mut sources, &entries, &wrl_check::FsLoader, profile);
    diagnostics.extend(checked.diagnostics);
    // The planner's graph rules (E045x) run on recipes the checker found no errors in.
    if !diagnostics.iter().any(Diagnostic::is_error) {
        for (i, r) in checked.recipes.iter().enumerate() {
            match profile {
                // The rules' profile slices, one per profile (else slice again).
                None => match checked.slices.get(i) {
                    Some(slices) if slices.len() == r.profiles.len() => {
                        diagnostics.extend(wrl_plan::plan_diagnostics_sliced(r, slices))
                    }
                    _ => diagnostics.extend(wrl_plan::plan_diagnostics(r)),
                },
                Some(name) => {
                    if let Ok(profiled) = r.with_profile(name) {
                        diagnostics.extend(wrl_plan::lower_diagnostics(&profiled));
                    }
                }
            }
        }
    }
    diagnostics.sort_by_key(|d| d.sort_key());
    diagnostics.dedup();
    let hidden = wrl_diagnostics::cap_repeated(&mut diagnostics, wrl_diagnostics::MAX_REPEATED);
    Ok(Compilation {
        sources,
        files: parsed,
        recipes: checked.recipes,
        diagnostics,
        hidden,
        retained: (checked.tables, checked.slices),
    })
}
