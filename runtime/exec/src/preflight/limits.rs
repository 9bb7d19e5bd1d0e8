//! Fields of the seed recipes' round 3 (#44) this runtime does not honour yet, each refused at
//! its field (E0502) rather than ignored: a ReAct agent's cut of tool responses and its
//! per-call timeout, a graph module's stop strings and grounding pairs; for a tag-style agent
//! (#46), the sandbox expert's demonstrations no tag can write and GiGPO's step-level groups;
//! and a `search_api` env's tools other than the two its service answers (a code tool, a
//! reading agent: #46 item 4), and a simulated search engine that is no endpoint or is asked to
//! `visit`.

use wrl_plan::Node;
use wrl_plan::params::{self, Dataset, Params, RecordKind, TypedPlan};

use super::refuse::unsupported;
use crate::error::RunError;

/// A ReAct agent's `tool_response_chars` and `call_timeout`, a graph's modules' `stop`.
pub(super) fn agent(n: &Node, a: &params::Agent) -> Vec<RunError> {
    let mut errs = Vec::new();
    match a {
        params::Agent::React(r) => {
            // A tag-style agent cuts each result before it enters the sequence (`agent::tags`).
            if let params::OrUnlimited::Value(c) = r.tool_response_chars
                && r.calls.tags().is_none()
            {
                errs.push(unsupported(
                    n,
                    format!(
                        "agent `{}`: cutting each tool response to {c} characters is not \
                         implemented: the prompt keeps each whole, within its `pages` window",
                        n.decl
                    ),
                    "set `tool_response_chars = unlimited` (a profile can; a tag-style agent, \
                     `calls = tags()`, cuts its results)",
                    "tool_response_chars",
                ));
            }
            if let params::OrOff::Value(t) = r.call_timeout {
                errs.push(unsupported(
                    n,
                    format!(
                        "agent `{}`: a time limit of {} s on one policy call is not implemented: \
                         only the env's `timeout.task` ends a slow episode",
                        n.decl, t.0
                    ),
                    "set `call_timeout = off` (a profile can)",
                    "call_timeout",
                ));
            }
        }
        params::Agent::Graph(g) => {
            for (name, m) in g.modules.iter().filter(|(_, m)| !m.stop().is_empty()) {
                errs.push(unsupported(
                    n,
                    format!(
                        "agent `{}`: module `{name}` stops at {}, which is not implemented: a \
                         module's reply ends at its model's end of turn or its `max_response`",
                        n.decl,
                        m.stop().iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ")
                    ),
                    format!("set `{}.{name}.stop = []` (a profile can)", n.decl),
                    "modules",
                ));
            }
        }
    }
    errs
}

/// A dataset of grounding pairs (`kind = grounding`), which no stage of this runtime trains on.
pub(super) fn grounding(n: &Node, d: &Dataset) -> Option<RunError> {
    let kind = match d {
        Dataset::Jsonl(f) | Dataset::Parquet(f) => f.kind,
        Dataset::HfDataset(h) => h.kind,
        Dataset::Mixture(m) => m.kind,
        _ => return None,
    };
    (kind == RecordKind::Grounding).then(|| {
        unsupported(
            n,
            format!(
                "dataset `{}`: grounding pairs (`kind = grounding`) are not implemented: SFT \
                 trains on trajectories",
                n.decl
            ),
            "replace the dataset with trajectories (a profile can)",
            "kind",
        )
    })
}

/// An SFT stage whose agent (`AgentCfg::for_sft`, whose prompts the examples show) calls by tags,
/// on the sandbox expert's demonstrations a tag cannot write: those it records in Chromium
/// (clicks and typing, `env = browser`), and multi-hop questions, whose calls search two names
/// or visit several pages at once. Each step of a tag-style demonstration is one call of one
/// argument (`agent::tag_demos`); other data are checked step by step when the stage starts.
pub(super) fn sft_tags(plan: &TypedPlan<'_>, n: &Node, s: &params::Sft) -> Vec<RunError> {
    if crate::agent::AgentCfg::for_sft(plan, s.model.id()).is_none_or(|a| a.tags.is_none()) {
        return Vec::new();
    }
    let mut parts = vec![s.data.id()];
    if let Some(Params::Dataset(Dataset::Mixture(m))) = plan.get(s.data.id()) {
        parts.extend(m.parts.iter().map(|p| p.id()));
    }
    let mut errs = Vec::new();
    for id in parts {
        let Some((dn, Params::Dataset(Dataset::SandboxDemos(d)))) = plan.node(id) else {
            continue;
        };
        let why = match d.env {
            params::DemoEnv::Browser => Some((
                "env",
                "are clicks and typing in Chromium, which no tag calls".to_string(),
                "record them with `env = search_api` (and `questions = [lookup]`)",
            )),
            params::DemoEnv::SearchApi => {
                let hops: Vec<String> = d
                    .questions
                    .iter()
                    .filter_map(|q| match q {
                        params::QaQuestion::Lookup => None,
                        params::QaQuestion::Compare => Some("`compare`".into()),
                        params::QaQuestion::Chain => Some("`chain`".into()),
                        params::QaQuestion::Difference => Some("`difference`".into()),
                    })
                    .collect();
                (!hops.is_empty()).then(|| {
                    (
                        "questions",
                        format!(
                            "answer multi-hop questions ({}) by searching two names or visiting \
                             several pages in one call, which one tag cannot hold",
                            hops.join(", ")
                        ),
                        "set `questions = [lookup]`, or train the tag-style agent by RL alone",
                    )
                })
            }
        };
        if let Some((field, what, help)) = why {
            errs.push(unsupported(
                dn,
                format!(
                    "dataset `{}`: the expert's demonstrations {what}; stage `{}` trains a \
                     tag-style agent (`calls = tags()`), which makes one call of one argument a \
                     step",
                    dn.decl, n.decl
                ),
                help,
                field,
            ));
        }
    }
    errs
}

