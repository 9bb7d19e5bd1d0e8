//! Screenshots and vision-language policies: which agents are shown screenshots (a ReAct agent
//! whose policy is an `hf` Qwen3-VL or Qwen2.5-VL model, in a conversation, in a browser that
//! observes them; a graph's modules that list `screenshot` and run such a model), and what is
//! refused by name where a screenshot would reach a policy that cannot read it (a graph module
//! of a text or `api(…)` model) or a stage that cannot train on it (rewritten demonstrations, a
//! trainable tower, PPO's critic).

use wrl_plan::Node;
use wrl_plan::params::{self, Agent, Env, Family, History, Params, TypedPlan};
use wrl_trainer::hf::{self, RepoKind};

use super::refuse::unsupported;
use crate::error::RunError;

/// Whether the model behind `policy` (an `hf(…)` model, or a stage's weights of one) is a
/// vision-language model this runtime runs: `family = qwen3_vl` or `qwen2_5_vl`, or `auto`
/// naming a Qwen-VL directory.
pub(crate) fn is_vl(plan: &TypedPlan<'_>, policy: &str) -> bool {
    let Some((_, h)) = crate::executor::hf::trained_hf(plan, policy) else { return false };
    match h.family {
        Family::Qwen3Vl | Family::Qwen25Vl => true,
        Family::Auto => hf::resolve(&h.id, RepoKind::Model)
            .and_then(|dir| hf::inspect(&dir))
            .is_ok_and(|f| f.vision.is_some()),
        Family::Qwen2 | Family::Qwen3 | Family::Llama => false,
    }
}

/// Whether `policy` is an `api(…)` model: a served policy is sent screenshots as image parts
/// (`agent::api_policy`); whether it reads them is the endpoint's to say.
fn is_served(plan: &TypedPlan<'_>, policy: &str) -> bool {
    matches!(plan.get(policy), Some(Params::Model(params::Model::Api(_))))
}

/// Whether every agent acting in env `env` (and at least one) reads screenshots: a ReAct agent
/// whose policy does (a vision-language `hf(…)` model, or an `api(…)` one that is sent them), a
/// graph with a module that lists `screenshot` and runs a vision-language model (its other
/// modules that list it are refused by [`graph`]): only then may the env show them
/// (`screenshot(last: K)`, K > 0).
pub(crate) fn shown_to_vl(plan: &TypedPlan<'_>, env: &str) -> bool {
    let agents: Vec<&Agent> = (plan.nodes.iter())
        .filter_map(|(_, p)| match p {
            Params::Agent(a @ Agent::React(r)) if r.env.id() == env => Some(a),
            Params::Agent(a @ Agent::Graph(g)) if g.env.id() == env => Some(a),
            _ => None,
        })
        .collect();
    !agents.is_empty()
        && agents.iter().all(|a| match a {
            Agent::React(r) => is_vl(plan, r.policy.id()) || is_served(plan, r.policy.id()),
            Agent::Graph(g) => g.modules.values().any(|m| module_sees(plan, m)),
        })
}

/// Whether graph module `m` lists `screenshot` and runs a model it can be shown them: a
/// vision-language one (its own, or the stage's weights of it that a stage binds to it), or an
/// `api(…)` one, sent them as image parts (`agent::graph_vision::api_messages`).
fn module_sees(plan: &TypedPlan<'_>, m: &params::Module) -> bool {
    let model = m.model().id();
    lists_screenshot(m) && (is_vl(plan, model) || is_served(plan, model))
}

fn lists_screenshot(m: &params::Module) -> bool {
    let inputs = match m {
        params::Module::Llm(l) => &l.inputs,
        params::Module::PolicyOf(p) => &p.inputs,
    };
    inputs.contains(&params::ModuleInput::Screenshot)
}

/// The modules of graph `g` that list `screenshot` in a browser that shows them (`screenshot(
/// last: K)`, K > 0) to a graph that reads them, but run a model that cannot be shown them (a
/// text `hf(…)` model, the tiny policy). Refused
/// at `modules`, never shown the page's text in the screenshot's stead unsaid. (A graph none
/// of whose modules reads screenshots is refused at its env's `observe`.)
pub(crate) fn graph(plan: &TypedPlan<'_>, n: &Node, g: &params::Graph) -> Vec<RunError> {
    let shown = match plan.get(g.env.id()) {
        Some(Params::Env(Env::Browser(b))) => shows(b),
        _ => false,
    };
    if !shown || !g.modules.values().any(|m| module_sees(plan, m)) {
        return Vec::new();
    }
    let mut errs = Vec::new();
    for (name, m) in g.modules.iter().filter(|(_, m)| lists_screenshot(m) && !module_sees(plan, m))
    {
        errs.push(unsupported(
            n,
            format!(
                "agent `{}`: module `{name}` lists `screenshot` in its `inputs` and its env shows \
                 screenshots, but its model `{}` reads text only: only a vision-language `hf(…)` \
                 model (`family = qwen3_vl` or `qwen2_5_vl`) or an `api(…)` one is shown them",
                n.decl,
                m.model().id().trim_start_matches("model:")
            ),
            format!(
                "remove `screenshot` from `{}.{name}.inputs` (a profile can; `url` or \
                 `feedback` show the page's text), or give the module a vision-language model",
                n.decl
            ),
            "modules",
        ));
    }
    errs
}

