//! How episodes ended, counted from `trajectories.jsonl`: per RL iteration and per task
//! template (training episodes, and each evaluation's apart), by the classes of
//! [`super::chosen::class`].

use std::collections::{BTreeMap, BTreeSet};

use super::chosen::class;
use crate::rundir::records::TrajectoryLine;

/// A table of counts: one row per key, one column per class.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counts {
    /// The classes, `solved` first, the rest sorted.
    pub columns: Vec<String>,
    /// (row name, a count per column), in run order.
    pub rows: Vec<(String, Vec<u64>)>,
}

impl Counts {
    fn from_rows(rows: Vec<(String, BTreeMap<String, u64>)>) -> Counts {
        let classes: BTreeSet<&str> =
            rows.iter().flat_map(|(_, m)| m.keys().map(String::as_str)).collect();
        let mut columns: Vec<String> = classes.into_iter().map(str::to_string).collect();
        if let Some(i) = columns.iter().position(|c| c == "solved") {
            let s = columns.remove(i);
            columns.insert(0, s);
        }
        let rows = rows
            .into_iter()
            .map(|(name, m)| {
                let counts = columns.iter().map(|c| m.get(c).copied().unwrap_or(0)).collect();
                (name, counts)
            })
            .collect();
        Counts { columns, rows }
    }
}

/// The series name of a node id: `stage:online/phase:1` → `online phase 1`, `eval:x` → `x`.
pub fn node_name(id: &str) -> String {
    let rest = id.split_once(':').map_or(id, |(_, r)| r);
    match rest.split_once("/phase:") {
        Some((stage, p)) => format!("{stage} phase {p}"),
        None => rest.to_string(),
    }
}

fn is_eval(t: &TrajectoryLine) -> bool {
    t.node.starts_with("eval:")
}

/// Training episodes by RL iteration: a row per (phase, iteration), in run order.
pub fn by_iteration(trajs: &[TrajectoryLine]) -> Counts {
    let mut rows: Vec<(String, BTreeMap<String, u64>)> = Vec::new();
    for t in trajs.iter().filter(|t| !is_eval(t)) {
        let name = format!("{} iteration {}", node_name(&t.node), t.iter);
        if rows.last().is_none_or(|(n, _)| *n != name) {
            rows.push((name, BTreeMap::new()));
        }
        if let Some((_, m)) = rows.last_mut() {
            *m.entry(class(&t.trajectory).to_string()).or_default() += 1;
        }
    }
    Counts::from_rows(rows)
}

/// Template → class → episodes.
type ByTemplate = BTreeMap<String, BTreeMap<String, u64>>;

/// Episodes by class: a row for all training episodes, then one per evaluation.
pub fn by_source(trajs: &[TrajectoryLine]) -> Counts {
    let mut rows: Vec<(String, BTreeMap<String, u64>)> = Vec::new();
    for t in trajs {
        *row(&mut rows, source(t)).entry(class(&t.trajectory).to_string()).or_default() += 1;
    }
    training_first(&mut rows);
    Counts::from_rows(rows)
}

/// The row named `name`, appended (empty) the first time: rows stay in run order.
fn row<V: Default>(rows: &mut Vec<(String, V)>, name: String) -> &mut V {
    let at = match rows.iter().position(|(n, _)| *n == name) {
        Some(i) => i,
        None => {
            rows.push((name, V::default()));
            rows.len() - 1
        }
    };
    &mut rows[at].1
}

/// The training episodes' row first, then the evaluations in run order.
fn training_first<V>(rows: &mut [(String, V)]) {
    rows.sort_by_key(|(n, _)| *n != "training episodes");
}

/// `training episodes`, or `evaluation NAME`.
fn source(t: &TrajectoryLine) -> String {
    if is_eval(t) {
        format!("evaluation {}", node_name(&t.node))
    } else {
        "training episodes".to_string()
    }
}

/// Episodes by task template: one table for all training episodes, then one per evaluation.
pub fn by_template(trajs: &[TrajectoryLine]) -> Vec<(String, Counts)> {
    let mut groups: Vec<(String, ByTemplate)> = Vec::new();
    for t in trajs {
        let by_class =
            row(&mut groups, source(t)).entry(t.trajectory.template.clone()).or_default();
        *by_class.entry(class(&t.trajectory).to_string()).or_default() += 1;
    }
    training_first(&mut groups);
    groups.into_iter().map(|(g, rows)| (g, Counts::from_rows(rows.into_iter().collect()))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::chosen::tests::episode;
    use crate::rundir::records::Scored;

    fn line(node: &str, iter: u64, template: &str, reason: &str, success: bool) -> TrajectoryLine {
        TrajectoryLine {
            id: 0,
            node: node.into(),
            iter,
            group: 0,
            reward: Scored::Value(0.0),
            components: Default::default(),
            trajectory: episode(template, reason, success, 0),
            branch: None,
            screenshots: None,
            sequence: None,
        }
    }

    #[test]
    fn counts_classes_per_iteration_and_per_template() {
        let ls = [
            line("eval:after_sft", 0, "wiki_open", "max_steps", false),
            line("stage:online/phase:1", 1, "shop_price", "completed", true),
            line("stage:online/phase:1", 1, "wiki_open", "max_steps", false),
            line("stage:online/phase:1", 2, "shop_price", "completed", false),
            line("eval:after_rl", 0, "shop_price", "completed", true),
        ];
        let it = by_iteration(&ls);
        assert_eq!(it.columns, ["solved", "max_steps", "wrong_answer"]);
        assert_eq!(
            it.rows,
            vec![
                ("online phase 1 iteration 1".to_string(), vec![1, 1, 0]),
                ("online phase 1 iteration 2".to_string(), vec![0, 0, 1]),
            ]
        );
        let t = by_template(&ls);
        let groups: Vec<&str> = t.iter().map(|(g, _)| g.as_str()).collect();
        assert_eq!(groups, ["training episodes", "evaluation after_sft", "evaluation after_rl"]);
        assert_eq!(t[0].1.rows[0], ("shop_price".to_string(), vec![1, 0, 1]));
        assert_eq!(t[2].1.rows, vec![("shop_price".to_string(), vec![1])]);
        let s = by_source(&ls);
        assert_eq!(s.columns, ["solved", "max_steps", "wrong_answer"]);
        assert_eq!(s.rows[0], ("training episodes".to_string(), vec![1, 1, 1]));
        assert_eq!(s.rows[1], ("evaluation after_sft".to_string(), vec![0, 1, 0]));
    }
}
