//! The part of a recipe a profile can change. `wrlc check` runs the recipe rules and the
//! planner's checks on every profile too; on a copy of the whole recipe per profile that costs
//! (profiles × declarations), quadratic in a file whose experiments each have a profile. A
//! [`ProfileSlicer`] indexes the recipe's references once and gives, per profile, only the
//! declarations whose meaning the profile can change, with its overrides applied.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use crate::model::{Profile, Recipe, apply};
use crate::value::{Obj, SigExpr, V, Val};
use wrl_syntax::ast::ProfileKind;

/// A recipe's declarations and who refers to whom, built once for all its profiles.
pub struct ProfileSlicer<'r> {
    recipe: &'r Recipe,
    /// Declarations by name (all of them, should a name repeat).
    by_name: BTreeMap<&'r str, Vec<usize>>,
    /// For each declaration, the declarations its value mentions.
    refs: Vec<Vec<usize>>,
    /// For each declaration, the declarations whose value mentions it.
    users: Vec<Vec<usize>>,
    /// What each constructor's metadata mentions, by the address of the metadata every
    /// object of that constructor shares (see [`Names`]).
    meta: RefCell<BTreeMap<usize, Vec<usize>>>,
    /// What each of a builtin's shared defaults mentions (by default, in order), by the
    /// address of the defaults.
    defaults: RefCell<BTreeMap<usize, Vec<Vec<usize>>>>,
}

/// Declarations by name, and what shared metadata and defaults mention (walked once, not per
/// object).
struct Names<'n, 'r> {
    by_name: &'n BTreeMap<&'r str, Vec<usize>>,
    meta: &'n RefCell<BTreeMap<usize, Vec<usize>>>,
    defaults: &'n RefCell<BTreeMap<usize, Vec<Vec<usize>>>>,
}

impl<'r> ProfileSlicer<'r> {
    pub fn new(recipe: &'r Recipe) -> ProfileSlicer<'r> {
        let mut by_name: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, d) in recipe.decls.iter().enumerate() {
            by_name.entry(d.name.as_str()).or_default().push(i);
        }
        let mut refs = Vec::with_capacity(recipe.decls.len());
        let mut users = vec![Vec::new(); recipe.decls.len()];
        let meta = RefCell::new(BTreeMap::new());
        let defaults = RefCell::new(BTreeMap::new());
        let names = Names { by_name: &by_name, meta: &meta, defaults: &defaults };
        for (i, d) in recipe.decls.iter().enumerate() {
            let mut out = Vec::new();
            mentions(&d.value, &names, &mut out);
            out.sort_unstable();
            out.dedup();
            for &j in &out {
                users[j].push(i);
            }
            refs.push(out);
        }
        ProfileSlicer { recipe, by_name, refs, users, meta, defaults }
    }

    /// The recipe with `profile` applied, restricted to what the profile can change: every
    /// declaration that refers (directly or not) to one the profile overrides, and everything
    /// those refer to in turn. A rule that starts at a declaration and follows references
    /// reports the same on the slice as on the whole profiled recipe for every declaration in
    /// the slice; declarations outside it mean what they mean without the profile, so their
    /// diagnostics are those of the plain recipe. The slice keeps the recipe's order.
    pub fn slice(&self, profile: &Profile) -> Recipe {
        let mut overridden: Vec<usize> = profile
            .overrides
            .iter()
            .flat_map(|o| self.by_name.get(o.decl.as_str()).into_iter().flatten().copied())
            .collect();
        // A claim stated for this profile (`profiles = [NAME]`) is in scope here and nowhere
        // the plain recipe checks it: the profile changes its meaning as an override would.
        if profile.kind == ProfileKind::Profile {
            overridden.extend(self.recipe.decls.iter().enumerate().filter_map(|(i, d)| {
                let names = crate::model::claim_profiles(d)?;
                names.iter().any(|(n, _)| *n == profile.name).then_some(i)
            }));
        }
        overridden.sort_unstable();
        overridden.dedup();
        // The overridden declarations with the profile applied (overrides in order).
        let mut changed = Recipe {
            file: self.recipe.file.clone(),
            decls: overridden.iter().map(|&i| self.recipe.decls[i].clone()).collect(),
            // The names alone (a claim names variants), not their overrides.
            profiles: (self.recipe.profiles.iter())
                .map(|p| Profile {
                    kind: p.kind,
                    name: p.name.clone(),
                    overrides: Vec::new(),
                    span: p.span,
                })
                .collect(),
            profile: (profile.kind == ProfileKind::Profile).then(|| profile.name.clone()),
            variant: (profile.kind == ProfileKind::Variant).then(|| profile.name.clone()),
        };
        for o in &profile.overrides {
            apply(&mut changed, o);
        }
        let changed_at: BTreeMap<usize, usize> =
            overridden.iter().enumerate().map(|(k, &i)| (i, k)).collect();
        // Whatever reaches an overridden declaration; the paths to the first overridden one
        // run through unchanged declarations, so the plain recipe's references find them.
        // (Sets, not a flag per declaration: a profile costs what it touches.)
        let mut keep: BTreeSet<usize> = BTreeSet::new();
        let mut stack = overridden.clone();
        while let Some(i) = stack.pop() {
            if keep.insert(i) {
                stack.extend(self.users[i].iter().copied().filter(|u| !keep.contains(u)));
            }
        }
        // And whatever those refer to, with the profile's new references.
        let mut seen = keep.clone();
        let mut stack: Vec<usize> = keep.iter().copied().collect();
        while let Some(i) = stack.pop() {
            let new_refs;
            let out = match changed_at.get(&i) {
                Some(&k) => {
                    let mut v = Vec::new();
                    let names = Names {
                        by_name: &self.by_name,
                        meta: &self.meta,
                        defaults: &self.defaults,
                    };
                    mentions(&changed.decls[k].value, &names, &mut v);
                    new_refs = v;
                    &new_refs
                }
                None => &self.refs[i],
            };
            for &j in out {
                if seen.insert(j) {
                    stack.push(j);
                }
            }
        }
        let mut changed_decls: Vec<Option<std::sync::Arc<crate::model::CheckedDecl>>> =
            changed.decls.drain(..).map(Some).collect();
        changed.decls = seen
            .into_iter()
            .map(|i| match changed_at.get(&i).and_then(|&k| changed_decls[k].take()) {
                Some(d) => d,
                None => self.recipe.decls[i].clone(),
            })
            .collect();
        changed
    }
}

