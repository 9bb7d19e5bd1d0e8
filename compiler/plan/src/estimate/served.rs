//! The calls a ReAct agent's `api(…)` policy gets when an evaluation runs it (a baseline
//! served by a chat endpoint): one chat completion a turn, so at most one per env step, counted
//! with the judge calls under its model, so that `wrlc estimate` and `--prices` see every call
//! to a served model.

use std::collections::BTreeMap;

use super::figures::Asks;
use super::{StageEstimate, input};
use crate::model::{Node, Plan};

/// `e` (evaluation `n`'s figures) with its served policy's calls added, when its agent's policy
/// is an `api(…)` model that no stage trained (the evaluation has no checkpoint).
pub(super) fn with_policy_calls(plan: &Plan, n: &Node, mut e: StageEstimate) -> StageEstimate {
    if input(plan, &n.id, "checkpoint").is_some() {
        return e;
    }
    let Some(agent) = input(plan, &n.id, "agent") else { return e };
    let Some(policy) = input(plan, &agent.id, "policy").filter(|m| m.ctor == "api") else {
        return e;
    };
    let by = BTreeMap::from([(policy.id.clone(), Asks { calls: 1, tokens: None })]);
    let steps = e.max_env_steps;
    super::figures::add_judges(&mut e, by, steps);
    e
}
