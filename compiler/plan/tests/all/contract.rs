//! The contract between the stdlib and the runtime's types: every constructor the runtime runs
//! has a type in `wrl_plan::params` whose fields are exactly the stdlib signature's (plus the
//! few the planner adds), with the same enum words, the same units, and `Option` exactly where
//! the stdlib allows `unknown`. Adding a field, a word or a constructor to the stdlib without
//! its type here fails this test, not a run.

// Helpers here panic on purpose: a panic is a failed test.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;

use wrl_check::{STDLIB_MODULES, Ty, parse_type};
use wrl_diagnostics::SourceMap;
use wrl_plan::NodeKind;
use wrl_plan::params::{all_shapes, shape::Shape};
use wrl_syntax::ast::{Builtin, ItemKind};

/// Every `builtin` of the stdlib, by qualified name (`grpo`, `std::sandbox::tasks`).
fn builtins() -> Vec<(String, Builtin)> {
    let mut sources = SourceMap::new();
    let mut out = Vec::new();
    for (path, file, text) in STDLIB_MODULES {
        let parsed = wrl_syntax::parse(sources.add(*file, *text), text);
        for item in &parsed.file.items {
            if let ItemKind::Builtin(b) = &item.kind {
                let name = if *path == "std::prelude" {
                    b.name.name.to_string()
                } else {
                    format!("{path}::{}", b.name.name)
                };
                out.push((name, b.clone()));
            }
        }
    }
    out
}

/// An enum's variants and their content.
type Variants = [(String, Shape)];

/// Fields the planner adds to a node of `kind`, and stdlib fields it moves elsewhere.
fn planner_fields(
    kind: NodeKind,
    ctor: &str,
) -> (&'static [&'static str], &'static [&'static str]) {
    match kind {
        // A graph's body: its modules and edges.
        NodeKind::Agent if ctor == "graph" => (&["modules", "graph"], &[]),
        NodeKind::Sft => (&["stage"], &[]),
        NodeKind::RlPhase => (
            &["stage", "phase", "phases", "resume", "binds", "iters", "epochs", "horizon"],
            &["phases"],
        ),
        NodeKind::Eval => (&["checkpoint", "binds"], &[]),
        NodeKind::LoadModel
        | NodeKind::LoadDataset
        | NodeKind::Env
        | NodeKind::Agent
        | NodeKind::Reward
        | NodeKind::Checkpoint => (&[], &[]),
    }
}

