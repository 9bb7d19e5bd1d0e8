//! The checked model of one recipe: its declarations with checked values and its profiles. This
//! is what the planner lowers; it never sees syntax.

use std::sync::Arc;

use serde::Serialize;
use wrl_diagnostics::{Diagnostic, Span};
use wrl_syntax::ast::DeclKind;

use crate::value::{V, Val};

/// One declaration after checking.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckedDecl {
    /// The key other values use to refer to it (`policy`, `std::models::tiny`).
    pub name: String,
    pub kind: DeclKind,
    pub value: Val,
    pub doc: Option<String>,
    #[serde(skip)]
    pub span: Span,
    #[serde(skip)]
    pub name_span: Span,
    /// Declared in the stdlib.
    pub std: bool,
}

/// One step of an override path: `online.phases[1].lr` is `online`, `phases`, `[1]`, `lr`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Seg {
    Field(String),
    Index(usize),
    /// A module of an agent graph, by name.
    Module(String),
}

/// `path = value` in a profile or an `extends` block, already type-checked.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Override {
    pub decl: String,
    pub path: Vec<Seg>,
    pub value: Val,
    #[serde(skip)]
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Profile {
    pub name: String,
    pub overrides: Vec<Override>,
    #[serde(skip)]
    pub span: Span,
}

/// A checked recipe: what one entry file means.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Recipe {
    /// The entry file's name as shown to users.
    pub file: String,
    /// Shared: recipes, profile slices and the checker hold the same declarations (a profile
    /// override changes its own copy, `Arc::make_mut`).
    pub decls: Vec<Arc<CheckedDecl>>,
    pub profiles: Vec<Profile>,
    /// The profile applied, if any.
    pub profile: Option<String>,
}

impl Recipe {
    pub fn decl(&self, name: &str) -> Option<&CheckedDecl> {
        self.decls.iter().find(|d| d.name == name).map(|d| &**d)
    }

    pub fn profile_names(&self) -> impl Iterator<Item = &str> {
        self.profiles.iter().map(|p| p.name.as_str())
    }

    /// This recipe with a profile's overrides applied.
    pub fn with_profile(&self, name: &str) -> Result<Recipe, Diagnostic> {
        let Some(profile) = self.profiles.iter().find(|p| p.name == name) else {
            let help =
                wrl_diagnostics::did_you_mean(name, self.profile_names()).unwrap_or_else(|| {
                    let all: Vec<&str> = self.profile_names().collect();
                    if all.is_empty() {
                        format!("`{}` declares no profiles", self.file)
                    } else {
                        format!("the profiles are {}", all.join(", "))
                    }
                });
            return Err(Diagnostic::new(
                "E0206",
                format!("no profile `{name}` in `{}`", self.file),
            )
            .help(help));
        };
        let mut out = self.clone();
        for o in &profile.overrides {
            apply(&mut out, o);
        }
        out.profile = Some(name.to_string());
        Ok(out)
    }
}

/// Applies one (already checked) override to a recipe.
pub(crate) fn apply(recipe: &mut Recipe, o: &Override) {
    if let Some(d) = recipe.decls.iter_mut().find(|d| d.name == o.decl)
        && let Some(slot) = walk_mut(&mut Arc::make_mut(d).value, &o.path)
    {
        *slot = o.value.clone();
    }
}

fn walk_mut<'a>(v: &'a mut Val, path: &[Seg]) -> Option<&'a mut Val> {
    let Some((first, rest)) = path.split_first() else {
        return Some(v);
    };
    let next = match (first, &mut v.v) {
        (Seg::Field(f), V::Obj(o)) => std::sync::Arc::make_mut(o).fields.get_mut(f)?,
        // A `map(T)` field takes names it does not hold yet (the override was checked).
        (Seg::Field(f), V::Record { fields }) => {
            fields.entry(f.clone()).or_insert_with(|| Val::new(V::Unknown, v.span))
        }
        (Seg::Index(i), V::List { items }) => items.get_mut(*i)?,
        (Seg::Module(name), V::Obj(o)) => {
            &mut std::sync::Arc::make_mut(o).modules.iter_mut().find(|m| m.name == *name)?.value
        }
        _ => return None,
    };
    walk_mut(next, rest)
}
