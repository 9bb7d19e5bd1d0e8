//! What a plan asks for that this runtime cannot do, each refused at its field (E0502) rather
//! than ignored. Environments and agents are destructured here without `..`: every field is
//! either honoured (and the comment says where) or checked, so a field added to the type does
//! not compile until it is accounted for. RL phases are accounted for in
//! `executor::settings`, which names what is refused here.

use wrl_plan::Node;
use wrl_plan::params::{self, Agent, Env, Observation, Params, RlPhase, TypedPlan};

use super::refuse::unsupported;
use crate::error::{Fault, RunError};

/// Every refusal of one decoded node.
pub fn refusals(plan: &TypedPlan<'_>, n: &Node, p: &Params) -> Vec<RunError> {
    match p {
        Params::Model(m) => model(n, m),
        Params::Env(e) => env(plan, n, e),
        Params::Agent(a) => agent(plan, n, a),
        Params::RlPhase(r) => phase(plan, n, r),
        Params::Reward(r) => super::rewards::reward(plan, n, &r.expr, "expr"),
        Params::Sft(s) => sft(plan, n, s),
        Params::Eval(e) => {
            let mut errs = eval(n, e);
            errs.extend(super::api_policy::eval(plan, n, e));
            errs
        }
        Params::Dataset(_) | Params::Checkpoint(_) => Vec::new(),
    }
}

/// A model this runtime cannot build.
fn model(n: &Node, m: &params::Model) -> Vec<RunError> {
    let t = match m {
        // An `api(…)` model runs frozen graph modules over HTTP (`agent::brains`).
        params::Model::Api(_) => return Vec::new(),
        // Resolved, inspected and checked field by field as the executor will build it.
        params::Model::Hf(h) => {
            let mut errs = crate::executor::hf::policy_of(n, h).err().unwrap_or_default();
            errs.extend(super::device::device(n, h.device).err());
            return errs;
        }
        params::Model::Tiny(t) => t,
    };
    if let Err(e) = super::device::device(n, t.device) {
        return vec![e];
    }
    let cfg = super::footprint::tiny_config(t);
    let Err(e) = cfg.validate() else { return Vec::new() };
    let cannot = format!("model `{}` cannot be built", n.decl);
    vec![if cfg.heads > 0 && !cfg.d_model.is_multiple_of(cfg.heads) {
        RunError::new(
            Fault::Model,
            format!(
                "{cannot}: `heads` = {} does not divide `d_model` = {}",
                cfg.heads, cfg.d_model
            ),
        )
        .help("choose `heads` that divides `d_model` (4 heads for `d_model = 128`)")
        .at(n, Some("heads"), "each head takes an equal share of `d_model`")
    } else {
        RunError::new(Fault::Model, format!("{cannot}: {e}")).at(
            n,
            None,
            "this model cannot be built",
        )
    }]
}

/// Env settings this runtime cannot honour yet: a browser's (`browser`), and timeouts that
/// would end every step at once.
fn env(plan: &TypedPlan<'_>, n: &Node, e: &Env) -> Vec<RunError> {
    let mut errs = Vec::new();
    match e {
        Env::Browser(b) => errs.extend(browser(n, b, super::vision::shown_to_vl(plan, &n.id))),
        Env::SearchApi(s) => {
            let params::SearchApi {
                // The service's URL (unused with `std::sandbox::search`), its tools, how many
                // episodes run at once, and each response's length.
                base_url: _,
                target: _,
                tools,
                concurrency: _,
                timeout,
                step_text: _,
            } = s;
            errs.extend(zero_timeouts(n, &[("step", timeout.step), ("task", timeout.task)]));
            errs.extend(super::limits::search_tools(n, tools));
            errs.extend(super::limits::simulated(plan, n, s));
        }
        Env::EnvServer(s) => {
            let params::EnvServer {
                base_url,
                // Paths the server answers; its tools are shown to the policy as they are.
                endpoints: _,
                tools: _,
                api_key_env,
                concurrency: _,
                timeout,
                step_text: _,
            } = s;
            if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
                errs.push(unsupported(
                    n,
                    format!("env `{}`: `{base_url}` is not an http(s) URL", n.decl),
                    "give the server's address, e.g. `env_server(\"http://127.0.0.1:8000\")`",
                    "base_url",
                ));
            }
            if !api_key_env.is_empty() && std::env::var_os(api_key_env).is_none() {
                errs.push(unsupported(
                    n,
                    format!("env `{}`: `api_key_env` names `{api_key_env}`, which is not set", n.decl),
                    format!("export {api_key_env}=TOKEN before the run, or set `api_key_env = \"\"` for a server without one"),
                    "api_key_env",
                ));
            }
            errs.extend(zero_timeouts(n, &[("step", timeout.step), ("task", timeout.task)]));
        }
    }
    errs
}

