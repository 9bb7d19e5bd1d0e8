//! The rollouts an RL phase makes besides those it trains on, as their own parts of the
//! estimate: the groups drawn again for dropped ones (`refill`, DAPO's dynamic sampling) and
//! the in-training validation passes (`validate`), each with its env steps, tokens and judge
//! calls, so that `wrlc estimate` says which part of a total is training, which refill and
//! which validation.

use super::figures::{add_judges, dataset_size, refilled, reward_judges, tokens_per_step};
use super::{Count, StageEstimate, count, empty, input, mul};
use crate::model::{Node, NodeKind, Plan};
use crate::value::PVal;

/// The refilled groups of an RL phase (`None` when it draws none).
pub(super) fn refill(plan: &Plan, n: &Node, trained: &StageEstimate) -> Option<StageEstimate> {
    let extra = refilled(n, trained.trajectories);
    if extra == Some(0) {
        return None;
    }
    let mut e = empty(n);
    e.id = format!("refill:{}", n.id);
    e.kind = "refill".into();
    e.trajectories = extra;
    let agent_turns = input(plan, &n.id, "agent").and_then(|a| count(a.params.get("max_turns")));
    e.max_env_steps =
        mul(extra, wrl_check::turns::turns_run(count(n.params.get("horizon")), agent_turns));
    e.max_generated_tokens = mul(e.max_env_steps, tokens_per_step(input(plan, &n.id, "agent")));
    add_judges(&mut e, reward_judges(plan, input(plan, &n.id, "reward")), extra);
    Some(e)
}

/// The iterations of a stage before this phase (its earlier phases'), so that `every` counts
/// across phases as the stage does (a critic's warm-up counts the same way).
pub(super) fn iters_before(plan: &Plan, n: &Node) -> Count {
    let stage = n.params.get("stage").and_then(PVal::as_str);
    let phase = count(n.params.get("phase"))?;
    let mut sum = Some(0);
    for other in plan.nodes.iter().filter(|o| o.kind == NodeKind::RlPhase) {
        let same = other.params.get("stage").and_then(PVal::as_str) == stage;
        if same && count(other.params.get("phase")).is_some_and(|p| p < phase) {
            sum = super::add(sum, count(other.params.get("iters")));
        }
    }
    sum
}

/// Validation passes in one phase: after each iteration of the stage whose number is a
/// multiple of `every`, plus one before the stage's first iteration with `before_training`.
pub(super) fn passes(
    before: u64,
    iters: u64,
    every: u64,
    before_training: bool,
    first: bool,
) -> u64 {
    let after = match ((before + iters).checked_div(every), before.checked_div(every)) {
        (Some(end), Some(start)) => end - start,
        _ => 0,
    };
    after + u64::from(before_training && first)
}

/// The validation passes of an RL phase (`None` without `validate`).
pub(super) fn validation(plan: &Plan, n: &Node) -> Option<StageEstimate> {
    let v = match n.params.get("validate") {
        Some(v @ PVal::Obj(_)) => v,
        _ => return None,
    };
    let mut e = empty(n);
    e.id = format!("validation:{}", n.id);
    e.kind = "validation".into();
    let before = iters_before(plan, n);
    let first = before == Some(0);
    let n_passes = match (before, count(n.params.get("iters")), count(v.field("every"))) {
        (Some(b), Some(i), Some(every)) => {
            let bt = v.field("before_training").and_then(PVal::as_bool).unwrap_or(false);
            Some(passes(b, i, every, bt, first))
        }
        _ => None,
    };
    let tasks = input(plan, &n.id, "validate.tasks").and_then(|d| dataset_size(plan, d));
    e.trajectories = mul(mul(n_passes, tasks), count(v.field("k")));
    let steps = match v.field("max_steps") {
        Some(s @ PVal::Qty { .. }) => count(Some(s)),
        _ => count(n.params.get("horizon")),
    };
    let agent = input(plan, &n.id, "agent");
    let steps =
        wrl_check::turns::turns_run(steps, agent.and_then(|a| count(a.params.get("max_turns"))));
    e.max_env_steps = mul(e.trajectories, steps);
    let per_step = match (v.field("max_response"), agent) {
        (Some(r @ PVal::Qty { .. }), Some(a)) if a.ctor == "react" => count(Some(r)),
        _ => tokens_per_step(agent),
    };
    e.max_generated_tokens = mul(e.max_env_steps, per_step);
    let judge = match v.field("judge") {
        Some(PVal::Ref { node }) => plan.node(node),
        _ => input(plan, &n.id, "reward"),
    };
    let traj = e.trajectories;
    add_judges(&mut e, reward_judges(plan, judge), traj);
    Some(e)
}

#[cfg(test)]
mod tests {
    use super::passes;

    #[test]
    fn passes_count_across_phases() {
        // OpenWebRL: every 5 of 90 + 50 iterations, one pass before training: 19 + 10.
        assert_eq!(passes(0, 90, 5, true, true), 19);
        assert_eq!(passes(90, 50, 5, true, false), 10);
        // A phase boundary that is not a multiple of `every`.
        assert_eq!(passes(0, 7, 5, false, true), 1);
        assert_eq!(passes(7, 7, 5, false, false), 1); // iteration 10 only
        assert_eq!(passes(0, 3, 0, false, true), 0);
    }
}
