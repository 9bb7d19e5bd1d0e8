//! A short fingerprint of what a plan runs — its profile, nodes and edges, not the file name it
//! was lowered from — so two programs that read "the same recipe" (a verl job written by `wrlc
//! lower` and the `wrlc env serve` its episodes run in) can check that they really do.

use crate::model::Plan;

/// FNV-1a (64 bit) of the plan's profile, nodes and edges as JSON, in hex.
pub fn digest(plan: &Plan) -> String {
    let body =
        serde_json::json!({"profile": plan.profile, "nodes": plan.nodes, "edges": plan.edges});
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in body.to_string().bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_name_does_not_change_the_digest() {
        let a = Plan {
            version: 1,
            recipe: "a.wrl".into(),
            profile: None,
            nodes: vec![],
            edges: vec![],
        };
        let b = Plan { recipe: "/abs/a.wrl".into(), ..a.clone() };
        let c = Plan { profile: Some("smoke".into()), ..a.clone() };
        assert_eq!(digest(&a), digest(&b));
        assert_ne!(digest(&a), digest(&c));
        assert_eq!(digest(&a).len(), 16);
    }
}