/// What a browser env asks for that this runtime cannot do: tools the browser does not
/// implement, retried steps, pacing (`slow_mo`, `settle`), conflict-free scheduling
/// (`conflict_key`), observations a text policy cannot read (screenshots) or that are not
/// implemented (`a11y_tree`), zero timeouts, and sites other than the sandbox web.
fn browser(n: &Node, b: &params::Browser, vl: bool) -> Vec<RunError> {
    let mut errs = Vec::new();
    let params::Browser {
        // The sandbox (refused below for any other site); the tools' terse actions.
        target: _,
        tools,
        // The browser pool: window size, scale, fleet, concurrency, blacklist.
        viewport: _,
        device_scale: _,
        concurrency: _,
        remote: _,
        blacklist: _,
        blacklist_file: _,
        // The episode (`env::settings`).
        per_turn: _,
        observe,
        timeout,
        retries: _,
        step_retries,
        // Read only with `step_retries`.
        step_backoff: _,
        slow_mo,
        settle,
        conflict_key,
        // The checker's context budget (E0404).
        step_text: _,
    } = b;
    // With MCP servers, `preflight/mcp.rs` holds each tool the page does not run to the server
    // that lists it (E0517).
    let missing = crate::agent::actions::unknown_tools(tools);
    if !missing.is_empty() && tools.mcp.is_empty() {
        let names: Vec<String> = missing.iter().map(|t| format!("`{t}`")).collect();
        let set = crate::agent::actions::tool_set(tools);
        let known: Vec<String> =
            crate::agent::actions::recipe_names(set).iter().map(|t| format!("`{t}`")).collect();
        errs.push(unsupported(
            n,
            format!(
                "env `{}`: the browser does not implement tool{} {} of this tool set",
                n.decl,
                if missing.len() == 1 { "" } else { "s" },
                names.join(", ")
            ),
            format!(
                "remove {} from the tool set (a profile can swap in `std::tools::elements`); with these coordinates the browser runs {}",
                names.join(", "),
                known.join(", ")
            ),
            "tools",
        ));
    }
    if *step_retries > 0 {
        errs.push(unsupported(
            n,
            format!(
                "env `{}`: retrying a failed step (`step_retries = {step_retries}`) is \
                 not implemented: a failed action ends the episode as an `env_error`, \
                 which `retries` may run again whole",
                n.decl
            ),
            "set `step_retries = 0` (a profile can)",
            "step_retries",
        ));
    }
    for (field, d, what) in [
        ("slow_mo", slow_mo, "a delay between CDP commands (`slow_mo`)"),
        ("settle", settle, "a wait after each action (`settle`)"),
    ] {
        if d.0 > 0.0 {
            let help = format!("set `{field} = 0 s` (a profile can)");
            errs.push(unsupported(
                n,
                format!("env `{}`: {what} is not implemented", n.decl),
                help,
                field,
            ));
        }
    }
    if !conflict_key.is_empty() {
        errs.push(unsupported(
            n,
            format!(
                "env `{}`: keeping conflicting tasks apart (`conflict_key`) is not \
                 implemented",
                n.decl
            ),
            "set `conflict_key = \"\"`; sandbox tasks reset their state per episode",
            "conflict_key",
        ));
    }
    errs.extend(observations(n, observe, vl));
    let limits = [("step", timeout.step), ("task", timeout.task), ("acquire", timeout.acquire)];
    errs.extend(zero_timeouts(n, &limits));
    if let params::Site::Retriever { .. } | params::Site::Simulated(_) = b.target {
        errs.push(
            RunError::new(
                Fault::Unsupported,
                format!("env `{}`: a retriever or a simulated search engine is a search API, not a web site", n.decl),
            )
            .help("make it the `target` of a `search_api` env, whose agent calls `search`")
            .at(n, Some("target"), "a browser cannot open a search API"),
        );
    } else if !b.target.is_sandbox() {
        errs.push(
            RunError::new(
                Fault::Unsupported,
                format!("env `{}` targets a site this runtime cannot reach offline", n.decl),
            )
            .help("run with a profile whose env targets `std::sandbox::web`")
            .at(n, Some("target"), "this runtime runs only the sandbox web"),
        );
    }
    errs
}

