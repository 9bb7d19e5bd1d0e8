//! The checked model's values: what a declaration means after names are resolved, defaults
//! filled and units normalised. The planner and the runtime's inputs are built from these.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use wrl_diagnostics::Span;
use wrl_syntax::ast::DeclKind;
use wrl_syntax::tokens::Dimension;

use crate::fields::Fields;
use crate::name::Name;

/// A value with the place it came from (a default's place is in the stdlib).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Val {
    pub v: V,
    #[serde(skip)]
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum V {
    /// A plain number (`3`, `1e-5`).
    Num {
        value: f64,
    },
    /// A quantity in canonical units (`15 steps`; `45 s`; `10%` is `ratio` 0.1).
    Qty {
        value: f64,
        dim: Dimension,
    },
    Bool {
        value: bool,
    },
    Str {
        value: String,
    },
    /// A name that was not resolved yet: an enum value, a verdict, a graph node.
    Symbol {
        name: String,
    },
    /// A resolved enum value.
    Enum {
        value: String,
    },
    List {
        items: Vec<Val>,
    },
    Record {
        fields: BTreeMap<String, Val>,
    },
    Range {
        lo: Box<Val>,
        hi: Box<Val>,
    },
    Dims {
        width: f64,
        height: f64,
    },
    /// A value built by a stdlib constructor: shared, as objects are copied into every recipe,
    /// profile and default that holds them (changed copy-on-write by overrides).
    Obj(Arc<Obj>),
    /// A reference to a declaration, or to one of its outputs (`warmup.model`). The
    /// declaration's key is shared with it (a reference copies no name).
    Ref {
        decl: Name,
        kind: DeclKind,
        member: Option<String>,
    },
    /// A reward expression over signals, kept symbolic for the runtime.
    Signal {
        expr: Box<SigExpr>,
    },
    /// `unknown`: accepted by the checker, refused by `wrlc run`.
    Unknown,
}

/// An object made by a builtin: its constructor, the kind it is, and every field with
/// defaults filled in. Positional and named arguments and block fields are merged; defaults
/// are the builtin's, shared (see [`Fields`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Obj {
    /// The builtin's qualified name (`grpo`, `std::sandbox::tasks`).
    pub ctor: Name,
    /// The kind it returns (`stage`, `dataset`, `signal`, …).
    pub kind: Name,
    pub fields: Fields,
    /// Metadata from the return type (`signal(level: outcome, range: 0 .. 1, reads: [..])`),
    /// the same for every object of a constructor, so shared.
    pub meta: Arc<BTreeMap<String, Val>>,
    /// Agent-graph modules, in source order.
    pub modules: Vec<ModuleV>,
    /// Agent-graph edges, in source order (chains are split into single edges).
    pub edges: Vec<EdgeV>,
    /// Tools of a tool set, in source order.
    pub tools: Vec<ToolV>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModuleV {
    pub name: String,
    pub value: Val,
    #[serde(skip)]
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EdgeV {
    pub from: String,
    pub to: String,
    /// Verdicts of `from` that take this edge; empty means always.
    pub when: Vec<String>,
    pub limit: Option<Val>,
    #[serde(skip)]
    pub span: Span,
    #[serde(skip)]
    pub from_span: Span,
    #[serde(skip)]
    pub to_span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolV {
    pub name: String,
    pub params: Vec<ToolParamV>,
    pub terminal: bool,
    #[serde(skip)]
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolParamV {
    pub name: String,
    /// The type as written (`list(float)`), for tool schemas shown to models.
    pub ty: String,
    pub default: Option<Val>,
}

/// A reward expression.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum SigExpr {
    Const {
        value: f64,
    },
    Bool {
        value: bool,
    },
    /// A stdlib signal (`judge(…)`, `format_ok`).
    Signal {
        obj: Arc<Obj>,
    },
    /// Another `reward` declaration.
    Reward {
        name: String,
    },
    Unary {
        neg: bool,
        arg: Box<SigExpr>,
    },
    Binary {
        bin: wrl_syntax::ast::BinaryOp,
        lhs: Box<SigExpr>,
        rhs: Box<SigExpr>,
    },
    If {
        cond: Box<SigExpr>,
        then: Box<SigExpr>,
        otherwise: Box<SigExpr>,
    },
}

impl Val {
    pub fn new(v: V, span: Span) -> Val {
        Val { v, span }
    }

    /// A short description for messages: "a number", "a string", "a stage", …
    pub fn describe(&self) -> String {
        match &self.v {
            V::Num { .. } => "a number".into(),
            V::Qty { dim, .. } => format!("a quantity in {}", dim.describe()),
            V::Bool { .. } => "a boolean".into(),
            V::Str { .. } => "a string".into(),
            V::Symbol { name } => format!("the name `{name}`"),
            V::Enum { value } => format!("`{value}`"),
            V::List { .. } => "a list".into(),
            V::Record { .. } => "a record".into(),
            V::Range { .. } => "a range".into(),
            V::Dims { .. } => "a size".into(),
            V::Obj(o) => article(&o.kind),
            V::Ref { kind, member: None, .. } => article(kind.word()),
            V::Ref { member: Some(m), .. } => format!("the output `{m}` of a stage"),
            V::Signal { .. } => "a reward expression".into(),
            V::Unknown => "`unknown`".into(),
        }
    }

    /// The values directly inside this one: fields, list items, range bounds, graph modules.
    /// Reward expressions are not looked into (their signals are walked by `SigExpr`).
    pub fn children(&self) -> Vec<&Val> {
        let mut out = Vec::new();
        self.each_child(|c| out.push(c));
        out
    }

    /// Calls `f` on each of [`Val::children`], in the same order, without collecting them.
    pub fn each_child<'a>(&'a self, mut f: impl FnMut(&'a Val)) {
        match &self.v {
            V::Obj(o) => {
                o.fields.values().for_each(&mut f);
                o.modules.iter().for_each(|m| f(&m.value));
            }
            V::List { items } => items.iter().for_each(f),
            V::Record { fields } => fields.values().for_each(f),
            V::Range { lo, hi } => {
                f(lo);
                f(hi);
            }
            V::Num { .. }
            | V::Qty { .. }
            | V::Bool { .. }
            | V::Str { .. }
            | V::Symbol { .. }
            | V::Enum { .. }
            | V::Dims { .. }
            | V::Ref { .. }
            | V::Signal { .. }
            | V::Unknown => {}
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match &self.v {
            V::Num { value } | V::Qty { value, .. } => Some(*value),
            _ => None,
        }
    }

    pub fn field(&self, name: &str) -> Option<&Val> {
        match &self.v {
            V::Obj(o) => o.fields.get(name),
            V::Record { fields } => fields.get(name),
            _ => None,
        }
    }
}

/// "a model", "an env".
pub fn article(word: &str) -> String {
    let an = word.starts_with(['a', 'e', 'i', 'o', 'u']);
    format!("{} {word}", if an { "an" } else { "a" })
}
