//! The owned, typed syntax tree of one `.wrl` file. Every node carries a byte span and the
//! node's kind is kept apart from it. Pest types never appear here: the checker, planner,
//! formatter and editors see only these types.

use serde::Serialize;
use wrl_diagnostics::{FileId, Span};

use crate::tokens::UnitDef;

/// A parsed file: its items in source order.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct File {
    pub id: FileId,
    pub items: Vec<Item>,
}

/// A name as written, with its place.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Item {
    pub kind: ItemKind,
    /// The `///` lines right above the item, without the slashes.
    pub doc: Option<String>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum ItemKind {
    Use(Use),
    Extends(Extends),
    Profile(Profile),
    Builtin(Builtin),
    Decl(Decl),
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Use {
    /// `use std::tools::browser` (group `None`) or `use std::rewards::{format_ok, judge}`.
    Path { segments: Vec<Ident>, group: Option<Vec<Ident>> },
    /// `use "common.wrl"` or `use "common.wrl" as common`.
    File { path: StrLit, alias: Option<Ident> },
}

/// A string literal with escapes resolved.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StrLit {
    pub value: String,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Extends {
    pub path: StrLit,
    pub overrides: Option<Block>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Profile {
    /// `profile` or `variant`.
    pub kind: ProfileKind,
    pub name: Ident,
    pub overrides: Block,
}

/// What a named set of overrides is: a `profile` (chosen with `--profile`, one at a time) or a
/// `variant` (run beside the recipe in a study, with the same seeds).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfileKind {
    Profile,
    Variant,
}

impl ProfileKind {
    /// The keyword that declares it.
    pub fn word(self) -> &'static str {
        match self {
            ProfileKind::Profile => "profile",
            ProfileKind::Variant => "variant",
        }
    }
}

/// A typed signature of a stdlib constructor.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Builtin {
    pub name: Ident,
    pub params: Vec<Param>,
    /// The kind it returns (`stage`, `dataset(tasks)`), as a path with optional arguments.
    pub returns: Expr,
    /// The typed fields its configuration block accepts.
    pub fields: Vec<Param>,
}

/// `name: type = default` in a builtin or tool signature.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Param {
    pub name: Ident,
    pub ty: Expr,
    pub default: Option<Expr>,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DeclKind {
    Model,
    Dataset,
    Env,
    Tools,
    Agent,
    Reward,
    Stage,
    Eval,
    Param,
    /// An effect the recipe states over its evaluations (`claim x = std::claims::gain(…)`).
    Claim,
}

impl DeclKind {
    pub fn from_word(word: &str) -> Option<DeclKind> {
        Some(match word {
            "model" => DeclKind::Model,
            "dataset" => DeclKind::Dataset,
            "env" => DeclKind::Env,
            "tools" => DeclKind::Tools,
            "agent" => DeclKind::Agent,
            "reward" => DeclKind::Reward,
            "stage" => DeclKind::Stage,
            "eval" => DeclKind::Eval,
            "param" => DeclKind::Param,
            "claim" => DeclKind::Claim,
            _ => return None,
        })
    }

    pub fn word(self) -> &'static str {
        match self {
            DeclKind::Model => "model",
            DeclKind::Dataset => "dataset",
            DeclKind::Env => "env",
            DeclKind::Tools => "tools",
            DeclKind::Agent => "agent",
            DeclKind::Reward => "reward",
            DeclKind::Stage => "stage",
            DeclKind::Eval => "eval",
            DeclKind::Param => "param",
            DeclKind::Claim => "claim",
        }
    }
}

/// `stage online = grpo(…) { … }`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Decl {
    pub kind: DeclKind,
    pub kind_span: Span,
    pub name: Ident,
    pub value: Expr,
}

/// `{ … }`: the items of a configuration block, a record, a profile or an override.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Block {
    pub items: Vec<BlockItem>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum BlockItem {
    Field(Field),
    /// A bare name: `trainable` means `trainable = true`.
    Flag(Ident),
    Module(Module),
    Edge(Edge),
    Tool(Tool),
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Field {
    pub path: FieldPath,
    pub value: Expr,
    pub span: Span,
}

/// `web.target`, `online.phases[1].lr`: one name in a block, a dotted path in overrides.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FieldPath {
    pub segments: Vec<PathSegment>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum PathSegment {
    Name(Ident),
    Index { index: u32, span: Span },
}

/// `module planner = llm(frontier) { … }` in an agent graph.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Module {
    pub name: Ident,
    pub value: Expr,
    pub span: Span,
}

/// `a -> b -> c when v1 | v2 limit 3`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Edge {
    pub nodes: Vec<Ident>,
    /// Verdicts of the first node that take this edge; empty means always.
    pub guard: Vec<Ident>,
    /// How many times the edge may be taken in one episode.
    pub limit: Option<Expr>,
    pub span: Span,
}

/// `tool click(point: point, clicks: int = 1) { terminal }` in a tool set.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Tool {
    pub name: Ident,
    pub params: Vec<Param>,
    pub body: Option<Block>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

/// A numeric literal with its magnitude (`32k`) applied.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Number {
    pub value: f64,
    /// Written without a fraction or exponent (a magnitude keeps it an integer).
    pub is_int: bool,
    /// The literal as written (kept for the formatter).
    pub text: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum UnaryOp {
    Neg,
    Not,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum BinaryOp {
    Or,
    And,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Add,
    Sub,
    Mul,
    Div,
}

impl BinaryOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Or => "or",
            BinaryOp::And => "and",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
        }
    }

    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge
        )
    }
}

/// A call argument; named arguments follow positional ones.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Arg {
    pub name: Option<Ident>,
    pub value: Expr,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum ExprKind {
    Number(Number),
    /// `15 steps`: the number as written and its unit.
    Quantity {
        value: Number,
        unit: &'static UnitDef,
        unit_span: Span,
    },
    /// `1280 x 1000`.
    Dims(Number, Number),
    Str(String),
    /// A `"""` text block, verbatim.
    Text(String),
    Bool(bool),
    /// `unknown`: a value the sources do not give; checks accept it, `wrlc run` refuses it.
    Unknown,
    /// `policy`, `std::models::tiny`.
    Path(Vec<Ident>),
    List(Vec<Expr>),
    /// `{ a = 1, b = 2 }`.
    Record(Block),
    Paren(Box<Expr>),
    Unary {
        op: UnaryOp,
        op_span: Span,
        operand: Box<Expr>,
    },
    Binary {
        op: BinaryOp,
        op_span: Span,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// `0.2 .. 0.28`.
    Range {
        lo: Box<Expr>,
        hi: Box<Expr>,
    },
    If {
        cond: Box<Expr>,
        then: Box<Expr>,
        otherwise: Box<Expr>,
    },
    Call {
        callee: Box<Expr>,
        args: Vec<Arg>,
        args_span: Span,
    },
    /// `warmup.model`.
    Member {
        base: Box<Expr>,
        name: Ident,
    },
    /// `phases[0]`.
    Index {
        base: Box<Expr>,
        index: Box<Expr>,
    },
    /// `hf("…") { context = 32k tokens }`: a value configured by a block.
    Configure {
        base: Box<Expr>,
        block: Block,
    },
    /// Stands in for a part that already has a syntax diagnostic.
    Error,
}

impl Expr {
    pub fn new(kind: ExprKind, span: Span) -> Expr {
        Expr { kind, span }
    }
}