/// Observations this runtime's policies cannot read: screenshots shown to a text policy (`vl`:
/// every agent in the env is a vision-language policy, `preflight::vision`), and the
/// accessibility tree (not implemented).
fn observations(n: &Node, observe: &[Observation], vl: bool) -> Vec<RunError> {
    let mut errs = Vec::new();
    let text_only = "set `observe = [elements(max: 32), url, feedback]` (a profile can)";
    for o in observe {
        match o {
            // Shown to a Qwen3-VL policy as images (`agent::vision`), older ones as `older` says.
            Observation::Screenshot { last, older: _ } if *last > 0 && !vl => {
                errs.push(unsupported(
                    n,
                    format!(
                        "env `{}`: `observe` shows the policy the last {last} screenshot(s), \
                     but its agents' policies read text only (an `hf` Qwen3-VL or Qwen2.5-VL \
                     policy reads them in a ReAct agent or a graph module that lists \
                     `screenshot`, and an `api(…)` ReAct policy is sent them)",
                        n.decl
                    ),
                    format!("{text_only}; `screenshot(last: 0)` keeps screenshots for judges"),
                    "observe",
                ))
            }
            Observation::A11yTree => errs.push(unsupported(
                n,
                format!(
                    "env `{}`: the accessibility-tree observation (`a11y_tree`) is not \
                     implemented",
                    n.decl
                ),
                text_only,
                "observe",
            )),
            Observation::Screenshot { .. }
            | Observation::Url
            | Observation::Tabs
            | Observation::Elements { .. }
            | Observation::Html { .. }
            | Observation::Feedback { .. } => {}
        }
    }
    errs
}

/// A zero timeout would end every step (or episode) at once.
fn zero_timeouts(n: &Node, limits: &[(&str, params::Seconds)]) -> Vec<RunError> {
    limits
        .iter()
        .filter(|(_, s)| s.0 <= 0.0)
        .map(|(which, _)| {
            RunError::new(
                Fault::Unsupported,
                format!(
                    "env `{}`: a `timeout.{which}` of 0 s would end every {which} at once",
                    n.decl
                ),
            )
            .help(format!("give `timeout.{which}` a positive duration"))
            .at(n, Some("timeout"), "no time to act")
        })
        .collect()
}