/// What a ReAct agent with a vision-language policy in a browser that shows screenshots needs:
/// its episode as a conversation (the screenshots stand in its messages) with its tool calls.
pub(crate) fn agent(plan: &TypedPlan<'_>, n: &Node, r: &params::React) -> Vec<RunError> {
    if !shows_screens(plan, r) || !(is_vl(plan, r.policy.id()) || is_served(plan, r.policy.id())) {
        return Vec::new();
    }
    match r.history {
        History::FullText | History::HideThinking => Vec::new(),
        History::ActionOnly | History::None => vec![unsupported(
            n,
            format!(
                "agent `{}`: a vision-language policy is shown its screenshots in the episode's \
                 conversation, which `history = {}` does not keep",
                n.decl,
                if r.history == History::None { "none" } else { "action_only" }
            ),
            "set `history = full_text` (or `hide_thinking`)",
            "history",
        )],
    }
}

/// What an SFT stage of a vision-language policy cannot do: train the tower or the merger
/// (`frozen` must name both, as for RL), or train on rewritten copies of the expert's
/// demonstrations (`augment`) when the agent is shown screenshots: the copies' text would
/// name values their screenshots do not show.
pub(crate) fn sft(plan: &TypedPlan<'_>, n: &Node, s: &params::Sft) -> Vec<RunError> {
    if !is_vl(plan, s.model.id()) {
        return Vec::new();
    }
    let mut errs: Vec<RunError> = tower_frozen(n, &s.frozen).into_iter().collect();
    let mut parts = vec![s.data.id()];
    if let Some(params::Params::Dataset(params::Dataset::Mixture(m))) = plan.get(s.data.id()) {
        parts.extend(m.parts.iter().map(|p| p.id()));
    }
    // The agent whose prompts the stage's examples take.
    let shown =
        crate::agent::AgentCfg::for_sft(plan, s.model.id()).map(|a| a.shown_screens().is_some());
    for id in parts {
        let Some((dn, Params::Dataset(params::Dataset::SandboxDemos(d)))) = plan.node(id) else {
            continue;
        };
        if d.augment > 0 && shown == Some(true) {
            errs.push(unsupported(
                dn,
                format!(
                    "dataset `{}`: rewritten copies of the expert's demonstrations (`augment = \
                     {}`) cannot train the vision-language policy of stage `{}`: their text \
                     names values their screenshots do not show",
                    dn.decl, d.augment, n.decl
                ),
                "set `augment = 0`, or train a text policy on the copies",
                "augment",
            ));
        }
    }
    errs
}

/// Whether ReAct agent `r`'s env shows screenshots (`screenshot(last: K)`, K > 0).
fn shows_screens(plan: &TypedPlan<'_>, r: &params::React) -> bool {
    match plan.get(r.env.id()) {
        Some(Params::Env(Env::Browser(b))) => shows(b),
        _ => false,
    }
}

/// Whether browser `b` shows screenshots (`screenshot(last: K)`, K > 0).
fn shows(b: &params::Browser) -> bool {
    b.observe.iter().any(|o| matches!(o, params::Observation::Screenshot { last, .. } if *last > 0))
}

/// `frozen` without the tower or the merger of a vision-language policy: they hold no
/// variables, so nothing of them trains.
fn tower_frozen(n: &Node, frozen: &[params::FrozenPart]) -> Option<RunError> {
    let missing: Vec<&str> = [params::FrozenPart::VisionTower, params::FrozenPart::Projector]
        .into_iter()
        .filter(|f| !frozen.contains(f))
        .map(params::FrozenPart::word)
        .collect();
    if missing.is_empty() {
        return None;
    }
    Some(unsupported(
        n,
        format!(
            "stage `{}`: training a vision-language policy's {} is not implemented: the tower \
             and the merger take no gradient",
            n.decl,
            missing.join(" and ")
        ),
        "freeze them: `frozen = [vision_tower, projector]`",
        "frozen",
    ))
}

/// What an RL phase of a vision-language policy cannot do: train the tower or the merger
/// (they hold no variables: `frozen` must name both), or a critic's values (PPO's critic reads
/// no images).
pub(crate) fn rl(plan: &TypedPlan<'_>, n: &Node, p: &params::RlPhase) -> Vec<RunError> {
    if !is_vl(plan, p.run.init.id()) {
        return Vec::new();
    }
    let mut errs: Vec<RunError> = tower_frozen(n, &p.update.frozen).into_iter().collect();
    if let params::Algo::Ppo(_) = p.algo {
        errs.push(unsupported(
            n,
            format!(
                "stage `{}`: PPO's critic over a vision-language policy's prompts is not \
                 implemented (it would read them without their images)",
                n.decl
            ),
            "use `grpo` or `dapo`",
            "init",
        ));
    }
    errs
}
