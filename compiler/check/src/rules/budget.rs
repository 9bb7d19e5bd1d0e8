//! The context budget of one turn (E0404): text history + K screenshots × the model's
//! `image_tokens` + the maximum response must fit the model's `context` at every turn up to
//! the longest horizon of any phase (an evaluation's own horizon: `budget_eval.rs`). Without this check the run fails mid-training when the
//! inference server rejects an over-long prompt (tinker-cookbook #506).
//!
//! The estimate, documented in `docs/stdlib.md`, is the one rule for an episode's sequence
//! ([`crate::sequence::Episode`]): turn t needs `task_text + min(P, o) × env.step_text +
//! (o − min(P, o)) × placeholder + min(K, t) × image_tokens + min((t − 1) × kept +
//! max_response, trajectory_tokens)`, where o is the observations seen by turn t (t, or t − 1
//! for a `search_api` env, which answers only once a tool is called), P is the agent's `pages`
//! window (`all`: o), `placeholder` is 8 tokens with `older_pages = placeholder` (else 0), and
//! `kept` is the agent's `step_response` with `history = full_text`, half of it with
//! `hide_thinking`, 32 tokens with `action_only` (whose `actions = K` keeps only the last K:
//! min(t − 1, K) × kept); every reply of the episode counts against
//! `trajectory_tokens`, so the replies kept and the turn's own are bounded by it together; with
//! `history = none` only the current turn counts. An agent whose `overflow` is `truncate_left`
//! or `end_episode` chose what happens past the context: the rule judges only its first turn,
//! which must fit whatever `overflow` says (nothing comes before it to cut, and an episode
//! that ends there never acts: a VL policy's screenshot alone can outgrow a small context).
//! Turns run to a phase's horizon cut at the agent's `max_turns`.

use wrl_diagnostics::{Diagnostic, Span};

use super::slots::{self, Word};
use super::{Ctx, RL_CTORS, num, show, word};
use crate::sequence::{self, ACTION_ONLY_TOKENS, Episode, PLACEHOLDER_TOKENS};
use crate::value::{Obj, V, Val};

/// Everything one turn's prompt is made of, for one model.
pub(super) struct Turn<'a> {
    model: &'a Obj,
    model_val: &'a Val,
    context: &'a Val,
    /// The episode's sequence by the one rule.
    pub(super) ep: Episode,
    /// What the prompt keeps of past turns (for the help: never suggest what is already set).
    history: History,
    shots_span: Option<Span>,
}

/// What a turn's prompt keeps of past turns: a ReAct agent's `history`, or a graph module's
/// (`Module`: every past response, when its `inputs` name `history`; else `None`).
#[derive(Clone, Copy, PartialEq)]
enum History {
    FullText,
    HideThinking,
    ActionOnly,
    None,
    Module,
}

impl Word for History {
    fn from_word(word: &str) -> Option<Self> {
        match word {
            "full_text" => Some(History::FullText),
            "hide_thinking" => Some(History::HideThinking),
            "action_only" => Some(History::ActionOnly),
            "none" => Some(History::None),
            _ => None,
        }
    }
}

/// A ReAct agent's `older_pages`: what a page that left the window leaves behind.
enum OlderPages {
    Drop,
    Placeholder,
}

impl Word for OlderPages {
    fn from_word(word: &str) -> Option<Self> {
        match word {
            "drop" => Some(OlderPages::Drop),
            "placeholder" => Some(OlderPages::Placeholder),
            _ => None,
        }
    }
}

/// A ReAct agent's `overflow`: what happens to a prompt past the model's context.
#[derive(PartialEq)]
enum Overflow {
    Check,
    TruncateLeft,
    EndEpisode,
}

impl Word for Overflow {
    fn from_word(word: &str) -> Option<Self> {
        match word {
            "check" => Some(Overflow::Check),
            "truncate_left" => Some(Overflow::TruncateLeft),
            "end_episode" => Some(Overflow::EndEpisode),
            _ => None,
        }
    }
}