/// What an agent asks for that this runtime cannot do: a graph in a search API, per-role
/// weights whose roles cannot name a directory, a ReAct prompt the tiny policy cannot take.
fn agent(plan: &TypedPlan<'_>, n: &Node, a: &Agent) -> Vec<RunError> {
    let mut errs = super::limits::agent(n, a);
    match a {
        Agent::React(r) => {
            errs.extend(super::vision::agent(plan, n, r));
            errs.extend(super::api_policy::agent(plan, n, r));
            // Tag-style calls read a search API's tool responses; a page is not one.
            let search = matches!(plan.get(r.env.id()), Some(Params::Env(Env::SearchApi(_))));
            if r.calls.tags().is_some() && !search {
                errs.push(unsupported(
                    n,
                    format!(
                        "agent `{}`: tag-style calls (`calls = tags()`) run in a `search_api` \
                         env only: this runtime appends a search API's responses to the \
                         sequence, not pages",
                        n.decl
                    ),
                    "set `calls = hermes`, or act in a `search_api` env",
                    "calls",
                ));
            }
            if !r.prompt.is_empty() {
                errs.push(unsupported(
                    n,
                    format!(
                        "agent `{}`: a ReAct agent's `prompt` is not used by this runtime's \
                         policies, which see the page, the actions so far and the task",
                        n.decl
                    ),
                    "set `prompt = \"\"` (a profile can)",
                    "prompt",
                ));
            }
        }
        Agent::Graph(g) => {
            errs.extend(super::vision::graph(plan, n, g));
            let search = matches!(plan.get(g.env.id()), Some(Params::Env(Env::SearchApi(_))));
            if search {
                errs.push(
                    RunError::new(
                        Fault::Unsupported,
                        format!(
                            "agent `{}`: module graphs in a `search_api` env are not implemented",
                            n.decl
                        ),
                    )
                    .help("use a `react` agent with the search tools, or a `browser` env")
                    .at(
                        n,
                        Some("env"),
                        "this runtime runs graphs only in browsers",
                    ),
                );
            }
            if g.weights == params::Weights::PerRole {
                let spec = crate::agent::graph::GraphSpec::new(g);
                let ok =
                    |r: &str| r.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                for m in spec.modules.values().filter(|m| m.trainable && !ok(&m.role)) {
                    errs.push(
                        RunError::new(
                            Fault::Unsupported,
                            format!(
                                "agent `{}`: the role `{}` of module `{}` cannot name the \
                                 directory its weights are saved in",
                                n.decl, m.role, m.name
                            ),
                        )
                        .help(
                            "use letters, digits, `_` and `-` in the roles of a `weights = \
                             per_role` graph",
                        )
                        .at(
                            n,
                            Some("weights"),
                            "each role's weights are saved under `roles/ROLE/`",
                        ),
                    );
                }
            }
        }
    }
    errs
}

/// What an RL phase asks for that this runtime cannot do yet, and a `trainable` list that
/// names no trainable module of its agent.
fn phase(plan: &TypedPlan<'_>, n: &Node, p: &RlPhase) -> Vec<RunError> {
    let cannot = |what: String, help: &str, field: &str| {
        unsupported(n, format!("stage `{}`: {what}", n.decl), help, field)
    };
    // `frozen` is honoured by the executor (a text model has no vision tower or projector);
    // tied parts go together.
    let mut errs: Vec<RunError> =
        crate::executor::hf::frozen_split(plan, n, p.run.init.id(), &p.update.frozen)
            .into_iter()
            .chain(super::limits::gigpo_tags(plan, n, p))
            .chain(super::lora::lora(plan, n, p.run.init.id(), &p.update.lora))
            .chain(super::vision::rl(plan, n, p))
            .collect();
    // The checker refuses this (E0440); a plan written by other means is refused here.
    let mb = p.update.mini_batch;
    if mb.split(p.algo.level() == params::Level::Turn).is_none() {
        errs.push(cannot(
            format!("a mini-batch of {mb} cannot be split at level trajectory"),
            "count the mini-batch in `trajectories`, `prompts` or `samples`, or set `level = turn`",
            "mini_batch",
        ));
    }
    errs.extend(crate::executor::faults::refusal(n, &p.rollout.stop_excluded));
    let trained = params::MaskPart::left_out(&p.update.mask);
    if !trained.is_empty() {
        errs.push(cannot(
            format!(
                "training on text the policy did not write ({} left out of `mask`) is not \
                 implemented: the loss covers the policy's replies only",
                trained.join(", ")
            ),
            "set `mask = [observations, tool_output, history, system]` (a profile can)",
            "mask",
        ));
    }
    match &p.algo {
        params::Algo::Grpo(g) => errs.extend(grpo(plan, n, p, g)),
        params::Algo::Dapo(d) => {
            if d.dynamic_sampling.metric != "reward" {
                errs.push(cannot(
                    format!(
                        "dynamic sampling on the metric `{}` is not implemented; groups are \
                         compared on their reward",
                        d.dynamic_sampling.metric
                    ),
                    "set `dynamic_sampling = { metric = \"reward\", … }`",
                    "dynamic_sampling",
                ));
            }
        }
        // Its advantage and critic: below, with every algorithm's.
        params::Algo::Ppo(_) => {}
    }
    errs.extend(super::critic::refusals(
        plan,
        n,
        p.run.init.id(),
        p.run.agent.id(),
        &p.update.advantage,
        &p.algo,
    ));
    // The checker refuses these (E0449, E0448); a plan written by other means is refused here.
    if let Some(b) = p.algo.branching() {
        let forkable = match plan.get(p.run.agent.id()) {
            Some(Params::Agent(a @ Agent::React(_))) => {
                matches!(plan.get(agent_env(a).id()), Some(Params::Env(Env::SearchApi(_))))
            }
            _ => false,
        };
        if !forkable || b.initial > p.rollout.group {
            errs.push(cannot(
                "branching replays a parent's turns within `group` samples: a ReAct agent in a \
                 `search_api` env, with `initial` at most `group`, only"
                    .into(),
                "set `branching = off`",
                "branching",
            ));
        }
    }
    errs
}

