//! Checking a value against the type a slot expects: enum names, units, ranges, kinds. Values
//! are returned normalised (symbols resolved to enum values, counts given their unit).

use std::collections::BTreeMap;

use wrl_diagnostics::{Diagnostic, Span};

use crate::suggest::did_you_mean;
use wrl_syntax::ast::DeclKind;
use wrl_syntax::tokens::Dimension;

use crate::checker::{Checker, ModId};
use crate::eval::{is_signal, to_sig};
use crate::types::{Ty, show_num};
use crate::value::{SigExpr, V, Val};

impl Checker<'_> {
    pub(crate) fn conform(&mut self, m: ModId, val: Val, ty: &Ty) -> Val {
        self.conform_with_default(m, val, ty, None)
    }

    /// Like `conform`; a record missing fields takes them from `default` (a record too).
    /// `unknown` passes every type; a bare enum name is resolved before any shape is looked
    /// at; every other value goes to the step for its type.
    pub(crate) fn conform_with_default(
        &mut self,
        m: ModId,
        val: Val,
        ty: &Ty,
        default: Option<&Val>,
    ) -> Val {
        if matches!(val.v, V::Unknown) {
            return val;
        }
        if let Some(name) = self.bare_enum_value(&val, ty) {
            return Val::new(V::Enum { value: name }, val.span);
        }
        match ty {
            Ty::Any => val,
            Ty::UnknownLit => self.mismatch(m, val, ty),
            Ty::Int { .. } => self.conform_int(m, val, ty),
            Ty::Float { .. } => self.conform_float(m, val, ty),
            Ty::Bool => match val.v {
                V::Bool { .. } => val,
                _ => self.mismatch(m, val, ty),
            },
            Ty::Str => match val.v {
                V::Str { .. } => val,
                _ => self.mismatch(m, val, ty),
            },
            Ty::Path => match val.v {
                V::Str { value } => {
                    Val::new(V::Str { value: crate::paths::normal(&value) }, val.span)
                }
                _ => self.mismatch(m, val, ty),
            },
            Ty::Qty { dim, .. } => self.conform_qty(m, val, *dim, ty),
            Ty::Enum(values) => self.conform_enum(m, val, values, ty),
            Ty::List(elem) => match val.v {
                V::List { items } => {
                    let items = items.into_iter().map(|i| self.conform(m, i, elem)).collect();
                    Val::new(V::List { items }, val.span)
                }
                _ => self.mismatch(m, val, ty),
            },
            Ty::Record(fields) => self.conform_record(m, val, fields, ty, default),
            Ty::Map(elem) => match val.v {
                V::Record { fields } => {
                    let fields =
                        fields.into_iter().map(|(k, v)| (k, self.conform(m, v, elem))).collect();
                    Val::new(V::Record { fields }, val.span)
                }
                _ => self.mismatch(m, val, ty),
            },
            Ty::Range(elem) => self.conform_range(m, val, elem, ty),
            Ty::Dims => self.conform_dims(m, val, ty),
            Ty::OneOf(options) => self.conform_one_of(m, val, options, ty),
            Ty::Kind(k) => self.conform_kind(m, val, k, ty),
        }
    }

    /// The enum value a bare name written here stands for, when `ty` (or one of its options)
    /// is an enum that has it: `turn` in `level = turn` is the value, not a name to resolve.
    fn bare_enum_value(&self, val: &Val, ty: &Ty) -> Option<String> {
        let name = self.bare.get(&val.span)?;
        let fits = match ty {
            Ty::Enum(values) => values.contains(name),
            Ty::OneOf(_) => ty.enum_values().contains(&name.as_str()),
            _ => false,
        };
        fits.then(|| name.clone())
    }

    /// An `int`: a whole number in its range.
    fn conform_int(&mut self, m: ModId, val: Val, ty: &Ty) -> Val {
        let span = val.span;
        match val.v {
            V::Num { value } => {
                if value.fract() != 0.0 {
                    self.diags.push(not_whole(value, "a whole number", "", span));
                    return Val::new(V::Unknown, span);
                }
                self.in_range(value, "", span, ty);
                val
            }
            _ => self.mismatch(m, val, ty),
        }
    }

    /// A `float`: a number in its range; a percentage is taken as its fraction.
    fn conform_float(&mut self, m: ModId, val: Val, ty: &Ty) -> Val {
        let span = val.span;
        match val.v {
            V::Num { value } => {
                self.in_range(value, "", span, ty);
                val
            }
            V::Qty { value, dim: Dimension::Ratio } => {
                self.in_range(value, "", span, ty);
                Val::new(V::Num { value }, span)
            }
            _ => self.mismatch(m, val, ty),
        }
    }

    /// A quantity of `dim`: its unit (or a plain number where the unit may be left out), whole
    /// where it is a count, in its range; returned in the canonical unit.
    fn conform_qty(&mut self, m: ModId, val: Val, dim: Dimension, ty: &Ty) -> Val {
        let span = val.span;
        let (value, given) = match val.v {
            V::Qty { value, dim: d } => (value, Some(d)),
            V::Num { value } => (value, None),
            _ => return self.mismatch(m, val, ty),
        };
        if let Some(d) = unit_mistake(value, given, dim, span) {
            self.diags.push(d);
            return Val::new(V::Unknown, span);
        }
        // Counts are whole in their canonical unit (`1.5k tokens` is 1500 tokens; half an
        // epoch or iteration is not a count the runtime can run).
        if value.fract() != 0.0 && !matches!(dim, Dimension::Time | Dimension::Ratio) {
            let what = format!("a whole number of {}", dim.describe());
            let unit = format!(" {}", dim.canonical_unit());
            self.diags.push(not_whole(value, &what, &unit, span));
            return Val::new(V::Unknown, span);
        }
        let unit = if dim == Dimension::Ratio { "" } else { dim.canonical_unit() };
        self.in_range(value, unit, span, ty);
        Val::new(V::Qty { value, dim }, span)
    }

    /// An enum value written as a name (or, for a member that is not a name, as a string).
    fn conform_enum(&mut self, m: ModId, val: Val, values: &[String], ty: &Ty) -> Val {
        let span = val.span;
        match &val.v {
            V::Symbol { name } | V::Enum { value: name } => {
                if values.iter().any(|v| v == name) {
                    Val::new(V::Enum { value: name.clone() }, span)
                } else {
                    let help = did_you_mean(name, values.iter().map(String::as_str))
                        .unwrap_or_else(|| format!("expected {}", ty.describe()));
                    self.diags.push(
                        Diagnostic::new("E0307", format!("unknown value `{name}`"))
                            .label(span, format!("expected {}", ty.describe()))
                            .help(help),
                    );
                    Val::new(V::Unknown, span)
                }
            }
            // A member that is not a name can only be written as a string.
            V::Str { value } if values.contains(value) && !crate::types::is_name(value) => {
                Val::new(V::Enum { value: value.clone() }, span)
            }
            V::Str { value } if values.contains(value) => {
                self.diags.push(
                    Diagnostic::new("E0300", format!("expected {}, found a string", ty.describe()))
                        .label(span, "a string")
                        .help(format!("write it without quotes: `{value}`")),
                );
                Val::new(V::Unknown, span)
            }
            _ => self.mismatch(m, val, ty),
        }
    }

    /// A record of the given fields: each checked against its type, a missing one taken from
    /// `default` (else E0303), one that is not a field reported (E0301).
    fn conform_record(
        &mut self,
        m: ModId,
        val: Val,
        fields: &[(String, Ty)],
        ty: &Ty,
        default: Option<&Val>,
    ) -> Val {
        let span = val.span;
        let V::Record { fields: mut given } = val.v else {
            return self.mismatch(m, val, ty);
        };
        let mut out = BTreeMap::new();
        for (name, fty) in fields {
            match given.remove(name) {
                Some(v) => {
                    out.insert(name.clone(), self.conform(m, v, fty));
                }
                None => match default.and_then(|d| d.field(name)) {
                    Some(d) => {
                        let written = crate::explicit::Written::Field;
                        self.unstated(m, "this record", name, d, written, span);
                        out.insert(name.clone(), d.clone());
                    }
                    None => {
                        self.diags.push(
                            Diagnostic::new("E0303", format!("missing field `{name}`"))
                                .label(span, format!("needs `{name}`"))
                                .help(format!("expected {}", ty.describe())),
                        );
                    }
                },
            }
        }
        for (name, v) in given {
            let cands: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
            self.diags.push(
                Diagnostic::new("E0301", format!("unknown field `{name}`"))
                    .label(v.span, "not a field of this record")
                    .help(
                        did_you_mean(&name, cands.iter().copied())
                            .unwrap_or_else(|| format!("expected {}", ty.describe())),
                    ),
            );
        }
        Val::new(V::Record { fields: out }, span)
    }

    /// A range of `elem`, its bounds in order (E0401); a single value is the range of itself.
    fn conform_range(&mut self, m: ModId, val: Val, elem: &Ty, ty: &Ty) -> Val {
        let span = val.span;
        match val.v {
            V::Range { lo, hi } => {
                let lo = self.conform(m, *lo, elem);
                let hi = self.conform(m, *hi, elem);
                if let (Some(a), Some(b)) = (lo.as_f64(), hi.as_f64())
                    && b < a
                {
                    let (a, b) = (bound(&lo, a), bound(&hi, b));
                    self.diags.push(
                        Diagnostic::new(
                            "E0401",
                            format!("the upper bound {b} is below the lower bound {a}"),
                        )
                        .label(hi.span, "upper bound")
                        .label(lo.span, "lower bound")
                        .help(format!("write `{b} .. {a}`")),
                    );
                }
                Val::new(V::Range { lo: Box::new(lo), hi: Box::new(hi) }, span)
            }
            V::Num { .. } | V::Qty { .. } => {
                let one = self.conform(m, val, elem);
                Val::new(V::Range { lo: Box::new(one.clone()), hi: Box::new(one) }, span)
            }
            _ => self.mismatch(m, val, ty),
        }
    }

    /// A size: whole numbers of at least 1 (E0306).
    fn conform_dims(&mut self, m: ModId, val: Val, ty: &Ty) -> Val {
        match val.v {
            V::Dims { width, height } => {
                if width < 1.0 || height < 1.0 || width.fract() != 0.0 || height.fract() != 0.0 {
                    self.diags.push(
                        Diagnostic::new("E0306", "a size needs whole numbers of at least 1")
                            .label(val.span, "invalid size")
                            .help("for example `1280 x 720`"),
                    );
                }
                val
            }
            _ => self.mismatch(m, val, ty),
        }
    }

    /// The first option the value fits without a diagnostic. If none does, the errors of the
    /// first option it fits but for its range or wholeness are reported, else a mismatch.
    fn conform_one_of(&mut self, m: ModId, val: Val, options: &[Ty], ty: &Ty) -> Val {
        let mut out_of_range = None;
        for opt in options {
            let before = self.diags.len();
            let out = self.conform(m, val.clone(), opt);
            if self.diags.len() == before {
                return self.laid_out(out);
            }
            let found: Vec<Diagnostic> = self.diags.drain(before..).collect();
            if out_of_range.is_none()
                && found.iter().all(|d| matches!(d.code, "E0306" | "E0308" | "E0401"))
            {
                out_of_range = Some(found);
            }
        }
        if let Some(found) = out_of_range {
            self.diags.extend(found);
            return Val::new(V::Unknown, val.span);
        }
        self.mismatch(m, val, ty)
    }

    /// Phases given as a rule are laid out as the phases they stand for; any other value is
    /// itself.
    fn laid_out(&mut self, out: Val) -> Val {
        match &out.v {
            V::Obj(o) if o.kind == "curriculum" => crate::curricula::phases(o, out.span)
                .unwrap_or_else(|d| {
                    self.diags.push(d);
                    Val::new(V::Unknown, out.span)
                }),
            _ => out,
        }
    }

    fn conform_kind(&mut self, m: ModId, val: Val, k: &str, ty: &Ty) -> Val {
        // A variant or a profile is named by a bare name, resolved or not (`variant online` may
        // share a declaration's name): the planner checks it against the recipe's.
        if k == "variant" || k == "profile" {
            return match self.bare.get(&val.span) {
                Some(name) => Val::new(V::Enum { value: name.clone() }, val.span),
                None => self.mismatch(m, val, ty),
            };
        }
        let val = self.force(m, val);
        let span = val.span;
        let ok = match &val.v {
            V::Ref { kind, member, .. } => match (k, kind, member.as_deref()) {
                ("checkpoint" | "model", DeclKind::Model, None) => true,
                ("checkpoint" | "model", DeclKind::Stage, Some("model")) => true,
                ("reward" | "signal", DeclKind::Reward, None) => true,
                (_, kind, None) => kind.word() == k,
                _ => false,
            },
            V::Obj(o) => {
                o.kind == k
                    || (k == "checkpoint" && o.kind == "model")
                    || (k == "reward" && (o.kind == "signal" || o.kind == "condition"))
            }
            V::Signal { .. } => k == "reward" || k == "signal",
            V::Num { .. } => k == "reward",
            V::Symbol { name } => {
                let name = name.clone();
                self.unknown_name(m, &name, span);
                return Val::new(V::Unknown, span);
            }
            _ => false,
        };
        if !ok {
            return self.mismatch(m, val, ty);
        }
        if k == "reward"
            && !matches!(val.v, V::Ref { .. })
            && is_signal(&val) | matches!(val.v, V::Num { .. })
        {
            let expr = match &val.v {
                V::Num { value } => SigExpr::Const { value: *value },
                _ => to_sig(&val),
            };
            return Val::new(V::Signal { expr: Box::new(expr) }, span);
        }
        val
    }

    /// E0306 when `value` lies outside the bounds of `ty` (an `int`, `float` or quantity);
    /// `unit` follows the numbers shown.
    fn in_range(&mut self, value: f64, unit: &str, span: Span, ty: &Ty) {
        let (min, max) = bounds(ty);
        let below = min.is_some_and(|lo| value < lo);
        let above = max.is_some_and(|hi| value > hi);
        if below || above {
            let u = if unit.is_empty() { String::new() } else { format!(" {unit}") };
            let shown = if matches!(ty, Ty::Qty { dim: Dimension::Ratio, .. }) {
                format!("{}%", show_num(value * 100.0))
            } else {
                format!("{}{u}", show_num(value))
            };
            self.diags.push(
                Diagnostic::new("E0306", format!("{shown} is out of range"))
                    .label(span, format!("expected {}", ty.describe()))
                    .help(match (min, max) {
                        (Some(lo), Some(hi)) => {
                            format!("the allowed range is [{}, {}]", show_num(lo), show_num(hi))
                        }
                        (Some(lo), None) => {
                            format!("the smallest allowed value is {}{u}", show_num(lo))
                        }
                        (None, Some(hi)) => {
                            format!("the largest allowed value is {}{u}", show_num(hi))
                        }
                        (None, None) => String::new(),
                    }),
            );
        }
    }

    fn mismatch(&mut self, m: ModId, val: Val, ty: &Ty) -> Val {
        let span = val.span;
        if let V::Symbol { name } = &val.v {
            // A bare name that is neither a declaration nor an expected enum value.
            let name = name.clone();
            let values: Vec<String> = ty.enum_values().into_iter().map(String::from).collect();
            let help = self.scope_suggestion(m, &name, &values);
            let code = if ty.enum_values().is_empty() { "E0200" } else { "E0307" };
            let msg = if code == "E0200" {
                format!("cannot find `{name}` in this scope")
            } else {
                format!("unknown value `{name}`")
            };
            self.diags.push(
                Diagnostic::new(code, msg)
                    .label(span, format!("expected {}", ty.describe()))
                    .maybe_help(help),
            );
            return Val::new(V::Unknown, span);
        }
        self.diags.push(
            Diagnostic::new(
                "E0300",
                format!("expected {}, found {}", ty.describe(), val.describe()),
            )
            .label(span, format!("this is {}", val.describe())),
        );
        Val::new(V::Unknown, span)
    }
}

