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
    let mut diagnostics = Vec::new();
    let mut ids = Vec::new();
    for path in &files {
        match read(path, &mut sources)? {
            Ok(id) => ids.push(id),
            Err(d) => diagnostics.push(d),
        }
    }
    let texts: Vec<(wrl_diagnostics::FileId, &str)> = ids
        .iter()
        .map(|&id| (id, sources.get(id).map(|f| f.text.as_str()).unwrap_or("")))
        .collect();
    let mut parsed = Vec::with_capacity(ids.len());
    for p in parse_all(&texts, sources.files().count()) {
        diagnostics.extend(p.diagnostics);
        parsed.push(p.file);
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
                        // Each variant a study under the profile runs, on top of it.
                        for v in profiled.study_variants() {
                            if let Ok(varied) = profiled.with_variant(v) {
                                diagnostics.extend(wrl_plan::lower_diagnostics(&varied));
                            }
                        }
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

/// One piece of parsing: a file of the user's, or a module of the embedded stdlib (parsed into
/// the checker's cache, as the file id the checker will give it).
#[derive(Clone, Copy)]
enum Job<'t> {
    File(wrl_diagnostics::FileId, &'t str),
    Stdlib(usize),
}

impl Job<'_> {
    fn bytes(&self) -> usize {
        match self {
            Job::File(_, t) => t.len(),
            Job::Stdlib(i) => wrl_check::STDLIB_MODULES.get(*i).map_or(0, |(_, _, t)| t.len()),
        }
    }
}

/// Parses the files, in order, and the embedded stdlib, on as many threads as the machine
/// offers: parsing is most of a small check, and files parse independently. Each thread takes
/// a run of consecutive jobs of about equal bytes, so the files come back in their order.
fn parse_all(texts: &[(wrl_diagnostics::FileId, &str)], files: usize) -> Vec<wrl_syntax::Parsed> {
    let mut jobs: Vec<Job> = texts.iter().map(|&(id, t)| Job::File(id, t)).collect();
    jobs.extend((0..wrl_check::STDLIB_MODULES.len()).map(Job::Stdlib));
    let run = |share: &[Job]| -> Vec<wrl_syntax::Parsed> {
        let mut out = Vec::new();
        for job in share {
            match *job {
                Job::File(id, t) => out.push(wrl_syntax::parse(id, t)),
                Job::Stdlib(i) => wrl_check::warm_stdlib(i, files),
            }
        }
        out
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(jobs.len());
    let total: usize = jobs.iter().map(Job::bytes).sum();
    // Below this, starting a thread costs more than it saves.
    if threads < 2 || total < 16 * 1024 {
        return run(&jobs);
    }
    let mut shares: Vec<&[Job]> = Vec::with_capacity(threads);
    let (mut start, mut bytes) = (0, 0);
    for (i, job) in jobs.iter().enumerate() {
        bytes += job.bytes();
        if bytes * threads >= total * (shares.len() + 1) && shares.len() + 1 < threads {
            shares.push(&jobs[start..=i]);
            start = i + 1;
        }
    }
    shares.push(&jobs[start..]);
    std::thread::scope(|scope| {
        // The parser wants a deep stack (it grows one when short: see `wrl_syntax::parse`).
        let handles: Vec<_> = shares
            .iter()
            .map(|&share| {
                std::thread::Builder::new()
                    .stack_size(64 << 20)
                    .spawn_scoped(scope, move || run(share))
            })
            .collect();
        // A share whose thread could not start, or panicked (a bug), is parsed again here, so
        // that a panic surfaces on this thread with its message, as it would without threads.
        handles
            .into_iter()
            .zip(&shares)
            .flat_map(|(h, &share)| match h.map(|h| h.join()) {
                Ok(Ok(parsed)) => parsed,
                _ => run(share),
            })
            .collect()
    })
}
