//! The checker's tables: modules (stdlib files and user files), declarations, builtins; name
//! resolution (imports are in imports.rs, the driver in driver.rs).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use wrl_diagnostics::{Diagnostic, FileId, SourceMap, Span};

use crate::suggest::did_you_mean;
use wrl_syntax::ast::{self, DeclKind, ItemKind, ProfileKind};

use crate::loader::Loader;
use crate::stdlib::{MODULES, PRELUDE};
use crate::types::Ty;
use crate::value::Val;

pub(crate) type ModId = usize;
pub(crate) type DeclId = usize;
pub(crate) type BuiltinId = usize;
/// A place in a recipe: a declaration's key and a path into its value.
pub(crate) type Site = (String, Vec<crate::model::Seg>);

/// What a name refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    Decl(DeclId),
    Builtin(BuiltinId),
    Module(ModId),
}

/// A parsed file being registered: lent for as long as the checker lives (entry files, the
/// stdlib), so that declarations and profiles borrow their syntax, or parsed on the way (an
/// imported file), so that they keep a copy.
#[derive(Clone, Copy)]
pub(crate) enum Parsed<'a, 'b> {
    Lent(&'a ast::File),
    Local(&'b ast::File),
}

impl<'a> Parsed<'a, '_> {
    fn file(&self) -> &ast::File {
        match self {
            Parsed::Lent(f) => f,
            Parsed::Local(f) => f,
        }
    }

    /// What `pick` finds in item `k`: borrowed from a lent file, copied from a local one.
    fn keep<T: Clone>(
        &self,
        k: usize,
        pick: impl for<'x> Fn(&'x ast::Item) -> Option<&'x T>,
    ) -> Option<Cow<'a, T>> {
        match self {
            Parsed::Lent(f) => f.items.get(k).and_then(pick).map(Cow::Borrowed),
            Parsed::Local(f) => f.items.get(k).and_then(pick).map(|t| Cow::Owned(t.clone())),
        }
    }
}

pub(crate) struct Module<'a> {
    /// `std::rewards`, or a file name for user files.
    pub path: String,
    pub file: FileId,
    pub std: bool,
    pub decls: BTreeMap<String, DeclId>,
    pub builtins: BTreeMap<String, BuiltinId>,
    /// Names brought in by `use`, with the span of the import and whether it was used.
    pub imports: BTreeMap<String, (Target, Span)>,
    pub used_imports: BTreeSet<String>,
    pub profiles: Vec<Cow<'a, ast::Profile>>,
    pub extends: Option<(ModId, Option<ast::Block>, Span)>,
    /// Files this module imports, with the span of the import (for cycle reports).
    pub file_imports: Vec<(ModId, Span)>,
    /// Where the file says `use std::explicit`: every value its declarations hold is stated
    /// (a field left to its stdlib default is W0220; explicit.rs).
    pub explicit: Option<Span>,
}

pub(crate) struct DeclEntry<'a> {
    /// The key used in recipes (`policy`, `c::policy`, `std::models::tiny`), shared with
    /// every reference to it.
    pub key: crate::name::Name,
    pub name: String,
    pub kind: DeclKind,
    pub module: ModId,
    /// Its expression, until it is evaluated (once).
    pub expr: Cow<'a, ast::Expr>,
    pub span: Span,
    pub name_span: Span,
    pub doc: Option<String>,
    pub used: bool,
    pub value: Option<Val>,
    pub in_progress: bool,
}

/// One slot of a builtin: a parameter or a block field.
pub(crate) struct Slot {
    pub name: crate::name::Name,
    pub ty: Ty,
    pub ty_text: String,
    pub default: Option<ast::Expr>,
    pub positional: bool,
}

