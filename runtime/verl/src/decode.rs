//! The plan's nodes decoded into their typed parameters, `unknown`s included. `wrlc run` refuses
//! an `unknown` the runtime needs; the lowering instead reports each one (E0602) and, with
//! `--allow-unmapped`, writes `???` at its verl key for the user to give at launch. To map the
//! rest of such a node, every `unknown` the type does not take is replaced by a placeholder of
//! the field's shape before decoding, and the set of `unknown` paths says which values are not
//! real. A node that still does not decode (an `unknown` deep inside a reward expression) is
//! kept with its error and accounted for from its raw parameters.

use std::collections::{BTreeMap, BTreeSet};

use wrl_plan::params::{self, Params, shape::Shape};
use wrl_plan::{Node, PVal, Plan};

/// Every node of a plan, decoded where it can be.
#[derive(Debug)]
pub struct Decoded<'p> {
    /// Nodes in plan order, with their parameters or why they did not decode.
    pub nodes: Vec<(&'p Node, Result<Params, String>)>,
    /// `(node id, path)` of every `unknown` value (`mini_batch`, `phases`, `expr`).
    pub unknown: BTreeSet<(String, String)>,
}

impl<'p> Decoded<'p> {
    pub fn new(plan: &'p Plan) -> Decoded<'p> {
        let mut unknown = BTreeSet::new();
        let mut nodes = Vec::new();
        for n in &plan.nodes {
            let shape = params::shape_of(n.kind, &n.ctor);
            for (k, v) in &n.params {
                // `unknown` in a field that takes it (an eval's `count`: every task) is a value.
                let optional = shape
                    .as_ref()
                    .and_then(|s| s.field(k))
                    .is_some_and(|s| matches!(s, Shape::Option(_)));
                if optional && matches!(v, PVal::Unknown) {
                    continue;
                }
                find_unknown(v, k, &mut |path| {
                    unknown.insert((n.id.clone(), path));
                });
            }
            let patched = match &shape {
                Some(s) => patch(n, s),
                None => n.clone(),
            };
            let decoded = params::decode(&patched).map_err(|e| e.to_string());
            nodes.push((n, decoded));
        }
        Decoded { nodes, unknown }
    }

    /// Whether `field` of `node` (or something inside it) is `unknown`.
    pub fn is_unknown(&self, node: &str, field: &str) -> bool {
        self.unknown.iter().any(|(n, p)| {
            n == node
                && (p == field
                    || p.starts_with(&format!("{field}."))
                    || p.starts_with(&format!("{field}[")))
        })
    }

    /// The unknown paths of `node` under `field`, for messages.
    pub fn unknown_under(&self, node: &str, field: &str) -> Vec<String> {
        self.unknown
            .iter()
            .filter(|(n, p)| {
                n == node
                    && (p == field
                        || p.starts_with(&format!("{field}."))
                        || p.starts_with(&format!("{field}[")))
            })
            .map(|(_, p)| p.clone())
            .collect()
    }

    /// The decoded parameters of node `id`.
    pub fn get(&self, id: &str) -> Option<&Params> {
        self.nodes.iter().find(|(n, _)| n.id == id).and_then(|(_, p)| p.as_ref().ok())
    }

    /// Node `id` itself.
    pub fn node(&self, id: &str) -> Option<&'p Node> {
        self.nodes.iter().find(|(n, _)| n.id == id).map(|(n, _)| *n)
    }
}

/// Calls `f` with the path of every `unknown` under `v`.
fn find_unknown(v: &PVal, path: &str, f: &mut dyn FnMut(String)) {
    match v {
        PVal::Unknown => f(path.to_string()),
        PVal::List { items } => {
            for (i, x) in items.iter().enumerate() {
                find_unknown(x, &format!("{path}[{i}]"), f);
            }
        }
        PVal::Record { fields } => {
            for (k, x) in fields {
                find_unknown(x, &format!("{path}.{k}"), f);
            }
        }
        PVal::Obj(o) => {
            for (k, x) in &o.fields {
                find_unknown(x, &format!("{path}.{k}"), f);
            }
        }
        PVal::Range { lo, hi } => {
            find_unknown(lo, &format!("{path}.lo"), f);
            find_unknown(hi, &format!("{path}.hi"), f);
        }
        PVal::Reward { expr } => {
            let mut objs = Vec::new();
            signals(expr, &mut objs);
            let shapes = params::shape::of::<params::Signal>();
            for o in objs {
                let shape = match &shapes {
                    Shape::Enum(vs) => vs.iter().find(|(c, _)| c == &o.ctor).map(|(_, s)| s),
                    _ => None,
                };
                // An answer match asks its judge model only in `mode: judge`.
                let judged = o
                    .fields
                    .get("mode")
                    .is_some_and(|m| matches!(m, PVal::Enum { value } if value == "judge"));
                for (k, x) in &o.fields {
                    let optional = shape
                        .and_then(|s| s.field(k))
                        .is_some_and(|s| matches!(s, Shape::Option(_)));
                    let needed = k == "judge_model" && judged;
                    if optional && !needed && matches!(x, PVal::Unknown) {
                        continue;
                    }
                    find_unknown(x, &format!("{path}.{}.{k}", short(&o.ctor)), f);
                }
            }
        }
        PVal::Num { .. }
        | PVal::Qty { .. }
        | PVal::Bool { .. }
        | PVal::Str { .. }
        | PVal::Enum { .. }
        | PVal::Dims { .. }
        | PVal::Ref { .. } => {}
    }
}

