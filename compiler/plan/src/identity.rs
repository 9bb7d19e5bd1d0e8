//! A recipe's identity: the SHA-256 of its resolved plan in a canonical form, with the wrlc that
//! planned it. Two recipes that mean the same plan have the same identity whatever their
//! comments, layout, declaration order or where a value was written (the recipe, a profile,
//! `--set`): only the nodes' constructors and resolved parameters and the edges count, each
//! sorted, the profile's name, the file's name, doc comments and declaration aliases do not.
//! Paths are already lexically normal in the plan (the checker normalises `path` values). Every
//! artefact of a run carries it, so a run can be told from another recipe's.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::model::Plan;

/// The version of the wrlc that plans (and runs) recipes.
pub const WRLC_VERSION: &str = env!("CARGO_PKG_VERSION");

/// What a recipe's plan is, by content.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// `sha256:` and 64 hex digits.
    pub plan: String,
    /// The wrlc version that planned it.
    pub wrlc: String,
}

impl Identity {
    /// The identity of `plan`.
    pub fn of(plan: &Plan) -> Identity {
        let text = canonical(plan).to_string();
        let hash = Sha256::digest(text.as_bytes());
        let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
        Identity { plan: format!("sha256:{hex}"), wrlc: WRLC_VERSION.to_string() }
    }

    /// The hash's first 12 hex digits, as people quote it.
    pub fn short(&self) -> &str {
        let hex = self.plan.strip_prefix("sha256:").unwrap_or(&self.plan);
        hex.get(..12).unwrap_or(hex)
    }

    /// `sha256:… (wrlc 0.1.0)`.
    pub fn line(&self) -> String {
        format!("{} (wrlc {})", self.plan, self.wrlc)
    }
}

/// The canonical form: the format version, then every node by id (kind, constructor,
/// parameters) and every edge, sorted; JSON objects keep their keys sorted.
fn canonical(plan: &Plan) -> serde_json::Value {
    let mut nodes: Vec<serde_json::Value> = plan
        .nodes
        .iter()
        .map(|n| {
            serde_json::json!({
                "id": n.id,
                "kind": n.kind,
                "ctor": n.ctor,
                "params": n.params,
            })
        })
        .collect();
    nodes.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    let mut edges = plan.edges.clone();
    edges.sort();
    serde_json::json!({"format": plan.version, "nodes": nodes, "edges": edges})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Node, NodeKind};

    fn node(id: &str, doc: Option<&str>) -> Node {
        Node {
            id: id.into(),
            kind: NodeKind::LoadModel,
            decl: id.into(),
            ctor: "hf".into(),
            alias_of: None,
            doc: doc.map(str::to_string),
            params: Default::default(),
        }
    }

    #[test]
    fn names_docs_and_order_do_not_change_the_identity_and_content_does() {
        let a = Plan {
            version: 1,
            recipe: "a.wrl".into(),
            profile: None,
            variant: None,
            nodes: vec![node("model:a", None), node("model:b", None)],
            edges: vec![],
            claims: vec![],
        };
        let b = Plan {
            recipe: "/elsewhere/b.wrl".into(),
            profile: Some("smoke".into()),
            variant: None,
            nodes: vec![node("model:b", Some("a comment")), node("model:a", None)],
            ..a.clone()
        };
        assert_eq!(Identity::of(&a), Identity::of(&b));
        let c = Plan { nodes: vec![node("model:a", None)], ..a.clone() };
        assert_ne!(Identity::of(&a), Identity::of(&c));
        let id = Identity::of(&a);
        assert!(id.plan.starts_with("sha256:") && id.plan.len() == 71, "{}", id.plan);
        assert_eq!(id.short().len(), 12);
    }
}
