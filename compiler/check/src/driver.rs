//! The checking driver: evaluates every declaration once, checks profiles and overrides, finds
//! import cycles and unused names, and builds one `Recipe` per entry file.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use wrl_diagnostics::{Diagnostic, Span};

use crate::suggest::did_you_mean;
use wrl_syntax::ast::{self, BlockItem, DeclKind, PathSegment};

use crate::checker::{Checker, DeclId, ModId, Target};
use crate::model::{CheckedDecl, Override, Profile, Recipe, Seg, apply};
use crate::name::Name;
use crate::types::Ty;
use crate::value::{V, Val};
use wrl_syntax::tokens::Dimension;

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
    fn conform_decl(&mut self, m: ModId, raw: Val, kind: DeclKind) -> Val {
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

    /// Checks one override path and value against the declaration it changes.
    fn check_override(
        &mut self,
        m: ModId,
        path: &ast::FieldPath,
        value: &ast::Expr,
    ) -> Option<Override> {
        let mut segs = path.segments.iter();
        let Some(PathSegment::Name(first)) = segs.next() else {
            self.diags.push(
                Diagnostic::new("E0301", "an override starts with a declaration name")
                    .label(path.span, "not a name"),
            );
            return None;
        };
        let d = match self.resolve(m, &[first.name.as_str()]) {
            Some(Target::Decl(d)) => d,
            _ => {
                let cands: Vec<String> = self.decl_names_visible(m);
                self.diags.push(
                    Diagnostic::new(
                        "E0200",
                        format!("no declaration `{}` to override", first.name),
                    )
                    .label(first.span, "not declared in this recipe")
                    .maybe_help(did_you_mean(&first.name, cands.iter().map(String::as_str))),
                );
                return None;
            }
        };
        let key = self.decls[d].key.clone();
        let kind = self.decls[d].kind;
        let mut current = self.decl_value(d);
        let mut ty = if kind == DeclKind::Param {
            param_type(&current)
        } else {
            Ty::Kind(kind.word().to_string())
        };
        let mut out_path = Vec::new();
        // The path so far, as written (for help text).
        let mut shown = first.name.clone();
        for seg in segs {
            match seg {
                PathSegment::Name(n) => {
                    shown.push('.');
                    shown.push_str(&n.name);
                    // A module of an agent graph: its fields are overridden like any object's.
                    if let V::Obj(o) = &current.v
                        && let Some(module) = o.modules.iter().find(|m| m.name == n.name)
                    {
                        current = module.value.clone();
                        out_path.push(Seg::Module(n.name.clone()));
                        if path.segments.last().is_some_and(|last| std::ptr::eq(last, seg)) {
                            self.diags.push(
                                Diagnostic::new(
                                    "E0301",
                                    format!(
                                        "an override cannot replace the whole module `{}`",
                                        n.name
                                    ),
                                )
                                .label(n.span, "a module")
                                .help(format!(
                                    "override its fields, e.g. `{}.max_response`",
                                    shown
                                )),
                            );
                            return None;
                        }
                        continue;
                    }
                    let next = match &current.v {
                        V::Obj(o) => {
                            let ctor = o.ctor.clone();
                            let b = self.builtins.iter().position(|b| b.qual == ctor);
                            let slot = b.and_then(|b| {
                                self.builtins[b]
                                    .slots
                                    .iter()
                                    .position(|s| s.name == n.name)
                                    .map(|i| (b, i))
                            });
                            match slot {
                                Some((b, i)) => Some((
                                    self.builtins[b].slots[i].ty.clone(),
                                    o.fields.get(&n.name).cloned(),
                                )),
                                None => {
                                    let cands: Vec<String> = o
                                        .fields
                                        .keys()
                                        .map(|k| k.to_string())
                                        .chain(o.modules.iter().map(|m| m.name.clone()))
                                        .collect();
                                    self.diags.push(
                                        Diagnostic::new(
                                            "E0301",
                                            format!("`{ctor}` has no field `{}`", n.name),
                                        )
                                        .label(n.span, "unknown field")
                                        .maybe_help(
                                            did_you_mean(&n.name, cands.iter().map(String::as_str))
                                                .or_else(|| crate::suggest::peer_name(&n.name)),
                                        ),
                                    );
                                    return None;
                                }
                            }
                        }
                        V::Record { fields } => match &ty {
                            Ty::Record(ftys) => ftys
                                .iter()
                                .find(|(f, _)| *f == n.name)
                                .map(|(_, t)| (t.clone(), fields.get(&n.name).cloned())),
                            _ => None,
                        },
                        _ => None,
                    };
                    match next {
                        Some((t, cur)) => {
                            ty = t;
                            current = cur.unwrap_or(Val::new(V::Unknown, n.span));
                            out_path.push(Seg::Field(n.name.clone()));
                        }
                        None => {
                            self.diags.push(
                                Diagnostic::new(
                                    "E0301",
                                    format!("{} has no field `{}`", current.describe(), n.name),
                                )
                                .label(n.span, "unknown field"),
                            );
                            return None;
                        }
                    }
                }
                PathSegment::Index { index, span } => match (&current.v, &ty) {
                    (V::List { items }, Ty::List(elem)) if (*index as usize) < items.len() => {
                        let item = items[*index as usize].clone();
                        ty = (**elem).clone();
                        current = item;
                        out_path.push(Seg::Index(*index as usize));
                    }
                    (V::List { items }, _) => {
                        self.diags.push(
                            Diagnostic::new("E0306", format!("index {index} is out of range"))
                                .label(*span, format!("the list has {} items", items.len()))
                                .help("indices start at 0"),
                        );
                        return None;
                    }
                    _ => {
                        self.diags.push(
                            Diagnostic::new(
                                "E0300",
                                format!("cannot index {}", current.describe()),
                            )
                            .label(*span, "not a list"),
                        );
                        return None;
                    }
                },
            }
        }
        let raw = self.eval(m, value);
        let before = self.diags.len();
        let new = if out_path.is_empty() && kind != DeclKind::Param {
            self.conform_decl(m, raw, kind)
        } else {
            self.conform_with_default(m, raw, &ty, Some(&current))
        };
        if self.diags.len() > before {
            // Say that the mistake is in an override, and what the original was.
            let orig = current.describe();
            for diag in &mut self.diags[before..] {
                if diag.code == "E0300" || diag.code == "E0309" {
                    diag.code = "E0414";
                    diag.message = format!("override changes the type: {}", diag.message);
                    diag.help = Some(format!("the original value is {orig}"));
                }
            }
        }
        let o = Override {
            decl: key.to_string(),
            path: out_path,
            value: new,
            span: path.span.to(value.span),
        };
        if kind == DeclKind::Param && o.path.is_empty() {
            self.param_override_uses(d, &o);
        }
        Some(o)
    }

    /// Overrides that carry a param's new value to every place its old value was inlined.
    fn param_override_uses(&mut self, param: DeclId, o: &Override) {
        let uses: Vec<Span> =
            self.param_uses.iter().filter(|(p, _)| *p == param).map(|(_, s)| *s).collect();
        let mut reached: BTreeSet<Span> = BTreeSet::new();
        let mut sites: Vec<(DeclId, Vec<Seg>, Option<Dimension>)> = Vec::new();
        for d in 0..self.decls.len() {
            let Some(value) = &self.decls[d].value else { continue };
            for at in &uses {
                let mut path = Vec::new();
                if let Some(site) = find_span(value, *at, &mut path) {
                    reached.insert(*at);
                    let dim = match &site.v {
                        V::Qty { dim, .. } => Some(*dim),
                        _ => None,
                    };
                    sites.push((d, path, dim));
                }
            }
        }
        for (d, path, dim) in sites {
            let v = match (dim, &o.value.v) {
                (Some(dim), V::Num { value }) => V::Qty { value: *value, dim },
                (_, v) => v.clone(),
            };
            self.derived.push(Override {
                decl: self.decls[d].key.to_string(),
                path,
                value: Val::new(v, o.value.span),
                span: o.span,
            });
        }
        // Uses folded into a computed value (`lr * 2`) keep the value computed at check time.
        let name = self.decls[param].name.clone();
        let folded: Vec<Span> = uses
            .iter()
            .copied()
            .filter(|u| !reached.contains(u) && !self.is_std_span(*u))
            .collect();
        for at in &folded {
            // Where the computed value sits, so that an override of it silences the warning.
            let mut site = None;
            for d in 0..self.decls.len() {
                let mut path = Vec::new();
                if let Some(v) = &self.decls[d].value
                    && find_containing(v, *at, &mut path)
                {
                    site = Some((self.decls[d].key.to_string(), path));
                    break;
                }
            }
            self.folded.push((
                site,
                Diagnostic::new(
                    "W0203",
                    format!("this override of `{name}` does not change a value computed from it"),
                )
                .label(o.span, format!("overrides `{name}`"))
                .label(*at, "used in an expression here: computed once, with the old value")
                .help("override the computed field itself in the profile, or use the param without arithmetic"),
            ));
        }
    }

    fn is_std_span(&self, span: Span) -> bool {
        self.modules.iter().any(|m| m.std && m.file == span.file)
    }

    fn decl_names_visible(&self, m: ModId) -> Vec<String> {
        let md = &self.modules[m];
        md.decls
            .keys()
            .cloned()
            .chain(
                md.imports
                    .iter()
                    .filter(|(_, (t, _))| matches!(t, Target::Decl(_)))
                    .map(|(n, _)| n.clone()),
            )
            .collect()
    }

    fn check_overrides(&mut self, m: ModId, block: &ast::Block) -> Vec<Override> {
        let mut out = Vec::new();
        let mut seen: BTreeMap<String, Span> = BTreeMap::new();
        for item in &block.items {
            match item {
                BlockItem::Field(f) => {
                    let text = self.text(f.path.span).to_string();
                    if let Some(first) = seen.get(&text) {
                        self.diags.push(
                            Diagnostic::new("E0304", format!("`{text}` is overridden twice"))
                                .label(f.path.span, "again here")
                                .label(*first, "first here")
                                .help("remove one of them"),
                        );
                        continue;
                    }
                    seen.insert(text, f.path.span);
                    if let Some(o) = self.check_override(m, &f.path, &f.value) {
                        out.push(o);
                        // A param's value is inlined where it is used: change it there too.
                        out.append(&mut self.derived);
                    }
                }
                BlockItem::Flag(n) => self.diags.push(
                    Diagnostic::new(
                        "E0301",
                        format!("an override needs a value: `{} = …`", n.name),
                    )
                    .label(n.span, "no value"),
                ),
                BlockItem::Module(x) => self.diags.push(
                    Diagnostic::new("E0301", "modules cannot be declared in an override")
                        .label(x.span, "not allowed here"),
                ),
                BlockItem::Edge(x) => self.diags.push(
                    Diagnostic::new("E0301", "edges cannot be declared in an override")
                        .label(x.span, "not allowed here"),
                ),
                BlockItem::Tool(x) => self.diags.push(
                    Diagnostic::new("E0301", "tools cannot be declared in an override")
                        .label(x.span, "not allowed here"),
                ),
            }
        }
        // W0203 only for computed uses the same block does not override itself.
        for (site, d) in std::mem::take(&mut self.folded) {
            let covered = site.as_ref().is_some_and(|(decl, path)| {
                out.iter().any(|o| &o.decl == decl && path.starts_with(&o.path))
            });
            if !covered {
                self.diags.push(d);
            }
        }
        out
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

    /// Checks everything and builds a recipe for each entry module.
    pub(crate) fn run(&mut self, entries: &[ModId]) -> Vec<Recipe> {
        self.find_cycles();
        for d in 0..self.decls.len() {
            self.ensure_value(d);
        }
        let mut profiles: BTreeMap<ModId, Vec<Profile>> = BTreeMap::new();
        let mut extends_overrides: BTreeMap<ModId, Vec<Override>> = BTreeMap::new();
        for m in 0..self.modules.len() {
            if self.modules[m].std {
                continue;
            }
            let ps = self.modules[m].profiles.clone();
            let checked: Vec<Profile> = ps
                .iter()
                .map(|p| Profile {
                    name: p.name.name.clone(),
                    overrides: self.check_overrides(m, &p.overrides),
                    span: p.name.span,
                })
                .collect();
            profiles.insert(m, checked);
            if let Some((_, Some(block), _)) = self.modules[m].extends.clone() {
                let o = self.check_overrides(m, &block);
                extends_overrides.insert(m, o);
            }
        }
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
            if m.std || d.used || matches!(d.kind, DeclKind::Stage | DeclKind::Eval) {
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
        Recipe { file: self.modules[m].path.clone(), decls, profiles: all_profiles, profile: None }
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

/// A type for overriding a `param`: the same shape as its current value.
fn param_type(v: &Val) -> Ty {
    match &v.v {
        V::Num { .. } => Ty::Float { min: None, max: None },
        V::Qty { dim, .. } => Ty::Qty { dim: *dim, min: None, max: None },
        V::Bool { .. } => Ty::Bool,
        V::Str { .. } => Ty::Str,
        V::Dims { .. } => Ty::Dims,
        _ => Ty::Any,
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

/// The values directly inside `v` (fields, graph modules, list items), each with its path step.
fn children(v: &Val) -> Vec<(Seg, &Val)> {
    match &v.v {
        V::Obj(o) => o
            .fields
            .iter()
            .map(|(k, x)| (Seg::Field(k.to_string()), x))
            .chain(o.modules.iter().map(|m| (Seg::Module(m.name.clone()), &m.value)))
            .collect(),
        V::Record { fields } => fields.iter().map(|(k, x)| (Seg::Field(k.clone()), x)).collect(),
        V::List { items } => items.iter().enumerate().map(|(i, x)| (Seg::Index(i), x)).collect(),
        _ => Vec::new(),
    }
}

/// The value with exactly `span` inside `v`, and the path to it.
fn find_span<'a>(v: &'a Val, span: Span, path: &mut Vec<Seg>) -> Option<&'a Val> {
    if v.span == span {
        return Some(v);
    }
    for (seg, child) in children(v) {
        path.push(seg);
        if let Some(hit) = find_span(child, span, path) {
            return Some(hit);
        }
        path.pop();
    }
    None
}

/// Whether some value inside `v` spans `span`; `path` leads to the innermost one.
fn find_containing(v: &Val, span: Span, path: &mut Vec<Seg>) -> bool {
    if v.span.file != span.file || v.span.start > span.start || v.span.end < span.end {
        return false;
    }
    for (seg, child) in children(v) {
        path.push(seg);
        if find_containing(child, span, path) {
            return true;
        }
        path.pop();
    }
    true
}
