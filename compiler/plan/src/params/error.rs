//! Why a node's parameters do not decode into their constructor's type: the path of the value
//! that failed and what was wrong with it. An `unknown` where the runtime needs a value is the
//! recipe's to fix (E0500); everything else means the plan does not follow the format this
//! build reads (a hand-edited `plan.json`, or one written by another wrlc).

use std::fmt;

/// What was wrong with the value at [`DecodeError::path`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// `unknown` where a value is needed.
    Unknown,
    /// A field the type declares is not in the plan.
    MissingField(String),
    /// A field the plan has that the type does not declare.
    UnknownField(String),
    /// A value of the wrong shape.
    Mismatch {
        expected: String,
        found: String,
    },
    /// A constructor or word the type has no variant for.
    UnknownVariant {
        found: String,
        expected: Vec<String>,
    },
    /// The node's constructor is not one this build knows for its kind.
    UnknownCtor {
        kind: String,
        ctor: String,
    },
    Other(String),
}

/// A decoding failure at a path of parameters (`timeout.step`, `phases[0]`); the empty path is
/// the node itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    pub path: Vec<String>,
    pub problem: Problem,
}

impl DecodeError {
    pub fn new(problem: Problem) -> DecodeError {
        DecodeError { path: Vec::new(), problem }
    }

    /// The same error one level up: `key` is where the failing value sits in its parent.
    pub fn at(mut self, key: &str) -> DecodeError {
        self.path.insert(0, key.to_string());
        self
    }

    /// The node's parameter that holds the failing value (its path's first segment).
    pub fn param(&self) -> Option<&str> {
        self.path.first().map(String::as_str)
    }

    /// The path as written in a recipe: `timeout.step`, `parts[1]`.
    pub fn path_text(&self) -> String {
        let mut out = String::new();
        for seg in &self.path {
            if !out.is_empty() && !seg.starts_with('[') {
                out.push('.');
            }
            out.push_str(seg);
        }
        out
    }

    /// Whether the recipe left a needed value `unknown` (rather than the plan being malformed).
    pub fn is_unknown(&self) -> bool {
        self.problem == Problem::Unknown
    }

    fn custom_text(msg: impl fmt::Display) -> DecodeError {
        DecodeError::new(Problem::Other(msg.to_string()))
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Unknown => f.write_str("is `unknown`"),
            Problem::MissingField(k) => write!(f, "has no field `{k}`"),
            Problem::UnknownField(k) => write!(f, "has a field `{k}` this runtime does not know"),
            Problem::Mismatch { expected, found } => write!(f, "is {found}, expected {expected}"),
            Problem::UnknownVariant { found, expected } => {
                let list: Vec<String> = expected.iter().map(|e| format!("`{e}`")).collect();
                write!(
                    f,
                    "is `{found}`, which this runtime does not know (it knows {})",
                    list.join(", ")
                )
            }
            Problem::UnknownCtor { kind, ctor } => {
                write!(f, "is built by `{ctor}`, which this runtime does not know as a {kind}")
            }
            Problem::Other(s) => f.write_str(s),
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "the node {}", self.problem)
        } else {
            write!(f, "`{}` {}", self.path_text(), self.problem)
        }
    }
}

impl std::error::Error for DecodeError {}

impl serde::de::Error for DecodeError {
    fn custom<T: fmt::Display>(msg: T) -> DecodeError {
        DecodeError::custom_text(msg)
    }

    fn missing_field(field: &'static str) -> DecodeError {
        DecodeError::new(Problem::MissingField(field.into()))
    }

    fn unknown_field(field: &str, _expected: &'static [&'static str]) -> DecodeError {
        DecodeError::new(Problem::UnknownField(field.into()))
    }

    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> DecodeError {
        DecodeError::new(Problem::UnknownVariant {
            found: variant.into(),
            expected: expected.iter().map(|s| s.to_string()).collect(),
        })
    }

    fn invalid_type(
        unexp: serde::de::Unexpected<'_>,
        exp: &dyn serde::de::Expected,
    ) -> DecodeError {
        DecodeError::new(Problem::Mismatch { expected: exp.to_string(), found: unexp.to_string() })
    }
}