/// Every declaration of the recipe a value may name: references, reward names, and (to be
/// safe, as rules look some names up) any word that is a declaration's name.
fn mentions(v: &Val, names: &Names, out: &mut Vec<usize>) {
    let name = |s: &str, out: &mut Vec<usize>| {
        if let Some(ids) = names.by_name.get(s) {
            out.extend(ids.iter().copied());
        }
    };
    match &v.v {
        V::Ref { decl, .. } => name(decl, out),
        V::Str { value } | V::Enum { value } | V::Symbol { name: value } => name(value, out),
        V::List { items } => items.iter().for_each(|x| mentions(x, names, out)),
        V::Record { fields } => fields.values().for_each(|x| mentions(x, names, out)),
        V::Range { lo, hi } => {
            mentions(lo, names, out);
            mentions(hi, names, out);
        }
        V::Obj(o) => obj_mentions(o, names, out),
        V::Signal { expr } => sig_mentions(expr, names, out),
        V::Num { .. } | V::Qty { .. } | V::Bool { .. } | V::Dims { .. } | V::Unknown => {}
    }
}

fn obj_mentions(o: &Obj, names: &Names, out: &mut Vec<usize>) {
    let (own, defaults) = o.fields.parts();
    for (_, x) in own {
        mentions(x, names, out);
    }
    if let Some(defaults) = defaults {
        // The defaults the object does not hide: what each mentions is walked once per
        // builtin (the defaults are shared by all its objects).
        let key = std::sync::Arc::as_ptr(defaults) as *const u8 as usize;
        if !names.defaults.borrow().contains_key(&key) {
            let each: Vec<Vec<usize>> = defaults
                .iter()
                .map(|(_, x)| {
                    let mut ids = Vec::new();
                    mentions(x, names, &mut ids);
                    ids
                })
                .collect();
            names.defaults.borrow_mut().insert(key, each);
        }
        if let Some(each) = names.defaults.borrow().get(&key) {
            for ((k, _), ids) in defaults.iter().zip(each) {
                if !ids.is_empty() && own.binary_search_by(|(n, _)| n.cmp(k)).is_err() {
                    out.extend(ids.iter().copied());
                }
            }
        }
    }
    let key = std::sync::Arc::as_ptr(&o.meta) as usize;
    let known = names.meta.borrow().get(&key).cloned();
    match known {
        Some(ids) => out.extend(ids),
        None => {
            let mut ids = Vec::new();
            for x in o.meta.values() {
                mentions(x, names, &mut ids);
            }
            out.extend(ids.iter().copied());
            names.meta.borrow_mut().insert(key, ids);
        }
    }
    for m in &o.modules {
        mentions(&m.value, names, out);
    }
    for e in &o.edges {
        if let Some(l) = &e.limit {
            mentions(l, names, out);
        }
    }
    for t in &o.tools {
        for p in &t.params {
            if let Some(d) = &p.default {
                mentions(d, names, out);
            }
        }
    }
}

fn sig_mentions(e: &SigExpr, names: &Names, out: &mut Vec<usize>) {
    match e {
        SigExpr::Reward { name } => {
            if let Some(ids) = names.by_name.get(name.as_str()) {
                out.extend(ids.iter().copied());
            }
        }
        SigExpr::Signal { obj } => obj_mentions(obj, names, out),
        SigExpr::Unary { arg, .. } => sig_mentions(arg, names, out),
        SigExpr::Binary { lhs, rhs, .. } => {
            sig_mentions(lhs, names, out);
            sig_mentions(rhs, names, out);
        }
        SigExpr::If { cond, then, otherwise } => {
            sig_mentions(cond, names, out);
            sig_mentions(then, names, out);
            sig_mentions(otherwise, names, out);
        }
        SigExpr::Const { .. } | SigExpr::Bool { .. } => {}
    }
}
