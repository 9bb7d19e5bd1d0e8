//! The resolved configuration a run executed — every node of its `plan.json` with every
//! parameter, defaults filled — in the recipe's own notation, and the differences between the
//! configurations of several runs.

use wrl_plan::Plan;

/// One node of the plan as the report lists it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeConfig {
    /// `stage:online/phase:1`.
    pub id: String,
    /// `grpo`, `std::sandbox::tasks`, with the declaration it aliases.
    pub ctor: String,
    pub doc: Option<String>,
    /// `port <- node` for each input.
    pub inputs: Vec<String>,
    /// Every parameter, sorted by name, in the recipe's notation.
    pub params: Vec<(String, String)>,
}

/// The plan's nodes in plan order.
pub fn nodes(plan: &Plan) -> Vec<NodeConfig> {
    plan.nodes
        .iter()
        .map(|n| NodeConfig {
            id: n.id.clone(),
            ctor: match &n.alias_of {
                Some(a) => format!("{} (as {a})", n.ctor),
                None => n.ctor.clone(),
            },
            doc: n.doc.clone(),
            inputs: plan.inputs(&n.id).map(|e| format!("{} <- {}", e.port, e.from)).collect(),
            params: n.params.iter().map(|(k, v)| (k.clone(), wrl_plan::show_val(v))).collect(),
        })
        .collect()
}

/// A parameter that is not the same in every run: its node, its name (a record's field as
/// `timeout.step`), and each run's value (`None` where that run's plan has no such node or
/// parameter).
pub type Difference = wrl_plan::diff::Row;

/// The parameters (and the recipe and profile) that differ between runs, as `wrlc diff` finds
/// them, in node order of the first run that has the node.
pub fn differences(plans: &[&Plan]) -> Vec<Difference> {
    let mut out = Vec::new();
    let recipes: Vec<Option<String>> = plans.iter().map(|p| Some(p.recipe.clone())).collect();
    let profiles: Vec<Option<String>> =
        plans.iter().map(|p| Some(p.profile.clone().unwrap_or_else(|| "(none)".into()))).collect();
    for (field, values) in [("recipe", recipes), ("profile", profiles)] {
        if !values.windows(2).all(|w| w[0] == w[1]) {
            out.push(Difference { node: "(run)".into(), field: field.into(), values });
        }
    }
    out.extend(wrl_plan::diff::rows(plans));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use wrl_plan::{Node, NodeKind, PVal};

    fn plan(nodes: &[(&str, &[(&str, f64)])]) -> Plan {
        let node = |id: &str, params: &[(&str, f64)]| Node {
            id: id.into(),
            kind: NodeKind::RlPhase,
            decl: id.into(),
            ctor: "grpo".into(),
            alias_of: None,
            doc: None,
            params: params.iter().map(|(k, v)| (k.to_string(), PVal::Num { value: *v })).collect(),
        };
        Plan {
            version: 1,
            recipe: "recipes/q.wrl".into(),
            profile: None,
            variant: None,
            nodes: nodes.iter().map(|(id, p)| node(id, p)).collect(),
            edges: vec![],
            claims: vec![],
        }
    }

    #[test]
    fn lists_only_what_differs() {
        let a = plan(&[("stage:online", &[("group", 4.0), ("lr", 1e-4)]), ("eval:x", &[])]);
        let b = plan(&[("stage:online", &[("group", 8.0), ("lr", 1e-4)])]);
        let d = differences(&[&a, &b]);
        assert_eq!(d.len(), 2, "{d:?}");
        assert_eq!(
            (d[0].field.as_str(), &d[0].values),
            ("group", &vec![Some("4".to_string()), Some("8".to_string())])
        );
        assert_eq!((d[1].node.as_str(), d[1].field.as_str()), ("eval:x", "(node)"));
        assert_eq!(d[1].values[1], None);
        assert!(differences(&[&a, &a]).is_empty());
    }
}
