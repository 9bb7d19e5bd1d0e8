//! The calls a simulated search engine (`simulated_search(engine)`, ZeroSearch) gets, counted
//! with the judge calls under its model (as a reward endpoint's are), so that `wrlc estimate`
//! and `--prices` see every call to a served model: one per query of a `search` call, at most
//! one call an env step.

use std::collections::BTreeMap;

use super::figures::Asks;
use super::{Count, StageEstimate, input};
use crate::model::{Node, Plan};
use crate::value::PVal;

/// `e` (the figures of node `n`'s episodes, in the env at `n`'s `port` or else its agent's)
/// with the calls of a simulated search engine that env searches added.
pub(super) fn with_calls(
    plan: &Plan,
    n: &Node,
    port: Option<&str>,
    mut e: StageEstimate,
) -> StageEstimate {
    let steps = e.max_env_steps;
    add_engine_calls(&mut e, env_of(plan, n, port), steps);
    e
}

/// Adds the engine calls of `steps` env steps in env `env` (if it searches a simulated engine)
/// to `e`: one a step where `search` takes one query, unknown where it takes a list.
fn add_engine_calls(e: &mut StageEstimate, env: Option<&Node>, steps: Count) {
    let Some(env) = env else { return };
    let Some(PVal::Obj(target)) = env.params.get("target") else { return };
    if target.ctor != "simulated_search" {
        return;
    }
    let model = match target.fields.get("engine") {
        Some(PVal::Ref { node }) => node.clone(),
        _ => "unknown".to_string(),
    };
    let one_query = match env.params.get("tools") {
        Some(PVal::Obj(t)) => t
            .tools
            .iter()
            .filter(|t| t.name == "search")
            .all(|t| t.params.iter().all(|p| !p.ty.starts_with("list"))),
        _ => false,
    };
    let by = BTreeMap::from([(model, Asks { calls: 1, tokens: None })]);
    super::figures::add_judges(e, by, if one_query { steps } else { None });
}

/// The env episodes of node `n` run in: the env at its `port` (an evaluation's or a
/// validation's `env = other`) when it has one, else its agent's.
fn env_of<'a>(plan: &'a Plan, n: &Node, port: Option<&str>) -> Option<&'a Node> {
    port.and_then(|p| input(plan, &n.id, p))
        .or_else(|| input(plan, &n.id, "agent").and_then(|a| input(plan, &a.id, "env")))
}