pub(crate) struct BuiltinEntry {
    pub qual: crate::name::Name,
    pub module: ModId,
    /// Where the builtin's name is declared (for editors: `wrl_check::query`).
    pub name_span: Span,
    /// Shared, so that applying the builtin can walk them while it evaluates arguments.
    pub slots: std::sync::Arc<[Slot]>,
    /// Each slot's default value, evaluated once (on first use).
    pub defaults: Vec<Option<Val>>,
    /// Every slot's default, by name, shared by all the builtin's objects (once evaluated).
    pub shared_defaults: Option<crate::fields::Defaults>,
    pub kind: crate::name::Name,
    pub meta_args: Vec<ast::Arg>,
    pub meta: Option<std::sync::Arc<BTreeMap<String, Val>>>,
}

pub(crate) struct Checker<'a> {
    pub sources: &'a mut SourceMap,
    pub loader: &'a dyn Loader,
    pub modules: Vec<Module<'a>>,
    pub decls: Vec<DeclEntry<'a>>,
    pub builtins: Vec<BuiltinEntry>,
    pub diags: Vec<Diagnostic>,
    pub by_file_name: BTreeMap<String, ModId>,
    pub prelude: ModId,
    /// Spans of bare one-word names and the word: an enum slot accepts such a name even when
    /// it also names a declaration or builtin (`kind = tasks` with a dataset called `tasks`).
    pub bare: BTreeMap<Span, String>,
    /// Where each `param` was used (its value is inlined there): a profile that overrides the
    /// param must change those places too.
    pub param_uses: Vec<(DeclId, Span)>,
    /// Overrides derived from the last checked param override (see `param_override_uses`).
    pub derived: Vec<crate::model::Override>,
    /// Declarations by key and module (one per module: names are unique in a file), and how
    /// many declarations there were when it was built.
    pub by_key: (BTreeMap<crate::name::Name, BTreeMap<ModId, DeclId>>, usize),
    /// W0203 warnings of the override block being checked, with the place of the computed
    /// value (decl key and path), dropped if the block overrides that place too.
    pub folded: Vec<(Option<Site>, Diagnostic)>,
    /// Declarations as recipes hold them, built once each (see `checked_decl`).
    pub checked: Vec<Option<std::sync::Arc<crate::model::CheckedDecl>>>,
    /// Overrides (profiles, `extends` blocks, `--set`) are being checked: they change fields
    /// of a recipe and are not held to `use std::explicit`.
    pub overriding: bool,
    /// What is left of the did-you-mean work against names in scope (`suggest::Budget`).
    pub suggest: crate::suggest::Budget,
}

