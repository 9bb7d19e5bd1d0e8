//! What the checker knows about a place in the source: from the walk's root and steps, the
//! constructor whose slot it is in, the slot and any record field below it, the type expected
//! there, the default, and the path of the place in the recipe (`online` → `phases[1].lr`),
//! which leads to its resolved value in the recipe and in each profile.

use wrl_check::query::{BuiltinInfo, Resolved, value_at};
use wrl_check::{Recipe, Seg, Tables, Ty, V, Val};
use wrl_syntax::ast::{self, BlockItem, ExprKind, PathSegment};

use crate::analysis::DOC;
use crate::stdlib;
use crate::walk::{Root, Step};

/// Everything known about one place.
#[derive(Clone, Debug, Default)]
pub struct Place {
    /// The constructor whose slot the place is in.
    pub owner: Option<BuiltinInfo>,
    /// That slot's name.
    pub slot: Option<String>,
    /// The innermost field (the slot, or a record field inside it).
    pub field: Option<String>,
    /// The type expected at the place.
    pub ty: Option<Ty>,
    /// The type as the stdlib writes it (for a slot itself).
    pub ty_text: Option<String>,
    /// The default as the stdlib writes it.
    pub default: Option<String>,
    /// The declaration key and the path in its value, when the place has one.
    pub path: Option<(String, Vec<Seg>)>,
}

