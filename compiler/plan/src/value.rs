//! Parameter values as the plan carries them: the checker's values with every reference to a
//! declaration turned into the id of the node that produces it, spans dropped, units in their
//! canonical form. This is the runtime's vocabulary, so it serialises both ways.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One parameter value. In JSON every value is an object tagged by `type`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PVal {
    /// A plain number.
    Num {
        value: f64,
    },
    /// A quantity in its canonical unit: `tokens`, `steps`, `turns`, `iters`, `epochs`,
    /// `samples`, `calls`, `images`, `px`, `s`, `B`, or `ratio` (a fraction, 10% = 0.1).
    Qty {
        value: f64,
        unit: String,
    },
    Bool {
        value: bool,
    },
    Str {
        value: String,
    },
    /// An enum value (`cosine`, `uniform_groups`).
    Enum {
        value: String,
    },
    List {
        items: Vec<PVal>,
    },
    Record {
        fields: BTreeMap<String, PVal>,
    },
    /// `lo .. hi` (a clip range).
    Range {
        lo: Box<PVal>,
        hi: Box<PVal>,
    },
    /// `W x H` (a viewport).
    Dims {
        width: f64,
        height: f64,
    },
    /// An inline object built by a stdlib constructor (a schedule, an observation, a site, a
    /// tool set, an agent module): its constructor, kind and every field with defaults filled.
    Obj(PObj),
    /// The output of another node of the plan (a model, dataset, env, agent or reward).
    Ref {
        node: String,
    },
    /// A reward expression, kept symbolic.
    Reward {
        expr: Box<PExpr>,
    },
    /// `unknown` in the recipe: the planner and the estimate accept it, `wrlc run` refuses it.
    Unknown,
}

/// An object made by a stdlib constructor.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PObj {
    /// The constructor's qualified name (`cosine`, `std::sandbox::web`).
    pub ctor: String,
    /// The kind it returns (`schedule`, `site`, `observation`, `tools`, `module`, `signal`).
    pub kind: String,
    pub fields: BTreeMap<String, PVal>,
    /// Metadata of the constructor's return type (a signal's `level`, `range`, `reads`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub meta: BTreeMap<String, PVal>,
    /// Agent-graph modules in source order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modules: Vec<PModule>,
    /// Agent-graph edges in source order (`start` and `end` are the graph's entry and exit).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub edges: Vec<PGraphEdge>,
    /// Tools of a tool set in source order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<PTool>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PModule {
    pub name: String,
    pub value: PVal,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PGraphEdge {
    pub from: String,
    pub to: String,
    /// Verdicts of `from` that take this edge; empty means always.
    #[serde(default)]
    pub when: Vec<String>,
    /// How many times the edge may be taken in one episode, if limited.
    #[serde(default)]
    pub limit: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PTool {
    pub name: String,
    pub params: Vec<PToolParam>,
    /// Calling this tool ends the episode.
    pub terminal: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PToolParam {
    pub name: String,
    /// The type as written in the stdlib (`list(float)`), for the schema shown to the model.
    pub ty: String,
    #[serde(default)]
    pub default: Option<PVal>,
}

/// A reward expression, generic over its signal leaves: the plan carries them as the
/// constructor's objects (`PExpr` = `Expr<PObj>`); the runtime decodes each once into its typed
/// signal (`wrl_plan::params::Signal`) and evaluates `Expr<Signal>` directly. `reward` leaves
/// name another reward node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Expr<S> {
    Const {
        value: f64,
    },
    Bool {
        value: bool,
    },
    Signal {
        obj: S,
    },
    Reward {
        node: String,
    },
    /// `neg: true` is `-x`, `neg: false` is `not x`.
    Unary {
        neg: bool,
        arg: Box<Expr<S>>,
    },
    Binary {
        bin: BinOp,
        lhs: Box<Expr<S>>,
        rhs: Box<Expr<S>>,
    },
    If {
        cond: Box<Expr<S>>,
        then: Box<Expr<S>>,
        otherwise: Box<Expr<S>>,
    },
}

/// A reward expression as the plan carries it: signals are constructor objects.
pub type PExpr = Expr<PObj>;

/// A binary operator of a reward expression; in JSON, its symbol (`+`, `and`, `<=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BinOp {
    #[serde(rename = "+")]
    Add,
    #[serde(rename = "-")]
    Sub,
    #[serde(rename = "*")]
    Mul,
    #[serde(rename = "/")]
    Div,
    #[serde(rename = "==")]
    Eq,
    #[serde(rename = "!=")]
    Ne,
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = ">=")]
    Ge,
    #[serde(rename = "and")]
    And,
    #[serde(rename = "or")]
    Or,
}