impl<'a> Checker<'a> {
    pub fn new(sources: &'a mut SourceMap, loader: &'a dyn Loader) -> Checker<'a> {
        let mut c = Checker {
            sources,
            loader,
            modules: Vec::new(),
            decls: Vec::new(),
            builtins: Vec::new(),
            diags: Vec::new(),
            by_file_name: BTreeMap::new(),
            prelude: 0,
            bare: BTreeMap::new(),
            param_uses: Vec::new(),
            derived: Vec::new(),
            by_key: (BTreeMap::new(), usize::MAX),
            folded: Vec::new(),
            checked: Vec::new(),
            overriding: false,
            suggest: crate::suggest::Budget::default(),
        };
        for (i, (path, name, text)) in MODULES.iter().enumerate() {
            let id = c.sources.add(*name, *text);
            let (file, diags) = parsed_stdlib(i, id, text);
            c.diags.extend(diags.iter().cloned());
            let m = c.add_module(path, id, true, Parsed::Lent(file));
            if *path == PRELUDE {
                c.prelude = m;
            }
        }
        c
    }

    pub fn text(&self, span: Span) -> &str {
        self.sources.get(span.file).map(|f| f.slice(span)).unwrap_or("")
    }

    /// The span a label of a value gets: the parser's own. It used to trim trailing whitespace
    /// and comments by lexing the text again; the parser's spans end at their last token
    /// (`wrl-syntax`, `tests/all/spans.rs`), so there is nothing left to trim.
    pub fn tight(&self, span: Span) -> Span {
        span
    }

    /// Registers a parsed file as a module and links its imports.
    pub fn add_module(
        &mut self,
        path: &str,
        file: FileId,
        std: bool,
        ast: Parsed<'a, '_>,
    ) -> ModId {
        let id = self.register_module(path, file, std, ast);
        self.link_module(id, ast.file());
        id
    }

    /// Registers a parsed file as a module: its declarations, builtins and profiles.
    pub fn register_module(
        &mut self,
        path: &str,
        file: FileId,
        std: bool,
        parsed: Parsed<'a, '_>,
    ) -> ModId {
        let ast = parsed.file();
        let id = self.modules.len();
        self.modules.push(Module {
            path: path.to_string(),
            file,
            std,
            decls: BTreeMap::new(),
            builtins: BTreeMap::new(),
            imports: BTreeMap::new(),
            used_imports: BTreeSet::new(),
            profiles: Vec::new(),
            extends: None,
            file_imports: Vec::new(),
            explicit: None,
        });
        if !std {
            self.by_file_name.insert(path.to_string(), id);
        }
        let mut first_seen: BTreeMap<String, Span> = BTreeMap::new();
        let mut profiles_seen: BTreeMap<&str, Span> = BTreeMap::new();
        for (k, item) in ast.items.iter().enumerate() {
            match &item.kind {
                ItemKind::Decl(d) => {
                    if self.duplicate(&mut first_seen, &d.name) {
                        continue;
                    }
                    let key =
                        if std { format!("{path}::{}", d.name.name) } else { d.name.name.clone() };
                    let did = self.decls.len();
                    self.decls.push(DeclEntry {
                        key: key.into(),
                        name: d.name.name.clone(),
                        kind: d.kind,
                        module: id,
                        expr: parsed
                            .keep(k, |it| match &it.kind {
                                ItemKind::Decl(d) => Some(&d.value),
                                _ => None,
                            })
                            .unwrap_or_else(|| Cow::Owned(d.value.clone())),
                        span: item.span,
                        name_span: d.name.span,
                        doc: item.doc.clone(),
                        used: false,
                        value: None,
                        in_progress: false,
                    });
                    self.modules[id].decls.insert(d.name.name.clone(), did);
                }
                ItemKind::Builtin(b) => {
                    if self.duplicate(&mut first_seen, &b.name) {
                        continue;
                    }
                    let bid = self.add_builtin(id, path, std, b);
                    self.modules[id].builtins.insert(b.name.name.clone(), bid);
                }
                ItemKind::Profile(p) => {
                    if let Some(&prev_span) = profiles_seen.get(p.name.name.as_str()) {
                        // Profiles and variants share one namespace: a plan, an estimate and
                        // the language server name each by its name alone.
                        self.diags.push(
                            Diagnostic::new(
                                "E0201",
                                format!("{} `{}` is defined twice", p.kind.word(), p.name.name),
                            )
                            .label(p.name.span, "defined again here")
                            .label(prev_span, "first defined here")
                            .help("rename one of them, or merge their overrides"),
                        );
                        continue;
                    }
                    if p.kind == ProfileKind::Variant && p.name.name == crate::model::BASE_VARIANT {
                        self.diags.push(
                            Diagnostic::new("E0209", "a variant cannot be named `base`")
                                .label(p.name.span, "`base` is the recipe without a variant")
                                .help("rename the variant, e.g. `variant base_like { … }`"),
                        );
                        continue;
                    }
                    profiles_seen.insert(&p.name.name, p.name.span);
                    let kept = parsed
                        .keep(k, |it| match &it.kind {
                            ItemKind::Profile(p) => Some(p),
                            _ => None,
                        })
                        .unwrap_or_else(|| Cow::Owned(p.clone()));
                    self.modules[id].profiles.push(kept);
                }
                ItemKind::Use(_) | ItemKind::Extends(_) => {}
            }
        }
        id
    }

    /// Resolves a module's `use` and `extends` items (loading imported files).
    pub fn link_module(&mut self, id: ModId, ast: &ast::File) {
        for item in &ast.items {
            match &item.kind {
                ItemKind::Use(u) => self.add_use(id, u, item.span),
                ItemKind::Extends(e) => self.add_extends(id, e, item.span),
                _ => {}
            }
        }
    }

    fn duplicate(&mut self, seen: &mut BTreeMap<String, Span>, name: &ast::Ident) -> bool {
        match seen.get(&name.name) {
            Some(first) => {
                self.diags.push(
                    Diagnostic::new("E0201", format!("`{}` is defined twice", name.name))
                        .label(name.span, "defined again here")
                        .label(*first, "first defined here")
                        .help("rename one of them; names are unique within a file"),
                );
                true
            }
            None => {
                seen.insert(name.name.clone(), name.span);
                false
            }
        }
    }

    fn add_builtin(&mut self, module: ModId, path: &str, std: bool, b: &ast::Builtin) -> BuiltinId {
        let mut slots = Vec::new();
        for (params, positional) in [(&b.params, true), (&b.fields, false)] {
            for p in params {
                match crate::types::parse_type(&p.ty) {
                    Ok(ty) => slots.push(Slot {
                        name: p.name.name.as_str().into(),
                        ty,
                        ty_text: type_text(self.text(p.ty.span)),
                        default: p.default.clone(),
                        positional,
                    }),
                    Err(d) => self.diags.push(d),
                }
            }
        }
        let (kind, meta_args) = match &b.returns.kind {
            ast::ExprKind::Path(s) => {
                (s.last().map(|i| i.name.clone()).unwrap_or_default(), Vec::new())
            }
            ast::ExprKind::Call { callee, args, .. } => match &callee.kind {
                ast::ExprKind::Path(s) => {
                    (s.last().map(|i| i.name.clone()).unwrap_or_default(), args.clone())
                }
                _ => (String::new(), Vec::new()),
            },
            _ => (String::new(), Vec::new()),
        };
        if !crate::types::KINDS.contains(&kind.as_str()) {
            self.diags.push(
                Diagnostic::new("E0300", format!("a builtin cannot return `{kind}`"))
                    .label(b.returns.span, "not a kind")
                    .maybe_help(did_you_mean(&kind, crate::types::KINDS.iter().copied())),
            );
        }
        let qual = if std && path != PRELUDE {
            format!("{path}::{}", b.name.name)
        } else {
            b.name.name.clone()
        };
        let defaults = vec![None; slots.len()];
        self.builtins.push(BuiltinEntry {
            qual: qual.into(),
            module,
            name_span: b.name.span,
            slots: slots.into(),
            defaults,
            shared_defaults: None,
            kind: kind.into(),
            meta_args,
            meta: None,
        });
        self.builtins.len() - 1
    }

    /// `std::a` → module; `std::a::b` → an item of module `std::a`.
    pub fn resolve_std_path(&self, names: &[&str]) -> Option<Target> {
        if names.first() != Some(&"std") {
            return None;
        }
        let module_of = |p: &str| self.modules.iter().position(|m| m.std && m.path == p);
        match names {
            [_, m] => module_of(&format!("std::{m}")).map(Target::Module),
            [_, m, item] => self.member_of(module_of(&format!("std::{m}"))?, item),
            _ => None,
        }
    }

    pub fn member_of(&self, m: ModId, name: &str) -> Option<Target> {
        let module = &self.modules[m];
        module
            .decls
            .get(name)
            .map(|d| Target::Decl(*d))
            .or_else(|| module.builtins.get(name).map(|b| Target::Builtin(*b)))
    }

    pub fn names_in(&self, m: ModId) -> Vec<String> {
        let module = &self.modules[m];
        module.decls.keys().chain(module.builtins.keys()).cloned().collect()
    }

    /// Resolves a path in a module's scope, marking what it finds as used.
    pub fn resolve(&mut self, module: ModId, segs: &[&str]) -> Option<Target> {
        let t = self.resolve_quiet(module, segs)?;
        if let Target::Decl(d) = t {
            self.decls[d].used = true;
        }
        if let Some(first) = segs.first()
            && self.modules[module].imports.contains_key(*first)
        {
            self.modules[module].used_imports.insert((*first).to_string());
        }
        Some(t)
    }

    pub fn resolve_quiet(&self, module: ModId, segs: &[&str]) -> Option<Target> {
        match segs {
            [] => None,
            [name] => {
                let m = &self.modules[module];
                m.decls
                    .get(*name)
                    .map(|d| Target::Decl(*d))
                    .or_else(|| m.builtins.get(*name).map(|b| Target::Builtin(*b)))
                    .or_else(|| m.imports.get(*name).map(|(t, _)| *t))
                    .or_else(|| self.member_of(self.prelude, name))
            }
            ["std", ..] => self.resolve_std_path(segs),
            [first, rest @ ..] => match self.resolve_quiet(module, &[first])? {
                Target::Module(m) if rest.len() == 1 => self.member_of(m, rest[0]),
                _ => None,
            },
        }
    }

    /// Every name visible in a module, for did-you-mean.
    pub fn visible_names(&self, module: ModId) -> Vec<String> {
        let m = &self.modules[module];
        let mut v: Vec<String> =
            m.decls.keys().chain(m.builtins.keys()).chain(m.imports.keys()).cloned().collect();
        v.extend(self.names_in(self.prelude));
        v.sort();
        v.dedup();
        v
    }
}

