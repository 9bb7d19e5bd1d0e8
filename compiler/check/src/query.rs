//! Questions an editor asks of a finished check (`wrlc lsp`): what a name written in a file
//! resolves to, a builtin's slots, the names visible in a file, the value at a path of a
//! recipe and the profile overrides that reach it, and the context budget of each RL stage's
//! turns. Everything here reads what checking already built ([`Tables`], [`Recipe`]); nothing
//! is computed a second way.

use wrl_diagnostics::{FileId, Span};
use wrl_syntax::ast::DeclKind;

use crate::checker::{ModId, Target};
use crate::model::{Override, Profile, Recipe, Seg};
use crate::stdlib::PRELUDE;
use crate::tables::Tables;
use crate::types::Ty;
use crate::value::{V, Val};

pub use crate::rules::budget::TurnBudget;

/// What a name resolves to.
#[derive(Clone, Debug, PartialEq)]
pub enum Resolved {
    Decl(DeclInfo),
    Builtin(BuiltinInfo),
    Module(ModuleInfo),
}

/// A declaration, where it is and what it says about itself.
#[derive(Clone, Debug, PartialEq)]
pub struct DeclInfo {
    /// The key recipes and references use (`policy`, `c::policy`, `std::models::tiny`).
    pub key: String,
    /// The name as declared (`tiny`).
    pub name: String,
    pub kind: DeclKind,
    /// The whole item, and the name in it.
    pub span: Span,
    pub name_span: Span,
    pub doc: Option<String>,
    /// The module it is declared in (`std::models`, or a file name).
    pub module: String,
    pub std: bool,
}

/// A stdlib constructor's signature.
#[derive(Clone, Debug, PartialEq)]
pub struct BuiltinInfo {
    /// The qualified name objects carry as `ctor` (`grpo`, `std::sandbox::tasks`).
    pub qual: String,
    /// The name as declared (`tasks`).
    pub name: String,
    /// The kind it makes (`stage`, `dataset`, `signal`, …).
    pub kind: String,
    pub name_span: Span,
    pub module: String,
    /// Parameters first (in order), then block fields.
    pub slots: Vec<SlotInfo>,
}

/// One parameter or block field of a builtin.
#[derive(Clone, Debug, PartialEq)]
pub struct SlotInfo {
    pub name: String,
    pub ty: Ty,
    /// The type as written, on one line (`int(min: 1)`).
    pub ty_text: String,
    /// The default as written in the stdlib; `None` for a required slot.
    pub default: Option<Span>,
    pub positional: bool,
}

/// A module: a stdlib module or a user file.
#[derive(Clone, Debug, PartialEq)]
pub struct ModuleInfo {
    /// `std::rewards`, or the file's name.
    pub path: String,
    pub file: FileId,
    pub std: bool,
}

/// A name a `use` or `extends` brings into a file, and where it was brought in.
#[derive(Clone, Debug, PartialEq)]
pub struct Import {
    pub name: String,
    pub target: Resolved,
    pub span: Span,
}

impl Tables {
    fn module_of(&self, file: FileId) -> Option<ModId> {
        self.modules.iter().position(|m| m.file == file)
    }

    fn member_of(&self, m: ModId, name: &str) -> Option<Target> {
        let module = self.modules.get(m)?;
        module
            .decls
            .get(name)
            .map(|d| Target::Decl(*d))
            .or_else(|| module.builtins.get(name).map(|b| Target::Builtin(*b)))
    }

    fn std_module(&self, path: &str) -> Option<ModId> {
        self.modules.iter().position(|m| m.std && m.path == path)
    }

    /// The same lookup as the checker's: the file's declarations, builtins and imports, then
    /// the prelude; `std::m` and `std::m::item`; `alias::item` through an imported module.
    fn target(&self, m: ModId, segs: &[&str]) -> Option<Target> {
        match segs {
            [] => None,
            [name] => {
                let module = self.modules.get(m)?;
                self.member_of(m, name)
                    .or_else(|| module.imports.get(*name).map(|(t, _)| *t))
                    .or_else(|| self.member_of(self.prelude, name))
            }
            ["std", rest @ ..] => match rest {
                [one] => self.std_module(&format!("std::{one}")).map(Target::Module),
                [module, item] => self.member_of(self.std_module(&format!("std::{module}"))?, item),
                _ => None,
            },
            [first, rest @ ..] => match self.target(m, &[first])? {
                Target::Module(im) if rest.len() == 1 => self.member_of(im, rest[0]),
                _ => None,
            },
        }
    }

    fn info(&self, t: Target) -> Option<Resolved> {
        Some(match t {
            Target::Decl(d) => Resolved::Decl(self.decl_info(d)?),
            Target::Builtin(b) => Resolved::Builtin(self.builtin_info(b)?),
            Target::Module(m) => Resolved::Module(self.module_info(m)?),
        })
    }

