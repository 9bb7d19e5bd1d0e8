//! The context budget of one turn (E0404): text history + K screenshots × the model's
//! `image_tokens` + the maximum response must fit the model's `context` at every turn up to
//! the longest horizon of any phase. Without this check the run fails mid-training when the
//! inference server rejects an over-long prompt (tinker-cookbook #506).
//!
//! The estimate, documented in `docs/stdlib.md`: turn t needs `task_text + min(P, t) ×
//! env.step_text + (t − min(P, t)) × placeholder + (t − 1) × kept + min(K, t) × image_tokens +
//! max_response`, where P is the agent's `pages` window (`all`: t), `placeholder` is 8 tokens
//! with `older_pages = placeholder` (else 0), and `kept` is the agent's `step_response` with
//! `history = full_text`, half of it with `hide_thinking`, 32 tokens with `action_only`; with
//! `history = none` only the current turn counts. An agent whose `overflow` is `truncate_left`
//! or `end_episode` chose what happens past the context: the rule
//! does not apply to it. Turns run to a phase's horizon cut at the agent's `max_turns`.

use wrl_diagnostics::{Diagnostic, Span};

use super::{Ctx, RL_CTORS, num, show, word};
use crate::value::{Obj, V, Val};

/// Tokens one past response keeps with `history = action_only`.
const ACTION_ONLY_TOKENS: f64 = 32.0;

/// Tokens the line an omitted page leaves takes (`older_pages = placeholder`).
const PLACEHOLDER_TOKENS: f64 = 8.0;

/// Everything one turn's prompt is made of, for one model.
struct Turn<'a> {
    model: &'a Obj,
    model_val: &'a Val,
    context: &'a Val,
    step_text: f64,
    /// The text-observation window (`pages`; `all`: unbounded).
    pages: f64,
    /// Tokens each page that left the window leaves behind.
    placeholder: f64,
    /// The system prompt and the task, in every turn.
    task: f64,
    kept: f64,
    no_history: bool,
    /// The agent's `history` (for the help: never suggest what is already set).
    history: &'a str,
    shots: f64,
    shots_span: Option<Span>,
    image: f64,
    max_response: f64,
}

impl Turn<'_> {
    fn need(&self, t: f64) -> f64 {
        if self.no_history {
            return self.task
                + self.step_text
                + self.shots.min(1.0) * self.image
                + self.max_response;
        }
        let pages = self.pages.min(t);
        self.task
            + pages * self.step_text
            + (t - pages) * self.placeholder
            + (t - 1.0) * self.kept
            + self.shots.min(t) * self.image
            + self.max_response
    }

    fn breakdown(&self, t: f64) -> String {
        let mut parts = Vec::new();
        if self.task > 0.0 {
            parts.push(format!("{} task", show(self.task)));
        }
        if self.no_history {
            parts.push(format!("{} observation", show(self.step_text)));
        } else {
            let pages = self.pages.min(t);
            parts.push(format!("{} × {} observation", show(pages), show(self.step_text)));
            if t > pages && self.placeholder > 0.0 {
                parts.push(format!(
                    "{} × {} omitted page",
                    show(t - pages),
                    show(self.placeholder)
                ));
            }
            if t > 1.0 {
                parts.push(format!("{} × {} history", show(t - 1.0), show(self.kept)));
            }
        }
        let shots = if self.no_history { self.shots.min(1.0) } else { self.shots.min(t) };
        if shots > 0.0 && self.image > 0.0 {
            parts.push(format!("{} screenshot × {}", show(shots), show(self.image)));
        }
        parts.push(format!("{} response", show(self.max_response)));
        parts.join(" + ")
    }
}

pub(super) fn check(ctx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    for (decl, o) in ctx.stages() {
        if !RL_CTORS.contains(&o.ctor.as_str()) {
            continue;
        }
        let Some(agent) = o.fields.get("agent").and_then(|a| ctx.obj(a)) else { continue };
        // An agent that cuts or ends an over-long prompt chose what happens past the context.
        if agent.fields.get("overflow").and_then(word).is_some_and(|w| w != "check") {
            continue;
        }
        let horizons = horizons(o, agent);
        for turn in turns(ctx, agent) {
            report(ctx, &decl.name, decl.name_span, &turn, &horizons, out);
        }
    }
}

/// (phase number, turns that can run, the value that sets them) of each phase, each horizon cut
/// at the agent's `max_turns` by the one rule the estimate and the runtime use
/// ([`crate::turns::turns_run`]).
fn horizons<'a>(stage: &'a Obj, agent: &'a Obj) -> Vec<Horizon<'a>> {
    let limit = agent.fields.get("max_turns").and_then(|v| Some((num(v)?, v)));
    let Some(phases) = phase_horizons(stage) else {
        return agent_horizon(agent)
            .into_iter()
            .map(|(phase, turns, at)| Horizon { phase, turns, at, cut: false })
            .collect();
    };
    phases
        .into_iter()
        .map(|(phase, h, hv)| match limit {
            Some((t, tv)) if t >= 0.0 && h >= 0.0 => {
                let run = crate::turns::turns_run(Some(h as u64), Some(t as u64)).unwrap_or(0);
                // A cut horizon is reported at the agent's `max_turns`.
                if (run as f64) < h {
                    Horizon { phase, turns: run as f64, at: tv, cut: true }
                } else {
                    Horizon { phase, turns: h, at: hv, cut: false }
                }
            }
            _ => Horizon { phase, turns: h, at: hv, cut: false },
        })
        .collect()
}

