//! The resolved configuration a run executed — every node of its `plan.json` with every
//! parameter, defaults filled — in the recipe's own notation, and the differences between the
//! configurations of several runs.

use std::collections::{BTreeMap, BTreeSet};

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

/// A parameter that is not the same in every run: its node, its name, and each run's value
/// (`None` where that run's plan has no such node or parameter).
#[derive(Clone, Debug, PartialEq)]
pub struct Difference {
    pub node: String,
    pub param: String,
    pub values: Vec<Option<String>>,
}

/// The parameters (and the recipe and profile) that differ between runs, in node order of the
/// first run that has the node.
pub fn differences(runs: &[&[NodeConfig]], heads: &[(String, Option<String>)]) -> Vec<Difference> {
    let mut out = Vec::new();
    let recipes: Vec<Option<String>> = heads.iter().map(|(r, _)| Some(r.clone())).collect();
    let profiles: Vec<Option<String>> =
        heads.iter().map(|(_, p)| Some(p.clone().unwrap_or_else(|| "(none)".into()))).collect();
    for (param, values) in [("recipe", recipes), ("profile", profiles)] {
        if !all_same(&values) {
            out.push(Difference { node: "(run)".into(), param: param.into(), values });
        }
    }
    let mut order: Vec<&str> = Vec::new();
    let mut seen = BTreeSet::new();
    for run in runs {
        for n in run.iter() {
            if seen.insert(n.id.as_str()) {
                order.push(n.id.as_str());
            }
        }
    }
    let maps: Vec<BTreeMap<&str, &NodeConfig>> =
        runs.iter().map(|r| r.iter().map(|n| (n.id.as_str(), n)).collect()).collect();
    for id in order {
        let of: Vec<Option<&&NodeConfig>> = maps.iter().map(|m| m.get(id)).collect();
        if of.iter().any(Option::is_none) {
            let values = of.iter().map(|n| n.map(|n| n.ctor.clone())).collect();
            out.push(Difference { node: id.into(), param: "(node)".into(), values });
            continue;
        }
        let params: BTreeSet<&str> =
            of.iter().flatten().flat_map(|n| n.params.iter().map(|(k, _)| k.as_str())).collect();
        for p in params {
            let values: Vec<Option<String>> = of
                .iter()
                .map(|n| {
                    n.and_then(|n| n.params.iter().find(|(k, _)| k == p).map(|(_, v)| v.clone()))
                })
                .collect();
            if !all_same(&values) {
                out.push(Difference { node: id.into(), param: p.into(), values });
            }
        }
    }
    out
}

fn all_same(v: &[Option<String>]) -> bool {
    v.windows(2).all(|w| w[0] == w[1])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: &str, params: &[(&str, &str)]) -> NodeConfig {
        NodeConfig {
            id: id.into(),
            ctor: "grpo".into(),
            params: params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn lists_only_what_differs() {
        let a = [node("stage:online", &[("group", "4"), ("lr", "1e-4")]), node("eval:x", &[])];
        let b = [node("stage:online", &[("group", "8"), ("lr", "1e-4")])];
        let heads = [("recipes/q.wrl".to_string(), None), ("recipes/q.wrl".to_string(), None)];
        let d = differences(&[&a, &b], &heads);
        assert_eq!(d.len(), 2, "{d:?}");
        assert_eq!(
            (d[0].param.as_str(), &d[0].values),
            ("group", &vec![Some("4".to_string()), Some("8".to_string())])
        );
        assert_eq!((d[1].node.as_str(), d[1].param.as_str()), ("eval:x", "(node)"));
        assert_eq!(d[1].values[1], None);
        assert!(differences(&[&a, &a], &heads).is_empty());
    }
}
