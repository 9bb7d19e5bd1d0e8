//! What differs between two plans, field by field: the nodes only one has, every leaf
//! parameter whose value differs (records and constructors' objects opened into
//! `field.sub`, values shown with their units as the text plan shows them), and the estimate's
//! figures that change as a consequence. Where each value came from (a stdlib default, the
//! recipe, a profile, `--set`) is the caller's to add: the plan does not record it.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::estimate::{Count, Estimate, Totals};
use crate::model::{Node, Plan};
use crate::text::show_val;
use crate::value::{Expr, PExpr, PObj, PVal};

/// One parameter whose value differs (`None`: the plan has no such parameter).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FieldDiff {
    pub node: String,
    pub field: String,
    pub a: Option<String>,
    pub b: Option<String>,
}

/// One figure of the estimate that differs (`None`: unknown).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FigureDiff {
    /// `trajectories`, `refill.trajectories`, `stage:online/phase:1.judge_calls_max`, …
    pub figure: String,
    pub a: Count,
    pub b: Count,
}

/// Everything that differs between plan A and plan B.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PlanDiff {
    pub only_a: Vec<String>,
    pub only_b: Vec<String>,
    pub fields: Vec<FieldDiff>,
    pub figures: Vec<FigureDiff>,
}

impl PlanDiff {
    /// Whether the plans are the same plan.
    pub fn is_empty(&self) -> bool {
        self.only_a.is_empty() && self.only_b.is_empty() && self.fields.is_empty()
    }
}

/// One parameter across several plans that is not the same in all of them: each plan's value
/// (`None`: that plan has no such parameter). `field` is `(node)` for a node some plans lack
/// (its values are the constructors), `(constructor)` for one built by another constructor.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub node: String,
    pub field: String,
    pub values: Vec<Option<String>>,
}

/// Every parameter that differs across `plans`, in node order of the first plan that has the
/// node, then by field. A field of an object or record that a plan lacks is left out where the
/// object's own row already differs.
pub fn rows(plans: &[&Plan]) -> Vec<Row> {
    let mut order: Vec<&str> = Vec::new();
    for p in plans {
        for n in &p.nodes {
            if !order.contains(&n.id.as_str()) {
                order.push(&n.id);
            }
        }
    }
    let mut out = Vec::new();
    for id in order {
        let nodes: Vec<Option<&Node>> = plans.iter().map(|p| p.node(id)).collect();
        let row = |field: &str, values: Vec<Option<String>>| Row {
            node: id.to_string(),
            field: field.to_string(),
            values,
        };
        if nodes.iter().any(Option::is_none) {
            out.push(row("(node)", nodes.iter().map(|n| n.map(|n| n.ctor.clone())).collect()));
            continue;
        }
        let ctors: Vec<Option<String>> = nodes.iter().map(|n| n.map(|n| n.ctor.clone())).collect();
        if !same(&ctors) {
            out.push(row("(constructor)", ctors));
        }
        let leaves: Vec<BTreeMap<String, String>> =
            nodes.iter().flatten().map(|n| leaves(n)).collect();
        let keys: BTreeSet<&String> = leaves.iter().flat_map(|l| l.keys()).collect();
        let mut changed: Vec<String> = Vec::new();
        for k in keys {
            let values: Vec<Option<String>> = leaves.iter().map(|l| l.get(k).cloned()).collect();
            if same(&values) {
                continue;
            }
            let parent = changed.iter().any(|c| k.starts_with(&format!("{c}.")));
            if parent && values.iter().any(Option::is_none) {
                continue;
            }
            changed.push(k.clone());
            out.push(row(k, values));
        }
    }
    out
}

fn same(v: &[Option<String>]) -> bool {
    v.windows(2).all(|w| w[0] == w[1])
}

/// The differences of `a` and `b`, and of their estimates.
pub fn diff(a: &Plan, b: &Plan) -> PlanDiff {
    let mut out = PlanDiff::default();
    for r in rows(&[a, b]) {
        let [va, vb] = [r.values[0].clone(), r.values[1].clone()];
        if r.field == "(node)" {
            match (va, vb) {
                (Some(_), None) => out.only_a.push(r.node),
                (None, Some(_)) => out.only_b.push(r.node),
                _ => {}
            }
            continue;
        }
        out.fields.push(FieldDiff { node: r.node, field: r.field, a: va, b: vb });
    }
    out.figures = figures(&crate::estimate(a, None), &crate::estimate(b, None));
    out
}

