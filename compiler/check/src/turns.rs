//! The one rule for how many turns an episode can run: a phase's (or an evaluation's) step
//! budget, cut at the agent's `max_turns`. The checker's context budget (E0404), the planner's
//! estimate and the runtime's rollouts all call this, so the three can never disagree.

/// The turns an episode runs: its step budget (`horizon`, an eval's `max_steps`), cut at the
/// agent's `max_turns`; a missing budget leaves the agent's limit.
pub fn turns_run(budget: Option<u64>, max_turns: Option<u64>) -> Option<u64> {
    match (budget, max_turns) {
        (Some(b), Some(t)) => Some(b.min(t)),
        (b, t) => b.or(t),
    }
}

#[cfg(test)]
mod tests {
    use super::turns_run;

    #[test]
    fn the_agent_limit_cuts_the_budget() {
        assert_eq!(turns_run(Some(30), Some(20)), Some(20));
        assert_eq!(turns_run(Some(15), Some(20)), Some(15));
        assert_eq!(turns_run(None, Some(20)), Some(20));
        assert_eq!(turns_run(Some(7), None), Some(7));
        assert_eq!(turns_run(None, None), None);
    }
}
