//! The figures an engineer looks for first in each node (a model's id, a dataset's count, a
//! stage's lr, prompts × group, clip, epochs and batch, a reward's expression), as short
//! `name = value` lines for the DOT plan's boxes; the full parameter list goes in tooltips.

use crate::model::{Node, NodeKind};
use crate::text::{show_num, show_val};
use crate::value::{PExpr, PObj, PVal};

/// The longest value shown in a box; longer ones end in `…` (the tooltip has them whole).
const WIDTH: usize = 48;

/// The parameters a box shows, by kind, in this order (those the node has).
fn keys(kind: NodeKind) -> &'static [&'static str] {
    match kind {
        NodeKind::LoadModel => {
            &["id", "model", "base_url", "layers", "d_model", "context", "dtype"]
        }
        NodeKind::LoadDataset => &["count", "split", "path", "id", "sites", "parts", "kind"],
        NodeKind::Env => &["target", "concurrency", "viewport", "base_url"],
        NodeKind::Agent => &["max_turns", "max_response", "history", "weights"],
        NodeKind::Reward => &["level"],
        NodeKind::Sft => {
            &["lr", "epochs", "batch", "micro_batch", "schedule", "loss_on", "max_length"]
        }
        NodeKind::RlPhase => &[
            "lr",
            "clip",
            "ppo_epochs",
            "mini_batch",
            "kl",
            "policy_loss",
            "temperature",
            "schedule",
        ],
        NodeKind::Checkpoint => &["every"],
        NodeKind::Eval => &["metric", "k", "count", "max_steps", "temperature"],
    }
}

/// A value cut to [`WIDTH`] characters.
pub fn clip(s: &str) -> String {
    if s.chars().count() <= WIDTH {
        return s.to_string();
    }
    let mut out: String = s.chars().take(WIDTH - 1).collect();
    out.push('…');
    out
}

/// The box's lines for `node`: `(name, value)`, values in the recipe's notation.
pub fn figures(node: &Node) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let get = |k: &str| node.params.get(k);
    if node.kind == NodeKind::RlPhase {
        if let (Some(i), Some(h)) = (get("iters"), get("horizon")) {
            out.push(("iters × horizon".into(), format!("{} × {}", show_val(i), show_val(h))));
        }
        if let (Some(p), Some(g)) = (get("prompts"), get("group")) {
            let mut v = format!("{} × {}", show_val(p), show_val(g));
            if let (Some(a), Some(b)) = (p.num(), g.num()) {
                v.push_str(&format!(" = {} samples", show_num(a * b)));
            }
            out.push(("prompts × group".into(), v));
        }
    }
    if node.kind == NodeKind::Reward
        && let Some(PVal::Reward { expr }) = get("expr")
    {
        out.push(("expr".into(), clip(&compact_expr(expr))));
    }
    for k in keys(node.kind) {
        if let Some(v) = get(k) {
            let shown = match v {
                // A nested object shows its constructor; its fields are in the tooltip.
                PVal::Obj(o) if k == &"target" => format!("{}()", short(&o.ctor)),
                _ => show_val(v),
            };
            out.push(((*k).to_string(), clip(&shown)));
        }
    }
    out
}

/// The last segment of a qualified name: `std::rewards::judge` → `judge`.
fn short(ctor: &str) -> &str {
    ctor.rsplit("::").next().unwrap_or(ctor)
}

/// A reward expression as the recipe would write it in brief: a signal shows its short name
/// and, when it has one, its `model` (a judge's) or its only field.
pub fn compact_expr(e: &PExpr) -> String {
    match e {
        PExpr::Const { value } => show_num(*value),
        PExpr::Bool { value } => value.to_string(),
        PExpr::Signal { obj } => compact_signal(obj),
        PExpr::Reward { node } => format!("<{node}>"),
        PExpr::Unary { neg: true, arg } => format!("-{}", paren(arg)),
        PExpr::Unary { neg: false, arg } => format!("not {}", paren(arg)),
        PExpr::Binary { bin, lhs, rhs } => format!("{} {bin} {}", paren(lhs), paren(rhs)),
        PExpr::If { cond, then, otherwise } => format!(
            "if {} then {} else {}",
            compact_expr(cond),
            compact_expr(then),
            compact_expr(otherwise)
        ),
    }
}

fn compact_signal(o: &PObj) -> String {
    let name = short(&o.ctor);
    let shown = match (o.fields.get("model"), o.fields.len()) {
        (_, 0) => String::new(),
        (Some(m), 1) => show_val(m),
        (Some(m), _) => format!("model = {}, …", show_val(m)),
        (None, 1) => o.fields.values().map(show_val).collect::<String>(),
        (None, _) => "…".into(),
    };
    format!("{name}({shown})")
}

fn paren(e: &PExpr) -> String {
    match e {
        PExpr::Binary { .. } | PExpr::If { .. } => format!("({})", compact_expr(e)),
        PExpr::Const { value } if *value < 0.0 => format!("({})", show_num(*value)),
        PExpr::Const { .. }
        | PExpr::Bool { .. }
        | PExpr::Signal { .. }
        | PExpr::Reward { .. }
        | PExpr::Unary { .. } => compact_expr(e),
    }
}