/// Whether `shape` can hold a value of stdlib type `ty`; why not, if it cannot.
fn agrees(ty: &Ty, shape: &Shape) -> Result<(), String> {
    let unit = |u: &str| match shape {
        Shape::Unit(s) if s == u => Ok(()),
        other => Err(format!("a quantity in {u}, but the type is {other:?}")),
    };
    match (ty, shape) {
        (Ty::Any, _) => Ok(()),
        (Ty::Int { .. }, Shape::Int) => Ok(()),
        (Ty::Float { .. }, Shape::Float) => Ok(()),
        (Ty::Bool, Shape::Bool) => Ok(()),
        (Ty::Str | Ty::Path, Shape::Str) => Ok(()),
        (Ty::Qty { dim, .. }, _) => unit(wrl_plan::unit_word(*dim)),
        (Ty::Enum(words), Shape::Enum(variants)) => {
            let want: BTreeSet<&str> = words.iter().map(String::as_str).collect();
            let have: BTreeSet<&str> = variants.iter().map(|(v, _)| v.as_str()).collect();
            if want == have {
                Ok(())
            } else {
                Err(format!("the words {want:?}, but the type knows {have:?}"))
            }
        }
        (Ty::List(t), Shape::List(s)) => agrees(t, s).map_err(|e| format!("items: {e}")),
        (Ty::Map(t), Shape::Map(s)) => agrees(t, s).map_err(|e| format!("values: {e}")),
        (Ty::Record(fields), Shape::Struct(have)) => {
            let want: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
            let names: Vec<&str> = have.iter().map(|(n, _)| n.as_str()).collect();
            if want.iter().collect::<BTreeSet<_>>() != names.iter().collect::<BTreeSet<_>>() {
                return Err(format!("the fields {want:?}, but the type has {names:?}"));
            }
            for (n, t) in fields {
                let s = have.iter().find(|(h, _)| h == n).map(|(_, s)| s).unwrap();
                agrees(t, s).map_err(|e| format!("`{n}`: {e}"))?;
            }
            Ok(())
        }
        (Ty::Range(t), Shape::Struct(have)) => match (have.first(), have.get(1)) {
            (Some((lo, s)), Some((hi, _))) if lo == "lo" && hi == "hi" => agrees(t, s),
            _ => Err(format!("a range, but the type is {shape:?}")),
        },
        (Ty::Dims, Shape::Struct(have)) if have.len() == 2 => Ok(()),
        // Phases as a rule: the checker lays a curriculum out as the list it stands for.
        (Ty::OneOf(alts), s) if alts.contains(&Ty::Kind("curriculum".into())) => {
            match alts.iter().filter(|t| **t != Ty::Kind("curriculum".into())).collect::<Vec<_>>()[..]
            {
                [one] => agrees(one, s),
                _ => Err(format!("a curriculum or one of {alts:?}, but the type is {s:?}")),
            }
        }
        (Ty::OneOf(alts), Shape::Option(inner)) if alts.contains(&Ty::UnknownLit) => {
            let rest: Vec<&Ty> = alts.iter().filter(|t| **t != Ty::UnknownLit).collect();
            match rest.as_slice() {
                [one] => agrees(one, inner),
                _ => match **inner {
                    Shape::OneOf => Ok(()),
                    ref other => Err(format!("one of {rest:?}, but the type is {other:?}")),
                },
            }
        }
        // `one_of(T, enum(word))`: a value of T, or the word.
        (Ty::OneOf(alts), Shape::OrWord(word, inner)) => {
            let is_word = |t: &Ty| matches!(t, Ty::Enum(w) if w.len() == 1 && &w[0] == word);
            match alts.as_slice() {
                [t, w] | [w, t] if is_word(w) && !is_word(t) => agrees(t, inner),
                _ => Err(format!("one of {alts:?}, but the type is `{word}` or {inner:?}")),
            }
        }
        // A batch size: counts in the units a mini-batch can be given in.
        (Ty::OneOf(alts), Shape::Batch) => {
            let units = ["samples", "prompts", "trajectories", "turns"];
            let counts = alts.iter().all(
                |t| matches!(t, Ty::Qty { dim, .. } if units.contains(&wrl_plan::unit_word(*dim))),
            );
            if counts { Ok(()) } else { Err(format!("a batch size, but the type is {alts:?}")) }
        }
        // `one_of(enum(words…), kind)`: one enum, the words as unit variants and the kind's
        // constructors beside them (checked constructor by constructor below).
        (Ty::OneOf(alts), Shape::Enum(variants))
            if matches!(alts.as_slice(), [Ty::Enum(_), Ty::Kind(_)]) =>
        {
            let Ty::Enum(words) = &alts[0] else { unreachable!() };
            let units: Vec<&String> = variants
                .iter()
                .filter(|(_, c)| matches!(c, Shape::Unit0))
                .map(|(n, _)| n)
                .collect();
            if words.iter().all(|w| units.contains(&w)) {
                Ok(())
            } else {
                Err(format!("one of {alts:?}, but the type's words are {units:?}"))
            }
        }
        (Ty::OneOf(alts), s) if !alts.contains(&Ty::UnknownLit) => match s {
            Shape::OneOf => Ok(()),
            other => Err(format!("one of {alts:?}, but the type is {other:?}")),
        },
        (Ty::OneOf(_), other) => {
            Err(format!("`unknown` is allowed here, but the type is {other:?}, not an Option"))
        }
        // Declarations and their outputs arrive as references; a reward as a reference or an
        // expression written in place.
        (Ty::Kind(k), Shape::Ref)
            if ["model", "dataset", "env", "agent", "stage"].contains(&k.as_str()) =>
        {
            Ok(())
        }
        (Ty::Kind(k), Shape::OneOf) if k == "reward" || k == "checkpoint" => Ok(()),
        (Ty::Kind(k), Shape::Ref) if k == "checkpoint" => Ok(()),
        // Objects of the stdlib: a tool set is one struct; sites, observations, schedules and
        // modules are enums of their constructors (checked constructor by constructor below).
        (Ty::Kind(k), Shape::Struct(_)) if k == "tools" => Ok(()),
        (Ty::Kind(k), Shape::Enum(_))
            if [
                "site",
                "observation",
                "schedule",
                "module",
                "validation",
                "advantage",
                "critic",
                "replay",
                "generation",
                "branching",
                "lora",
                "mcp_server",
            ]
            .contains(&k.as_str()) =>
        {
            Ok(())
        }
        (ty, s) => Err(format!("{ty:?}, but the type is {s:?}")),
    }
}