/// The bounds a numeric type declares (`int(min: 1)`); other types have none.
fn bounds(ty: &Ty) -> (Option<f64>, Option<f64>) {
    match ty {
        Ty::Int { min, max } | Ty::Float { min, max } | Ty::Qty { min, max, .. } => (*min, *max),
        Ty::Any
        | Ty::UnknownLit
        | Ty::Bool
        | Ty::Str
        | Ty::Path
        | Ty::Enum(_)
        | Ty::List(_)
        | Ty::Record(_)
        | Ty::Map(_)
        | Ty::Range(_)
        | Ty::OneOf(_)
        | Ty::Dims
        | Ty::Kind(_) => (None, None),
    }
}

/// E0305 for a quantity written in the wrong unit, or without the unit it needs: durations
/// and sizes always need theirs, and a plain ratio above 1 is almost surely a percentage
/// (`warmup: 10` is 1000 %). `given` is the unit written, if any.
fn unit_mistake(
    value: f64,
    given: Option<Dimension>,
    dim: Dimension,
    span: Span,
) -> Option<Diagnostic> {
    match given {
        Some(d) if d != dim => {
            let want = dim.describe();
            Some(
                Diagnostic::new("E0305", format!("expected {want}, found {}", d.describe()))
                    .label(span, format!("this is {}", d.describe()))
                    .help(format!("write a value in {}, e.g. `{}`", want, example(dim))),
            )
        }
        None if matches!(dim, Dimension::Time | Dimension::Bytes) => Some(
            Diagnostic::new("E0305", format!("expected {}, found a plain number", dim.describe()))
                .label(span, "this needs a unit")
                .help(format!("write it with a unit, e.g. `{}`", example(dim))),
        ),
        None if dim == Dimension::Ratio && value > 1.0 => {
            let pct = show_num(value);
            Some(
                Diagnostic::new(
                    "E0305",
                    format!("a plain number as a ratio: {pct} is {} %", show_num(value * 100.0)),
                )
                .label(span, format!("{pct} × 100 % here"))
                .help(format!(
                    "write a percentage with its sign, `{pct}%`, or a fraction ≤ 1 (`{}`); write `{}%` if you mean it",
                    show_num(value / 100.0),
                    show_num(value * 100.0)
                )),
            )
        }
        _ => None,
    }
}

