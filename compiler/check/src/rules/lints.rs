//! Values that pass every type and rule yet almost surely say something the author did not
//! mean (W0210–W0213): a step budget the agent's `max_turns` cuts, a stage `lr` every phase
//! replaces, a model context written in thousands where the model's is a power of two, and a
//! `k` the chosen metric never reads.

use wrl_diagnostics::{Diagnostic, Span};

use super::{Ctx, RL_CTORS, num, show, word};
use crate::value::{Obj, V, Val};

pub(super) fn check(ctx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    for (decl, o) in ctx.stages() {
        if RL_CTORS.contains(&o.ctor.as_str()) {
            let agent = o.fields.get("agent").and_then(|a| ctx.obj(a));
            cut_horizons(ctx, o, agent, out);
            phase_lr(ctx, decl.span, o, out);
            if let Some(v) = o.fields.get("validate") {
                unread_k(ctx, v, "validation", out);
            }
        }
    }
    for d in ctx.recipe.decls.iter().filter(|d| !d.std) {
        if let V::Obj(o) = &d.value.v {
            if o.ctor == "evaluate" {
                let agent = o.fields.get("agent").and_then(|a| ctx.obj(a));
                if let (Some(steps), Some(agent)) = (o.fields.get("max_steps"), agent) {
                    cut(ctx, steps, "`max_steps`", agent, out);
                }
                unread_k(ctx, &d.value, "evaluation", out);
            }
            if o.kind == "model" {
                kilo_context(ctx, o, out);
            }
        }
    }
}

/// W0210: a phase's horizon above the agent's `max_turns` — episodes stop at `max_turns`.
fn cut_horizons(ctx: &Ctx<'_>, stage: &Obj, agent: Option<&Obj>, out: &mut Vec<Diagnostic>) {
    let (Some(agent), Some(V::List { items })) = (agent, stage.fields.get("phases").map(|p| &p.v))
    else {
        return;
    };
    for (i, p) in items.iter().enumerate() {
        if let Some(h) = p.field("horizon") {
            cut(ctx, h, &format!("phase {}'s horizon", i + 1), agent, out);
        }
    }
}

fn cut(ctx: &Ctx<'_>, budget: &Val, what: &str, agent: &Obj, out: &mut Vec<Diagnostic>) {
    let Some(limit) = agent.fields.get("max_turns") else { return };
    let (Some(b), Some(t)) = (num(budget), num(limit)) else { return };
    if ctx.is_default(budget) || b < 0.0 || t < 0.0 {
        return;
    }
    let run = crate::turns::turns_run(Some(b as u64), Some(t as u64)).unwrap_or(0);
    if (run as f64) >= b {
        return;
    }
    let mut d = Diagnostic::new(
        "W0210",
        format!("{what} is {} steps, but the agent stops at {} turns", show(b), show(t)),
    )
    .label(budget.span, format!("episodes run {} turns, not {}", show(t), show(b)));
    if !ctx.is_default(limit) {
        d = d.label(limit.span, "the agent's `max_turns`");
    }
    out.push(d.help(format!(
        "an episode ends at the first of the step budget and `max_turns`: lower this to {} steps, or raise the agent's `max_turns`",
        show(t)
    )));
}

/// W0211: a stage `lr` the user wrote, replaced by a different `lr` in its phases. Phases a
/// profile rewrites (a smoke test's short schedule) are that profile's deliberate choice.
fn phase_lr(ctx: &Ctx<'_>, decl: Span, stage: &Obj, out: &mut Vec<Diagnostic>) {
    let Some(lr) = stage.fields.get("lr").filter(|v| !ctx.is_default(v)) else { return };
    let Some(V::List { items }) = stage.fields.get("phases").map(|p| &p.v) else { return };
    let Some(stage_lr) = num(lr) else { return };
    let differ: Vec<(usize, &Val)> = items
        .iter()
        .enumerate()
        .filter_map(|(i, p)| p.field("lr").map(|v| (i + 1, v)))
        .filter(|(_, v)| {
            v.span.file == decl.file && decl.start <= v.span.start && v.span.end <= decl.end
        })
        .filter(|(_, v)| num(v).is_some_and(|x| x != stage_lr))
        .collect();
    let Some(&(first, at)) = differ.first() else { return };
    let every = differ.len() == items.len();
    let written = source(ctx, lr.span).trim();
    let msg = if every {
        format!("the stage's `lr = {written}` is never used: every phase sets its own")
    } else {
        format!("phase {first} overrides the stage's `lr = {written}`")
    };
    out.push(
        Diagnostic::new("W0211", msg)
            .label(lr.span, "the stage's lr")
            .label(at.span, format!("phase {first}'s lr replaces it"))
            .help(if every {
                "remove the stage's `lr` (each phase's `lr` is the one used)".to_string()
            } else {
                "a phase's `lr` wins over the stage's; write the same value, or remove one of them"
                    .to_string()
            }),
    );
}

/// W0212: `context = 16k tokens` (16,000) on a model whose context is almost surely 16Ki
/// (16,384): a power of two written with the decimal `k`.
fn kilo_context(ctx: &Ctx<'_>, model: &Obj, out: &mut Vec<Diagnostic>) {
    let Some(c) = model.fields.get("context").filter(|v| !ctx.is_default(v)) else { return };
    let Some(n) = num(c) else { return };
    let text = source(ctx, c.span);
    let Some(k) = text.split_whitespace().next().and_then(|t| t.strip_suffix('k')) else { return };
    let Ok(k) = k.parse::<u64>() else { return };
    if k == 0 || !(k * 1024).is_power_of_two() || n != (k * 1000) as f64 {
        return;
    }
    out.push(
        Diagnostic::new(
            "W0212",
            format!("`{k}k tokens` is {} tokens, not {}", k * 1000, k * 1024),
        )
        .label(c.span, format!("{k}k = {k} × 1000"))
        .help(format!(
            "model contexts are powers of two: write `{k}Ki tokens` for {} tokens, or `{} tokens` if 1000s are meant",
            k * 1024,
            k * 1000
        )),
    );
}

/// W0213: `pass_at_k` or `cons_at_k` with `k = 1`, which is `success` by another name.
fn unread_k(ctx: &Ctx<'_>, v: &Val, what: &str, out: &mut Vec<Diagnostic>) {
    let (Some(k), Some(metric)) = (v.field("k"), v.field("metric")) else { return };
    let Some(m @ ("pass_at_k" | "cons_at_k")) = word(metric) else { return };
    if ctx.is_default(k) || num(k) != Some(1.0) {
        return;
    }
    let short = if m == "pass_at_k" { "pass@k" } else { "cons@k" };
    out.push(
        Diagnostic::new("W0213", format!("this {what}'s `{m}` with `k = 1` is `success`"))
            .label(k.span, "one sample per task")
            .label(metric.span, format!("{short} over one sample"))
            .help("set `k` to the number of samples per task (pass@5: `k = 5`), or say `metric = success`"),
    );
}

pub(super) fn source<'a>(ctx: &Ctx<'a>, span: Span) -> &'a str {
    ctx.sources.get(span.file).map(|f| f.slice(span)).unwrap_or("")
}
