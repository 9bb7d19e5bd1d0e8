//! A ReAct agent's action window (`actions = K`) shapes the one-message prompt of `history =
//! action_only`, the list of actions so far; with any other history, or with tag-style calls
//! (whose one sequence is the history), nothing lists the actions and the window would
//! silently do nothing (E0423).

use wrl_diagnostics::Diagnostic;

use super::{Ctx, slots};
use crate::value::{Obj, V};

pub(super) fn check(ctx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    let declared = ctx.recipe.decls.iter().filter(|d| !d.std).filter_map(|d| match &d.value.v {
        V::Obj(o) => Some(&**o),
        _ => None,
    });
    // An agent written inside a stage is checked there.
    let inline = ctx.stages().filter_map(|(_, s)| match s.fields.get("agent").map(|a| &a.v) {
        Some(V::Obj(o)) => Some(&**o),
        _ => None,
    });
    for agent in declared.chain(inline) {
        if agent.kind == "agent" && agent.ctor == "react" {
            window(ctx, agent, out);
        }
    }
}

/// E0423: `actions` set on an agent whose prompt lists no actions.
fn window(ctx: &Ctx<'_>, agent: &Obj, out: &mut Vec<Diagnostic>) {
    let Some(actions) = agent.fields.get("actions").filter(|a| !ctx.is_default(a)) else {
        return;
    };
    if slots::enum_value(actions) == Some("all") {
        return;
    }
    let tags =
        agent.fields.get("calls").filter(|c| ctx.obj(c).is_some_and(|o| o.kind == "call_format"));
    let history = agent.fields.get("history");
    let word = history.and_then(slots::enum_value).unwrap_or("full_text");
    let d = if let Some(calls) = tags {
        Diagnostic::new(
            "E0423",
            "`actions` windows the actions of `history = action_only`, but this agent calls its tools by tags: its one sequence keeps every turn",
        )
        .label(actions.span, "a window of past actions")
        .label(calls.span, "the sequence is the history")
        .help("remove `actions`, or keep the Hermes calls (`calls = hermes`) with `history = action_only`")
    } else if word != "action_only" {
        let mut d = Diagnostic::new(
            "E0423",
            format!(
                "`actions` windows the actions of `history = action_only`, but this agent's history is `{word}`: no prompt lists the actions, so the window would do nothing"
            ),
        )
        .label(actions.span, "a window of past actions");
        if let Some(h) = history.filter(|h| !ctx.is_default(h)) {
            d = d.label(h.span, format!("`history = {word}`"));
        }
        d.help("set `history = action_only` to list the last actions, or remove `actions` (`pages` windows the observations)")
    } else {
        return;
    };
    out.push(d);
}