/// GiGPO over a tag-style agent: its step-level groups need a sample per step, and a tag-style
/// episode trains as one sample (its steps joined into one sequence).
pub(super) fn gigpo_tags(plan: &TypedPlan<'_>, n: &Node, p: &params::RlPhase) -> Option<RunError> {
    let params::OrGrpo::Value(params::AdvantageObj::Gigpo(_)) = p.update.advantage else {
        return None;
    };
    let Some(Params::Agent(params::Agent::React(r))) = plan.get(p.run.agent.id()) else {
        return None;
    };
    r.calls.tags()?;
    Some(unsupported(
        n,
        format!(
            "stage `{}`: GiGPO's step-level advantages group one sample per step by its state, \
             and a tag-style agent (`calls = tags()`) trains each episode as one sample",
            n.decl
        ),
        "use group-relative advantages (`advantage = grpo`), or `calls = hermes`",
        "advantage",
    ))
}

/// The tools of a `search_api` env's tool set beyond `search` and `visit` (and an `answer`
/// tool) when no MCP server serves them: the service answers those two only, so a `python` or
/// `browse_webpage` tool would fail every call mid-run instead of being refused here. With MCP
/// servers, `preflight/mcp.rs` holds each such tool to the server that lists it.
pub(super) fn search_tools(n: &Node, tools: &params::Toolset) -> Option<RunError> {
    if !tools.mcp.is_empty() {
        return None;
    }
    let extra: Vec<String> = tools
        .tools
        .iter()
        .filter(|t| !matches!(t.name.as_str(), "search" | "visit" | "answer"))
        .map(|t| format!("`{}`", t.name))
        .collect();
    (!extra.is_empty()).then(|| {
        unsupported(
            n,
            format!(
                "env `{}`: the search service answers `search` and `visit`; {} would fail at every call",
                n.decl,
                extra.join(", ")
            ),
            "serve them from an MCP server (`mcp = [mcp(\"http://127.0.0.1:8000/mcp\")]` in the tool set; docs/mcp.md), or remove them",
            "tools",
        )
    })
}

/// A `simulated_search` target: its engine is sampled over an OpenAI-compatible endpoint (an
/// `api(…)` model), and it answers `search` only.
pub(super) fn simulated(plan: &TypedPlan<'_>, n: &Node, s: &params::SearchApi) -> Vec<RunError> {
    let params::Site::Simulated(sim) = &s.target else { return Vec::new() };
    let mut errs = Vec::new();
    if !matches!(plan.get(sim.engine.id()), Some(Params::Model(params::Model::Api(_)))) {
        let engine = plan.node(sim.engine.id()).map_or(sim.engine.id(), |(e, _)| e.decl.as_str());
        errs.push(unsupported(
            n,
            format!(
                "env `{}`: the simulated search engine `{engine}` is not an `api(…)` model",
                n.decl
            ),
            "the engine is asked over an OpenAI-compatible endpoint: declare it with `api(…)` \
             (serve a local checkpoint with `wrlc serve` and point `base_url` at it)",
            "target",
        ));
    }
    if s.tools.tools.iter().any(|t| t.name == "visit") {
        errs.push(unsupported(
            n,
            format!(
                "env `{}`: a simulated search engine answers `search` only, not `visit`",
                n.decl
            ),
            "remove `visit` from the tool set (ZeroSearch's agent only searches and answers)",
            "tools",
        ));
    }
    errs
}