    fn decl_info(&self, d: usize) -> Option<DeclInfo> {
        let e = self.decls.get(d)?;
        let m = self.modules.get(e.module)?;
        Some(DeclInfo {
            key: e.key.to_string(),
            name: e.name.clone(),
            kind: e.kind,
            span: e.span,
            name_span: e.name_span,
            doc: e.doc.clone(),
            module: m.path.clone(),
            std: m.std,
        })
    }

    fn builtin_info(&self, b: usize) -> Option<BuiltinInfo> {
        let e = self.builtins.get(b)?;
        let m = self.modules.get(e.module)?;
        let name = e.qual.rsplit("::").next().unwrap_or(&e.qual).to_string();
        let slots = e
            .slots
            .iter()
            .map(|s| SlotInfo {
                name: s.name.to_string(),
                ty: s.ty.clone(),
                ty_text: s.ty_text.clone(),
                default: s.default.as_ref().map(|d| d.span),
                positional: s.positional,
            })
            .collect();
        Some(BuiltinInfo {
            qual: e.qual.to_string(),
            name,
            kind: e.kind.to_string(),
            name_span: e.name_span,
            module: m.path.clone(),
            slots,
        })
    }

    fn module_info(&self, m: ModId) -> Option<ModuleInfo> {
        let module = self.modules.get(m)?;
        Some(ModuleInfo { path: module.path.clone(), file: module.file, std: module.std })
    }

    /// What `segs` (`policy`, `std::models::tiny`, `alias::name`) means where `file` says it.
    pub fn resolve(&self, file: FileId, segs: &[&str]) -> Option<Resolved> {
        let m = self.module_of(file)?;
        self.info(self.target(m, segs)?)
    }

    /// A builtin by the qualified name its objects carry (`Obj::ctor`).
    pub fn builtin(&self, qual: &str) -> Option<BuiltinInfo> {
        let b = self.builtins.iter().position(|b| b.qual.as_str() == qual)?;
        self.builtin_info(b)
    }

    /// A declaration by the key references carry (`V::Ref::decl`).
    pub fn decl(&self, key: &str) -> Option<DeclInfo> {
        let d = self.decls.iter().position(|d| d.key.as_str() == key)?;
        self.decl_info(d)
    }

    /// Every name `file` can use without a path, sorted, each with what it means there.
    pub fn visible(&self, file: FileId) -> Vec<(String, Resolved)> {
        let Some(m) = self.module_of(file) else { return Vec::new() };
        let mut names: Vec<&str> = Vec::new();
        for module in [m, self.prelude] {
            if let Some(mt) = self.modules.get(module) {
                names.extend(mt.decls.keys().map(String::as_str));
                names.extend(mt.builtins.keys().map(String::as_str));
                if module == m {
                    names.extend(mt.imports.keys().map(String::as_str));
                }
            }
        }
        names.sort_unstable();
        names.dedup();
        names.into_iter().filter_map(|n| Some((n.to_string(), self.resolve(file, &[n])?))).collect()
    }

    /// The items of a module (`std::rewards`, or a file's name), sorted by name.
    pub fn members(&self, module: &str) -> Vec<(String, Resolved)> {
        let Some(m) = self.modules.iter().position(|x| x.path == module) else {
            return Vec::new();
        };
        let mt = &self.modules[m];
        let mut names: Vec<&String> = mt.decls.keys().chain(mt.builtins.keys()).collect();
        names.sort_unstable();
        names.dedup();
        names
            .into_iter()
            .filter_map(|n| Some((n.clone(), self.info(self.member_of(m, n)?)?)))
            .collect()
    }

    /// The stdlib's modules, the prelude first.
    pub fn std_modules(&self) -> Vec<ModuleInfo> {
        let mut out: Vec<ModuleInfo> = (0..self.modules.len())
            .filter(|m| self.modules[*m].std)
            .filter_map(|m| self.module_info(m))
            .collect();
        out.sort_by_key(|m| (m.path != PRELUDE, m.path.clone()));
        out
    }

    /// The names `use` and `extends` items bring into `file`, sorted by name.
    pub fn imports(&self, file: FileId) -> Vec<Import> {
        let Some(m) = self.module_of(file) else { return Vec::new() };
        self.modules[m]
            .imports
            .iter()
            .filter_map(|(name, (t, span))| {
                Some(Import { name: name.clone(), target: self.info(*t)?, span: *span })
            })
            .collect()
    }
}

