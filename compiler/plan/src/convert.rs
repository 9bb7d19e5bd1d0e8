//! Turning the checker's values into plan values: references to declarations become node ids
//! (and edges), tool sets and params are inlined, reward expressions keep their shape.

use std::collections::BTreeMap;

use wrl_check::{Obj, SigExpr, V, Val};
use wrl_diagnostics::Span;
use wrl_syntax::ast::DeclKind;
use wrl_syntax::tokens::Dimension;

use crate::lower::Decls;
use crate::model::DataKind;
use crate::value::{PExpr, PGraphEdge, PModule, PObj, PTool, PToolParam, PVal};

/// An input found while converting: the node it comes from and where it enters.
#[derive(Clone, Debug)]
pub(crate) struct Input {
    pub from: String,
    pub port: String,
    pub data: DataKind,
    /// The declaration to lower so that `from` exists.
    pub decl: String,
    pub span: Span,
}

/// The unit word a canonical quantity is printed with.
pub fn unit_word(dim: Dimension) -> &'static str {
    match dim {
        Dimension::Ratio => "ratio",
        d => d.canonical_unit(),
    }
}

/// The id of the node that produces what a reference names, and the data it carries.
pub(crate) fn ref_target(decl: &str, kind: DeclKind) -> Option<(String, DataKind)> {
    match kind {
        DeclKind::Model => Some((format!("model:{decl}"), DataKind::Model)),
        DeclKind::Dataset => Some((format!("dataset:{decl}"), DataKind::Dataset)),
        DeclKind::Env => Some((format!("env:{decl}"), DataKind::Env)),
        DeclKind::Agent => Some((format!("agent:{decl}"), DataKind::Agent)),
        DeclKind::Reward => Some((format!("reward:{decl}"), DataKind::Reward)),
        DeclKind::Stage => Some((format!("checkpoint:{decl}"), DataKind::Checkpoint)),
        DeclKind::Tools | DeclKind::Param | DeclKind::Eval => None,
    }
}

/// Converts values for one node, collecting its inputs.
pub(crate) struct Converter<'a> {
    /// Declarations by name, to inline tool sets and params.
    pub decls: &'a Decls<'a>,
    pub inputs: Vec<Input>,
    /// Skip what cannot hold an input (metadata, tool schemas): see `Lowering::lean`.
    pub lean: bool,
}

