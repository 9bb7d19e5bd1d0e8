//! The checking driver: evaluates every declaration once, checks profiles and overrides, finds
//! import cycles and unused names, and builds one `Recipe` per entry file.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use wrl_diagnostics::{Diagnostic, Span};

use wrl_syntax::ast::{self, DeclKind, ProfileKind};

use crate::checker::{Checker, DeclId, ModId, Target};
use crate::model::{CheckedDecl, Override, Profile, Recipe, apply};
use crate::name::Name;
use crate::types::Ty;
use crate::value::{V, Val};

impl Checker<'_> {
    /// The checked value of a declaration, computed once.
    pub(crate) fn decl_value(&mut self, d: DeclId) -> Val {
        self.ensure_value(d);
        match &self.decls[d].value {
            Some(v) => v.clone(),
            None => Val::new(V::Unknown, self.decls[d].name_span),
        }
    }

    /// Computes a declaration's value once and stores it (no copy returned).
    fn ensure_value(&mut self, d: DeclId) {
        if self.decls[d].value.is_some() {
            return;
        }
        if self.decls[d].in_progress {
            let e = &self.decls[d];
            let (name, span) = (e.name.clone(), e.name_span);
            self.diags.push(
                Diagnostic::new("E0207", format!("`{name}` depends on itself"))
                    .label(span, "this declaration refers back to itself")
                    .help("break the cycle: a value cannot be defined in terms of itself"),
            );
            return;
        }
        self.decls[d].in_progress = true;
        let m = self.decls[d].module;
        // Evaluated once: the expression is not needed after this (and not copied for it).
        let blank = ast::Expr { kind: ast::ExprKind::Unknown, span: self.decls[d].span };
        let expr = std::mem::replace(&mut self.decls[d].expr, std::borrow::Cow::Owned(blank));
        let kind = self.decls[d].kind;
        let raw = self.eval(m, &expr);
        let v = match kind {
            DeclKind::Param => match raw.v {
                V::Symbol { ref name } => {
                    let name = name.clone();
                    self.unknown_name(m, &name, raw.span);
                    Val::new(V::Unknown, raw.span)
                }
                _ => raw,
            },
            _ => self.conform_decl(m, raw, kind),
        };
        self.decls[d].in_progress = false;
        self.decls[d].value = Some(v);
    }

    /// A declaration's value must be of the declared kind (`stage x = grpo(…)`).
    pub(crate) fn conform_decl(&mut self, m: ModId, raw: Val, kind: DeclKind) -> Val {
        let found_kind = match &raw.v {
            V::Obj(o) => Some(o.kind.to_string()),
            V::Ref { kind, member: None, .. } => Some(kind.word().to_string()),
            _ => None,
        };
        let compatible = |k: &str| {
            k == kind.word() || (kind == DeclKind::Reward && (k == "signal" || k == "condition"))
        };
        if let Some(k) = found_kind.filter(|k| !compatible(k))
            && DeclKind::from_word(&k).is_some()
        {
            self.diags.push(
                Diagnostic::new(
                    "E0309",
                    format!(
                        "this is {}, but it is declared as {}",
                        crate::value::article(&k),
                        crate::value::article(kind.word())
                    ),
                )
                .label(raw.span, format!("{} value", crate::value::article(&k)))
                .help(format!(
                    "declare it as `{k} …`, or use a constructor that makes {}",
                    crate::value::article(kind.word())
                )),
            );
            return Val::new(V::Unknown, raw.span);
        }
        self.conform(m, raw, &Ty::Kind(kind.word().to_string()))
    }

    /// Reports every import cycle once, showing the chain.
    fn find_cycles(&mut self) {
        let n = self.modules.len();
        let mut state = vec![0u8; n]; // 0 new, 1 on stack, 2 done
        let mut stack: Vec<(ModId, Span)> = Vec::new();
        let mut reported: BTreeSet<Vec<ModId>> = BTreeSet::new();
        for start in 0..n {
            if state[start] == 0 {
                self.dfs(start, Span::default(), &mut state, &mut stack, &mut reported);
            }
        }
    }

    fn dfs(
        &mut self,
        m: ModId,
        via: Span,
        state: &mut [u8],
        stack: &mut Vec<(ModId, Span)>,
        reported: &mut BTreeSet<Vec<ModId>>,
    ) {
        state[m] = 1;
        stack.push((m, via));
        let edges = self.modules[m].file_imports.clone();
        for (to, span) in edges {
            if state[to] == 1 {
                let pos = stack.iter().position(|(x, _)| *x == to).unwrap_or(0);
                let mut cycle: Vec<ModId> = stack[pos..].iter().map(|(x, _)| *x).collect();
                let mut key = cycle.clone();
                key.sort();
                if reported.insert(key) {
                    let names: Vec<String> =
                        cycle.iter().map(|x| self.modules[*x].path.clone()).collect();
                    let mut d = Diagnostic::new(
                        "E0203",
                        format!(
                            "import cycle between {}",
                            names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
                        ),
                    )
                    .label(
                        span,
                        format!(
                            "`{}` imports `{}` here",
                            self.modules[m].path, self.modules[to].path
                        ),
                    );
                    for (x, s) in stack[pos + 1..].iter() {
                        d = d.label(*s, format!("`{}` is imported here", self.modules[*x].path));
                    }
                    cycle.push(to);
                    let chain: Vec<String> =
                        cycle.iter().map(|x| self.modules[*x].path.clone()).collect();
                    self.diags.push(d.help(format!("the cycle is {}; move shared declarations into a file that imports neither", chain.join(" → "))));
                }
            } else if state[to] == 0 {
                self.dfs(to, span, state, stack, reported);
            }
        }
        stack.pop();
        state[m] = 2;
    }

    /// A profile's or variant's overrides, checked; what is wrong inside a variant names it
    /// (a study runs it beside the recipe, so its name is what the user looks for).
    fn check_profile(&mut self, m: ModId, p: &ast::Profile) -> Profile {
        let before = self.diags.len();
        let overrides = self.check_overrides(m, &p.overrides);
        match p.kind {
            ProfileKind::Variant => {
                for d in &mut self.diags[before..] {
                    d.labels.push(wrl_diagnostics::Label {
                        span: p.name.span,
                        message: format!("in variant `{}`", p.name.name),
                    });
                }
            }
            ProfileKind::Profile => {}
        }
        Profile { kind: p.kind, name: p.name.name.clone(), overrides, span: p.name.span }
    }

    /// Checks everything and builds a recipe for each entry module.
    pub(crate) fn run(&mut self, entries: &[ModId]) -> Vec<Recipe> {
        self.find_cycles();
        for d in 0..self.decls.len() {
            self.ensure_value(d);
        }
        let mut profiles: BTreeMap<ModId, Vec<Profile>> = BTreeMap::new();
        let mut extends_overrides: BTreeMap<ModId, Vec<Override>> = BTreeMap::new();
        self.overriding = true;
        for m in 0..self.modules.len() {
            if self.modules[m].std {
                continue;
            }
            let ps = self.modules[m].profiles.clone();
            let checked: Vec<Profile> = ps.iter().map(|p| self.check_profile(m, p)).collect();
            profiles.insert(m, checked);
            if let Some((_, Some(block), _)) = self.modules[m].extends.clone() {
                let o = self.check_overrides(m, &block);
                extends_overrides.insert(m, o);
            }
        }
        self.overriding = false;
        self.warn_unused();
        entries
            .iter()
            .map(|m| {
                let extra = extends_overrides.get(m).map(Vec::as_slice).unwrap_or_default();
                let mut r = self.build_recipe(*m, &profiles, extra);
                for o in extends_overrides.get(m).into_iter().flatten() {
                    apply(&mut r, o);
                }
                r
            })
            .collect()
    }

    fn warn_unused(&mut self) {
        // Declarations of a file that others import are its exports, not unused.
        let imported: BTreeSet<ModId> =
            self.modules.iter().flat_map(|o| o.file_imports.iter().map(|(t, _)| *t)).collect();
        for d in &self.decls {
            let m = &self.modules[d.module];
            if m.std
                || d.used
                || matches!(d.kind, DeclKind::Stage | DeclKind::Eval | DeclKind::Claim)
            {
                continue;
            }
            if imported.contains(&d.module) {
                continue;
            }
            self.diags.push(
                Diagnostic::new("W0201", format!("`{}` is never used", d.name))
                    .label(
                        d.name_span,
                        format!("this {} is declared but nothing uses it", d.kind.word()),
                    )
                    .help("remove it, or use it in a stage, agent or reward"),
            );
        }
        for m in &self.modules {
            if m.std {
                continue;
            }
            for (name, (t, span)) in &m.imports {
                if !m.used_imports.contains(name) && !matches!(t, Target::Module(_))
                    || (matches!(t, Target::Module(_)) && !m.used_imports.contains(name))
                {
                    self.diags.push(
                        Diagnostic::new("W0202", format!("unused import `{name}`"))
                            .label(*span, "imported but never used")
                            .help("remove the import"),
                    );
                }
            }
        }
    }

    fn build_recipe(
        &mut self,
        m: ModId,
        profiles: &BTreeMap<ModId, Vec<Profile>>,
        extra: &[Override],
    ) -> Recipe {
        // The entry's own declarations, those it imports or extends, and every declaration
        // they refer to (stdlib ones included), parents first.
        let mut order: Vec<DeclId> = Vec::new();
        let mut seen: BTreeSet<DeclId> = BTreeSet::new();
        let mut roots: Vec<DeclId> = Vec::new();
        if let Some((parent, _, _)) = self.modules[m].extends {
            roots.extend(self.module_decls_in_order(parent));
        }
        for (t, _) in self.modules[m].imports.values() {
            if let Target::Decl(d) = t {
                roots.push(*d);
            }
        }
        roots.extend(self.module_decls_in_order(m));
        // Declarations that only a profile or an `extends` override names (`policy =
        // std::models::tiny`) belong to the recipe too: `with_profile` must find them.
        let mut override_refs = Vec::new();
        let mut parents = vec![m];
        parents.extend(self.modules[m].extends.as_ref().map(|e| e.0));
        for o in parents
            .iter()
            .filter_map(|p| profiles.get(p))
            .flatten()
            .flat_map(|p| &p.overrides)
            .chain(extra)
        {
            collect_refs(&o.value, &mut override_refs);
        }
        for r in override_refs {
            if let Some(rd) = self.find_ref(m, &r) {
                roots.push(rd);
            }
        }
        let mut queue: std::collections::VecDeque<DeclId> = roots.into();
        while let Some(d) = queue.pop_front() {
            if !seen.insert(d) {
                continue;
            }
            order.push(d);
            let mut refs = Vec::new();
            if let Some(v) = &self.decls[d].value {
                collect_refs(v, &mut refs);
            }
            for r in refs {
                if let Some(rd) = self.find_ref(self.decls[d].module, &r) {
                    queue.push_back(rd);
                }
            }
        }
        let decls = order.into_iter().map(|d| self.checked_decl(d)).collect();
        let mut all_profiles = Vec::new();
        if let Some((parent, _, _)) = self.modules[m].extends {
            all_profiles.extend(profiles.get(&parent).cloned().unwrap_or_default());
        }
        // The entry's own profiles replace the parent's of the same name.
        let own = profiles.get(&m).cloned().unwrap_or_default();
        let own_names: BTreeSet<&str> = own.iter().map(|p| p.name.as_str()).collect();
        all_profiles.retain(|q: &Profile| !own_names.contains(q.name.as_str()));
        all_profiles.extend(own);
        Recipe {
            file: self.modules[m].path.clone(),
            decls,
            profiles: all_profiles,
            profile: None,
            variant: None,
        }
    }

    /// Declaration `d` as recipes hold it: built once, shared by every recipe that has it
    /// (stdlib declarations and imported files are in many).
    fn checked_decl(&mut self, d: DeclId) -> Arc<CheckedDecl> {
        if self.checked.len() < self.decls.len() {
            self.checked.resize(self.decls.len(), None);
        }
        if let Some(c) = &self.checked[d] {
            return c.clone();
        }
        let e = &self.decls[d];
        let c = Arc::new(CheckedDecl {
            name: e.key.to_string(),
            kind: e.kind,
            value: e.value.clone().unwrap_or(Val::new(V::Unknown, e.span)),
            doc: e.doc.clone(),
            span: e.span,
            name_span: e.name_span,
            std: self.modules[e.module].std,
        });
        self.checked[d] = Some(c.clone());
        c
    }

    /// The declaration a reference made in module `from` names. Keys of user declarations are
    /// bare names, so with several entry files (`wrlc check recipes/`) the same key exists in
    /// several modules: prefer `from` itself, then the files it imports or extends, then the
    /// stdlib.
    fn find_ref(&mut self, from: ModId, key: &str) -> Option<DeclId> {
        if self.by_key.1 != self.decls.len() {
            let mut index: BTreeMap<Name, BTreeMap<ModId, DeclId>> = BTreeMap::new();
            for (d, e) in self.decls.iter().enumerate() {
                index.entry(e.key.clone()).or_default().entry(e.module).or_insert(d);
            }
            self.by_key = (index, self.decls.len());
        }
        // Declarations are numbered module by module, so the lowest module is the first
        // declaration; the stdlib's modules come before every user file.
        let cands = self.by_key.0.get(key)?;
        let md = &self.modules[from];
        let imported =
            md.file_imports.iter().map(|(t, _)| *t).chain(md.extends.as_ref().map(|e| e.0));
        cands
            .get(&from)
            .or_else(|| imported.filter_map(|m| cands.get_key_value(&m)).min().map(|(_, d)| d))
            .or_else(|| cands.iter().next().filter(|(m, _)| self.modules[**m].std).map(|(_, d)| d))
            .or_else(|| cands.values().next())
            .copied()
    }

    fn module_decls_in_order(&self, m: ModId) -> Vec<DeclId> {
        let mut ds: Vec<DeclId> = self.modules[m].decls.values().copied().collect();
        ds.sort_by_key(|d| self.decls[*d].span.start);
        ds
    }
}

/// Names of declarations a value refers to.
pub(crate) fn collect_refs(v: &Val, out: &mut Vec<Name>) {
    if let V::Ref { decl, .. } = &v.v {
        out.push(decl.clone());
    }
    if let V::Signal { expr } = &v.v {
        sig_refs(expr, out);
    }
    v.each_child(|c| collect_refs(c, out));
}

fn sig_refs(e: &crate::value::SigExpr, out: &mut Vec<Name>) {
    use crate::value::SigExpr;
    match e {
        SigExpr::Reward { name } => out.push(name.as_str().into()),
        SigExpr::Signal { obj } => obj.fields.values().for_each(|i| collect_refs(i, out)),
        SigExpr::Unary { arg, .. } => sig_refs(arg, out),
        SigExpr::Binary { lhs, rhs, .. } => {
            sig_refs(lhs, out);
            sig_refs(rhs, out);
        }
        SigExpr::If { cond, then, otherwise } => {
            sig_refs(cond, out);
            sig_refs(then, out);
            sig_refs(otherwise, out);
        }
        SigExpr::Const { .. } | SigExpr::Bool { .. } => {}
    }
}
