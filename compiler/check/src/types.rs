//! Types of builtin parameters and fields, read from the stdlib's signatures. A type is written
//! as an ordinary expression (`int(min: 1)`, `list(enum(a, b))`) and parsed here.

use wrl_diagnostics::{Diagnostic, Span};
use wrl_syntax::ast::{Expr, ExprKind, UnaryOp};
use wrl_syntax::tokens::Dimension;

#[derive(Clone, Debug, PartialEq)]
pub enum Ty {
    Any,
    Int {
        min: Option<f64>,
        max: Option<f64>,
    },
    Float {
        min: Option<f64>,
        max: Option<f64>,
    },
    Bool,
    Str,
    Path,
    /// A quantity; counts accept a bare number in their unit, durations and sizes need a unit.
    Qty {
        dim: Dimension,
        min: Option<f64>,
        max: Option<f64>,
    },
    Enum(Vec<String>),
    List(Box<Ty>),
    Record(Vec<(String, Ty)>),
    /// A record whose field names are the user's (`map(string)`: `{ question = "prompt" }`),
    /// each value of the inner type; which names are allowed is a rule's business.
    Map(Box<Ty>),
    Range(Box<Ty>),
    OneOf(Vec<Ty>),
    Dims,
    /// A declaration kind or an object kind: `model`, `dataset`, `site`, `signal`, …
    Kind(String),
    /// The literal `unknown` (inside `one_of`).
    UnknownLit,
}

/// The kinds a type may name.
pub const KINDS: &[&str] = &[
    "model",
    "dataset",
    "env",
    "tools",
    "agent",
    "reward",
    "stage",
    "eval",
    "claim",
    "site",
    "observation",
    "schedule",
    "module",
    "signal",
    "condition",
    "checkpoint",
    "validation",
    "curriculum",
    "advantage",
    "critic",
    "replay",
    "generation",
    "branching",
    "lora",
    "device",
    "call_format",
    "mcp_server",
    // A variant of the recipe by its name (`variant flat { … }`, or `base`), which a claim
    // names; the planner checks that the recipe declares it.
    "variant",
    // A profile of the recipe by its name (`profile claims { … }`, or `base`: the recipe
    // without one), which a claim's `profiles` scopes it to; the planner checks the name.
    "profile",
];

const UNIT_TYPES: &[(&str, Dimension)] = &[
    ("tokens", Dimension::Tokens),
    ("steps", Dimension::Steps),
    ("turns", Dimension::Turns),
    ("iters", Dimension::Iters),
    ("epochs", Dimension::Epochs),
    ("samples", Dimension::Samples),
    ("prompts", Dimension::Prompts),
    ("trajectories", Dimension::Trajectories),
    ("calls", Dimension::Calls),
    ("images", Dimension::Images),
    ("pixels", Dimension::Pixels),
    ("duration", Dimension::Time),
    ("bytes", Dimension::Bytes),
    ("ratio", Dimension::Ratio),
];

impl Ty {
    /// How the type reads in "expected …" messages.
    pub fn describe(&self) -> String {
        match self {
            Ty::Any => "any value".into(),
            Ty::Int { min, max } => format!("an integer{}", bounds(*min, *max, "")),
            Ty::Float { min, max } => format!("a number{}", bounds(*min, *max, "")),
            Ty::Bool => "`true` or `false`".into(),
            Ty::Str => "a string".into(),
            Ty::Path => "a file path (a string)".into(),
            Ty::Qty { dim: Dimension::Ratio, min, max } => {
                format!(
                    "a percentage or a fraction{}",
                    bounds(min.map(|m| m * 100.0), max.map(|m| m * 100.0), "%")
                )
            }
            Ty::Qty { dim, min, max } => {
                let u = format!(" {}", dim.canonical_unit());
                format!("{}{}", dim.describe(), bounds(*min, *max, &u))
            }
            Ty::Enum(vs) => one_of_words(vs),
            Ty::List(t) => format!("a list of {}", strip_article(&t.describe())),
            Ty::Record(fs) => {
                let names: Vec<String> = fs.iter().map(|(n, _)| format!("`{n}`")).collect();
                format!("a record with {}", names.join(", "))
            }
            Ty::Map(t) => format!("a record whose every field is {}", t.describe()),
            Ty::Range(t) => format!("a range `lo .. hi` of {}", strip_article(&t.describe())),
            Ty::OneOf(ts) => {
                let ds: Vec<String> = ts.iter().map(Ty::describe).collect();
                ds.join(" or ")
            }
            Ty::Dims => "a size `W x H`".into(),
            Ty::Kind(k) => crate::value::article(k),
            Ty::UnknownLit => "`unknown`".into(),
        }
    }

    /// The enum values this type accepts anywhere inside (for bare-name resolution).
    pub fn enum_values(&self) -> Vec<&str> {
        match self {
            Ty::Enum(vs) => vs.iter().map(String::as_str).collect(),
            Ty::OneOf(ts) => ts.iter().flat_map(Ty::enum_values).collect(),
            _ => Vec::new(),
        }
    }
}

fn strip_article(s: &str) -> String {
    s.strip_prefix("an ").or_else(|| s.strip_prefix("a ")).unwrap_or(s).to_string()
}

fn one_of_words(vs: &[String]) -> String {
    let ws: Vec<String> = vs
        .iter()
        .map(|v| if is_name(v) { format!("`{v}`") } else { format!("`\"{v}\"`") })
        .collect();
    match ws.as_slice() {
        [one] => one.clone(),
        [init @ .., last] => format!("one of {} or {last}", init.join(", ")),
        [] => "nothing".into(),
    }
}

