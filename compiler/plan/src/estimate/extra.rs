//! The rollouts an RL phase makes besides those it trains on, as their own parts of the
//! estimate: the groups drawn again for dropped ones (`refill`, DAPO's dynamic sampling) and
//! the in-training validation passes (`validate`), each with its env steps, tokens and judge
//! calls, so that `wrlc estimate` says which part of a total is training, which refill and
//! which validation.

use super::figures::{
    add_judges, agent_turns, dataset_size, iters_before, per_episode, phase_turns, refilled,
    reward_judges, tokens_per_step,
};
use super::inputs::{self, PhaseIn};
use super::{StageEstimate, empty, input, mul};
use crate::model::{Node, Plan};
use crate::params::{OrAgent, OrHorizon, OrOff, OrTraining, RewardRef};

/// The refilled groups of an RL phase (`None` when it draws none).
pub(super) fn refill(plan: &Plan, n: &Node, trained: &StageEstimate) -> Option<StageEstimate> {
    let p: PhaseIn = inputs::read(n);
    let extra = refilled(&p, trained.trajectories);
    if extra == Some(0) {
        return None;
    }
    let mut e = empty(n);
    e.id = format!("refill:{}", n.id);
    e.kind = "refill".into();
    e.trajectories = extra;
    let turns = phase_turns(plan, n, &p);
    e.max_env_steps = mul(extra, turns);
    // Each episode capped at the agent's `trajectory_tokens`, as the trained ones are.
    let agent = input(plan, &n.id, "agent");
    e.max_generated_tokens = mul(extra, per_episode(agent, turns, tokens_per_step(agent)));
    add_judges(&mut e, reward_judges(plan, input(plan, &n.id, "reward")), extra);
    Some(e)
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
    let p: PhaseIn = inputs::read(n);
    let Some(OrOff::Value(v)) = &p.validate else { return None };
    let v = &v.body;
    let mut e = empty(n);
    e.id = format!("validation:{}", n.id);
    e.kind = "validation".into();
    let before = iters_before(plan, &p);
    let first = before == Some(0);
    let n_passes = match (before, p.iters, v.every) {
        (Some(b), Some(i), Some(every)) => {
            let bt = v.before_training.unwrap_or(false);
            Some(passes(b, i.0, every.0, bt, first))
        }
        _ => None,
    };
    let tasks = input(plan, &n.id, "validate.tasks").and_then(|d| dataset_size(plan, d));
    e.trajectories = mul(mul(n_passes, tasks), v.k.map(u64::from));
    let steps = match v.max_steps {
        Some(OrHorizon::Value(s)) => Some(u64::from(s.0)),
        Some(OrHorizon::Horizon) | None => p.horizon.map(|h| u64::from(h.0)),
    };
    let agent = input(plan, &n.id, "agent");
    let steps = wrl_check::turns::turns_run(steps, agent_turns(agent));
    e.max_env_steps = mul(e.trajectories, steps);
    let per_step = match (v.max_response, agent) {
        (Some(OrAgent::Value(r)), Some(a)) if a.ctor == "react" => Some(r.0),
        _ => tokens_per_step(agent),
    };
    // Each episode capped at the agent's `trajectory_tokens`, as training's and an
    // evaluation's are (ARPO-like: 10 turns × 4,000 reply tokens, at most 10,000 an episode).
    e.max_generated_tokens = mul(e.trajectories, per_episode(agent, steps, per_step));
    let judge = match &v.judge {
        Some(OrTraining::Value(RewardRef::Node(r))) => plan.node(r.id()),
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