fn example(dim: Dimension) -> &'static str {
    match dim {
        Dimension::Tokens => "4096 tokens",
        Dimension::Steps => "15 steps",
        Dimension::Turns => "25 turns",
        Dimension::Iters => "90 iters",
        Dimension::Epochs => "3 epochs",
        Dimension::Samples => "64 samples",
        Dimension::Prompts => "16 prompts",
        Dimension::Trajectories => "128 trajectories",
        Dimension::Calls => "8 calls",
        Dimension::Images => "3 images",
        Dimension::Pixels => "1024 px",
        Dimension::Time => "45 s",
        Dimension::Bytes => "80 GiB",
        Dimension::Ratio => "10%",
    }
}

/// E0308 for a fractional count: `what` was expected (`a whole number of epochs`), `unit`
/// (with its leading space, or empty) follows each number shown.
fn not_whole(value: f64, what: &str, unit: &str, span: Span) -> Diagnostic {
    Diagnostic::new("E0308", format!("expected {what}, found {}{unit}", show_num(value)))
        .label(span, "not a whole number")
        .help(format!("use {}{unit} or {}{unit}", show_num(value.floor()), show_num(value.ceil())))
}

/// A range's bound as written: a percentage as one (`5%`), anything else as its number.
fn bound(v: &Val, x: f64) -> String {
    match v.v {
        V::Qty { dim: wrl_syntax::tokens::Dimension::Ratio, .. } => {
            format!("{}%", show_num(x * 100.0))
        }
        _ => show_num(x),
    }
}