/// Parses stdlib module `i` (of [`MODULES`]) as the file id a checker over a source map that
/// holds `files` files will give it, unless that parse is cached already. A caller that parses
/// its own files on several threads does this on one of them, so that the checker finds it done.
pub fn warm_stdlib(i: usize, files: usize) {
    if let Some((_, _, text)) = MODULES.get(i) {
        let id = FileId(u32::try_from(files + i).unwrap_or(u32::MAX));
        parsed_stdlib(i, id, text);
    }
}

/// The parsed stdlib module `i` as file `id`: parsed once per process and file id (parsing
/// is most of the cost of checking a small recipe, and the stdlib never changes).
/// Kept for the life of the process, like the cache, so checkers borrow it instead of copying.
fn parsed_stdlib(i: usize, id: FileId, text: &str) -> &'static (ast::File, Vec<Diagnostic>) {
    type Cache = std::sync::Mutex<BTreeMap<(usize, FileId), &'static (ast::File, Vec<Diagnostic>)>>;
    static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
    let cache = CACHE.get_or_init(|| std::sync::Mutex::new(BTreeMap::new()));
    if let Ok(map) = cache.lock()
        && let Some(hit) = map.get(&(i, id))
    {
        return hit;
    }
    let parsed = wrl_syntax::parse(id, text);
    let out: &'static (ast::File, Vec<Diagnostic>) =
        Box::leak(Box::new((parsed.file, parsed.diagnostics)));
    if let Ok(mut map) = cache.lock() {
        map.insert((i, id), out);
    }
    out
}

/// A type as written, on one line: the formatter may spread a long type over several lines,
/// but schemas and messages show it compactly (`record(a: int, b: string)`).
pub(crate) fn type_text(src: &str) -> String {
    let one_line = src.split_whitespace().collect::<Vec<_>>().join(" ");
    one_line.replace("( ", "(").replace(", )", ")").replace(",)", ")")
}

impl Checker<'_> {
    /// Did-you-mean for `wrong` among the names visible in module `m` and `extra`, within the
    /// check's budget (none once it is spent).
    pub(crate) fn scope_suggestion(
        &mut self,
        m: ModId,
        wrong: &str,
        extra: &[String],
    ) -> Option<String> {
        if !self.suggest.open() {
            return None;
        }
        let mut cands = self.visible_names(m);
        cands.extend(extra.iter().cloned());
        self.suggestion_among(wrong, &cands)
    }

    /// Did-you-mean for `wrong` among `cands` (names of a module, however many), within the
    /// check's budget.
    pub(crate) fn suggestion_among(&mut self, wrong: &str, cands: &[String]) -> Option<String> {
        if !self.suggest.take(cands.len()) {
            return None;
        }
        did_you_mean(wrong, cands.iter().map(String::as_str))
    }
}
