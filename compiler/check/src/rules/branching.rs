//! Branching rollouts (`branching = entropy(…)`, ARPO): more full samples per prompt than its
//! budget, `group` (E0448), and a rollout that cannot be forked (E0449) — a branch replays its
//! parent's turns, which only a ReAct agent in a `search_api` env, whose episode's state is its
//! conversation, can do.

use wrl_diagnostics::Diagnostic;

use super::{Ctx, RL_CTORS, num, show};
use crate::value::{Obj, V, Val};

pub(super) fn check(ctx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    for (_, o) in ctx.stages() {
        if !RL_CTORS.contains(&o.ctor.as_str()) {
            continue;
        }
        let Some(b) = o.fields.get("branching") else { continue };
        let V::Obj(bo) = &b.v else { continue };
        budget(ctx, o, b, bo, out);
        forkable(ctx, o, b, out);
    }
}

/// E0448: `initial` full samples above the stage's `group`, each prompt's whole budget.
fn budget(ctx: &Ctx<'_>, o: &Obj, b: &Val, bo: &Obj, out: &mut Vec<Diagnostic>) {
    let (Some(initial), Some(group)) = (bo.fields.get("initial"), o.fields.get("group")) else {
        return;
    };
    let (Some(i), Some(g)) = (num(initial), num(group)) else { return };
    if i > g {
        out.push(
            Diagnostic::new(
                "E0448",
                format!(
                    "branching starts {} full samples per prompt, more than the stage's budget of {}",
                    show(i),
                    show(g)
                ),
            )
            .label(if ctx.is_default(initial) { b.span } else { initial.span }, format!("`initial = {}`", show(i)))
            .label(group.span, format!("`group = {}` samples per prompt, branches included", show(g)))
            .help(format!(
                "under `branching`, `group` counts every sample of a prompt's tree: raise `group` to at least {}, or lower `initial`",
                show(i)
            )),
        );
    }
}

/// E0449: a branch replays its parent's turns, and this stage's agent or env cannot.
fn forkable(ctx: &Ctx<'_>, o: &Obj, b: &Val, out: &mut Vec<Diagnostic>) {
    let Some(agent) = o.fields.get("agent") else { return };
    let Some(a) = ctx.obj(agent).filter(|a| a.kind == "agent") else { return };
    let why = if a.ctor != "react" {
        Some((
            agent.span,
            format!("a `{}` agent's modules keep notes a replay cannot restore", a.ctor),
        ))
    } else {
        let env = a.fields.get("env").and_then(|e| ctx.obj(e).map(|o| (e, o)));
        match env {
            Some((e, eo)) if eo.kind == "env" && eo.ctor != "search_api" => Some((
                e.span,
                match eo.ctor.as_str() {
                    "browser" => "a browser's page is state outside the conversation".to_string(),
                    "env_server" => {
                        "an environment server's instance is state outside the conversation"
                            .to_string()
                    }
                    other => format!("a `{other}` env's state is outside the conversation"),
                },
            )),
            _ => None,
        }
    };
    if let Some((span, why)) = why {
        out.push(
            Diagnostic::new(
                "E0449",
                format!("`{}` cannot branch these rollouts: a branch replays its parent's turns", o.ctor),
            )
            .label(b.span, "branching copies a sample after a tool result")
            .label(span, why)
            .help("branch a ReAct agent in a `search_api` env (its state is the conversation), or set `branching = off`"),
        );
    }
}