impl BinOp {
    /// The operator as the recipe writes it.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "and",
            BinOp::Or => "or",
        }
    }
}

impl std::fmt::Display for BinOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.symbol())
    }
}

impl PVal {
    /// The number inside a plain number or a quantity.
    pub fn num(&self) -> Option<f64> {
        match self {
            PVal::Num { value } | PVal::Qty { value, .. } => Some(*value),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            PVal::Str { value } | PVal::Enum { value } => Some(value),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            PVal::Bool { value } => Some(*value),
            _ => None,
        }
    }

    pub fn field(&self, name: &str) -> Option<&PVal> {
        match self {
            PVal::Obj(o) => o.fields.get(name),
            PVal::Record { fields } => fields.get(name),
            _ => None,
        }
    }

    pub fn is_unknown(&self) -> bool {
        matches!(self, PVal::Unknown)
    }
}

impl<S> Expr<S> {
    /// Every signal leaf, in expression order.
    pub fn signals(&self) -> Vec<&S> {
        let mut out = Vec::new();
        self.walk(&mut |e| {
            if let Expr::Signal { obj } = e {
                out.push(obj);
            }
        });
        out
    }

    /// Every reward node this expression names.
    pub fn reward_refs(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.walk(&mut |e| {
            if let Expr::Reward { node } = e {
                out.push(node.as_str());
            }
        });
        out
    }

    /// The same expression with every signal replaced by `f`'s result (the runtime's typed
    /// signals); the first error stops it.
    pub fn try_map<T, E>(&self, f: &mut impl FnMut(&S) -> Result<T, E>) -> Result<Expr<T>, E> {
        Ok(match self {
            Expr::Const { value } => Expr::Const { value: *value },
            Expr::Bool { value } => Expr::Bool { value: *value },
            Expr::Signal { obj } => Expr::Signal { obj: f(obj)? },
            Expr::Reward { node } => Expr::Reward { node: node.clone() },
            Expr::Unary { neg, arg } => Expr::Unary { neg: *neg, arg: Box::new(arg.try_map(f)?) },
            Expr::Binary { bin, lhs, rhs } => Expr::Binary {
                bin: *bin,
                lhs: Box::new(lhs.try_map(f)?),
                rhs: Box::new(rhs.try_map(f)?),
            },
            Expr::If { cond, then, otherwise } => Expr::If {
                cond: Box::new(cond.try_map(f)?),
                then: Box::new(then.try_map(f)?),
                otherwise: Box::new(otherwise.try_map(f)?),
            },
        })
    }

    fn walk<'a>(&'a self, f: &mut dyn FnMut(&'a Expr<S>)) {
        f(self);
        match self {
            Expr::Const { .. } | Expr::Bool { .. } | Expr::Signal { .. } => {}
            Expr::Reward { .. } => {}
            Expr::Unary { arg, .. } => arg.walk(f),
            Expr::Binary { lhs, rhs, .. } => {
                lhs.walk(f);
                rhs.walk(f);
            }
            Expr::If { cond, then, otherwise } => {
                cond.walk(f);
                then.walk(f);
                otherwise.walk(f);
            }
        }
    }
}
