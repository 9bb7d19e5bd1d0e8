//! The plan as Graphviz DOT: one box per node (shaped by kind), one arrow per edge labelled
//! with the port it feeds. `wrlc plan --format dot FILE | dot -Tsvg > plan.svg`.

use std::fmt::Write as _;

use crate::model::{NodeKind, Plan};

fn shape(kind: NodeKind) -> &'static str {
    match kind {
        NodeKind::LoadModel => "cylinder",
        NodeKind::LoadDataset => "folder",
        NodeKind::Env | NodeKind::Agent | NodeKind::Reward => "note",
        NodeKind::Sft | NodeKind::RlPhase => "box",
        NodeKind::Checkpoint => "cylinder",
        NodeKind::Eval => "hexagon",
    }
}

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Renders a plan as a DOT digraph.
pub fn render_dot(plan: &Plan) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "digraph plan {{");
    let _ = writeln!(s, "  label=\"{}\";", esc(&plan.recipe));
    let _ = writeln!(s, "  rankdir=LR;");
    let _ = writeln!(s, "  node [fontname=\"Helvetica\", fontsize=10];");
    let _ = writeln!(s, "  edge [fontname=\"Helvetica\", fontsize=9];");
    for n in &plan.nodes {
        let mut label = format!("{}\\n{}", esc(&n.id), n.kind.word());
        if n.ctor != n.kind.word() {
            label.push_str(&format!(" {}", esc(&n.ctor)));
        }
        if n.kind == NodeKind::RlPhase {
            let it = n.params.get("iters").map(crate::text::show_val).unwrap_or_default();
            let h = n.params.get("horizon").map(crate::text::show_val).unwrap_or_default();
            label.push_str(&format!("\\n{} × {}", esc(&it), esc(&h)));
        }
        let style = if n.kind.trains() { ", style=bold" } else { "" };
        let _ = writeln!(
            s,
            "  \"{}\" [label=\"{label}\", shape={}{style}];",
            esc(&n.id),
            shape(n.kind)
        );
    }
    for e in &plan.edges {
        let _ = writeln!(
            s,
            "  \"{}\" -> \"{}\" [label=\"{}\"];",
            esc(&e.from),
            esc(&e.to),
            esc(&e.port)
        );
    }
    let _ = writeln!(s, "}}");
    s
}