/// The differences as `wrlc diff` prints them: the two inputs (`head_a`, `head_b`), the nodes
/// only one has, each field with both values and where each came from (`source(0 | 1, node,
/// field)`), and the estimate's figures that change.
pub fn render_text(
    head_a: &str,
    head_b: &str,
    d: &PlanDiff,
    source: &dyn Fn(usize, &str, &str) -> String,
) -> String {
    let mut s = format!("A  {head_a}\nB  {head_b}\n");
    if d.is_empty() {
        s.push_str("\nthe same plan\n");
        return s;
    }
    for (which, ids) in [("A", &d.only_a), ("B", &d.only_b)] {
        if !ids.is_empty() {
            s.push_str(&format!("\nnodes only in {which}: {}\n", ids.join(", ")));
        }
    }
    let value = |side: usize, v: &Option<String>, node: &str, field: &str| match v {
        Some(v) => format!("{v} ({})", source(side, node, field)),
        None => "(absent)".to_string(),
    };
    let mut node = "";
    for f in &d.fields {
        if f.node != node {
            s.push_str(&format!("\n{}\n", f.node));
            node = &f.node;
        }
        s.push_str(&format!(
            "  {}: {} -> {}\n",
            f.field,
            value(0, &f.a, &f.node, &f.field),
            value(1, &f.b, &f.node, &f.field)
        ));
    }
    if !d.figures.is_empty() {
        s.push_str("\nestimate\n");
        let show = |c: Count| c.map_or("?".to_string(), crate::estimate::group_digits);
        for f in &d.figures {
            s.push_str(&format!("  {}: {} -> {}\n", f.figure, show(f.a), show(f.b)));
        }
    }
    s
}

/// A node's leaf parameters, each as the text plan shows it: a record's and an object's
/// fields opened (`timeout.step`, `schedule.warmup`, with `{…}` or the object's constructor at
/// `timeout` and `schedule`), a reward expression as its shape and its signals' fields, lists
/// whole.
fn leaves(n: &Node) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (k, v) in &n.params {
        open(k, v, &mut out, 0);
    }
    out
}

fn open(path: &str, v: &PVal, out: &mut BTreeMap<String, String>, depth: usize) {
    match v {
        PVal::Record { fields } if depth < 8 => {
            out.insert(path.to_string(), "{…}".to_string());
            for (k, f) in fields {
                open(&format!("{path}.{k}"), f, out, depth + 1);
            }
        }
        PVal::Obj(o) if depth < 8 && o.modules.is_empty() && o.tools.is_empty() => {
            out.insert(path.to_string(), format!("{}(…)", o.ctor));
            for (k, f) in &o.fields {
                open(&format!("{path}.{k}"), f, out, depth + 1);
            }
        }
        PVal::Reward { expr } if depth < 8 => {
            // The expression's shape, then each signal's fields (`expr.judge#2.timeout`).
            out.insert(path.to_string(), show_val(&PVal::Reward { expr: Box::new(shape(expr)) }));
            for (i, sig) in expr.signals().into_iter().enumerate() {
                let short = sig.ctor.rsplit("::").next().unwrap_or(&sig.ctor);
                for (k, f) in &sig.fields {
                    open(&format!("{path}.{short}#{}.{k}", i + 1), f, out, depth + 1);
                }
            }
        }
        other => {
            out.insert(path.to_string(), show_val(other));
        }
    }
}

