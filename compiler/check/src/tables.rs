//! The checker's tables once checking is done (names, declarations, builtins, the spans of
//! bare names, …): several small allocations per line of input. Freeing them in the middle of
//! `wrlc check` cost time twice: the frees themselves, and the planner's checks then reusing
//! the freed chunks scattered over the whole heap (cold in cache). They are handed back in
//! [`crate::Checked`] instead, for the caller to free when it suits it (`wrlc check` frees
//! its compilation on a thread of its own once everything is printed).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use wrl_diagnostics::Span;
use wrl_syntax::ast;

use crate::checker::{BuiltinEntry, Checker, DeclId, ModId, Target};
use crate::model::CheckedDecl;
use crate::name::Name;
use crate::value::Val;

/// What the checker built and no caller reads; dropping it frees it.
#[derive(Default)]
pub struct Tables {
    _modules: Vec<ModuleTables>,
    _decls: Vec<DeclTables>,
    _builtins: Vec<BuiltinEntry>,
    _bare: BTreeMap<Span, String>,
    _by_key: BTreeMap<Name, BTreeMap<ModId, DeclId>>,
    _by_file_name: BTreeMap<String, ModId>,
    _param_uses: Vec<(DeclId, Span)>,
    _checked: Vec<Option<Arc<CheckedDecl>>>,
}

impl std::fmt::Debug for Tables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tables")
            .field("modules", &self._modules.len())
            .field("decls", &self._decls.len())
            .finish_non_exhaustive()
    }
}

/// A module's tables (its profiles' syntax is borrowed from the caller's files, or dropped).
struct ModuleTables {
    _path: String,
    _decls: BTreeMap<String, DeclId>,
    _builtins: BTreeMap<String, usize>,
    _imports: BTreeMap<String, (Target, Span)>,
    _used_imports: BTreeSet<String>,
    _extends: Option<(ModId, Option<ast::Block>, Span)>,
    _file_imports: Vec<(ModId, Span)>,
}

/// A declaration's entry without its (already evaluated) expression.
struct DeclTables {
    _key: Name,
    _name: String,
    _doc: Option<String>,
    _value: Option<Val>,
}

impl Checker<'_> {
    /// The tables, without the borrowed sources, loader and syntax.
    pub(crate) fn into_tables(self) -> Tables {
        let modules = self
            .modules
            .into_iter()
            .map(|m| ModuleTables {
                _path: m.path,
                _decls: m.decls,
                _builtins: m.builtins,
                _imports: m.imports,
                _used_imports: m.used_imports,
                _extends: m.extends,
                _file_imports: m.file_imports,
            })
            .collect();
        let decls = self
            .decls
            .into_iter()
            .map(|d| DeclTables { _key: d.key, _name: d.name, _doc: d.doc, _value: d.value })
            .collect();
        Tables {
            _modules: modules,
            _decls: decls,
            _builtins: self.builtins,
            _bare: self.bare,
            _by_key: self.by_key.0,
            _by_file_name: self.by_file_name,
            _param_uses: self.param_uses,
            _checked: self.checked,
        }
    }
}