/// The turns one phase can run (0: a stage without phases, run to the agent's `max_turns`).
#[derive(Clone, Copy)]
struct Horizon<'a> {
    phase: usize,
    turns: f64,
    /// The value that sets `turns`: the phase's horizon, or the agent's `max_turns` that cut it.
    at: &'a Val,
    cut: bool,
}

/// (phase number, horizon, its value) of each phase with a known horizon.
fn phase_horizons(stage: &Obj) -> Option<Vec<(usize, f64, &Val)>> {
    let V::List { items } = &stage.fields.get("phases")?.v else { return None };
    let hs: Vec<(usize, f64, &Val)> = items
        .iter()
        .enumerate()
        .filter_map(|(i, p)| p.field("horizon").and_then(|h| Some((i + 1, num(h)?, h))))
        .collect();
    (!hs.is_empty()).then_some(hs)
}

fn agent_horizon(agent: &Obj) -> Vec<(usize, f64, &Val)> {
    agent.fields.get("max_turns").and_then(|h| Some(vec![(0, num(h)?, h)])).unwrap_or_default()
}

/// One `Turn` per model the agent prompts: the policy of a ReAct loop, each module of a graph.
fn turns<'a>(ctx: &Ctx<'a>, agent: &'a Obj) -> Vec<Turn<'a>> {
    let env = agent.fields.get("env").and_then(|e| ctx.obj(e));
    let step_text = env.and_then(|e| e.fields.get("step_text")).and_then(num).unwrap_or(0.0);
    let (shots, shots_span) = env.map(screenshots).unwrap_or((0.0, None));
    let step_response = agent.fields.get("step_response").and_then(num).unwrap_or(0.0);
    // A graph's modules see what their `inputs` say: every page, as before `pages` existed.
    let pages = match agent.fields.get("pages") {
        Some(p) if word(p) == Some("all") => f64::INFINITY,
        Some(p) => num(p).unwrap_or(f64::INFINITY),
        None => f64::INFINITY,
    };
    let placeholder = match agent.fields.get("older_pages").and_then(word) {
        Some("placeholder") => PLACEHOLDER_TOKENS,
        _ => 0.0,
    };
    let task = agent.fields.get("task_text").and_then(num).unwrap_or(0.0);
    let mut out = Vec::new();
    let mut push =
        |model_val: &'a Val, kept: f64, history: &'a str, shots: f64, max: Option<&Val>| {
            let no_history = history == "none";
            let Some(model) = ctx.obj(model_val).filter(|m| m.kind == "model") else { return };
            let Some(context) = model.fields.get("context") else { return };
            let (Some(max_response), Some(_)) = (max.and_then(num), num(context)) else { return };
            let image = model.fields.get("image_tokens").and_then(num).unwrap_or(0.0);
            out.push(Turn {
                model,
                model_val,
                context,
                step_text,
                pages,
                placeholder,
                task,
                kept,
                no_history,
                history,
                shots,
                shots_span,
                image,
                max_response,
            });
        };
    if agent.ctor == "react" {
        let history = agent.fields.get("history").and_then(word).unwrap_or("full_text");
        let kept = match history {
            "hide_thinking" => step_response / 2.0,
            "action_only" => ACTION_ONLY_TOKENS,
            _ => step_response,
        };
        if let Some(p) = agent.fields.get("policy") {
            push(p, kept, history, shots, agent.fields.get("max_response"));
        }
    } else {
        for m in &agent.modules {
            let Some(mo) = ctx.obj(&m.value) else { continue };
            let inputs: Vec<&str> = match mo.fields.get("inputs").map(|v| &v.v) {
                Some(V::List { items }) => items.iter().filter_map(word).collect(),
                _ => Vec::new(),
            };
            let shots = if inputs.contains(&"screenshot") { shots } else { 0.0 };
            let history = if inputs.contains(&"history") { "module" } else { "none" };
            if let Some(model) = mo.fields.get("model") {
                push(model, step_response, history, shots, mo.fields.get("max_response"));
            }
        }
    }
    out
}

/// K, the most screenshots any `screenshot(last: K)` observation keeps, and where it is.
fn screenshots(env: &Obj) -> (f64, Option<Span>) {
    let Some(V::List { items }) = env.fields.get("observe").map(|v| &v.v) else {
        return (0.0, None);
    };
    let mut best = (0.0, None);
    for item in items {
        if let V::Obj(o) = &item.v
            && o.ctor == "screenshot"
        {
            let k = o.fields.get("last").and_then(num).unwrap_or(1.0);
            if k > best.0 {
                best = (k, Some(item.span));
            }
        }
    }
    best
}

