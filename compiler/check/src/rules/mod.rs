//! Recipe rules (E04xx): mistakes that every value can pass its type and still make a run
//! fail or train the wrong thing — batch arithmetic, context budgets, rewards reading what the
//! environment never produces, agent graphs that cannot finish. They run on the checked recipe
//! and on every profile-applied variant of it; one file per family of rules.

mod actions;
mod advantage;
mod answers;
mod branching;
pub(crate) mod budget;
mod budget_eval;
pub(crate) mod columns;
mod data;
mod endpoint;
mod env_tasks;
mod format_reach;
mod generation;
mod graph;
mod images;
mod lints;
pub(crate) mod rl;
mod slots;
mod stages;
mod tags;
mod tags_rule;
mod toolcalls;
mod tools;

use std::collections::{BTreeMap, BTreeSet};

use wrl_diagnostics::{Diagnostic, FileId, SourceMap, Span};
use wrl_syntax::ast::DeclKind;

use crate::model::{CheckedDecl, Recipe};
use crate::value::{Obj, V, Val};

/// What every rule can look at: one recipe (maybe with a profile applied) and its sources.
pub(crate) struct Ctx<'a> {
    pub recipe: &'a Recipe,
    pub sources: &'a SourceMap,
    /// The stdlib's files: a value whose span lies there is a default, not written by the user.
    pub std_files: &'a BTreeSet<FileId>,
    /// The recipe's declarations by name (looked up for every reference).
    index: BTreeMap<&'a str, &'a CheckedDecl>,
}

/// The RL stage constructors (group-relative, with phases).
pub(crate) const RL_CTORS: &[&str] = &["grpo", "dapo", "ppo"];

impl<'a> Ctx<'a> {
    pub fn new(
        recipe: &'a Recipe,
        sources: &'a SourceMap,
        std_files: &'a BTreeSet<FileId>,
    ) -> Self {
        let mut index = BTreeMap::new();
        for d in &recipe.decls {
            index.entry(d.name.as_str()).or_insert(&**d);
        }
        Ctx { recipe, sources, std_files, index }
    }

