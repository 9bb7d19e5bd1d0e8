//! The values the plan-value deserializer reads: a plan value, or one of the structured parts
//! of an object (a tool set's tools, an expression node) seen the same way, with the plain-words
//! descriptions its errors use, and the names of the newtypes that take quantities, references,
//! expressions and words.

use super::error::{DecodeError, Problem};
use crate::value::{Expr, PObj, PTool, PToolParam, PVal};

/// What is being deserialized: a plan value, or one of the structured parts of an object (a
/// tool set's tools, a reward expression) presented the same way.
#[derive(Clone, Copy, Debug)]
pub(crate) enum View<'a> {
    Val(&'a PVal),
    Obj(&'a PObj),
    Expr(&'a Expr<PObj>),
    Tool(&'a PTool),
    ToolParam(&'a PToolParam),
    /// A tool set's tools (its object's `tools`).
    Tools(&'a [PTool]),
    /// A tool's parameters.
    ToolParams(&'a [PToolParam]),
    Str(&'a str),
    Bool(bool),
    Num(f64),
    /// A value that may be absent (a tool parameter's default).
    Opt(Option<&'a PVal>),
}

/// The name of the newtype a quantity of `unit` decodes into is `$unit:UNIT`.
pub(crate) const UNIT_PREFIX: &str = "$unit:";
/// The newtype that takes a `ref` (another node's output).
pub(crate) const REF: &str = "$ref";
/// The newtype that takes a reward expression.
pub(crate) const EXPR: &str = "$expr";
/// The enum that takes any word (or string): a verdict.
pub(crate) const WORD: &str = "$word";
/// The newtype that takes a quantity in any unit, as `{ value, unit }`.
pub(crate) const QTY: &str = "$qty";
/// The newtype that takes a batch size: a quantity as `{ value, unit }`, a bare number as one
/// in `samples`.
pub(crate) const BATCH: &str = "$batch";

impl<'a> View<'a> {
    pub(super) fn describe(&self) -> String {
        match self {
            View::Val(v) => describe(v),
            View::Obj(o) => format!("`{}(…)`", o.ctor),
            View::Expr(_) => "a reward expression".into(),
            View::Tool(_) => "a tool".into(),
            View::ToolParam(_) => "a tool parameter".into(),
            View::Tools(_) | View::ToolParams(_) => "a list".into(),
            View::Str(_) => "a string".into(),
            View::Bool(_) => "a boolean".into(),
            View::Num(_) => "a number".into(),
            View::Opt(None) => "nothing".into(),
            View::Opt(Some(v)) => describe(v),
        }
    }

    /// The value seen through: an `Obj` value is its object, an optional value its content.
    pub(super) fn norm(self) -> View<'a> {
        match self {
            View::Val(PVal::Obj(o)) => View::Obj(o),
            View::Val(PVal::Reward { expr }) => View::Expr(expr),
            View::Opt(Some(v)) => View::Val(v).norm(),
            other => other,
        }
    }

    pub(super) fn mismatch(&self, expected: &str) -> DecodeError {
        DecodeError::new(Problem::Mismatch { expected: expected.into(), found: self.describe() })
    }
}

/// A plain-words description of a plan value, for errors.
pub(crate) fn describe(v: &PVal) -> String {
    match v {
        PVal::Num { value } => format!("the number {value}"),
        PVal::Qty { value, unit } => format!("{value} {unit}"),
        PVal::Bool { value } => format!("`{value}`"),
        PVal::Str { value } => format!("the string {value:?}"),
        PVal::Enum { value } => format!("`{value}`"),
        PVal::List { .. } => "a list".into(),
        PVal::Record { .. } => "a record".into(),
        PVal::Range { .. } => "a range".into(),
        PVal::Dims { .. } => "a size".into(),
        PVal::Obj(o) => format!("`{}(…)`", o.ctor),
        PVal::Ref { node } => format!("the output of `{node}`"),
        PVal::Reward { .. } => "a reward expression".into(),
        PVal::Unknown => "`unknown`".into(),
    }
}
