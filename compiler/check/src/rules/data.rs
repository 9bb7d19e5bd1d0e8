//! What stages are fed and what rewards read: SFT needs trajectories (or grounding pairs) and RL
//! needs tasks (E0406); a reward may only read what the environment, the tool set and the
//! dataset produce (E0405); a DAPO dynamic-sampling metric must be one a reward emits (E0418).

use std::collections::BTreeSet;

use wrl_diagnostics::{Diagnostic, Span};

use crate::suggest::did_you_mean;

use super::{Ctx, RL_CTORS, word};
use crate::value::{Obj, SigExpr, V, Val};

pub(super) fn check(ctx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    for (decl, o) in ctx.stages() {
        let rl = RL_CTORS.contains(&o.ctor.as_str());
        if o.ctor == "sft" {
            if let Some(d) = o.fields.get("data") {
                let why = "SFT learns from trajectories (or chat conversations, grounding pairs)";
                kind(ctx, &decl.name, d, &["trajectories", "chat", "grounding"], why, out);
            }
        } else if rl && let Some(d) = o.fields.get("tasks") {
            kind(ctx, &decl.name, d, &["tasks", "qa"], "RL rolls out on tasks (or QA pairs)", out);
            simulated_needs_qa(ctx, &decl.name, o, d, out);
        }
        if rl {
            let agent = o.fields.get("agent").and_then(|a| ctx.obj(a));
            let produced = produced(ctx, agent, o.fields.get("tasks"));
            for slot in ["reward", "process_reward"] {
                if let Some(r) = o.fields.get(slot) {
                    reads(ctx, r, &produced, out);
                }
            }
            if o.ctor == "dapo" {
                metric(ctx, o, out);
            }
        }
    }
    for d in &ctx.recipe.decls {
        if let V::Obj(o) = &d.value.v
            && o.ctor == "evaluate"
        {
            if let Some(t) = o.fields.get("tasks") {
                kind(ctx, &d.name, t, &["tasks", "qa"], "evaluation runs tasks", out);
                simulated_needs_qa(ctx, &d.name, o, t, out);
            }
            let agent = o.fields.get("agent").and_then(|a| ctx.obj(a));
            let produced = produced(ctx, agent, o.fields.get("tasks"));
            if let Some(j) = o.fields.get("judge") {
                reads(ctx, j, &produced, out);
            }
        }
    }
}

/// A stage or evaluation whose agent searches a `simulated_search` engine runs QA pairs: the
/// engine's prompt carries each question's reference answer (E0406).
fn simulated_needs_qa(ctx: &Ctx<'_>, name: &str, o: &Obj, tasks: &Val, out: &mut Vec<Diagnostic>) {
    let env = o.fields.get("agent").and_then(|a| ctx.obj(a)).and_then(|a| a.fields.get("env"));
    let target = env.and_then(|e| ctx.obj(e)).and_then(|e| e.fields.get("target"));
    if target.and_then(|t| ctx.obj(t)).is_some_and(|t| t.ctor == "simulated_search") {
        let why = "its agent searches a simulated engine, whose prompt carries each question's \
                   reference answer (QA pairs)";
        kind(ctx, name, tasks, &["qa"], why, out);
    }
}

/// A dataset's kind, through references and mixtures.
fn dataset_kind<'a>(ctx: &Ctx<'a>, v: &'a Val) -> Option<(&'a str, &'a Val)> {
    let o = ctx.obj(v).filter(|o| o.kind == "dataset")?;
    let k = o.fields.get("kind")?;
    Some((word(k)?, k))
}