fn ty_of(b: &Builtin, name: &str) -> Ty {
    let p = b.params.iter().chain(&b.fields).find(|p| p.name.name == name).unwrap();
    parse_type(&p.ty).unwrap_or_else(|d| panic!("{d:?}"))
}

#[test]
fn every_constructor_type_matches_its_stdlib_signature() {
    let builtins = builtins();
    let mut problems = Vec::new();
    for (kind, ctor, shape) in all_shapes() {
        let (added, moved) = planner_fields(kind, ctor);
        let Some((_, b)) = builtins.iter().find(|(n, _)| n == ctor) else {
            // Nodes the planner makes itself.
            assert!(["reward", "checkpoint"].contains(&ctor), "no `builtin {ctor}` in the stdlib");
            continue;
        };
        let stdlib: BTreeSet<String> = b
            .params
            .iter()
            .chain(&b.fields)
            .map(|p| p.name.name.to_string())
            .filter(|n| !moved.contains(&n.as_str()))
            .chain(added.iter().map(|s| s.to_string()))
            .collect();
        let mut stdlib = stdlib;
        if kind == NodeKind::Eval {
            stdlib.remove("after");
            stdlib.insert("after".into());
        }
        let have: BTreeSet<String> = shape.fields().iter().map(|(n, _)| n.clone()).collect();
        for f in stdlib.difference(&have) {
            problems
                .push(format!("`{ctor}` declares `{f}` in the stdlib; its type has no such field"));
        }
        for f in have.difference(&stdlib) {
            problems
                .push(format!("the type of `{ctor}` has `{f}`, which the stdlib does not declare"));
        }
        for (name, s) in shape.fields() {
            if added.contains(&name.as_str()) || !stdlib.contains(name) {
                continue;
            }
            if kind == NodeKind::Eval && name == "after" {
                continue;
            }
            let mut ty = ty_of(b, name);
            // Each run of an eval keeps the published figures of its own `after`, without it.
            if kind == NodeKind::Eval
                && name == "published"
                && let Ty::List(item) = &mut ty
                && let Ty::Record(fields) = &mut **item
            {
                fields.retain(|(n, _)| n != "after");
            }
            if let Err(e) = agrees(&ty, s) {
                problems.push(format!("`{ctor}`.`{name}`: the stdlib says {e}"));
            }
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

/// Objects inside parameters (sites, observations, schedules, modules, signals): each enum
/// variant of the type is a stdlib constructor with the same fields.
#[test]
fn every_object_constructor_matches_its_stdlib_signature() {
    let builtins = builtins();
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    // The words of `one_of(enum(words…), kind)` slots sit beside the kind's constructors in one
    // enum (a model's `device`: `auto`, `cpu`, `cuda(N)`); `agrees` checks them.
    let mut words = BTreeSet::new();
    for (_, b) in &builtins {
        for p in b.params.iter().chain(&b.fields) {
            if let Ok(Ty::OneOf(alts)) = parse_type(&p.ty)
                && let [Ty::Enum(ws), Ty::Kind(_)] = alts.as_slice()
            {
                words.extend(ws.iter().cloned());
            }
        }
    }
    let mut check_enum = |variants: &Variants, problems: &mut Vec<String>| {
        for (ctor, content) in variants {
            if !seen.insert(ctor.clone()) {
                continue;
            }
            if matches!(content, Shape::Unit0) && words.contains(ctor) {
                continue;
            }
            let Some((_, b)) = builtins.iter().find(|(n, _)| n == ctor) else {
                problems.push(format!("the type knows `{ctor}`, which the stdlib does not"));
                continue;
            };
            let want: BTreeSet<String> =
                b.params.iter().chain(&b.fields).map(|p| p.name.name.to_string()).collect();
            let have: BTreeSet<String> = match content {
                Shape::Struct(f) => f.iter().map(|(n, _)| n.clone()).collect(),
                Shape::Unit0 => BTreeSet::new(),
                other => {
                    problems.push(format!("`{ctor}` is {other:?}"));
                    continue;
                }
            };
            if want != have {
                problems.push(format!("`{ctor}`: the stdlib has {want:?}, the type {have:?}"));
                continue;
            }
            for (name, s) in content.fields() {
                if let Err(e) = agrees(&ty_of(b, name), s) {
                    problems.push(format!("`{ctor}`.`{name}`: the stdlib says {e}"));
                }
            }
        }
    };
    /// Calls `f` on every enum of constructors in `s` (an enum of words has no content).
    fn walk(s: &Shape, f: &mut dyn FnMut(&Variants)) {
        match s {
            Shape::Enum(v) => {
                if v.iter().any(|(_, c)| !matches!(c, Shape::Unit0)) {
                    f(v);
                }
                v.iter().for_each(|(_, c)| walk(c, f));
            }
            Shape::Option(i) | Shape::List(i) | Shape::Map(i) | Shape::OrWord(_, i) => walk(i, f),
            Shape::Struct(fields) => fields.iter().for_each(|(_, c)| walk(c, f)),
            _ => {}
        }
    }
    for (_, _, shape) in all_shapes() {
        walk(&shape, &mut |v| check_enum(v, &mut problems));
    }
    walk(&wrl_plan::params::shape::of::<wrl_plan::params::Signal>(), &mut |v| {
        check_enum(v, &mut problems)
    });
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
    for ctor in [
        "std::sandbox::web",
        "cosine",
        "screenshot",
        "policy_of",
        "std::rewards::judge",
        "validation",
        "gae",
        "critic",
        "replay",
        "from_failures",
        "lora",
        "std::rewards::eval_types",
        "cuda",
        "tags",
        "mcp",
        "mcp_stdio",
    ] {
        assert!(seen.contains(ctor), "`{ctor}` was not checked");
    }
}

/// Every signal of `std::rewards` has its variant.
#[test]
fn every_signal_has_a_variant() {
    let shape = wrl_plan::params::shape::of::<wrl_plan::params::Signal>();
    let words: BTreeSet<&str> = shape.words().into_iter().collect();
    let signals: Vec<String> = builtins()
        .into_iter()
        .filter(|(n, b)| {
            n.starts_with("std::rewards::")
                && matches!(
                    &b.returns.kind,
                    wrl_syntax::ast::ExprKind::Call { .. } | wrl_syntax::ast::ExprKind::Path(_)
                )
        })
        .map(|(n, _)| n)
        .collect();
    assert!(signals.len() >= 13, "{signals:?}");
    for s in &signals {
        assert!(words.contains(s.as_str()), "the stdlib signal `{s}` has no `Signal` variant");
    }
}