    pub fn decl(&self, name: &str) -> Option<&'a CheckedDecl> {
        self.index.get(name).copied()
    }

    /// Whether the value is a stdlib default (the user did not write it).
    pub fn is_default(&self, v: &Val) -> bool {
        self.std_files.contains(&v.span.file)
    }

    /// Follows references to declarations (not to stage outputs) to the value they name.
    pub fn deref(&self, v: &'a Val) -> &'a Val {
        let mut cur = v;
        for _ in 0..64 {
            match &cur.v {
                V::Ref { decl, member: None, .. } => match self.decl(decl) {
                    Some(d) => cur = &d.value,
                    None => return cur,
                },
                _ => return cur,
            }
        }
        cur
    }

    /// The object a value is, through references.
    pub fn obj(&self, v: &'a Val) -> Option<&'a Obj> {
        match &self.deref(v).v {
            V::Obj(o) => Some(o),
            _ => None,
        }
    }

    /// The model object a checkpoint value stands for: a model, or the model a stage starts
    /// from (`warmup.model` is `warmup`'s own starting model, fine-tuned).
    pub fn base_model(&self, v: &'a Val) -> Option<&'a Obj> {
        let mut cur = v;
        for _ in 0..64 {
            match &cur.v {
                V::Ref { decl, kind: DeclKind::Stage, member: Some(_) } => {
                    let stage = self.decl(decl).and_then(|d| match &d.value.v {
                        V::Obj(o) => Some(o),
                        _ => None,
                    })?;
                    cur = stage.fields.get("init").or_else(|| stage.fields.get("model"))?;
                }
                _ => {
                    let o = self.obj(cur)?;
                    return (o.kind == "model").then_some(o);
                }
            }
        }
        None
    }

    /// The declaration name a value refers to, if it is a reference.
    pub fn ref_name(v: &Val) -> Option<&str> {
        match &v.v {
            V::Ref { decl, .. } => Some(decl),
            _ => None,
        }
    }

    /// Stage declarations of the recipe with their objects, in recipe order.
    pub fn stages(&self) -> impl Iterator<Item = (&'a CheckedDecl, &'a Obj)> + 'a {
        self.recipe.decls.iter().filter_map(|d| match (&d.kind, &d.value.v) {
            (DeclKind::Stage, V::Obj(o)) => Some((&**d, &**o)),
            _ => None,
        })
    }

    /// The span of the first whole-word occurrence of `word` inside `within`, else `within`.
    pub fn find_word(&self, within: Span, word: &str) -> Span {
        let Some(file) = self.sources.get(within.file) else { return within };
        let text = file.slice(within);
        let bytes = text.as_bytes();
        let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        let mut from = 0;
        while let Some(i) = text[from..].find(word).map(|i| i + from) {
            let end = i + word.len();
            let before_ok = i == 0 || !is_word(bytes[i - 1]);
            let after_ok = end >= bytes.len() || !is_word(bytes[end]);
            if before_ok && after_ok {
                let start = within.start as usize + i;
                return Span::new(within.file, start, start + word.len());
            }
            from = end;
        }
        within
    }

    /// The name of a declaration as the user knows it (`std::models::tiny` stays qualified).
    pub fn name_span(&self, decl: &str) -> Option<Span> {
        self.decl(decl).filter(|d| !d.std).map(|d| d.name_span)
    }
}

/// A number, if the value is one (plain or a quantity).
pub(crate) fn num(v: &Val) -> Option<f64> {
    v.as_f64()
}

/// A name-like value: an enum value, a symbol, a string or a reference's name.
pub(crate) fn word(v: &Val) -> Option<&str> {
    match &v.v {
        V::Enum { value } | V::Symbol { name: value } | V::Str { value } => Some(value),
        V::Ref { decl, .. } => Some(decl),
        _ => None,
    }
}

/// Every object written in the recipe's own declarations (not the stdlib's), and every object
/// inside one (a stage's `data`, a mixture's parts, a model written in place), in source order.
/// References are not followed: their declaration is visited once.
pub(crate) fn each_written_obj<'a>(ctx: &Ctx<'a>, f: &mut impl FnMut(&'a Obj)) {
    fn visit<'a>(v: &'a Val, f: &mut impl FnMut(&'a Obj)) {
        match &v.v {
            V::Obj(o) => {
                f(o);
                for (_, x) in o.fields.iter() {
                    visit(x, f);
                }
            }
            V::List { items } => items.iter().for_each(|i| visit(i, f)),
            V::Record { fields } => fields.values().for_each(|x| visit(x, f)),
            _ => {}
        }
    }
    for d in ctx.recipe.decls.iter().filter(|d| !d.std) {
        visit(&d.value, f);
    }
}

/// Formats a count for messages: `32768`, `0.5`.
pub(crate) fn show(v: f64) -> String {
    crate::types::show_num(v)
}

/// The context budgets of a recipe's RL stages ([`budget::TurnBudget`]), for editors: the
/// numbers E0404 judges, at every phase's horizon, whether they fit or not.
pub(crate) fn turn_budgets(recipe: &Recipe) -> Vec<budget::TurnBudget> {
    let (sources, std_files) = (SourceMap::new(), BTreeSet::new());
    budget::budgets(&Ctx::new(recipe, &sources, &std_files))
}

/// Every rule, on one recipe.
pub(crate) fn check_recipe(ctx: &Ctx<'_>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    rl::check(ctx, &mut out);
    advantage::check(ctx, &mut out);
    generation::check(ctx, &mut out);
    branching::check(ctx, &mut out);
    budget::check(ctx, &mut out);
    budget_eval::check(ctx, &mut out);
    images::check(ctx, &mut out);
    data::check(ctx, &mut out);
    answers::check(ctx, &mut out);
    endpoint::check(ctx, &mut out);
    toolcalls::check(ctx, &mut out);
    tags::check(ctx, &mut out);
    tags_rule::check(ctx, &mut out);
    format_reach::check(ctx, &mut out);
    actions::check(ctx, &mut out);
    env_tasks::check(ctx, &mut out);
    columns::check(ctx, &mut out);
    tools::check(ctx, &mut out);
    graph::check(ctx, &mut out);
    stages::check(ctx, &mut out);
    lints::check(ctx, &mut out);
    out
}

/// Which resolutions of each recipe the rules judge.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Judge<'a> {
    /// The recipe and each of its profiles.
    All,
    /// The recipe as this profile resolves it (and its variants on top), nothing else.
    Only(&'a str),
    /// As `All`, but the profile `top` only on top of the profile `under` (`None`: the recipe).
    Layered { under: Option<&'a str>, top: &'a str },
}

/// Runs the rules on each recipe and on each of its profiles. A profile's diagnostics that
/// the plain recipe already has are dropped; the others say which profile they come from.
/// With `Judge::Only`, the rules run on each recipe as that profile resolves it, and nothing
/// else; with `Judge::Layered`, its `top` profile is judged on top of `under` only.
/// Also returns each recipe's profile slices (none with `Only`), for the planner's checks.
pub(crate) fn run(
    recipes: &[Recipe],
    sources: &SourceMap,
    std_files: &BTreeSet<FileId>,
    judge: Judge<'_>,
) -> (Vec<Diagnostic>, Vec<Vec<Recipe>>) {
    let mut out: Vec<Diagnostic> = Vec::new();
    let top = match judge {
        Judge::Only(name) => return (only(recipes, sources, std_files, name), Vec::new()),
        Judge::All => None,
        Judge::Layered { under, top } => Some((under, top)),
    };
    let mut slices = Vec::with_capacity(recipes.len());
    for recipe in recipes {
        let base = check_recipe(&Ctx::new(recipe, sources, std_files));
        let mut seen: Vec<Diagnostic> = base.clone();
        out.extend(base);
        // Only what a profile can change is checked again (see `ProfileSlicer`).
        let slicer = crate::slice::ProfileSlicer::new(recipe);
        let variants: Vec<Recipe> = recipe.profiles.iter().map(|p| slicer.slice(p)).collect();
        for (profile, variant) in recipe.profiles.iter().zip(&variants) {
            if top.is_some_and(|(_, t)| t == profile.name) {
                continue;
            }
            for d in check_recipe(&Ctx::new(variant, sources, std_files)) {
                if seen.contains(&d) {
                    continue;
                }
                seen.push(d.clone());
                out.push(named(d, profile.kind.word(), &profile.name, Some(profile.span)));
            }
        }
        // Each variant on top of each profile whose study runs it (a claim stated for the
        // profile is lowered in the variant's plan too).
        for (p, v, varied) in recipe.studied_variants() {
            let span = recipe.profiles.iter().find(|q| q.name == v).map(|q| q.span);
            for d in check_recipe(&Ctx::new(&varied, sources, std_files)) {
                if !seen.contains(&d) {
                    seen.push(d.clone());
                    out.push(under_study(d, p, v, span));
                }
            }
        }
        if let Some((under, top)) = top {
            let layered = match under {
                Some(u) => recipe.with_profile(u).and_then(|r| r.with_profile(top)),
                None => recipe.with_profile(top),
            };
            let span = recipe.profiles.iter().find(|p| p.name == top).map(|p| p.span);
            match layered {
                Ok(r) => {
                    for d in check_recipe(&Ctx::new(&r, sources, std_files)) {
                        if !seen.contains(&d) {
                            seen.push(d.clone());
                            out.push(named(d, "profile", top, span));
                        }
                    }
                }
                Err(d) => out.push(d),
            }
        }
        slices.push(variants);
    }
    (out, slices)
}

/// The rules on each recipe as profile `name` resolves it, and on each variant a study under it
/// runs, on top of it.
fn only(
    recipes: &[Recipe],
    sources: &SourceMap,
    std_files: &BTreeSet<FileId>,
    name: &str,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for recipe in recipes {
        match recipe.with_profile(name) {
            Ok(profiled) => {
                let base = check_recipe(&Ctx::new(&profiled, sources, std_files));
                let mut seen = base.clone();
                out.extend(base);
                for v in profiled.study_variants() {
                    let Ok(varied) = profiled.with_variant(v) else { continue };
                    let span = recipe.profiles.iter().find(|p| p.name == v).map(|p| p.span);
                    for d in check_recipe(&Ctx::new(&varied, sources, std_files)) {
                        if seen.contains(&d) {
                            continue;
                        }
                        seen.push(d.clone());
                        out.push(named(d, "variant", v, span));
                    }
                }
            }
            Err(d) => out.push(d),
        }
    }
    out
}

/// A diagnostic only a profile or variant has, saying which (`(variant `flat`)`).
pub(crate) fn named(mut d: Diagnostic, word: &str, name: &str, span: Option<Span>) -> Diagnostic {
    if let Some(span) = span {
        d = d.label(span, format!("with {word} `{name}`"));
    }
    d.message = format!("{} ({word} `{name}`)", d.message);
    d
}

/// A diagnostic only variant `variant` on top of profile `profile` has, saying so (`(variant
/// `flat` under profile `claims`)`), labelled at the variant.
pub fn under_study(
    mut d: Diagnostic,
    profile: &str,
    variant: &str,
    span: Option<Span>,
) -> Diagnostic {
    if let Some(span) = span {
        d = d.label(span, format!("with variant `{variant}` under profile `{profile}`"));
    }
    d.message = format!("{} (variant `{variant}` under profile `{profile}`)", d.message);
    d
}