fn kind(
    ctx: &Ctx<'_>,
    stage: &str,
    data: &Val,
    want: &[&str],
    why: &str,
    out: &mut Vec<Diagnostic>,
) {
    let Some((found, kval)) = dataset_kind(ctx, data) else { return };
    if want.contains(&found) {
        // A mixture's parts must hold what the stage needs too.
        if let Some(m) = ctx.obj(data).filter(|o| o.ctor == "mixture")
            && let Some(V::List { items }) = m.fields.get("parts").map(|p| &p.v)
        {
            for part in items {
                kind(ctx, stage, part, want, why, out);
            }
        }
        return;
    }
    let name = Ctx::ref_name(data).unwrap_or("this dataset");
    let mut d =
        Diagnostic::new("E0406", format!("`{stage}` is fed a dataset of {found}, but {why}"))
            .label(data.span, format!("`{name}` holds {found}"));
    if !ctx.is_default(kval) {
        d = d.label(kval.span, format!("kind = {found}"));
    } else if let Some(s) = Ctx::ref_name(data).and_then(|n| ctx.name_span(n)) {
        d = d.label(s, format!("declared as {found}"));
    }
    let fix = match want {
        ["trajectories", "chat", "grounding"] => {
            "give SFT a dataset with `kind = trajectories` (demonstrations), `kind = chat` (conversations) or `kind = grounding`; tasks and QA pairs go to an RL stage"
        }
        ["qa"] => {
            "give it QA pairs (`kind = qa`, or `std::sandbox::qa`), or search a real engine (`retriever(corpus)`, a `base_url`)"
        }
        _ => "give it a dataset with `kind = tasks`; trajectories are for an SFT stage",
    };
    out.push(d.help(fix));
}

/// The episode signals an agent's environment, tool set and dataset produce.
fn produced<'a>(
    ctx: &Ctx<'a>,
    agent: Option<&'a Obj>,
    tasks: Option<&'a Val>,
) -> Option<Produced<'a>> {
    let agent = agent?;
    let env = agent.fields.get("env").and_then(|e| ctx.obj(e))?;
    let mut p: BTreeSet<&'static str> = ["response", "end_reason", "actions", "task"].into();
    match env.ctor.as_str() {
        "browser" => {
            p.extend(["url", "elements", "feedback"]);
            // A browser declares `observe`: where it is `unknown`, what is read is not judged.
            let Some(V::List { items }) = env.fields.get("observe").map(|v| &v.v) else {
                return None;
            };
            if items.iter().any(|i| matches!(&i.v, V::Obj(o) if o.ctor == "screenshot")) {
                p.insert("screenshots");
            }
            if let Some(t) = env.fields.get("target").and_then(|t| ctx.obj(t))
                && (t.ctor.starts_with("std::sandbox::") || t.ctor == "webarena")
            {
                p.insert("page_state");
            }
        }
        "search_api" => {
            p.insert("feedback");
        }
        "env_server" => {
            p.extend(["feedback", "env_reward"]);
        }
        _ => return None,
    }
    // The final answer: a terminal tool with an argument, or an answer tag.
    let mut tool_sets: Vec<&Obj> = Vec::new();
    tool_sets.extend(env.fields.get("tools").and_then(|t| ctx.obj(t)));
    for m in &agent.modules {
        if let Some(mo) = ctx.obj(&m.value) {
            tool_sets.extend(mo.fields.get("tools").and_then(|t| ctx.obj(t)));
        }
    }
    if tool_sets.iter().any(|t| {
        t.tools.iter().any(|x| x.terminal && !x.params.is_empty())
            // An `unknown` tag may be one: what it answers is not judged.
            || super::tools::answer_tag(t) != Some(false)
    }) {
        p.insert("answer");
    }
    match tasks.and_then(|t| dataset_kind(ctx, t)).map(|k| k.0) {
        Some("tasks" | "qa") | None => {
            p.insert("reference");
        }
        Some(_) => {}
    }
    Some(Produced { signals: p, env: env.ctor.as_str() })
}

/// What an episode records, and the kind of environment that records it (for the help).
struct Produced<'a> {
    signals: BTreeSet<&'static str>,
    env: &'a str,
}

