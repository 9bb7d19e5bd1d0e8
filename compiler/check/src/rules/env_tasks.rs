//! Tasks an environment server draws itself (`env_tasks(count: N)`): only an `env_server` can
//! draw them (a browser or a search API runs the goal the task carries), and they carry no
//! reference answer, so a reward that reads one (`answer_match`, `qa_match`) would compare
//! against nothing (E0424). `env_reward`, judges and format rewards score them.

use std::collections::BTreeSet;

use wrl_diagnostics::Diagnostic;

use super::{Ctx, RL_CTORS, word};
use crate::value::{Obj, V, Val};

pub(super) fn check(ctx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    for (decl, o) in ctx.stages() {
        if !RL_CTORS.contains(&o.ctor.as_str()) {
            continue;
        }
        let agent_env =
            o.fields.get("agent").and_then(|a| ctx.obj(a)).and_then(|a| a.fields.get("env"));
        // A validation's own env, else the stage's agent's.
        if let Some(v) = o.fields.get("validate").and_then(|v| ctx.obj(v))
            && let Some(tasks) = drawn(ctx, v)
        {
            let env = v.fields.get("env").filter(|e| ctx.obj(e).is_some()).or(agent_env);
            server(ctx, &decl.name, tasks, env, out);
        }
        let Some(tasks) = drawn(ctx, o) else { continue };
        server(ctx, &decl.name, tasks, agent_env, out);
        for slot in ["reward", "process_reward"] {
            if let Some(r) = o.fields.get(slot) {
                references(ctx, &decl.name, tasks, r, out);
            }
        }
    }
    for d in ctx.recipe.decls.iter().filter(|d| !d.std) {
        let V::Obj(o) = &d.value.v else { continue };
        if o.ctor != "evaluate" {
            continue;
        }
        let Some(tasks) = drawn(ctx, o) else { continue };
        // The evaluation's own env, else its agent's.
        let env = o.fields.get("env").filter(|e| ctx.obj(e).is_some()).or_else(|| {
            o.fields.get("agent").and_then(|a| ctx.obj(a)).and_then(|a| a.fields.get("env"))
        });
        server(ctx, &d.name, tasks, env, out);
        if let Some(j) = o.fields.get("judge") {
            references(ctx, &d.name, tasks, j, out);
        }
    }
}

/// The stage's or evaluation's `tasks`, when they are `env_tasks`.
fn drawn<'a>(ctx: &Ctx<'a>, o: &'a Obj) -> Option<&'a Val> {
    let t = o.fields.get("tasks")?;
    ctx.obj(t).is_some_and(|d| d.ctor == "env_tasks").then_some(t)
}

/// E0424: the tasks run in an env that cannot draw them.
fn server(ctx: &Ctx<'_>, user: &str, tasks: &Val, env: Option<&Val>, out: &mut Vec<Diagnostic>) {
    let Some(env_val) = env else { return };
    let Some(e) = ctx.obj(env_val) else { return };
    if e.ctor == "env_server" {
        return;
    }
    let name = Ctx::ref_name(env_val).unwrap_or(&e.ctor);
    out.push(
        Diagnostic::new(
            "E0424",
            format!(
                "`{user}` runs tasks the environment draws itself, but `{name}` is a `{}`, which runs the goal each task carries",
                e.ctor
            ),
        )
        .label(tasks.span, "`env_tasks`: goals drawn at reset")
        .label(env_val.span, format!("a `{}` env", e.ctor))
        .help("run them in an `env_server` env, or give the stage a task set that carries its goals (`jsonl(…) { kind = tasks }`, `std::sandbox::tasks`)"),
    );
}

/// E0424: a reward (or judge) that reads the reference answer the tasks do not carry.
fn references(ctx: &Ctx<'_>, user: &str, tasks: &Val, reward: &Val, out: &mut Vec<Diagnostic>) {
    let mut sigs = Vec::new();
    super::data::signals(ctx, reward, &mut sigs, 0);
    let mut seen = BTreeSet::new();
    for (o, at) in sigs {
        let Some(V::List { items }) = o.meta.get("reads").map(|v| &v.v) else { continue };
        if !items.iter().filter_map(word).any(|r| r == "reference") {
            continue;
        }
        let name = o.ctor.rsplit("::").next().unwrap_or(&o.ctor);
        if !seen.insert(name.to_string()) {
            continue;
        }
        let place = ctx.find_word(at.span, name);
        out.push(
            Diagnostic::new(
                "E0424",
                format!(
                    "reward `{name}` compares with each task's reference answer, but `{user}`'s tasks are drawn by the environment and carry none"
                ),
            )
            .label(place, format!("`{name}` reads the reference"))
            .label(tasks.span, "`env_tasks`: no reference answers")
            .help("score the episodes with the server's reward (`env_reward`) or a judge, or give the stage tasks with answers (`jsonl(…) { kind = qa }`)"),
        );
    }
}
