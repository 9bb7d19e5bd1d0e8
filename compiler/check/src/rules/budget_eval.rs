//! The context budget of an evaluation's turns (E0404), by the rule RL stages are held to
//! (`budget.rs`): an evaluation runs its agent up to its own `max_steps` (cut at the agent's
//! `max_turns`), with its own `max_response` and `trajectory_tokens` where it sets them, so a
//! baseline that is only evaluated, or an evaluation longer than any training horizon, is judged
//! before it runs rather than when its prompts outgrow the context. An evaluation in another env
//! (`env = other`) is judged with that env's observations, step text and viewport.

use std::collections::BTreeMap;

use wrl_diagnostics::Diagnostic;

use super::budget::{Horizon, Whose, checks_overflow, report, turns_in};
use super::{Ctx, RL_CTORS, num};
use crate::value::Val;

pub(super) fn check(ctx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    // The turns each agent's RL stages already judge, by the agent's name.
    let mut judged: BTreeMap<&str, f64> = BTreeMap::new();
    for (_, o) in ctx.stages().filter(|(_, o)| RL_CTORS.contains(&o.ctor.as_str())) {
        let Some(name) = o.fields.get("agent").and_then(Ctx::ref_name) else { continue };
        let longest = o.fields.get("phases").map_or(0.0, longest_horizon);
        let slot = judged.entry(name).or_insert(0.0);
        *slot = slot.max(longest);
    }
    for d in ctx.recipe.decls.iter().filter(|d| d.kind == wrl_syntax::ast::DeclKind::Eval) {
        let crate::value::V::Obj(e) = &d.value.v else { continue };
        let Some(agent_val) = e.fields.get("agent") else { continue };
        let Some(agent) = ctx.obj(agent_val) else { continue };
        // `env = agent` (the default) is the agent's own env; `env = other` another one.
        let elsewhere = e.fields.get("env").and_then(|v| ctx.obj(v)).filter(|o| o.kind == "env");
        let (Some(steps_val), Some(turns_val)) =
            (e.fields.get("max_steps"), agent.fields.get("max_turns"))
        else {
            continue;
        };
        let (Some(steps), Some(limit)) = (num(steps_val), num(turns_val)) else { continue };
        let run = steps.min(limit);
        let upto = if checks_overflow(agent) { f64::INFINITY } else { 1.0 };
        let overrides = |k: &str| e.fields.get(k).and_then(num);
        let (max_response, trajectory) =
            (overrides("max_response"), overrides("trajectory_tokens"));
        let already = Ctx::ref_name(agent_val).and_then(|a| judged.get(a)).copied().unwrap_or(0.0);
        if run.min(upto) <= already.min(upto)
            && max_response.is_none()
            && trajectory.is_none()
            && elsewhere.is_none()
        {
            continue;
        }
        let at: &Val = if steps <= limit { steps_val } else { turns_val };
        let horizon = [Horizon { phase: 0, turns: run, at, cut: steps > limit }];
        for mut turn in turns_in(ctx, agent, elsewhere) {
            if let Some(m) = max_response {
                turn.ep.max_response = m;
            }
            if trajectory.is_some() {
                turn.ep.trajectory = trajectory;
            }
            report(ctx, (Whose::Eval(&d.name), d.name_span), &turn, (&horizon, upto), out);
        }
    }
}

/// The longest horizon of an RL stage's `phases` (0 where none is known).
fn longest_horizon(phases: &Val) -> f64 {
    let crate::value::V::List { items } = &phases.v else { return 0.0 };
    items.iter().filter_map(|p| p.field("horizon").and_then(num)).fold(0.0, f64::max)
}