impl Turn<'_> {
    fn need(&self, t: f64) -> f64 {
        self.ep.need(t)
    }

    fn breakdown(&self, t: f64) -> String {
        let e = &self.ep;
        let mut parts = Vec::new();
        if e.task > 0.0 {
            parts.push(format!("{} task", show(e.task)));
        }
        let (full, left) = e.pages(t);
        if e.no_history {
            if full > 0.0 {
                parts.push(format!("{} observation", show(e.step_text)));
            }
        } else {
            if full > 0.0 {
                parts.push(format!("{} × {} observation", show(full), show(e.step_text)));
            }
            if left > 0.0 && e.placeholder > 0.0 {
                parts.push(format!("{} × {} omitted page", show(left), show(e.placeholder)));
            }
        }
        let (replies, capped) = e.replies(t);
        if !capped && !e.no_history && t > 1.0 {
            parts.push(format!("{} × {} history", show((t - 1.0).min(e.actions)), show(e.kept)));
        }
        let shots = e.screenshots(t);
        if shots > 0.0 && e.image > 0.0 {
            parts.push(format!("{} screenshot × {}", show(shots), show(e.image)));
        }
        if capped {
            parts.push(format!("{} replies (`trajectory_tokens`)", show(replies)));
        } else {
            parts.push(format!("{} response", show(e.max_response)));
        }
        parts.join(" + ")
    }
}

pub(super) fn check(ctx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    for (decl, o) in ctx.stages() {
        if !RL_CTORS.contains(&o.ctor.as_str()) {
            continue;
        }
        let Some(agent) = o.fields.get("agent").and_then(|a| ctx.obj(a)) else { continue };
        // An agent that cuts or ends an over-long prompt is judged on its first turn alone.
        let upto = if checks_overflow(agent) { f64::INFINITY } else { 1.0 };
        let horizons = horizons(o, agent);
        for turn in turns(ctx, agent) {
            let whose = (Whose::Stage(&decl.name), decl.name_span);
            report(ctx, whose, &turn, (&horizons, upto), out);
        }
    }
}

/// Whether the rule judges the agent's prompts: a ReAct agent with `overflow = check` (one that
/// cuts or ends an over-long prompt chose what happens past the context), and a graph, which
/// declares no `overflow`.
pub(super) fn checks_overflow(agent: &Obj) -> bool {
    match agent.fields.get("overflow") {
        None => true,
        Some(v) => slots::enum_value(v).and_then(Overflow::from_word) == Some(Overflow::Check),
    }
}

