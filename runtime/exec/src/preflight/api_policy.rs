//! A ReAct agent whose policy is an `api(…)` model (`agent::api_policy`): what such a policy
//! cannot be given, each refused at its field — tag-style calls (one sequence continued token
//! by token, which a chat endpoint does not do) and an evaluation's `top_k` or
//! `repetition_penalty` (the OpenAI chat protocol has neither). Screenshots are sent to it as
//! image parts; `vision.rs` holds the rules for a policy shown them.

use wrl_plan::Node;
use wrl_plan::params::{self, Agent, Params, TypedPlan};

use super::refuse::unsupported;
use crate::error::RunError;

/// Whether `r`'s policy is an `api(…)` model.
fn served(plan: &TypedPlan<'_>, r: &params::React) -> bool {
    matches!(plan.get(r.policy.id()), Some(Params::Model(params::Model::Api(_))))
}

/// What ReAct agent `n` asks of its `api(…)` policy that this runtime cannot send.
pub(super) fn agent(plan: &TypedPlan<'_>, n: &Node, r: &params::React) -> Vec<RunError> {
    if !served(plan, r) {
        return Vec::new();
    }
    let mut errs = Vec::new();
    if r.calls.tags().is_some() {
        errs.push(unsupported(
            n,
            format!(
                "agent `{}`: tag-style calls continue one sequence token by token, which a chat \
                 endpoint does not; an `api(…)` policy calls its tools as the endpoint's \
                 `tool_calls`",
                n.decl
            ),
            "set `calls = hermes`, or give the agent an `hf(…)` policy",
            "calls",
        ));
    }
    errs
}

/// What evaluation `n` asks of the decoding of an `api(…)` policy that the chat protocol has
/// no field for.
pub(super) fn eval(plan: &TypedPlan<'_>, n: &Node, e: &params::Evaluate) -> Vec<RunError> {
    let Some(Params::Agent(Agent::React(r))) = plan.get(e.agent.id()) else { return Vec::new() };
    if !served(plan, r) || e.checkpoint.is_some() {
        return Vec::new();
    }
    let mut errs = Vec::new();
    if e.top_k != 0 {
        errs.push(unsupported(
            n,
            format!(
                "eval `{}`: `top_k = {}` has no field in the OpenAI chat protocol its `api(…)` \
                 policy is called with",
                n.decl, e.top_k
            ),
            "set `top_k = 0`",
            "top_k",
        ));
    }
    if (e.repetition_penalty - 1.0).abs() > f64::EPSILON {
        errs.push(unsupported(
            n,
            format!(
                "eval `{}`: `repetition_penalty = {}` has no field in the OpenAI chat protocol \
                 its `api(…)` policy is called with",
                n.decl, e.repetition_penalty
            ),
            "set `repetition_penalty = 1.0`",
            "repetition_penalty",
        ));
    }
    errs
}