/// An expression with its signals' fields left out: its shape.
fn shape(e: &PExpr) -> PExpr {
    let b = |e: &PExpr| Box::new(shape(e));
    match e {
        Expr::Signal { obj } => {
            Expr::Signal { obj: PObj { fields: BTreeMap::new(), ..obj.clone() } }
        }
        Expr::Unary { neg, arg } => Expr::Unary { neg: *neg, arg: b(arg) },
        Expr::Binary { bin, lhs, rhs } => Expr::Binary { bin: *bin, lhs: b(lhs), rhs: b(rhs) },
        Expr::If { cond, then, otherwise } => {
            Expr::If { cond: b(cond), then: b(then), otherwise: b(otherwise) }
        }
        Expr::Const { .. } | Expr::Bool { .. } | Expr::Reward { .. } => e.clone(),
    }
}

/// The estimate's figures that differ: the training totals, each part's, and each node's.
fn figures(a: &Estimate, b: &Estimate) -> Vec<FigureDiff> {
    let mut out = Vec::new();
    let mut push = |figure: String, x: Count, y: Count| {
        if x != y {
            out.push(FigureDiff { figure, a: x, b: y });
        }
    };
    let totals = |t: &Totals| -> Vec<(&'static str, Count)> {
        vec![
            ("trajectories", t.trajectories),
            ("max_env_steps", t.max_env_steps),
            ("max_generated_tokens", t.max_generated_tokens),
            ("judge_calls_max", t.judge_calls_max),
            ("sft_examples", t.sft_examples),
            ("sft_max_tokens", t.sft_max_tokens),
            ("optimizer_steps", t.optimizer_steps),
            ("critic_steps", t.critic_steps),
            ("generated_tasks", t.generated_tasks),
            ("branches", t.branches),
        ]
    };
    for (part, ta, tb) in [
        ("", a.training(), b.training()),
        ("refill.", a.refill.clone(), b.refill.clone()),
        ("validation.", a.validation.clone(), b.validation.clone()),
        ("evaluation.", a.evaluation.clone(), b.evaluation.clone()),
    ] {
        for ((name, x), (_, y)) in totals(&ta).into_iter().zip(totals(&tb)) {
            push(format!("{part}{name}"), x, y);
        }
    }
    let judges = |e: &Estimate| -> BTreeMap<String, Count> {
        let mut m: BTreeMap<String, Count> = BTreeMap::new();
        for s in &e.stages {
            for (model, c) in &s.judge_calls_by_model {
                let slot = m.entry(model.clone()).or_insert(Some(0));
                *slot = crate::estimate::add(*slot, *c);
            }
        }
        m
    };
    let (ja, jb) = (judges(a), judges(b));
    for model in ja.keys().chain(jb.keys()).collect::<BTreeSet<_>>() {
        let get = |m: &BTreeMap<String, Count>| m.get(model).copied().unwrap_or(Some(0));
        push(format!("judge_calls[{model}]"), get(&ja), get(&jb));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NodeKind;

    fn node(id: &str, params: &[(&str, PVal)]) -> Node {
        Node {
            id: id.into(),
            kind: NodeKind::Reward,
            decl: id.into(),
            ctor: "reward".into(),
            alias_of: None,
            doc: None,
            params: params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
        }
    }

    #[test]
    fn differences_are_listed_leaf_by_leaf_with_units() {
        let qty = |v: f64, u: &str| PVal::Qty { value: v, unit: u.into() };
        let timeout = |s: f64| PVal::Record {
            fields: [("step".to_string(), qty(s, "s")), ("task".into(), qty(60.0, "s"))].into(),
        };
        let plan = |nodes: Vec<Node>| Plan {
            version: 1,
            recipe: "r.wrl".into(),
            profile: None,
            variant: None,
            nodes,
            edges: vec![],
            claims: vec![],
        };
        let a = plan(vec![node("x", &[("timeout", timeout(10.0))]), node("gone", &[])]);
        let b = plan(vec![node("x", &[("timeout", timeout(20.0))]), node("new", &[])]);
        let d = diff(&a, &b);
        assert_eq!(d.only_a, vec!["gone".to_string()]);
        assert_eq!(d.only_b, vec!["new".to_string()]);
        assert_eq!(
            d.fields,
            vec![FieldDiff {
                node: "x".into(),
                field: "timeout.step".into(),
                a: Some("10 s".into()),
                b: Some("20 s".into()),
            }]
        );
        assert!(!d.is_empty());
        assert!(diff(&a, &a).is_empty());
    }
}