/// (phase number, turns that can run, the value that sets them) of each phase, each horizon cut
/// at the agent's `max_turns` by the one rule the estimate and the runtime use
/// ([`crate::turns::turns_run`]).
fn horizons<'a>(stage: &'a Obj, agent: &'a Obj) -> Vec<Horizon<'a>> {
    // Both agents declare `max_turns`: where it is `unknown`, no turn is judged.
    let Some(limit) = agent.fields.get("max_turns").and_then(|v| Some((num(v)?, v))) else {
        return Vec::new();
    };
    let Some(phases) = phase_horizons(stage) else {
        return agent_horizon(agent)
            .into_iter()
            .map(|(phase, turns, at)| Horizon { phase, turns, at, cut: false })
            .collect();
    };
    phases
        .into_iter()
        .map(|(phase, h, hv)| match limit {
            (t, tv) if t >= 0.0 && h >= 0.0 => {
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
pub(super) struct Horizon<'a> {
    pub(super) phase: usize,
    pub(super) turns: f64,
    /// The value that sets `turns`: the phase's horizon, or the agent's `max_turns` that cut it.
    pub(super) at: &'a Val,
    pub(super) cut: bool,
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

/// What every turn's prompt takes from the agent and its env, whichever model it prompts.
struct Prompt {
    step_text: f64,
    shots: f64,
    shots_span: Option<Span>,
    step_response: f64,
    /// The text-observation window (`pages`; `all`: unbounded).
    pages: f64,
    /// Tokens each page that left the window leaves behind.
    placeholder: f64,
    /// The past actions an `action_only` prompt keeps (`actions`; `all`: unbounded).
    actions: f64,
    /// The system prompt and the task, in every turn.
    task: f64,
    /// Whether turn 1 holds an observation (not in a `search_api` env).
    first_observation: bool,
    /// The agent's `trajectory_tokens` (None: `unlimited`, `unknown`, or a graph's).
    trajectory: Option<f64>,
    /// The env's `viewport` (width, height): what a screenshot is before it is resized.
    viewport: Option<(f64, f64)>,
}

impl Prompt {
    /// The agent's and its env's part of every prompt; None where a value it needs is
    /// `unknown` (then no prompt of the agent is judged). A graph declares no `pages`,
    /// `older_pages` or `task_text`: its modules see every page (what their `inputs` say), none
    /// left behind, and no task text is counted.
    fn of(ctx: &Ctx<'_>, agent: &Obj, env: Option<&Obj>) -> Option<Prompt> {
        let env = env.or_else(|| agent.fields.get("env").and_then(|e| ctx.obj(e)))?;
        let (shots, shots_span) = screenshots(env)?;
        let pages = match agent.fields.get("pages") {
            // A tag-style episode is one sequence: every result stays in it.
            _ if tag_style(ctx, agent) => f64::INFINITY,
            None => f64::INFINITY,
            Some(p) if slots::enum_value(p) == Some("all") => f64::INFINITY,
            Some(p) => num(p)?,
        };
        let placeholder = match agent.fields.get("older_pages") {
            None => 0.0,
            Some(v) => match slots::enum_value(v).and_then(OlderPages::from_word)? {
                OlderPages::Drop => 0.0,
                OlderPages::Placeholder => PLACEHOLDER_TOKENS,
            },
        };
        let actions = match agent.fields.get("actions") {
            None => f64::INFINITY,
            Some(a) if slots::enum_value(a) == Some("all") => f64::INFINITY,
            Some(a) => num(a)?,
        };
        Some(Prompt {
            actions,
            step_text: slots::number(env, "step_text")?,
            shots,
            shots_span,
            step_response: slots::number(agent, "step_response")?,
            pages,
            placeholder,
            task: slots::number_or(agent, "task_text", 0.0)?,
            // A search API answers a tool call; a browser shows its first page and an env
            // server its reset's observation before any.
            first_observation: env.ctor != "search_api",
            trajectory: slots::number(agent, "trajectory_tokens"),
            viewport: match env.fields.get("viewport").map(|v| &v.v) {
                Some(V::Dims { width, height }) => Some((*width, *height)),
                _ => None,
            },
        })
    }
}

/// Whether a ReAct agent calls its tools by tags (`calls = tags()`): its episode is one
/// sequence holding every reply and result.
fn tag_style(ctx: &Ctx<'_>, agent: &Obj) -> bool {
    agent.fields.get("calls").and_then(|c| ctx.obj(c)).is_some_and(|c| c.kind == "call_format")
}

/// One `Turn` per model the agent prompts: the policy of a ReAct loop, each module of a graph.
pub(super) fn turns<'a>(ctx: &Ctx<'a>, agent: &'a Obj) -> Vec<Turn<'a>> {
    turns_in(ctx, agent, None)
}

/// [`turns`] with the agent acting in `env` instead of its own (an evaluation's `env = other`):
/// that env's observations, step text and viewport, the agent's own prompt rules.
pub(super) fn turns_in<'a>(ctx: &Ctx<'a>, agent: &'a Obj, env: Option<&'a Obj>) -> Vec<Turn<'a>> {
    let Some(prompt) = Prompt::of(ctx, agent, env) else { return Vec::new() };
    let mut out = Vec::new();
    let mut push =
        |model_val: &'a Val, kept: f64, history: History, shots: f64, max: Option<&Val>| {
            let Some(model) = ctx.obj(model_val).filter(|m| m.kind == "model") else { return };
            let Some(context) = model.fields.get("context") else { return };
            let (Some(max_response), Some(_)) = (max.and_then(num), num(context)) else { return };
            let Some(image) = screenshot_tokens(model, prompt.viewport) else { return };
            out.push(Turn {
                model,
                model_val,
                context,
                ep: Episode {
                    task: prompt.task,
                    step_text: prompt.step_text,
                    first_observation: prompt.first_observation,
                    pages: prompt.pages,
                    placeholder: prompt.placeholder,
                    kept,
                    actions: if history == History::ActionOnly {
                        prompt.actions
                    } else {
                        f64::INFINITY
                    },
                    no_history: history == History::None,
                    shots,
                    image,
                    max_response,
                    trajectory: prompt.trajectory,
                },
                history,
                shots_span: prompt.shots_span,
            });
        };
    if agent.ctor == "react" {
        let Some(history) = slots::read::<History>(agent, "history") else { return out };
        // A tag-style episode keeps every reply whole, whatever `history` says.
        let history = if tag_style(ctx, agent) { History::FullText } else { history };
        let kept = match history {
            History::HideThinking => prompt.step_response / 2.0,
            History::ActionOnly => ACTION_ONLY_TOKENS,
            History::FullText | History::None | History::Module => prompt.step_response,
        };
        if let Some(p) = agent.fields.get("policy") {
            push(p, kept, history, prompt.shots, agent.fields.get("max_response"));
        }
    } else {
        for m in &agent.modules {
            let Some(mo) = ctx.obj(&m.value) else { continue };
            let Some(V::List { items }) = mo.fields.get("inputs").map(|v| &v.v) else { continue };
            let inputs: Vec<&str> = items.iter().filter_map(word).collect();
            let shots = if inputs.contains(&"screenshot") { prompt.shots } else { 0.0 };
            let history = if inputs.contains(&"history") { History::Module } else { History::None };
            if let Some(model) = mo.fields.get("model") {
                push(model, prompt.step_response, history, shots, mo.fields.get("max_response"));
            }
        }
    }
    out
}

/// One screenshot's tokens for `model`: what its processor makes of the env's viewport under
/// its `image_max_pixels` (E0420 where its family cannot say), else its `image_tokens` (a model
/// without one, the tiny transformer, reads no images); None where a value is `unknown`.
fn screenshot_tokens(model: &Obj, viewport: Option<(f64, f64)>) -> Option<f64> {
    if let Some(max) = model.fields.get("image_max_pixels").and_then(num) {
        let family = model.fields.get("family").and_then(slots::enum_value)?;
        let factor = sequence::image_factor(family)?;
        // An env without a viewport shows no screenshots.
        let Some((w, h)) = viewport else { return Some(0.0) };
        return sequence::screenshot_tokens(w, h, factor, max);
    }
    slots::number_or(model, "image_tokens", 0.0)
}

/// K, the most screenshots any `screenshot(last: K)` observation keeps, and where it is (none
/// for an env that declares no `observe`); None where `observe` or a `last` is `unknown`.
fn screenshots(env: &Obj) -> Option<(f64, Option<Span>)> {
    let items = match env.fields.get("observe").map(|v| &v.v) {
        None => return Some((0.0, None)),
        Some(V::List { items }) => items,
        Some(_) => return None,
    };
    let mut best = (0.0, None);
    for item in items {
        if let V::Obj(o) = &item.v
            && o.ctor == "screenshot"
        {
            let k = slots::number(o, "last")?;
            if k > best.0 {
                best = (k, Some(item.span));
            }
        }
    }
    Some(best)
}

/// E0404 for one model's turn when the longest horizon needs more than its context: at the
/// first turn that does not fit, in the phase that runs it, with what would make it fit.
pub(super) fn report(
    ctx: &Ctx<'_>,
    (stage, stage_span): (Whose<'_>, Span),
    turn: &Turn<'_>,
    (horizons, upto): (&[Horizon<'_>], f64),
    out: &mut Vec<Diagnostic>,
) {
    let Some(context) = num(turn.context) else { return };
    let Some(longest) = horizons.iter().map(|h| h.turns).reduce(f64::max) else { return };
    let longest = longest.min(upto);
    if !(1.0..=1e9).contains(&longest) || turn.need(longest) <= context {
        return;
    }
    let t = first_over(turn, longest, context);
    let Some(&Horizon { phase, turns: horizon, at: hval, cut }) =
        horizons.iter().find(|h| h.turns >= t)
    else {
        return;
    };
    let model_name = Ctx::ref_name(turn.model_val).unwrap_or(&turn.model.ctor);
    let where_ = match stage {
        Whose::Eval(eval) if cut => {
            format!("eval `{eval}` (its max_steps cut at the agent's max_turns {})", show(horizon))
        }
        Whose::Eval(eval) => format!("eval `{eval}` (max_steps {})", show(horizon)),
        Whose::Stage(stage) => at_stage(stage, phase, horizon, cut),
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
    if let (Some(s), true) = (turn.shots_span, turn.ep.shots > 0.0 && turn.ep.image > 0.0) {
        d = d.label(s, format!("{} screenshot(s) in context", show(turn.ep.shots)));
    }
    out.push(d.help(format!("turn {}: {}; {}", show(t), turn.breakdown(t), fix(turn, t))));
}

/// Whose turns a report is about: an RL stage's (by phase) or an evaluation's.
#[derive(Clone, Copy)]
pub(super) enum Whose<'a> {
    Stage(&'a str),
    Eval(&'a str),
}

/// Where an RL stage runs turn `horizon`: the stage (phase 0: no phases) or one of its phases.
fn at_stage(stage: &str, phase: usize, horizon: f64, cut: bool) -> String {
    if phase == 0 {
        format!("stage `{stage}` (max_turns {})", show(horizon))
    } else if cut {
        format!(
            "phase {phase} of stage `{stage}` (its horizon cut at the agent's max_turns {})",
            show(horizon)
        )
    } else {
        format!("phase {phase} of stage `{stage}` (horizon {} steps)", show(horizon))
    }
}

/// The first turn, up to `longest`, whose prompt needs more than `context` (the need grows
/// with the turn).
fn first_over(turn: &Turn<'_>, longest: f64, context: f64) -> f64 {
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
    hi as f64
}

/// What would make turn `t` fit: shorter horizons, fewer pages, less history, fewer
/// screenshots (only what the agent does not already do), a longer context, or an `overflow`.
fn fix(turn: &Turn<'_>, t: f64) -> String {
    let less = match turn.history {
        History::FullText => {
            "keep less history (`history = hide_thinking`, `action_only` or `none`), "
        }
        History::HideThinking => "keep less history (`history = action_only` or `none`), ",
        History::ActionOnly if turn.ep.actions.is_infinite() => {
            "keep only the last actions (`actions = K`) or the current turn (`history = none`), "
        }
        History::ActionOnly => "keep only the current turn (`history = none`), ",
        History::None | History::Module => "",
    };
    let fewer = if turn.ep.shots > 0.0 && turn.ep.image > 0.0 { "fewer screenshots, " } else { "" };
    let window = if turn.ep.pages > 1.0 && !turn.ep.no_history {
        "keep fewer pages (`pages = 1`: only the current one), "
    } else {
        ""
    };
    if t <= 1.0 {
        format!(
            "even the first turn does not fit: lower `max_response`, {fewer}or use a model with a longer context"
        )
    } else {
        format!(
            "keep horizons at most {} steps, {window}{less}{fewer}use a model with a longer context, or say what happens past it (`overflow = truncate_left` or `end_episode`)",
            show(t - 1.0)
        )
    }
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