impl<'a> Converter<'a> {
    pub fn new(decls: &'a Decls<'a>) -> Converter<'a> {
        Converter { decls, inputs: Vec::new(), lean: false }
    }

    pub fn val(&mut self, v: &Val, port: &str) -> PVal {
        self.val_depth(v, port, 0)
    }

    fn val_depth(&mut self, v: &Val, port: &str, depth: usize) -> PVal {
        match &v.v {
            V::Num { value } => PVal::Num { value: *value },
            V::Qty { value, dim } => PVal::Qty { value: *value, unit: unit_word(*dim).into() },
            V::Bool { value } => PVal::Bool { value: *value },
            V::Str { value } => PVal::Str { value: value.clone() },
            V::Symbol { name } | V::Enum { value: name } => PVal::Enum { value: name.clone() },
            V::List { items } => PVal::List {
                items: items
                    .iter()
                    .enumerate()
                    .map(|(i, x)| self.val_depth(x, &format!("{port}[{i}]"), depth))
                    .collect(),
            },
            V::Record { fields } => PVal::Record {
                fields: fields
                    .iter()
                    .map(|(k, x)| (k.clone(), self.val_depth(x, &join(port, k), depth)))
                    .collect(),
            },
            V::Range { lo, hi } => PVal::Range {
                lo: Box::new(self.val_depth(lo, port, depth)),
                hi: Box::new(self.val_depth(hi, port, depth)),
            },
            V::Dims { width, height } => PVal::Dims { width: *width, height: *height },
            V::Obj(o) => {
                if o.kind == "signal" || o.kind == "condition" {
                    PVal::Reward { expr: Box::new(PExpr::Signal { obj: self.obj(o, port, depth) }) }
                } else {
                    PVal::Obj(self.obj(o, port, depth))
                }
            }
            V::Ref { decl, kind, member: _ } => match ref_target(decl, *kind) {
                Some((node, data)) => {
                    self.inputs.push(Input {
                        from: node.clone(),
                        port: port.to_string(),
                        data,
                        decl: decl.clone(),
                        span: v.span,
                    });
                    PVal::Ref { node }
                }
                // Tool sets and params are configuration: inlined where they are used.
                None => match self.decls.get(decl.as_str()) {
                    Some(inner) if depth < 16 => self.val_depth(&inner.value, port, depth + 1),
                    _ => PVal::Unknown,
                },
            },
            V::Signal { expr } => PVal::Reward { expr: Box::new(self.expr(expr, port, depth)) },
            V::Unknown => PVal::Unknown,
        }
    }

    pub fn obj(&mut self, o: &Obj, port: &str, depth: usize) -> PObj {
        let fields = o
            .fields
            .iter()
            .map(|(k, x)| (k.clone(), self.val_depth(x, &join(port, k), depth)))
            .collect();
        // Metadata and tool schemas are converted without declarations: they hold no inputs.
        let meta = if self.lean {
            BTreeMap::new()
        } else {
            o.meta.iter().map(|(k, x)| (k.clone(), plain(x))).collect()
        };
        let modules = o
            .modules
            .iter()
            .map(|m| PModule {
                name: m.name.clone(),
                value: self.val_depth(&m.value, &join(&join(port, "modules"), &m.name), depth),
            })
            .collect();
        let edges = o
            .edges
            .iter()
            .map(|e| PGraphEdge {
                from: e.from.clone(),
                to: e.to.clone(),
                when: e.when.clone(),
                limit: e.limit.as_ref().and_then(Val::as_f64),
            })
            .collect();
        let tools = if self.lean { &[][..] } else { &o.tools[..] };
        let tools = tools
            .iter()
            .map(|t| PTool {
                name: t.name.clone(),
                params: t
                    .params
                    .iter()
                    .map(|p| PToolParam {
                        name: p.name.clone(),
                        ty: p.ty.trim().to_string(),
                        default: p.default.as_ref().map(plain),
                    })
                    .collect(),
                terminal: t.terminal,
            })
            .collect();
        PObj { ctor: o.ctor.clone(), kind: o.kind.clone(), fields, meta, modules, edges, tools }
    }

    pub fn expr(&mut self, e: &SigExpr, port: &str, depth: usize) -> PExpr {
        match e {
            SigExpr::Const { value } => PExpr::Const { value: *value },
            SigExpr::Bool { value } => PExpr::Bool { value: *value },
            SigExpr::Signal { obj } => PExpr::Signal { obj: self.obj(obj, port, depth) },
            SigExpr::Reward { name } => {
                let node = format!("reward:{name}");
                self.inputs.push(Input {
                    from: node.clone(),
                    port: port.to_string(),
                    data: DataKind::Reward,
                    decl: name.clone(),
                    span: Span::default(),
                });
                PExpr::Reward { node }
            }
            SigExpr::Unary { neg, arg } => {
                PExpr::Unary { neg: *neg, arg: Box::new(self.expr(arg, port, depth)) }
            }
            SigExpr::Binary { bin, lhs, rhs } => PExpr::Binary {
                bin: bin.clone(),
                lhs: Box::new(self.expr(lhs, port, depth)),
                rhs: Box::new(self.expr(rhs, port, depth)),
            },
            SigExpr::If { cond, then, otherwise } => PExpr::If {
                cond: Box::new(self.expr(cond, port, depth)),
                then: Box::new(self.expr(then, port, depth)),
                otherwise: Box::new(self.expr(otherwise, port, depth)),
            },
        }
    }
}

/// A value with no references (metadata, tool defaults).
fn plain(v: &Val) -> PVal {
    let empty = BTreeMap::new();
    let mut c = Converter::new(&empty);
    c.val(v, "")
}

fn join(port: &str, field: &str) -> String {
    if port.is_empty() { field.to_string() } else { format!("{port}.{field}") }
}
