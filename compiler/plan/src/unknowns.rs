//! Which `unknown` values of a node `wrlc run` would refuse (E0500): those where the typed
//! contract (`params/`) needs a value, read off the shape of the node's constructor type rather
//! than listed a second time, so the text and DOT plans can mark them before a run is tried.

use std::sync::OnceLock;

use crate::model::{Node, NodeKind};
use crate::params::shape::Shape;
use crate::value::PVal;

/// The shape of every constructor, read once (probing a type's `Deserialize` is not free).
fn shape(kind: NodeKind, ctor: &str) -> Option<&'static Shape> {
    static SHAPES: OnceLock<Vec<(NodeKind, &'static str, Shape)>> = OnceLock::new();
    SHAPES
        .get_or_init(crate::params::all_shapes)
        .iter()
        .find(|(k, c, _)| *k == kind && *c == ctor)
        .map(|(_, _, s)| s)
}

/// The paths (`max_turns`, `refill.kept`, `phases[0].lr`) of the node's `unknown` values that
/// its constructor's type needs, sorted. Empty for a constructor this build does not run.
pub fn refused_unknowns(node: &Node) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(shape) = shape(node.kind, &node.ctor) {
        for (name, s) in shape.fields() {
            if let Some(v) = node.params.get(name) {
                walk(s, v, name.clone(), &mut out);
            }
        }
    }
    // What decoding refuses is refused, whatever the walk above could see.
    if let Err(e) = crate::params::decode(node)
        && e.is_unknown()
    {
        out.push(e.path_text());
    }
    out.sort();
    out.dedup();
    out
}

/// Whether the top-level parameter `name` holds a value [`refused_unknowns`] lists.
pub fn is_refused(refused: &[String], name: &str) -> bool {
    refused.iter().any(|p| {
        p == name || p.strip_prefix(name).is_some_and(|r| r.starts_with('.') || r.starts_with('['))
    })
}

fn walk(shape: &Shape, v: &PVal, path: String, out: &mut Vec<String>) {
    if matches!(v, PVal::Unknown) {
        match shape {
            // `unknown` is allowed there, or the type takes any value (the runtime decides).
            Shape::Option(_) | Shape::OneOf => {}
            Shape::Bool
            | Shape::Int
            | Shape::Float
            | Shape::Str
            | Shape::Unit(_)
            | Shape::Qty
            | Shape::Batch
            | Shape::Ref
            | Shape::Expr
            | Shape::Word
            | Shape::OrWord(..)
            | Shape::List(_)
            | Shape::Map(_)
            | Shape::Struct(_)
            | Shape::Enum(_)
            | Shape::Unit0 => out.push(path),
        }
        return;
    }
    match shape {
        Shape::Option(inner) => walk(inner, v, path, out),
        Shape::OrWord(word, inner) => {
            if !matches!(v, PVal::Enum { value } if value == word) {
                walk(inner, v, path, out);
            }
        }
        Shape::Struct(fields) => {
            let values = match v {
                PVal::Record { fields } => fields,
                PVal::Obj(o) => &o.fields,
                _ => return,
            };
            for (name, s) in fields {
                if let Some(x) = values.get(name) {
                    walk(s, x, format!("{path}.{name}"), out);
                }
            }
        }
        Shape::Enum(variants) => {
            if let PVal::Obj(o) = v
                && let Some((_, content)) = variants.iter().find(|(n, _)| *n == o.ctor)
            {
                walk(content, v, path, out);
            }
        }
        Shape::List(inner) => {
            if let PVal::List { items } = v {
                for (i, x) in items.iter().enumerate() {
                    walk(inner, x, format!("{path}[{i}]"), out);
                }
            }
        }
        Shape::Map(inner) => {
            if let PVal::Record { fields } = v {
                for (k, x) in fields {
                    walk(inner, x, format!("{path}.{k}"), out);
                }
            }
        }
        Shape::Bool
        | Shape::Int
        | Shape::Float
        | Shape::Str
        | Shape::Unit(_)
        | Shape::Qty
        | Shape::Batch
        | Shape::Ref
        | Shape::Expr
        | Shape::Word
        | Shape::OneOf
        | Shape::Unit0 => {}
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn react(max_turns: PVal, prompt: PVal) -> Node {
        let q = |value: f64, unit: &str| PVal::Qty { value, unit: unit.into() };
        let params: BTreeMap<String, PVal> = [
            ("policy", PVal::Ref { node: "model:m".into() }),
            ("env", PVal::Ref { node: "env:e".into() }),
            ("history", PVal::Enum { value: "action_only".into() }),
            ("max_parse_failures", PVal::Num { value: 3.0 }),
            ("max_turns", max_turns),
            ("max_response", q(48.0, "tokens")),
            ("prompt", prompt),
            ("step_response", q(256.0, "tokens")),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        Node {
            id: "agent:a".into(),
            kind: NodeKind::Agent,
            decl: "a".into(),
            ctor: "react".into(),
            alias_of: None,
            doc: None,
            params,
        }
    }

    #[test]
    fn a_needed_unknown_is_refused_and_a_known_value_is_not() {
        let n = react(PVal::Unknown, PVal::Str { value: String::new() });
        assert_eq!(refused_unknowns(&n), ["max_turns"]);
        assert!(is_refused(&refused_unknowns(&n), "max_turns"));
        assert!(!is_refused(&refused_unknowns(&n), "max"));
        let n =
            react(PVal::Qty { value: 6.0, unit: "turns".into() }, PVal::Str { value: "".into() });
        assert!(refused_unknowns(&n).is_empty());
    }
}