/// The value at `path` inside `v` (fields of objects and records, list items, graph
/// modules): the read-only twin of how overrides are applied.
pub fn value_at<'v>(v: &'v Val, path: &[Seg]) -> Option<&'v Val> {
    let Some((first, rest)) = path.split_first() else { return Some(v) };
    let next = match (first, &v.v) {
        (Seg::Field(f), V::Obj(o)) => o.fields.get(f)?,
        (Seg::Field(f), V::Record { fields }) => fields.get(f)?,
        (Seg::Index(i), V::List { items }) => items.get(*i)?,
        (Seg::Module(name), V::Obj(o)) => &o.modules.iter().find(|m| m.name == *name)?.value,
        _ => return None,
    };
    value_at(next, rest)
}

/// The overrides of `profile` that change declaration `decl` at `path`: those that replace
/// it or something around it (their path is a prefix of `path`) and those that change
/// something inside it (`path` is a prefix of theirs), in the order the profile applies them.
pub fn overrides_at<'p>(profile: &'p Profile, decl: &str, path: &[Seg]) -> Vec<&'p Override> {
    profile
        .overrides
        .iter()
        .filter(|o| o.decl == decl)
        .filter(|o| o.path.starts_with(path) || path.starts_with(&o.path))
        .collect()
}

/// The context budget (E0404's estimate) of every model's turn at the horizon of every
/// phase of every RL stage in `recipe`, whether it fits or not.
pub fn turn_budgets(recipe: &Recipe) -> Vec<TurnBudget> {
    crate::rules::turn_budgets(recipe)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemLoader;

    const SRC: &str = r#"use std::rewards::{task_check}
model policy = std::models::tiny
env web = browser { target = std::sandbox::web, tools = std::tools::elements }
agent actor = react(policy, web) { history = action_only, max_response = 48 tokens, max_turns = 6 turns }
stage online = grpo(policy, std::sandbox::tasks(count: 8), actor) {
  reward = task_check
  phases = [{ iters = 2, horizon = 4 steps, lr = 3e-4 }]
}
profile smoke { online.phases[0].iters = 1 }
"#;

    #[test]
    fn names_resolve_as_the_checker_resolves_them() {
        let (_, checked) = crate::check_source("a.wrl", SRC, &MemLoader::default());
        let t = &checked.tables;
        let file = FileId(0);
        match t.resolve(file, &["policy"]) {
            Some(Resolved::Decl(d)) => assert_eq!((d.kind, d.std), (DeclKind::Model, false)),
            other => panic!("{other:?}"),
        }
        match t.resolve(file, &["grpo"]) {
            Some(Resolved::Builtin(b)) => {
                assert_eq!(b.kind, "stage");
                let group = b.slots.iter().find(|s| s.name == "group").expect("group");
                assert_eq!(group.ty_text, "int(min: 1, max: 1024)");
                assert!(group.default.is_some() && !group.positional);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(t.resolve(file, &["task_check"]), Some(Resolved::Builtin(_))));
        assert!(matches!(t.resolve(file, &["std", "sandbox"]), Some(Resolved::Module(_))));
        assert!(matches!(
            t.resolve(file, &["std", "sandbox", "tasks"]),
            Some(Resolved::Builtin(_))
        ));
        assert_eq!(t.resolve(file, &["nothing"]), None);
        assert!(t.visible(file).iter().any(|(n, _)| n == "sft"));
        assert_eq!(t.imports(file).len(), 1);
        assert!(t.members("std::rewards").iter().any(|(n, _)| n == "judge"));
        assert_eq!(t.std_modules()[0].path, PRELUDE);
    }

    #[test]
    fn values_profiles_and_budgets() {
        let (_, checked) = crate::check_source("a.wrl", SRC, &MemLoader::default());
        let recipe = &checked.recipes[0];
        let path = [Seg::Field("phases".into()), Seg::Index(0), Seg::Field("iters".into())];
        let online = recipe.decl("online").expect("online");
        assert_eq!(value_at(&online.value, &path).and_then(Val::as_f64), Some(2.0));
        let smoke = recipe.with_profile("smoke").expect("smoke");
        let in_smoke = smoke.decl("online").and_then(|d| value_at(&d.value, &path).cloned());
        assert_eq!(in_smoke.and_then(|v| v.as_f64()), Some(1.0));
        assert_eq!(overrides_at(&recipe.profiles[0], "online", &path).len(), 1);
        assert_eq!(overrides_at(&recipe.profiles[0], "online", &path[..1]).len(), 1);
        assert!(overrides_at(&recipe.profiles[0], "actor", &[]).is_empty());
        let budgets = turn_budgets(recipe);
        assert_eq!(budgets.len(), 1);
        let b = &budgets[0];
        assert_eq!((b.stage.as_str(), b.phase, b.horizon), ("online", 1, 4.0));
        assert!(b.need > 48.0 && b.need < b.context, "{b:?}");
    }
}