/// What a `grpo` phase's own fields ask for that this runtime cannot do: asynchronous
/// rollouts, a summed process reward, and `trainable` roles its agent does not have.
fn grpo(plan: &TypedPlan<'_>, n: &Node, p: &RlPhase, g: &params::Grpo) -> Vec<RunError> {
    let mut errs = Vec::new();
    let cannot = |what: String, help: &str, field: &str| {
        unsupported(n, format!("stage `{}`: {what}", n.decl), help, field)
    };
    if g.asynchronous.staleness.0 != 0.0 || g.asynchronous.sync_every != 1 {
        errs.push(cannot(
            "asynchronous rollouts (`async`) are not implemented: this runtime updates after \
             every batch, on-policy"
                .into(),
            "set `async = { staleness = 0%, sync_every = 1, partial_rollout = false }` (a \
             profile can)",
            "async",
        ));
    }
    if g.process_mix == params::ProcessMix::Summed {
        errs.push(cannot(
            "adding the episode's summed process reward to every turn (`process_mix = summed`) \
             is not implemented: each turn gets its own step's"
                .into(),
            "set `process_mix = per_step`",
            "process_mix",
        ));
    }
    if !g.trainable.is_empty()
        && let Some(Params::Agent(Agent::Graph(graph))) = plan.get(p.run.agent.id())
    {
        let spec = crate::agent::graph::GraphSpec::new(graph);
        for missing in
            g.trainable.iter().filter(|r| !spec.modules.get(*r).is_some_and(|m| m.trainable))
        {
            errs.push(
                RunError::new(
                    Fault::Unsupported,
                    format!(
                        "stage `{}` trains `{missing}`, which is not a trainable module of its agent",
                        n.decl
                    ),
                )
                .help("list only modules declared with `trainable`")
                .at(n, Some("trainable"), "named here"),
            );
        }
    }
    errs
}

/// What an SFT stage asks for that the text policy's examples cannot do.
fn sft(plan: &TypedPlan<'_>, n: &Node, s: &params::Sft) -> Vec<RunError> {
    // `frozen` is honoured (the executor passes a stage's parts to the trainer); a text model
    // has no `vision_tower` or `projector`, so those freeze nothing; tied parts go together.
    let mut errs: Vec<RunError> =
        crate::executor::hf::frozen_split(plan, n, s.model.id(), &s.frozen)
            .into_iter()
            .chain(super::lora::lora(plan, n, s.model.id(), &s.lora))
            .chain(super::limits::sft_tags(plan, n, s))
            .chain(super::vision::sft(plan, n, s))
            .chain(super::sft_room::sft_room(plan, n, s))
            .collect();
    if !s.mask.contains(&params::MaskPart::Observations) {
        errs.push(unsupported(
            n,
            format!(
                "stage `{}`: training on observations (a `mask` without `observations`) is not \
                 implemented: each example trains the assistant's turn only",
                n.decl
            ),
            "keep `observations` in `mask`",
            "mask",
        ));
    }
    errs
}

/// What an evaluation asks for that this runtime does not compute.
fn eval(n: &Node, e: &params::Evaluate) -> Vec<RunError> {
    let mut errs = Vec::new();
    if e.denominator == params::Denominator::NonAborted {
        errs.push(unsupported(
            n,
            format!(
                "eval `{}`: leaving aborted episodes out of the rate (`denominator = \
                 non_aborted`) is not implemented",
                n.decl
            ),
            "use `denominator = all`",
            "denominator",
        ));
    }
    errs
}

/// The env an agent acts in.
fn agent_env(a: &Agent) -> &params::NodeRef {
    match a {
        Agent::React(r) => &r.env,
        Agent::Graph(g) => &g.env,
    }
}
