//! The checked model of one recipe: its declarations with checked values and its profiles. This
//! is what the planner lowers; it never sees syntax.

use std::sync::Arc;

use serde::Serialize;
use wrl_diagnostics::{Diagnostic, Span};
use wrl_syntax::ast::{DeclKind, ProfileKind};

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

/// A named set of overrides: a `profile`, or a `variant` a study runs beside the recipe.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Profile {
    pub kind: ProfileKind,
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
    /// The variant applied, if any (on top of the profile).
    pub variant: Option<String>,
}

/// The name a claim and a study give the recipe without a variant.
pub const BASE_VARIANT: &str = "base";

/// The name a claim's `profiles` gives the recipe without a profile (a profile of that name,
/// should a recipe declare one, is the same word).
pub const BASE_PROFILE: &str = "base";

/// The profiles a claim declaration is stated for (`profiles = [claims]`), each with where it
/// is written; `None` when it says none (`unknown`: the recipe and every profile).
pub fn claim_profiles(d: &CheckedDecl) -> Option<Vec<(&str, Span)>> {
    if d.kind != DeclKind::Claim {
        return None;
    }
    let V::Obj(o) = &d.value.v else { return None };
    let V::List { items } = &o.fields.get("profiles")?.v else { return None };
    let names = items.iter().filter_map(|i| match &i.v {
        V::Enum { value } => Some((value.as_str(), i.span)),
        _ => None,
    });
    Some(names.collect())
}

/// The variants a claim declaration compares (`variant`, `over_variant`; `base` included when
/// written); none for any other declaration.
pub fn claim_variants(d: &CheckedDecl) -> Vec<&str> {
    let V::Obj(o) = &d.value.v else { return Vec::new() };
    if d.kind != DeclKind::Claim {
        return Vec::new();
    }
    ["variant", "over_variant"]
        .iter()
        .filter_map(|f| match o.fields.get(f) {
            Some(Val { v: V::Enum { value }, .. }) => Some(value.as_str()),
            _ => None,
        })
        .collect()
}

/// Whether a claim stated for `profiles` (`None`: for all) is in scope under `profile` (`None`:
/// the recipe without one, `base`). The one rule the planner and the runtime decide it by.
pub fn scope_holds<S: AsRef<str>>(profiles: Option<&[S]>, profile: Option<&str>) -> bool {
    let Some(profiles) = profiles else { return true };
    let want = profile.unwrap_or(BASE_PROFILE);
    profiles.iter().any(|p| p.as_ref() == want)
}

impl Recipe {
    pub fn decl(&self, name: &str) -> Option<&CheckedDecl> {
        self.decls.iter().find(|d| d.name == name).map(|d| &**d)
    }

    pub fn profile_names(&self) -> impl Iterator<Item = &str> {
        self.named(ProfileKind::Profile)
    }

    /// The variants' names, in declaration order.
    pub fn variant_names(&self) -> impl Iterator<Item = &str> {
        self.named(ProfileKind::Variant)
    }

    /// The variants a study of this recipe runs beside it (`wrlc run --seeds N` without
    /// `--variants`), in declaration order: each one a claim in scope under the recipe's
    /// profile compares, and each one no claim compares. A variant that only other profiles'
    /// claims compare is theirs: a study under `smoke` does not run the `claims` profile's
    /// `flat`, whose overrides are that profile's miniature.
    pub fn study_variants(&self) -> Vec<&str> {
        let claims: Vec<&CheckedDecl> =
            self.decls.iter().map(|d| &**d).filter(|d| !d.std).collect();
        let in_scope = |d: &CheckedDecl| {
            let names =
                claim_profiles(d).map(|n| n.into_iter().map(|(p, _)| p).collect::<Vec<_>>());
            scope_holds(names.as_deref(), self.profile.as_deref())
        };
        self.variant_names()
            .filter(|v| {
                let mut by = claims.iter().filter(|d| claim_variants(d).contains(v)).peekable();
                by.peek().is_none() || by.any(|d| in_scope(d))
            })
            .collect()
    }

    /// Each profile with each variant a study under it runs (`study_variants`), resolved: the
    /// combinations `wrlc check` judges beyond the recipe, its profiles and its variants each on
    /// their own, since a claim stated for a profile is lowered in every variant of its study.
    /// (profile, variant, the recipe with both applied), in declaration order.
    pub fn studied_variants(&self) -> Vec<(&str, &str, Recipe)> {
        let mut out = Vec::new();
        for p in self.profile_names() {
            let Ok(profiled) = self.with_profile(p) else { continue };
            // The variants' names as this recipe holds them (the profiled copy is dropped).
            let run = profiled.study_variants();
            let studied: Vec<&str> = self.variant_names().filter(|v| run.contains(v)).collect();
            for v in studied {
                if let Ok(varied) = profiled.with_variant(v) {
                    out.push((p, v, varied));
                }
            }
        }
        out
    }

    fn named(&self, kind: ProfileKind) -> impl Iterator<Item = &str> {
        self.profiles.iter().filter(move |p| p.kind == kind).map(|p| p.name.as_str())
    }

    /// This recipe with a profile's overrides applied.
    pub fn with_profile(&self, name: &str) -> Result<Recipe, Diagnostic> {
        let mut out = self.clone();
        out.apply_named(ProfileKind::Profile, name)?;
        out.profile = Some(name.to_string());
        Ok(out)
    }

    /// This recipe with a variant's overrides applied (on top of its profile, if any); the
    /// name `base` is the recipe itself.
    pub fn with_variant(&self, name: &str) -> Result<Recipe, Diagnostic> {
        let mut out = self.clone();
        if name == BASE_VARIANT {
            return Ok(out);
        }
        out.apply_named(ProfileKind::Variant, name)?;
        out.variant = Some(name.to_string());
        Ok(out)
    }

    /// This recipe with the profile or the variant `name` applied (they share one namespace).
    pub fn with_named(&self, name: &str) -> Result<Recipe, Diagnostic> {
        match self.profiles.iter().find(|p| p.name == name).map(|p| p.kind) {
            Some(ProfileKind::Variant) => self.with_variant(name),
            Some(ProfileKind::Profile) | None => self.with_profile(name),
        }
    }

    /// Applies the overrides of the profile or variant `name`, or E0206 / E0208 with the
    /// nearest name.
    fn apply_named(&mut self, kind: ProfileKind, name: &str) -> Result<(), Diagnostic> {
        let Some(found) = self.profiles.iter().find(|p| p.kind == kind && p.name == name) else {
            return Err(self.unknown(kind, name));
        };
        let overrides = found.overrides.clone();
        for o in &overrides {
            apply(self, o);
        }
        Ok(())
    }

    /// E0206 (no such profile) or E0208 (no such variant), naming the nearest one.
    pub fn unknown(&self, kind: ProfileKind, name: &str) -> Diagnostic {
        let word = kind.word();
        let all: Vec<&str> = self.named(kind).collect();
        let help = wrl_diagnostics::did_you_mean(name, all.iter().copied()).unwrap_or_else(|| {
            if all.is_empty() {
                format!("`{}` declares no {word}s", self.file)
            } else {
                format!("the {word}s are {}", all.join(", "))
            }
        });
        let code = match kind {
            ProfileKind::Profile => "E0206",
            ProfileKind::Variant => "E0208",
        };
        Diagnostic::new(code, format!("no {word} `{name}` in `{}`", self.file)).help(help)
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
