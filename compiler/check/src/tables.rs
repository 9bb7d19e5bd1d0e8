//! The checker's tables once checking is done (names, declarations, builtins, the spans of
//! bare names, …): several small allocations per line of input. Freeing them in the middle of
//! `wrlc check` cost time twice: the frees themselves, and the planner's checks then reusing
//! the freed chunks scattered over the whole heap (cold in cache). They are handed back in
//! [`crate::Checked`] instead, for the caller to free when it suits it (`wrlc check` frees
//! its compilation on a thread of its own once everything is printed). An editor keeps them
//! and asks them questions (`crate::query`: what a name resolves to, a builtin's slots).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use wrl_diagnostics::Span;
use wrl_syntax::ast;

use crate::checker::{BuiltinEntry, Checker, DeclId, ModId, Target};
use crate::model::CheckedDecl;
use crate::name::Name;
use crate::value::Val;

/// What the checker built; only `crate::query` reads it, and dropping it frees it.
#[derive(Default)]
pub struct Tables {
    pub(crate) modules: Vec<ModuleTables>,
    pub(crate) decls: Vec<DeclTables>,
    pub(crate) builtins: Vec<BuiltinEntry>,
    pub(crate) prelude: ModId,
    _bare: BTreeMap<Span, String>,
    _by_key: BTreeMap<Name, BTreeMap<ModId, DeclId>>,
    _by_file_name: BTreeMap<String, ModId>,
    _param_uses: Vec<(DeclId, Span)>,
    _checked: Vec<Option<Arc<CheckedDecl>>>,
}

impl std::fmt::Debug for Tables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tables")
            .field("modules", &self.modules.len())
            .field("decls", &self.decls.len())
            .finish_non_exhaustive()
    }
}

/// A module's tables (its profiles' syntax is borrowed from the caller's files, or dropped).
pub(crate) struct ModuleTables {
    pub path: String,
    pub file: wrl_diagnostics::FileId,
    pub std: bool,
    pub decls: BTreeMap<String, DeclId>,
    pub builtins: BTreeMap<String, usize>,
    pub imports: BTreeMap<String, (Target, Span)>,
    _used_imports: BTreeSet<String>,
    _extends: Option<(ModId, Option<ast::Block>, Span)>,
    _file_imports: Vec<(ModId, Span)>,
}

/// A declaration's entry without its (already evaluated) expression.
pub(crate) struct DeclTables {
    pub key: Name,
    pub name: String,
    pub kind: ast::DeclKind,
    pub module: ModId,
    pub span: Span,
    pub name_span: Span,
    pub doc: Option<String>,
    _value: Option<Val>,
}

impl Checker<'_> {
    /// The tables, without the borrowed sources, loader and syntax.
    pub(crate) fn into_tables(self) -> Tables {
        let modules = self
            .modules
            .into_iter()
            .map(|m| ModuleTables {
                path: m.path,
                file: m.file,
                std: m.std,
                decls: m.decls,
                builtins: m.builtins,
                imports: m.imports,
                _used_imports: m.used_imports,
                _extends: m.extends,
                _file_imports: m.file_imports,
            })
            .collect();
        let decls = self
            .decls
            .into_iter()
            .map(|d| DeclTables {
                key: d.key,
                name: d.name,
                kind: d.kind,
                module: d.module,
                span: d.span,
                name_span: d.name_span,
                doc: d.doc,
                _value: d.value,
            })
            .collect();
        Tables {
            modules,
            decls,
            builtins: self.builtins,
            prelude: self.prelude,
            _bare: self.bare,
            _by_key: self.by_key.0,
            _by_file_name: self.by_file_name,
            _param_uses: self.param_uses,
            _checked: self.checked,
        }
    }
}
