//! One document checked the way `wrlc check FILE` checks it: parse, check (the recipe and every
//! profile), then the planner's checks when the checker found no errors; the same diagnostics
//! in the same order. What checking built (the AST, the recipe, the checker's tables) is kept
//! for the requests that follow, and the plan estimates are computed once, on first use.

use std::cell::OnceCell;

use wrl_check::{Loader, Recipe, Tables};
use wrl_diagnostics::{Diagnostic, FileId, SourceMap, Span};
use wrl_syntax::{Comment, ast};

/// The document's file id in its own compilation: it is always the first file added.
pub const DOC: FileId = FileId(0);

/// Estimates of the recipe and of each profile (`None` where the plan cannot be built).
pub struct Estimates {
    pub base: Option<wrl_plan::Estimate>,
    pub profiles: Vec<(String, Option<wrl_plan::Estimate>)>,
}

pub struct Analysis {
    pub sources: SourceMap,
    /// `None` when the text could not be parsed at all (not UTF-8: E0106).
    pub file: Option<ast::File>,
    pub comments: Vec<Comment>,
    pub recipe: Option<Recipe>,
    pub tables: Tables,
    /// Sorted as `wrlc check` sorts them.
    pub diagnostics: Vec<Diagnostic>,
    estimates: OnceCell<Estimates>,
}

impl Analysis {
    /// Checks `text`, named `name`; `utf8_error` is the offset of the first invalid byte when
    /// the file on disk is not UTF-8 (the text is then its lossy decoding, and only E0106 is
    /// reported, as `wrlc check` does).
    pub fn new(name: &str, text: &str, loader: &dyn Loader, utf8_error: Option<usize>) -> Analysis {
        let mut sources = SourceMap::new();
        let id = sources.add(name, text);
        debug_assert_eq!(id, DOC);
        if let Some(at) = utf8_error {
            let d = Diagnostic::new("E0106", format!("`{name}` is not valid UTF-8"))
                .label(Span::new(id, at, at + 1), format!("invalid byte at offset {at}"))
                .help("save the file as UTF-8");
            return Analysis {
                sources,
                file: None,
                comments: Vec::new(),
                recipe: None,
                tables: Tables::default(),
                diagnostics: vec![d],
                estimates: OnceCell::new(),
            };
        }
        let parsed = wrl_syntax::parse(id, text);
        let mut diagnostics = parsed.diagnostics;
        let checked = wrl_check::check(&mut sources, &[(id, &parsed.file)], loader);
        diagnostics.extend(checked.diagnostics);
        if !diagnostics.iter().any(Diagnostic::is_error) {
            for (i, r) in checked.recipes.iter().enumerate() {
                match checked.slices.get(i) {
                    Some(slices) if slices.len() == r.profiles.len() => {
                        diagnostics.extend(wrl_plan::plan_diagnostics_sliced(r, slices))
                    }
                    _ => diagnostics.extend(wrl_plan::plan_diagnostics(r)),
                }
            }
        }
        diagnostics.sort_by_key(|d| d.sort_key());
        diagnostics.dedup();
        Analysis {
            sources,
            file: Some(parsed.file),
            comments: parsed.comments,
            recipe: checked.recipes.into_iter().next(),
            tables: checked.tables,
            diagnostics,
            estimates: OnceCell::new(),
        }
    }

    pub fn text(&self) -> &str {
        self.sources.get(DOC).map_or("", |f| f.text.as_str())
    }

    /// The text of a span in any file of this compilation.
    pub fn slice(&self, span: Span) -> &str {
        self.sources.get(span.file).map_or("", |f| f.slice(span))
    }

    /// The name of a file of this compilation.
    pub fn file_name(&self, file: FileId) -> Option<&str> {
        self.sources.get(file).map(|f| f.name.as_str())
    }

    /// Whether the compilation read the file of that name (an import, an `extends` parent).
    pub fn reads(&self, name: &str) -> bool {
        self.sources.files().skip(1).any(|(_, f)| f.name == name)
    }

    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// The plan of the recipe, or of one of its profiles (`None` with errors, or when it cannot
    /// be lowered).
    pub fn plan(&self, profile: Option<&str>) -> Option<wrl_plan::Plan> {
        let recipe = self.recipe.as_ref().filter(|_| !self.has_errors())?;
        match profile {
            Some(p) => wrl_plan::lower(&recipe.with_named(p).ok()?).ok(),
            None => wrl_plan::lower(recipe).ok(),
        }
    }

    /// The recipe's identity and each profile's (`sha256:…`), as `wrlc plan` states them.
    pub fn identities(&self) -> Vec<(Option<String>, wrl_plan::Identity)> {
        let Some(recipe) = self.recipe.as_ref() else { return Vec::new() };
        let names =
            std::iter::once(None).chain(recipe.profiles.iter().map(|p| Some(p.name.clone())));
        names
            .filter_map(|p| Some((p.clone(), wrl_plan::Identity::of(&self.plan(p.as_deref())?))))
            .collect()
    }

    /// The plan estimates of the recipe and its profiles, computed once (only for a recipe
    /// without errors: a recipe with errors has no plan).
    pub fn estimates(&self) -> &Estimates {
        self.estimates.get_or_init(|| {
            let none = Estimates { base: None, profiles: Vec::new() };
            let Some(recipe) = self.recipe.as_ref().filter(|_| !self.has_errors()) else {
                return none;
            };
            let est = |r: &Recipe| wrl_plan::lower(r).ok().map(|p| wrl_plan::estimate(&p, None));
            let profiles = recipe
                .profiles
                .iter()
                .map(|p| (p.name.clone(), recipe.with_named(&p.name).ok().as_ref().and_then(est)))
                .collect();
            Estimates { base: est(recipe), profiles }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_diagnostics_as_check_source() {
        let src = "model policy = std::models::tiny\nmodel spare = std::models::tinyy\n";
        let loader = wrl_check::MemLoader::default();
        let a = Analysis::new("a.wrl", src, &loader, None);
        let (_, checked) = wrl_check::check_source("a.wrl", src, &loader);
        let codes = |d: &[Diagnostic]| d.iter().map(|d| d.code).collect::<Vec<_>>();
        assert_eq!(codes(&a.diagnostics), codes(&checked.diagnostics));
        assert!(a.has_errors());
        assert!(a.estimates().base.is_none());
    }

    #[test]
    fn invalid_utf8_is_e0106_only() {
        let a = Analysis::new("a.wrl", "model \u{fffd}", &wrl_check::MemLoader::default(), Some(6));
        assert_eq!(a.diagnostics.len(), 1);
        assert_eq!(a.diagnostics[0].code, "E0106");
        assert!(a.file.is_none());
    }
}