/// Every stdlib signal a reward uses, through reward declarations.
pub(super) fn signals<'a>(
    ctx: &Ctx<'a>,
    v: &'a Val,
    out: &mut Vec<(&'a Obj, &'a Val)>,
    depth: usize,
) {
    if depth > 32 {
        return;
    }
    let v2 = ctx.deref(v);
    match &v2.v {
        V::Obj(o) if o.kind == "signal" || o.kind == "condition" => out.push((o, v2)),
        V::Signal { expr } => sig(ctx, expr, v2, out, depth),
        _ => {}
    }
}

fn sig<'a>(
    ctx: &Ctx<'a>,
    e: &'a SigExpr,
    at: &'a Val,
    out: &mut Vec<(&'a Obj, &'a Val)>,
    depth: usize,
) {
    match e {
        SigExpr::Signal { obj } => out.push((obj, at)),
        SigExpr::Reward { name } => {
            if let Some(d) = ctx.decl(name) {
                signals(ctx, &d.value, out, depth + 1);
            }
        }
        SigExpr::Unary { arg, .. } => sig(ctx, arg, at, out, depth),
        SigExpr::Binary { lhs, rhs, .. } => {
            sig(ctx, lhs, at, out, depth);
            sig(ctx, rhs, at, out, depth);
        }
        SigExpr::If { cond, then, otherwise } => {
            sig(ctx, cond, at, out, depth);
            sig(ctx, then, at, out, depth);
            sig(ctx, otherwise, at, out, depth);
        }
        SigExpr::Const { .. } | SigExpr::Bool { .. } => {}
    }
}

fn short(ctor: &str) -> &str {
    ctor.rsplit("::").next().unwrap_or(ctor)
}

fn reads(ctx: &Ctx<'_>, reward: &Val, produced: &Option<Produced<'_>>, out: &mut Vec<Diagnostic>) {
    let Some(Produced { signals: produced, env }) = produced else { return };
    let mut sigs = Vec::new();
    signals(ctx, reward, &mut sigs, 0);
    let mut done: BTreeSet<(String, String)> = BTreeSet::new();
    for (o, at) in sigs {
        let Some(V::List { items }) = o.meta.get("reads").map(|v| &v.v) else { continue };
        for r in items.iter().filter_map(word) {
            // A judge told to look at no screenshots reads the task, actions and answer as text.
            let no_shots = r == "screenshots"
                && o.fields
                    .get("screenshots")
                    .is_some_and(|n| matches!(n.v, V::Num { value } if value == 0.0));
            if no_shots || produced.contains(r) || !done.insert((o.ctor.to_string(), r.to_string()))
            {
                continue;
            }
            let name = short(&o.ctor);
            let place = ctx.find_word(at.span, name);
            let shot_arg = o.fields.contains_key("screenshots");
            let (why, fix) = explain(r, env, shot_arg, name);
            let mut d = Diagnostic::new(
                "E0405",
                format!("reward `{name}` reads {r}, which this environment does not produce"),
            )
            .label(place, format!("`{name}` reads {r}"));
            if place != reward.span {
                d = d.label(reward.span, "the stage's reward");
            }
            out.push(d.help(format!("{why}; {fix}")));
        }
    }
}