/// What the walk below carries from step to step.
enum St {
    Ctor(BuiltinInfo),
    Ty { ty: Ty, default: Option<&'static ast::Expr> },
    Lost,
}

/// The place reached from `root` through `steps`, then `last` (a field name) if given.
pub fn describe(
    tables: &Tables,
    recipe: Option<&Recipe>,
    root: &Root<'_>,
    steps: &[Step],
    last: Option<&str>,
) -> Place {
    let mut place = Place::default();
    let (mut key, mut path, mut st) = (None, None, St::Lost);
    match root {
        Root::Decl(d) => {
            key = Some(d.name.name.clone());
            path = Some(Vec::new());
            st = St::Ty { ty: Ty::Kind(d.kind.word().to_string()), default: None };
        }
        Root::Override { decl, path: segs } => {
            let k = match tables.resolve(DOC, &[decl.name.as_str()]) {
                Some(Resolved::Decl(d)) => d.key,
                _ => decl.name.clone(),
            };
            let (s, fixed) = along(tables, recipe, &k, segs, &mut place);
            (key, path, st) = (Some(k), Some(fixed), s);
        }
        Root::None => {}
    }
    let last_step = last.map(|f| Step::Field(f.to_string()));
    for step in steps.iter().chain(last_step.as_ref()) {
        st = apply(tables, st, step, &mut place, &mut path);
    }
    place.path = key.zip(path);
    if let St::Ty { ty, default } = st {
        place.ty = Some(ty);
        if let (Some(d), Some(owner)) = (default, &place.owner)
            && let Some(m) = stdlib::index().module(&owner.module)
        {
            place.default = Some(stdlib::one_line(m.text.get(d.span.range()).unwrap_or("")));
        }
    } else if let St::Ctor(b) = st {
        place.ty = Some(Ty::Kind(b.kind.clone()));
    }
    place
}

/// One step: into a constructor, a slot, a record field, a list item, …
fn apply(
    tables: &Tables,
    st: St,
    step: &Step,
    place: &mut Place,
    path: &mut Option<Vec<Seg>>,
) -> St {
    let push = |path: &mut Option<Vec<Seg>>, seg: Seg| {
        if let Some(p) = path {
            p.push(seg);
        }
    };
    match (step, st) {
        (Step::Ctor(segs), _) => {
            let names: Vec<&str> = segs.iter().map(String::as_str).collect();
            match tables.resolve(DOC, &names) {
                Some(Resolved::Builtin(b)) => St::Ctor(b),
                _ => {
                    *path = None;
                    St::Lost
                }
            }
        }
        (Step::Field(name), St::Ctor(b)) => {
            push(path, Seg::Field(name.clone()));
            slot(b, |s| s.name == *name, place)
        }
        (Step::Positional(i), St::Ctor(b)) => {
            let name = b.slots.iter().filter(|s| s.positional).nth(*i).map(|s| s.name.clone());
            match name {
                Some(n) => {
                    push(path, Seg::Field(n.clone()));
                    slot(b, |s| s.name == n, place)
                }
                None => {
                    *path = None;
                    St::Lost
                }
            }
        }
        (Step::Field(name), St::Ty { ty, default }) => match record_field(&ty, name) {
            Some(fty) => {
                push(path, Seg::Field(name.clone()));
                place.field = Some(name.clone());
                place.ty_text = None;
                St::Ty { ty: fty, default: default.and_then(|d| default_field(d, name)) }
            }
            None => {
                *path = None;
                St::Lost
            }
        },
        (Step::Item(i), St::Ty { ty, .. }) => match list_elem(&ty) {
            Some(elem) => {
                push(path, Seg::Index(*i));
                St::Ty { ty: elem, default: None }
            }
            None => {
                *path = None;
                St::Lost
            }
        },
        (Step::Module(name), _) => {
            push(path, Seg::Module(name.clone()));
            St::Ty { ty: Ty::Kind("module".into()), default: None }
        }
        (Step::Bound, St::Ty { ty: Ty::Range(inner), .. }) => {
            *path = None;
            St::Ty { ty: *inner, default: None }
        }
        (Step::Field(_) | Step::Positional(_) | Step::Item(_) | Step::Bound | Step::Opaque, _) => {
            *path = None;
            St::Lost
        }
    }
}

fn slot(
    b: BuiltinInfo,
    pick: impl Fn(&wrl_check::query::SlotInfo) -> bool,
    place: &mut Place,
) -> St {
    let Some(s) = b.slots.iter().find(|s| pick(s)).cloned() else {
        place.owner = Some(b);
        return St::Lost;
    };
    let default =
        stdlib::index().module(&b.module).and_then(|m| slot_default(&m.file, &b.name, &s.name));
    place.slot = Some(s.name.clone());
    place.field = Some(s.name.clone());
    place.ty_text = Some(s.ty_text.clone());
    place.owner = Some(b);
    St::Ty { ty: s.ty, default }
}

/// A builtin slot's default expression in the stdlib's own parse (static: parsed once).
fn slot_default(file: &'static ast::File, builtin: &str, slot: &str) -> Option<&'static ast::Expr> {
    file.items.iter().find_map(|item| match &item.kind {
        ast::ItemKind::Builtin(b) if b.name.name == builtin => b
            .params
            .iter()
            .chain(&b.fields)
            .find(|p| p.name.name == slot)
            .and_then(|p| p.default.as_ref()),
        _ => None,
    })
}

/// A record literal's field (a default such as `{ step = 30 s, task = 600 s }`).
fn default_field(d: &'static ast::Expr, name: &str) -> Option<&'static ast::Expr> {
    let ExprKind::Record(block) = &d.kind else { return None };
    block.items.iter().find_map(|i| match i {
        BlockItem::Field(f) => match f.path.segments.as_slice() {
            [PathSegment::Name(n)] if n.name == name => Some(&f.value),
            _ => None,
        },
        _ => None,
    })
}

fn record_field(ty: &Ty, name: &str) -> Option<Ty> {
    match ty {
        Ty::Record(fs) => fs.iter().find(|(n, _)| n == name).map(|(_, t)| t.clone()),
        Ty::Map(t) => Some((**t).clone()),
        Ty::OneOf(ts) => ts.iter().find_map(|t| record_field(t, name)),
        _ => None,
    }
}

fn list_elem(ty: &Ty) -> Option<Ty> {
    match ty {
        Ty::List(t) => Some((**t).clone()),
        Ty::OneOf(ts) => ts.iter().find_map(list_elem),
        _ => None,
    }
}

/// Follows an override path through the recipe's value of `decl`: the constructor of each
/// object on the way gives the slots; a name that is a graph module becomes `Seg::Module`.
fn along(
    tables: &Tables,
    recipe: Option<&Recipe>,
    decl: &str,
    segs: &[Seg],
    place: &mut Place,
) -> (St, Vec<Seg>) {
    let Some(d) = recipe.and_then(|r| r.decl(decl)) else { return (St::Lost, segs.to_vec()) };
    let mut val: Option<&Val> = Some(&d.value);
    let mut st = St::Ty { ty: Ty::Kind(d.kind.word().to_string()), default: None };
    let mut fixed = Vec::new();
    for seg in segs {
        let here = val.map(|v| deref(recipe, v));
        if let Some(Val { v: V::Obj(o), .. }) = here
            && let Some(b) = tables.builtin(&o.ctor)
        {
            st = St::Ctor(b);
        }
        let seg = match (seg, here.map(|v| &v.v)) {
            (Seg::Field(n), Some(V::Obj(o)))
                if !o.fields.contains_key(n) && o.modules.iter().any(|m| m.name == *n) =>
            {
                Seg::Module(n.clone())
            }
            _ => seg.clone(),
        };
        val = here.and_then(|v| value_at(v, std::slice::from_ref(&seg)));
        let step = match &seg {
            Seg::Field(n) => Step::Field(n.clone()),
            Seg::Index(i) => Step::Item(*i),
            Seg::Module(n) => Step::Module(n.clone()),
        };
        let mut none = None;
        st = apply(tables, st, &step, place, &mut none);
        fixed.push(seg);
    }
    if let Some(Val { v: V::Obj(o), .. }) = val.map(|v| deref(recipe, v))
        && let Some(b) = tables.builtin(&o.ctor)
        && matches!(st, St::Lost | St::Ty { ty: Ty::Kind(_), .. })
    {
        // The whole value is an object: what comes next are its slots.
        if segs.is_empty() {
            st = St::Ctor(b);
        }
    }
    (st, fixed)
}

/// A reference to a declaration is its declaration's value.
pub(crate) fn deref<'r>(recipe: Option<&'r Recipe>, v: &'r Val) -> &'r Val {
    let mut cur = v;
    for _ in 0..16 {
        match (&cur.v, recipe) {
            (V::Ref { decl, member: None, .. }, Some(r)) => match r.decl(decl) {
                Some(d) => cur = &d.value,
                None => return cur,
            },
            _ => return cur,
        }
    }
    cur
}

/// The value at a place's path in `recipe` (the recipe itself or a profile of it).
pub fn value<'r>(recipe: &'r Recipe, key: &str, path: &[Seg]) -> Option<&'r Val> {
    value_at(&recipe.decl(key)?.value, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::walk::{Node, find};

    fn analyse(src: &str) -> crate::analysis::Analysis {
        crate::analysis::Analysis::new("a.wrl", src, &wrl_check::MemLoader::default(), None)
    }

    const SRC: &str = "model policy = std::models::tiny\nenv web = browser {\n  target = std::sandbox::web\n  tools = std::tools::elements\n  timeout = { step = 10 s, task = 60 s }\n}\n";

    #[test]
    fn slots_and_record_fields() {
        let a = analyse(SRC);
        let file = a.file.as_ref().expect("parsed");
        let at = SRC.find("step =").unwrap_or(0);
        let (root, steps, node) = find(file, at).expect("node");
        let Node::Field { name, .. } = node else { panic!("{node:?}") };
        let p = describe(&a.tables, a.recipe.as_ref(), &root, &steps, Some(&name.name));
        assert_eq!(p.owner.as_ref().map(|o| o.qual.as_str()), Some("browser"));
        assert_eq!((p.slot.as_deref(), p.field.as_deref()), (Some("timeout"), Some("step")));
        assert_eq!(p.default.as_deref(), Some("30 s"));
        assert!(matches!(p.ty, Some(Ty::Qty { .. })));
        let (key, path) = p.path.expect("path");
        assert_eq!(key, "web");
        let recipe = a.recipe.as_ref().expect("recipe");
        assert_eq!(value(recipe, &key, &path).and_then(Val::as_f64), Some(10.0));
    }

    #[test]
    fn override_paths_walk_the_recipe() {
        let src = format!(
            "{SRC}profile p {{\n  web.timeout = {{ step = 5 s, task = 9 s, acquire = 1 s }}\n  web.concurrency = 2\n}}\n"
        );
        let a = analyse(&src);
        let file = a.file.as_ref().expect("parsed");
        let at = src.find("concurrency").unwrap_or(0);
        let (_, _, node) = find(file, at).expect("node");
        let Node::OverrideField { decl, field, path_len, .. } = node else { panic!("{node:?}") };
        assert_eq!(path_len, 1);
        let root = Root::Override { decl, path: vec![Seg::Field("concurrency".into())] };
        let _ = field;
        let p = describe(&a.tables, a.recipe.as_ref(), &root, &[], None);
        assert_eq!(p.slot.as_deref(), Some("concurrency"));
        assert_eq!(p.default.as_deref(), Some("8"));
        let at = src.find("step = 5").unwrap_or(0);
        let (root, steps, node) = find(file, at).expect("node");
        let Node::Field { name, .. } = node else { panic!("{node:?}") };
        let p = describe(&a.tables, a.recipe.as_ref(), &root, &steps, Some(&name.name));
        assert_eq!((p.slot.as_deref(), p.field.as_deref()), (Some("timeout"), Some("step")));
    }
}
