//! A format reward the stage's agent can never pass (W0231): `format_ok(mode: browser_env)` or
//! `strict_tags` read `</think>`, `<thinking>` and `<tool_call>` in each reply, which the tiny
//! policy (terse lines, `click 7`) and tag-style calls (`<search>…</search>`) never write; a
//! `tags_ok` that requires tags the tiny policy's terse lines cannot hold. Every episode would
//! score 0 on it, and the run would only find out in its reward curve.

use std::collections::BTreeSet;

use wrl_diagnostics::Diagnostic;

use super::{Ctx, RL_CTORS, word};
use crate::value::{Obj, V};

/// What the agent's replies look like, as far as format rewards can tell.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Writes {
    /// The tiny policy's terse lines, with no tag at all.
    Terse,
    /// Tag-style calls, each between its tool's tags.
    Tags,
}

pub(super) fn check(ctx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    let mut seen = BTreeSet::new();
    for (decl, o) in ctx.stages() {
        if !RL_CTORS.contains(&o.ctor.as_str()) {
            continue;
        }
        let Some(agent) = o.fields.get("agent").and_then(|a| ctx.obj(a)) else { continue };
        let Some(writes) = writes(ctx, agent) else { continue };
        for slot in ["reward", "process_reward"] {
            let Some(r) = o.fields.get(slot) else { continue };
            let mut sigs = Vec::new();
            super::data::signals(ctx, r, &mut sigs, 0);
            for (s, at) in sigs {
                let Some(why) = never(s, writes) else { continue };
                let place = s.fields.get("mode").filter(|m| !ctx.is_default(m)).unwrap_or(at);
                if !seen.insert((place.span.start, place.span.end, decl.name.clone())) {
                    continue;
                }
                let help = match writes {
                    Writes::Terse => {
                        "the tiny policy's turns are well formed or not: \
                        `format_ok(mode: react_tags)` reads that; or train an `hf(…)` policy that \
                        writes its thinking and Hermes calls"
                    }
                    Writes::Tags => {
                        "hold tag-style turns to a rule of your own: \
                        `tags_ok([\"think\", \"search\", \"answer\"])`"
                    }
                };
                out.push(
                    Diagnostic::new(
                        "W0231",
                        format!(
                            "`{}` can never pass a turn of the agent of `{}`: {why}",
                            s.ctor.rsplit("::").next().unwrap_or(&s.ctor),
                            decl.name
                        ),
                    )
                    .label(place.span, "every episode scores 0 on this")
                    .help(help),
                );
            }
        }
    }
}

/// How a ReAct agent's replies are written, where that rules tags out; `None` for an agent
/// whose replies may hold any tag (an `hf(…)` policy with Hermes calls, a module graph).
fn writes(ctx: &Ctx<'_>, agent: &Obj) -> Option<Writes> {
    if agent.ctor != "react" {
        return None;
    }
    if agent.fields.get("calls").and_then(|c| ctx.obj(c)).is_some_and(|c| c.kind == "call_format") {
        return Some(Writes::Tags);
    }
    let policy = agent.fields.get("policy").and_then(|p| ctx.obj(p))?;
    (policy.ctor == "tiny_transformer").then_some(Writes::Terse)
}

/// Why signal `s` can never pass a turn written as `writes`; `None` when it can.
fn never(s: &Obj, writes: Writes) -> Option<String> {
    let name = s.ctor.rsplit("::").next().unwrap_or(&s.ctor);
    match name {
        "format_ok" => {
            let mode = s.fields.get("mode").and_then(word).unwrap_or("browser_env");
            let needs = match mode {
                "browser_env" => "`</think>` and a `<tool_call>`",
                "strict_tags" => "`<thinking>`, `<action>` and `<tool_call>` blocks",
                _ => return None,
            };
            Some(match writes {
                Writes::Terse => {
                    format!("mode `{mode}` needs {needs}, and the tiny policy writes terse lines")
                }
                Writes::Tags => format!(
                    "mode `{mode}` needs {needs}, and tag-style calls write each call between its tool's tags"
                ),
            })
        }
        "tags_ok" if writes == Writes::Terse => {
            let required = match s.fields.get("required").map(|r| &r.v) {
                Some(V::List { items }) => !items.is_empty(),
                _ => false,
            };
            required.then(|| "it requires tags, and the tiny policy writes terse lines".to_string())
        }
        _ => None,
    }
}