/// Why an environment lacks `r`, and the fix that fits this environment and this reward.
fn explain(r: &str, env: &str, shot_arg: bool, reward: &str) -> (&'static str, String) {
    let (why, fix) = match r {
        "screenshots" => {
            let why = "screenshots are recorded only when a browser environment observes them";
            // The runtime's policies read text: steering them to a screenshot observation
            // would trade this error for a refusal at run time.
            let text = if shot_arg {
                format!(
                    "set `screenshots: 0` on `{reward}` (it then judges the task, the actions and the answer as text)"
                )
            } else {
                "use a reward that does not need pixels".to_string()
            };
            return match env {
                "browser" => (
                    why,
                    format!(
                        "{text}, or, for a vision policy, add `screenshot(last: 1)` to the env's `observe`"
                    ),
                ),
                _ => (why, format!("{text}: a `{env}` environment has no pages to capture")),
            };
        }
        "url" | "elements" => (
            "only a `browser` environment has pages",
            "use a browser environment, or a reward that reads the answer",
        ),
        "page_state" => (
            "page state is checked only on the sandbox web and WebArena",
            "target `std::sandbox::web` or `webarena(…)`, or judge the outcome with `judge`/`answer_match`",
        ),
        "answer" => (
            "the tool set has no terminal tool that takes an answer, and no answer tag",
            "add `tool answer(text: string) { terminal }` or set `answer_tag`",
        ),
        "reference" => (
            "the dataset has no reference answers or actions",
            "use tasks or QA pairs that carry references",
        ),
        "feedback" => {
            ("the environment gives no per-step feedback", "use a browser or search environment")
        }
        "env_reward" => (
            "only an environment server (`env_server`) gives the episode a reward",
            "use `env_server(…)` as the agent's env, or a reward the env records (`task_check`, `answer_match`, `judge`)",
        ),
        _ => ("the episode does not record it", "use a reward over what the episode records"),
    };
    (why, fix.to_string())
}

/// DAPO's dynamic-sampling metric must be `reward` or something the reward emits.
fn metric(ctx: &Ctx<'_>, o: &Obj, out: &mut Vec<Diagnostic>) {
    let Some(ds) = o.fields.get("dynamic_sampling") else { return };
    let Some(m) = ds.field("metric") else { return };
    let Some(name) = word(m) else { return };
    let mut emitted: BTreeSet<String> = ["reward".to_string()].into();
    if let Some(r) = o.fields.get("reward") {
        let mut sigs = Vec::new();
        signals(ctx, r, &mut sigs, 0);
        emitted.extend(sigs.iter().map(|(s, _)| short(&s.ctor).to_string()));
        reward_names(ctx, r, &mut emitted, 0);
    }
    if emitted.contains(name) {
        return;
    }
    let span: Span = m.span;
    let help = did_you_mean(name, emitted.iter().map(String::as_str)).unwrap_or_else(|| {
        let all: Vec<String> = emitted.iter().map(|e| format!("`{e}`")).collect();
        format!("the reward emits {}", all.join(", "))
    });
    out.push(
        Diagnostic::new(
            "E0418",
            format!("dynamic sampling filters on `{name}`, which no reward emits"),
        )
        .label(span, "not a metric of this stage's reward")
        .help(help),
    );
}

fn reward_names(ctx: &Ctx<'_>, v: &Val, out: &mut BTreeSet<String>, depth: usize) {
    if depth > 32 {
        return;
    }
    if let V::Ref { decl, .. } = &v.v {
        out.insert(decl.to_string());
        if let Some(d) = ctx.decl(decl) {
            reward_names(ctx, &d.value, out, depth + 1);
        }
    }
    if let V::Signal { expr } = &v.v {
        names_in(ctx, expr, out, depth);
    }
}

fn names_in(ctx: &Ctx<'_>, e: &SigExpr, out: &mut BTreeSet<String>, depth: usize) {
    match e {
        SigExpr::Reward { name } => {
            out.insert(name.clone());
            if let Some(d) = ctx.decl(name) {
                reward_names(ctx, &d.value, out, depth + 1);
            }
        }
        SigExpr::Unary { arg, .. } => names_in(ctx, arg, out, depth),
        SigExpr::Binary { lhs, rhs, .. } => {
            names_in(ctx, lhs, out, depth);
            names_in(ctx, rhs, out, depth);
        }
        SigExpr::If { cond, then, otherwise } => {
            names_in(ctx, cond, out, depth);
            names_in(ctx, then, out, depth);
            names_in(ctx, otherwise, out, depth);
        }
        SigExpr::Signal { .. } | SigExpr::Const { .. } | SigExpr::Bool { .. } => {}
    }
}