/// `std::rewards::webjudge` → `webjudge`.
fn short(ctor: &str) -> &str {
    ctor.rsplit("::").next().unwrap_or(ctor)
}

fn signals<'e>(e: &'e wrl_plan::PExpr, out: &mut Vec<&'e wrl_plan::PObj>) {
    use wrl_plan::Expr;
    match e {
        Expr::Signal { obj } => out.push(obj),
        Expr::Unary { arg, .. } => signals(arg, out),
        Expr::Binary { lhs, rhs, .. } => {
            signals(lhs, out);
            signals(rhs, out);
        }
        Expr::If { cond, then, otherwise } => {
            signals(cond, out);
            signals(then, out);
            signals(otherwise, out);
        }
        Expr::Const { .. } | Expr::Bool { .. } | Expr::Reward { .. } => {}
    }
}

/// `n` with each `unknown` its type does not take replaced by a placeholder of its shape.
fn patch(n: &Node, shape: &Shape) -> Node {
    let mut out = n.clone();
    for (k, v) in out.params.iter_mut() {
        if let Some(s) = shape.field(k) {
            patch_val(v, s);
        }
    }
    out
}

fn patch_val(v: &mut PVal, s: &Shape) {
    match (&mut *v, s) {
        (_, Shape::Option(_)) => {}
        (PVal::Unknown, s) => {
            if let Some(p) = placeholder(s) {
                *v = p;
            }
        }
        (PVal::Record { fields }, Shape::Struct(fs)) => {
            for (k, x) in fields.iter_mut() {
                if let Some((_, s)) = fs.iter().find(|(f, _)| f == k) {
                    patch_val(x, s);
                }
            }
        }
        (PVal::List { items }, Shape::List(s)) => {
            for x in items {
                patch_val(x, s);
            }
        }
        _ => {}
    }
}

/// A value of shape `s` that decodes (its content is never used: the path is `unknown`).
fn placeholder(s: &Shape) -> Option<PVal> {
    Some(match s {
        Shape::Bool => PVal::Bool { value: false },
        Shape::Int => PVal::Num { value: 1.0 },
        Shape::Float => PVal::Num { value: 0.0 },
        Shape::Str => PVal::Str { value: String::new() },
        Shape::Unit(u) => PVal::Qty { value: 1.0, unit: u.clone() },
        Shape::Batch => PVal::Qty { value: 1.0, unit: "samples".into() },
        Shape::List(_) => PVal::List { items: Vec::new() },
        Shape::Map(_) => PVal::Record { fields: BTreeMap::new() },
        Shape::Struct(fs) => {
            let names: Vec<&str> = fs.iter().map(|(f, _)| f.as_str()).collect();
            match names.as_slice() {
                ["lo", "hi"] => PVal::Range {
                    lo: Box::new(placeholder(&fs[0].1)?),
                    hi: Box::new(placeholder(&fs[1].1)?),
                },
                ["width", "height"] => PVal::Dims { width: 1.0, height: 1.0 },
                _ => PVal::Record {
                    fields: fs
                        .iter()
                        .map(|(f, s)| Some((f.clone(), placeholder(s)?)))
                        .collect::<Option<_>>()?,
                },
            }
        }
        Shape::Enum(variants) => {
            let (word, content) = variants.first()?;
            match content {
                Shape::Unit0 => PVal::Enum { value: word.clone() },
                Shape::Struct(fs) => PVal::Obj(wrl_plan::PObj {
                    ctor: word.clone(),
                    kind: String::new(),
                    fields: fs
                        .iter()
                        .map(|(f, s)| Some((f.clone(), placeholder(s)?)))
                        .collect::<Option<_>>()?,
                    meta: BTreeMap::new(),
                    modules: Vec::new(),
                    edges: Vec::new(),
                    tools: Vec::new(),
                }),
                _ => return None,
            }
        }
        Shape::Option(_) => PVal::Unknown,
        Shape::OrWord(word, _) => PVal::Enum { value: word.clone() },
        Shape::Qty | Shape::Ref | Shape::Expr | Shape::Word | Shape::OneOf | Shape::Unit0 => {
            return None;
        }
    })
}