fn report(
    ctx: &Ctx<'_>,
    stage: &str,
    stage_span: Span,
    turn: &Turn<'_>,
    horizons: &[Horizon<'_>],
    out: &mut Vec<Diagnostic>,
) {
    let Some(context) = num(turn.context) else { return };
    let Some(longest) = horizons.iter().map(|h| h.turns).reduce(f64::max) else { return };
    if !(1.0..=1e9).contains(&longest) || turn.need(longest) <= context {
        return;
    }
    // The first turn that does not fit (the need grows with t).
    let (mut lo, mut hi) = (1u64, longest as u64);
    if turn.need(1.0) > context {
        hi = 1;
    }
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if turn.need(mid as f64) > context {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let t = hi as f64;
    let Some(&Horizon { phase, turns: horizon, at: hval, cut }) =
        horizons.iter().find(|h| h.turns >= t)
    else {
        return;
    };
    let model_name = Ctx::ref_name(turn.model_val).unwrap_or(&turn.model.ctor);
    let where_ = if phase == 0 {
        format!("stage `{stage}` (max_turns {})", show(horizon))
    } else if cut {
        format!(
            "phase {phase} of stage `{stage}` (its horizon cut at the agent's max_turns {})",
            show(horizon)
        )
    } else {
        format!("phase {phase} of stage `{stage}` (horizon {} steps)", show(horizon))
    };
    let primary = if ctx.is_default(hval) { stage_span } else { hval.span };
    let mut d = Diagnostic::new(
        "E0404",
        format!(
            "turn {} of {where_} needs about {} tokens, more than the {}-token context of `{model_name}`",
            show(t),
            show(turn.need(t).ceil()),
            show(context)
        ),
    )
    .label(primary, format!("turns run up to {}", show(horizon)));
    if ctx.is_default(turn.context) {
        if let Some(s) = ctx.name_span(model_name) {
            d = d.label(s, format!("context is {} tokens (the default)", show(context)));
        }
    } else {
        d = d.label(turn.context.span, format!("context is {} tokens", show(context)));
    }
    if let (Some(s), true) = (turn.shots_span, turn.shots > 0.0 && turn.image > 0.0) {
        d = d.label(s, format!("{} screenshot(s) in context", show(turn.shots)));
    }
    let less = match turn.history {
        "full_text" => "keep less history (`history = hide_thinking`, `action_only` or `none`), ",
        "hide_thinking" => "keep less history (`history = action_only` or `none`), ",
        "action_only" => "keep only the current turn (`history = none`), ",
        _ => "",
    };
    let fewer = if turn.shots > 0.0 && turn.image > 0.0 { "fewer screenshots, " } else { "" };
    let window = if turn.pages > 1.0 && !turn.no_history {
        "keep fewer pages (`pages = 1`: only the current one), "
    } else {
        ""
    };
    let fix = if t <= 1.0 {
        format!(
            "even the first turn does not fit: lower `max_response`, {fewer}or use a model with a longer context"
        )
    } else {
        format!(
            "keep horizons at most {} steps, {window}{less}{fewer}use a model with a longer context, or say what happens past it (`overflow = truncate_left` or `end_episode`)",
            show(t - 1.0)
        )
    };
    out.push(d.help(format!("turn {}: {}; {fix}", show(t), turn.breakdown(t))));
}

/// One model's prompt at the last turn of one phase, as the rule above computes it (for
/// editors: `wrl_check::query::turn_budgets`).
#[derive(Clone, Debug, PartialEq)]
pub struct TurnBudget {
    /// The stage's declaration name.
    pub stage: String,
    /// 1-based phase number; 0 for a stage without phases (the agent's `max_turns`).
    pub phase: usize,
    /// The longest turn of the phase (its `horizon`).
    pub horizon: f64,
    /// The model prompted (a declaration name, or the constructor of an inline model).
    pub model: String,
    /// Tokens the last turn needs, rounded up.
    pub need: f64,
    /// The model's context in tokens.
    pub context: f64,
    /// How `need` is made up (`15 × 64 observation + 14 × 1024 history + …`).
    pub breakdown: String,
}

/// The budget of every model's turn at the horizon of every phase of every RL stage.
pub(crate) fn budgets(ctx: &Ctx<'_>) -> Vec<TurnBudget> {
    let mut out = Vec::new();
    for (decl, o) in ctx.stages() {
        if !RL_CTORS.contains(&o.ctor.as_str()) {
            continue;
        }
        let Some(agent) = o.fields.get("agent").and_then(|a| ctx.obj(a)) else { continue };
        let horizons = horizons(o, agent);
        for turn in turns(ctx, agent) {
            let Some(context) = num(turn.context) else { continue };
            let model = Ctx::ref_name(turn.model_val).unwrap_or(&turn.model.ctor).to_string();
            for &Horizon { phase, turns: horizon, .. } in &horizons {
                if !(1.0..=1e9).contains(&horizon) {
                    continue;
                }
                out.push(TurnBudget {
                    stage: decl.name.clone(),
                    phase,
                    horizon,
                    model: model.clone(),
                    need: turn.need(horizon).ceil(),
                    context,
                    breakdown: turn.breakdown(horizon),
                });
            }
        }
    }
    out
}