/// Whether an enum member can be written bare (`left`), or only as a string (`"Right Click"`).
pub(crate) fn is_name(v: &str) -> bool {
    let mut chars = v.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 { format!("{}", v as i64) } else { format!("{v}") }
}

fn bounds(min: Option<f64>, max: Option<f64>, unit: &str) -> String {
    match (min, max) {
        (Some(a), Some(b)) => format!(" in [{}{unit}, {}{unit}]", fmt_num(a), fmt_num(b)),
        (Some(a), None) => format!(" ≥ {}{unit}", fmt_num(a)),
        (None, Some(b)) => format!(" ≤ {}{unit}", fmt_num(b)),
        (None, None) => String::new(),
    }
}

/// Formats a bound for messages.
pub fn show_num(v: f64) -> String {
    fmt_num(v)
}

/// Parses a type expression from a stdlib signature.
pub fn parse_type(e: &Expr) -> Result<Ty, Diagnostic> {
    let bad = |span: Span, what: String| {
        Diagnostic::new("E0300", format!("invalid type in a builtin signature: {what}"))
            .label(span, "not a type")
            .help("types are int, float, prob, bool, string, path, any, unit types like steps(min: 1), enum(…), list(T), record(…), map(T), range(T), one_of(…), dims, or a kind")
    };
    let (name, args) = match &e.kind {
        ExprKind::Path(segs) if segs.len() == 1 => (segs[0].name.as_str(), &[][..]),
        ExprKind::Unknown => return Ok(Ty::UnknownLit),
        ExprKind::Call { callee, args, .. } => match &callee.kind {
            ExprKind::Path(segs) if segs.len() == 1 => (segs[0].name.as_str(), args.as_slice()),
            _ => return Err(bad(e.span, "a call of a path".into())),
        },
        _ => return Err(bad(e.span, "an expression".into())),
    };
    let named = |key: &str| -> Result<Option<f64>, Diagnostic> {
        match args.iter().find(|a| a.name.as_ref().is_some_and(|n| n.name == key)) {
            Some(a) => bound_value(&a.value)
                .map(Some)
                .ok_or_else(|| bad(a.value.span, "a bound that is not a number".into())),
            None => Ok(None),
        }
    };
    let positional = || args.iter().filter(|a| a.name.is_none());
    Ok(match name {
        "any" => Ty::Any,
        "int" => Ty::Int { min: named("min")?, max: named("max")? },
        "float" => Ty::Float { min: named("min")?, max: named("max")? },
        "prob" => Ty::Float { min: Some(0.0), max: Some(1.0) },
        "bool" => Ty::Bool,
        "string" => Ty::Str,
        "path" => Ty::Path,
        "dims" => Ty::Dims,
        "enum" => Ty::Enum(
            positional()
                .map(|a| match &a.value.kind {
                    ExprKind::Path(s) if s.len() == 1 => Ok(s[0].name.clone()),
                    // A member that is not a name (`"Right Click"`, an action with a space).
                    ExprKind::Str(s) if !s.trim().is_empty() => Ok(s.clone()),
                    _ => Err(bad(
                        a.value.span,
                        "an enum value that is neither a name nor a non-empty string".into(),
                    )),
                })
                .collect::<Result<_, _>>()?,
        ),
        "list" => Ty::List(Box::new(one_arg(args, e.span, &bad)?)),
        "range" => Ty::Range(Box::new(one_arg(args, e.span, &bad)?)),
        "map" => Ty::Map(Box::new(one_arg(args, e.span, &bad)?)),
        "one_of" => {
            Ty::OneOf(positional().map(|a| parse_type(&a.value)).collect::<Result<_, _>>()?)
        }
        "record" => Ty::Record(
            args.iter()
                .map(|a| match &a.name {
                    Some(n) => Ok((n.name.clone(), parse_type(&a.value)?)),
                    None => Err(bad(a.span, "a record field without a name".into())),
                })
                .collect::<Result<_, _>>()?,
        ),
        k if KINDS.contains(&k) => Ty::Kind(k.to_string()),
        u => match UNIT_TYPES.iter().find(|(w, _)| *w == u) {
            Some((_, dim)) => {
                let scale = |v: Option<f64>| {
                    v.map(|x| if *dim == Dimension::Ratio { x / 100.0 } else { x })
                };
                let (min, max) = (named("min")?, named("max")?);
                let (min, max) =
                    if *dim == Dimension::Ratio { (scale(min), scale(max)) } else { (min, max) };
                Ty::Qty {
                    dim: *dim,
                    min: min.or(if *dim == Dimension::Ratio { Some(0.0) } else { None }),
                    max,
                }
            }
            None => return Err(bad(e.span, format!("`{u}` is not a type"))),
        },
    })
}

fn one_arg(
    args: &[wrl_syntax::ast::Arg],
    span: Span,
    bad: &dyn Fn(Span, String) -> Diagnostic,
) -> Result<Ty, Diagnostic> {
    match args {
        [a] => parse_type(&a.value),
        _ => Err(bad(span, "expected exactly one type argument".into())),
    }
}

/// A numeric bound: a number, a negative number or a quantity (in canonical units).
fn bound_value(e: &Expr) -> Option<f64> {
    match &e.kind {
        ExprKind::Number(n) => Some(n.value),
        ExprKind::Quantity { value, unit: u, .. } => Some(value.value * u.scale),
        ExprKind::Unary { op: UnaryOp::Neg, operand, .. } => bound_value(operand).map(|v| -v),
        _ => None,
    }
}
