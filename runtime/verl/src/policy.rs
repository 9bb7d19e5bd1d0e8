//! What a phase's agent, its env and its policy model mean to the run: the policy's context
//! gives verl's lengths, its dtype and chat template verl's keys; the agent's settings and the
//! env's go to the wrl agent loop and the env service (which reads the same plan). The first run
//! that reads a node records its fields; later runs write the same values again.

use serde_json::{Value as Json, json};
use wrl_plan::Node;
use wrl_plan::params::{self, Agent, ChatTemplate, DType, Family, Model, OrNone, Params};

use crate::ctx::{Ctx, E_DATA, E_UNMAPPED};
use crate::record::{once, put, put_al};

const R: &str = "actor_rollout_ref.rollout";

/// A ReAct agent's page and action windows: the env service composes each turn's prompt, so
/// it keeps the pages and lists the actions; ending an episode on an over-long prompt is the client's call, which verl's agent
/// loop does not make (refused).
fn window(
    c: &mut Ctx<'_>,
    agent: &Node,
    pages: params::OrAll<u32>,
    older: params::OlderPages,
    actions: params::OrAll<u32>,
    overflow: params::Overflow,
) {
    let p = match pages {
        params::OrAll::All => json!("all"),
        params::OrAll::Value(k) => json!(k),
    };
    let older = match older {
        params::OlderPages::Drop => "drop",
        params::OlderPages::Placeholder => "placeholder",
    };
    once(c, agent, "pages", |c, n, f| {
        c.wrl(n, f, &[("env service", p)]).note("the pages each served prompt keeps");
    });
    once(c, agent, "older_pages", |c, n, f| {
        c.wrl(n, f, &[("env service", json!(older))]);
    });
    let actions = match actions {
        params::OrAll::All => json!("all"),
        params::OrAll::Value(k) => json!(k),
    };
    once(c, agent, "actions", |c, n, f| {
        c.wrl(n, f, &[("env service", actions)])
            .note("the past actions each served `action_only` prompt lists");
    });
    once(c, agent, "task_text", |c, n, f| {
        c.implied(n, f, "the checker's context budget (E0404)");
    });
    once(c, agent, "overflow", |c, n, f| match overflow {
        params::Overflow::Check => {
            c.implied(
                n,
                f,
                "checked by E0404; verl's prompt length comes from the model's context",
            );
        }
        params::Overflow::TruncateLeft => {
            c.wrl(n, f, &[("env service", json!("truncate_left"))])
                .note("the served prompt is cut from the left");
        }
        params::Overflow::EndEpisode => {
            c.not_mapped(
                n,
                f,
                "verl's agent loop cannot end an episode because its prompt is too long",
                "`overflow = truncate_left` (a profile can)",
            )
            .refuse(crate::ctx::E_UNMAPPED);
        }
    });
}

/// A ReAct agent's cut of tool responses and its per-call timeout: the env service composes
/// the prompts and verl's agent loop calls the policy, and neither does either (refused).
fn call_limits(
    c: &mut Ctx<'_>,
    agent: &Node,
    chars: params::OrUnlimited<u64>,
    timeout: params::OrOff<params::Seconds>,
) {
    once(c, agent, "tool_response_chars", |c, n, f| match chars {
        params::OrUnlimited::Unlimited => {
            c.implied(n, f, "each tool response enters the prompt whole");
        }
        params::OrUnlimited::Value(_) => {
            c.not_mapped(
                n,
                f,
                "the env service does not cut tool responses (nor does `wrlc run`)",
                "`tool_response_chars = unlimited` (a profile can)",
            )
            .refuse(E_UNMAPPED);
        }
    });
    once(c, agent, "call_timeout", |c, n, f| match timeout {
        params::OrOff::Off => {
            c.implied(n, f, "no limit on one policy call but the episode's");
        }
        params::OrOff::Value(_) => {
            c.not_mapped(
                n,
                f,
                "verl's agent loop sets no time limit on one generation call",
                "`call_timeout = off` (a profile can)",
            )
            .refuse(E_UNMAPPED);
        }
    });
}

/// What a phase's agent gives the rest of the lowering: its turn's response cap, its env's
/// id, and the policy model verl trains (none for a graph, which verl cannot run).
type AgentParts = (Option<u64>, String, Option<String>);

/// The phase's agent, its env and its policy model.
pub(crate) fn agent_env_model(
    c: &mut Ctx<'_>,
    agent: &Node,
    cfg: &mut Json,
    al: &mut Json,
    level: &str,
) {
    let (max_response, env, policy) = match c.d.get(&agent.id).cloned() {
        Some(Params::Agent(Agent::React(r))) => react_fields(c, agent, r, al),
        Some(Params::Agent(Agent::Graph(g))) => graph_fields(c, agent, g, al),
        _ => (None, String::new(), None),
    };
    once(c, agent, "env", |c, n, f| {
        c.wrl(n, f, &[("env service", json!(env))])
            .note("the agent loop reaches it at WRL_ENV_URL with the token in WRL_ENV_TOKEN");
    });
    let step_text = crate::env_fields::env_fields(c, &env, al);
    let ctx_len = policy.as_deref().and_then(|m| model_fields(c, m, cfg, al));
    let made_of = Lengths { ctx_len, max_response, step_text, level };
    lengths(c, agent, policy.as_deref(), cfg, made_of);
}

/// A ReAct agent's fields: its window, history and response cap go to the agent loop and the
/// env service; its episode-wide reply budget verl cannot hold (refused).
fn react_fields(c: &mut Ctx<'_>, agent: &Node, r: params::React, al: &mut Json) -> AgentParts {
    let params::React {
        policy,
        env,
        history,
        max_parse_failures,
        max_turns: _,
        max_response,
        prompt,
        step_response: _,
        pages,
        older_pages,
        actions,
        overflow,
        task_text: _,
        trajectory_tokens,
        tool_response_chars,
        call_timeout,
        calls,
    } = r;
    window(c, agent, pages, older_pages, actions, overflow);
    once(c, agent, "calls", |c, n, f| match calls {
        params::Calls::Hermes => {
            c.implied(n, f, "tool calls as the policy's chat template writes them, one reply per tool response (multi_turn.format)");
        }
        params::Calls::Tags(_) => {
            c.not_mapped(
                n,
                f,
                "verl 0.9.1's agent loops read a turn's calls with a `multi_turn.format` \
                 parser (Hermes `<tool_call>` JSON) and answer each in a new tool message; \
                 tag-style calls, whose results are appended inside the same generated \
                 sequence and masked there, have no such format",
                "`calls = hermes` (a profile can)",
            )
            .refuse(crate::ctx::E_UNMAPPED);
        }
    });
    call_limits(c, agent, tool_response_chars, call_timeout);
    once(c, agent, "trajectory_tokens", |c, n, f| match trajectory_tokens {
        params::OrUnlimited::Unlimited => {
            c.implied(n, f, "no episode-wide reply budget: each turn's max_tokens alone");
        }
        params::OrUnlimited::Value(_) => {
            c.not_mapped(
                n,
                f,
                "verl's multi-turn response budget (data.max_response_length) counts tool \
                 responses too and is set here from the model's context",
                "`trajectory_tokens = unlimited` (a profile can)",
            )
            .refuse(crate::ctx::E_UNMAPPED);
        }
    });
    let h = match history {
        params::History::FullText => "full_text",
        params::History::HideThinking => "hide_thinking",
        params::History::ActionOnly => "action_only",
        params::History::None => "none",
    };
    put_al(
        c,
        al,
        agent,
        "history",
        &[("history", json!(h))],
        "what a turn's prompt carries at `level = turn` (the env service gives the actions so far); a trajectory-level row keeps the whole conversation",
    );
    put_al(
        c,
        al,
        agent,
        "max_response",
        &[("max_tokens", json!(max_response.0))],
        "each turn's sampling cap (sampling_params.max_tokens)",
    );
    once(c, agent, "max_parse_failures", |c, n, f| {
        c.wrl(n, f, &[("env service", json!(max_parse_failures))]).note(
            "malformed turns in a row that end the episode as a format error, as in `wrlc run`",
        );
    });
    once(c, agent, "max_turns", |c, n, f| {
        c.implied(n, f, "caps every phase's horizon (multi_turn.max_assistant_turns)");
    });
    once(c, agent, "prompt", |c, n, f| {
        let what =
            if prompt.is_empty() { "wrl's default system message" } else { "the agent's prompt" };
        c.wrl(n, f, &[("data: prompt[0] (system)", json!(what))]);
    });
    once(c, agent, "step_response", |c, n, f| {
        c.implied(
            n,
            f,
            "the checker's context budget (E0404); verl's lengths come from the model's context",
        );
    });
    once(c, agent, "policy", |c, n, f| {
        c.implied(n, f, "the model verl trains (actor_rollout_ref.model.path)");
    });
    (Some(max_response.0), env.id().to_string(), Some(policy.id().to_string()))
}

/// A module graph's fields: refused at its modules (verl samples one policy per trajectory);
/// the largest module's response cap and action-only history go to the agent loop.
fn graph_fields(c: &mut Ctx<'_>, agent: &Node, g: params::Graph, al: &mut Json) -> AgentParts {
    let params::Graph {
        env,
        weights: _,
        max_turns: _,
        max_parse_failures,
        step_response: _,
        modules,
        graph: _,
    } = g;
    for f in ["modules", "weights", "graph"] {
        once(c, agent, f, |c, n, f| {
            let e = c.not_mapped(n, f, "verl's agent loops sample one policy per trajectory; a module graph (several modules, roles trained apart) has no verl equivalent", "the job runs the env with one policy, as a ReAct agent");
            // One refusal for the agent, at its modules.
            if f == "modules" {
                e.refuse(E_UNMAPPED);
            }
        });
    }
    once(c, agent, "max_turns", |c, n, f| {
        c.implied(n, f, "caps every phase's horizon (multi_turn.max_assistant_turns)");
    });
    once(c, agent, "step_response", |c, n, f| {
        c.implied(n, f, "the checker's context budget (E0404)");
    });
    once(c, agent, "max_parse_failures", |c, n, f| {
        c.wrl(n, f, &[("env service", json!(max_parse_failures))]);
    });
    let most = modules
        .values()
        .map(|m| match m {
            params::Module::Llm(l) => l.max_response.0,
            params::Module::PolicyOf(p) => p.max_response.0,
        })
        .max();
    crate::ctx::set(al, "max_tokens", json!(most.unwrap_or(512)));
    crate::ctx::set(al, "history", json!("action_only"));
    (most, env.id().to_string(), None)
}

/// The policy model's fields; returns its context.
fn model_fields(c: &mut Ctx<'_>, m: &str, cfg: &mut Json, al: &mut Json) -> Option<u64> {
    let n = c.d.node(m)?;
    match c.d.get(m).cloned() {
        Some(Params::Model(Model::Hf(h))) => Some(hf_fields(c, n, h, cfg, al)),
        Some(Params::Model(Model::Tiny(t))) => Some(tiny_fields(c, n, t)),
        Some(Params::Model(Model::Api(a))) => Some(api_fields(c, n, a)),
        _ => None,
    }
}

/// An `hf(…)` policy's fields: where it runs, its weights, dtype, recomputation, images, chat
/// template and thinking; returns its context.
fn hf_fields(c: &mut Ctx<'_>, n: &Node, h: params::Hf, cfg: &mut Json, al: &mut Json) -> u64 {
    let params::Hf {
        id,
        context,
        family,
        dtype,
        image_tokens,
        image_max_pixels,
        chat_template,
        thinking,
        device,
        gradient_checkpointing,
    } = h;
    hf_device(c, n, device);
    once(c, n, "id", |c, n, f| {
        c.implied(n, f, format!("`{id}`: the weights the stage starts from (the run's `init`: actor_rollout_ref.model.path)"));
    });
    once(c, n, "family", |c, n, f| {
        c.implied(n, f, "verl reads the architecture from the checkpoint's config.json");
    });
    let d = match dtype {
        DType::Bf16 => "bfloat16",
        DType::F16 => "float16",
        DType::F32 => "float32",
    };
    put(
        c,
        cfg,
        n,
        "dtype",
        &[
            ("actor_rollout_ref.actor.fsdp_config.dtype", json!(d)),
            ("actor_rollout_ref.ref.fsdp_config.dtype", json!(d)),
            (&format!("{R}.dtype"), json!(d)),
        ],
        "compute dtype of training and rollout; FSDP keeps fp32 master weights",
    );
    put(
        c,
        cfg,
        n,
        "gradient_checkpointing",
        &[("actor_rollout_ref.model.enable_gradient_checkpointing", json!(gradient_checkpointing))],
        "the actor's layers recomputed in the backward pass",
    );
    hf_images(c, n, family, image_tokens, image_max_pixels, al);
    hf_template(c, n, chat_template, cfg);
    put(
        c,
        cfg,
        n,
        "thinking",
        &[("data.apply_chat_template_kwargs.enable_thinking", json!(thinking))],
        "",
    );
    context.0
}

/// Where an `hf(…)` policy runs: the job's GPUs (a CPU model refused).
fn hf_device(c: &mut Ctx<'_>, n: &Node, device: params::Device) {
    match device {
        params::Device::Auto | params::Device::Cuda(_) => once(c, n, "device", |c, n, f| {
            c.implied(n, f, "verl places the model on the job's GPUs (trainer.n_gpus_per_node × trainer.nnodes)");
        }),
        params::Device::Cpu => once(c, n, "device", |c, n, f| {
            c.not_mapped(
                n,
                f,
                "verl trains and samples on GPUs only",
                "the model runs on the job's GPUs",
            )
            .refuse(E_UNMAPPED);
        }),
    };
}

/// A vision model's screenshot budget as the agent loop's pixel cap: its `image_max_pixels`
/// as written, else its `image_tokens` × the family's pixels per token; a text model has no
/// images.
fn hf_images(
    c: &mut Ctx<'_>,
    n: &Node,
    family: Family,
    image_tokens: params::Tokens,
    image_max_pixels: OrNone<params::Pixels>,
    al: &mut Json,
) {
    let vl = matches!(family, Family::Qwen3Vl | Family::Qwen25Vl);
    let px = match family {
        Family::Qwen3Vl => 32 * 32,
        _ => 28 * 28,
    };
    match (vl, image_max_pixels.value()) {
        (true, Some(budget)) => {
            put_al(
                c,
                al,
                n,
                "image_max_pixels",
                &[("image_max_pixels", json!(budget.0))],
                "screenshots are resized to at most this many pixels before the processor sees them",
            );
            once(c, n, "image_tokens", |c, n, f| {
                c.implied(n, f, "counted from `image_max_pixels` and the viewport");
            });
        }
        (true, None) => {
            put_al(
                c,
                al,
                n,
                "image_tokens",
                &[("image_max_pixels", json!(image_tokens.0 * px))],
                "screenshots are resized to at most this many pixels (tokens × the family's pixels per token) before the processor sees them",
            );
            once(c, n, "image_max_pixels", |c, n, f| {
                c.implied(n, f, "`none`: `image_tokens` sizes a screenshot");
            });
        }
        (false, _) => {
            for field in ["image_tokens", "image_max_pixels"] {
                once(c, n, field, |c, n, f| {
                    c.implied(n, f, "a text model: no images");
                });
            }
        }
    }
}

/// An `hf(…)` policy's chat template: its own, Hermes tool calls, or `xml` (refused).
fn hf_template(c: &mut Ctx<'_>, n: &Node, chat_template: ChatTemplate, cfg: &mut Json) {
    match chat_template {
        ChatTemplate::Native => once(c, n, "chat_template", |c, n, f| {
            c.implied(n, f, "the model's own chat template");
        }),
        ChatTemplate::Hermes => put(
            c,
            cfg,
            n,
            "chat_template",
            &[(&format!("{R}.multi_turn.format"), json!("hermes"))],
            "Hermes `<tool_call>` JSON; the env service parses the calls",
        ),
        ChatTemplate::Xml => once(c, n, "chat_template", |c, n, f| {
            c.not_mapped(
                n,
                f,
                "verl's tool parsers have no `xml` format",
                "the model's own template",
            )
            .refuse(E_UNMAPPED);
        }),
    }
}

/// The embedded tiny transformer as the policy: refused (verl trains Hugging Face
/// checkpoints); returns its context, from which the lengths are still derived.
fn tiny_fields(c: &mut Ctx<'_>, n: &Node, t: params::TinyTransformer) -> u64 {
    let params::TinyTransformer {
        layers: _,
        d_model: _,
        heads: _,
        context,
        positions: _,
        copy: _,
        seed: _,
        device: _,
    } = t;
    for f in ["layers", "d_model", "heads", "context", "positions", "copy", "seed", "device"] {
        once(c, n, f, |c, n, f| {
            let e = c.not_mapped(n, f, "verl trains Hugging Face checkpoints, and the policy is the embedded byte-level tiny transformer", "the run trains whatever model MODEL names (lengths are derived from the tiny model's context)");
            // One refusal for the model, at its first field.
            if f == "layers" {
                e.refuse(E_UNMAPPED);
            }
        });
    }
    context.0
}

/// An `api(…)` model as the policy: refused (an endpoint, not weights); returns its context.
fn api_fields(c: &mut Ctx<'_>, n: &Node, a: params::Api) -> u64 {
    for f in [
        "model",
        "base_url",
        "api_key_env",
        "context",
        "timeout",
        "retries",
        "concurrency",
        "temperature",
        "image_tokens",
    ] {
        once(c, n, f, |c, n, f| {
            let e = c.not_mapped(
                n,
                f,
                "the policy is an `api(…)` model: an endpoint, not weights verl can train",
                "the run trains whatever model MODEL names",
            );
            if f == "model" {
                e.refuse(E_UNMAPPED);
            }
        });
    }
    a.context.0
}

/// What verl's lengths are made from: the policy's context, the agent's response cap, the
/// env's text per step, and the level the phase trains.
struct Lengths<'a> {
    ctx_len: Option<u64>,
    max_response: Option<u64>,
    step_text: Option<u64>,
    level: &'a str,
}

/// verl's lengths: the whole context, split between the first prompt and the response (one turn
/// at `level = turn`; the rest of the trajectory at `level = trajectory`).
fn lengths(
    c: &mut Ctx<'_>,
    agent: &Node,
    policy: Option<&str>,
    cfg: &mut Json,
    made_of: Lengths<'_>,
) {
    let Lengths { ctx_len, max_response, step_text, level } = made_of;
    let Some(m) = policy.and_then(|p| c.d.node(p)) else { return };
    let unknown = c.d.is_unknown(&agent.id, "max_response");
    let ctx_len = ctx_len.unwrap_or(4096).max(64);
    let (prompt, response) = if level == "trajectory" {
        let p = (step_text.unwrap_or(1024) + 1024).min(ctx_len / 2);
        (p, ctx_len - p)
    } else {
        let r = max_response.unwrap_or(1024).min(ctx_len / 2).max(1);
        (ctx_len - r, r)
    };
    let gone = |v: u64| if unknown { json!(crate::yaml::MISSING) } else { json!(v) };
    let keys = [
        (format!("{R}.max_model_len"), json!(ctx_len)),
        ("data.max_prompt_length".to_string(), gone(prompt)),
        ("data.max_response_length".to_string(), gone(response)),
        ("actor_rollout_ref.actor.ppo_max_token_len_per_gpu".to_string(), json!(ctx_len)),
    ];
    let keys: Vec<(&str, Json)> = keys.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    let field = if c.d.get(&m.id).is_some_and(|p| matches!(p, Params::Model(Model::Hf(_)))) {
        "context"
    } else {
        ""
    };
    if field.is_empty() || c.has(m, field) {
        for (k, v) in &keys {
            crate::ctx::set(cfg, k, v.clone());
        }
        return;
    }
    c.map(cfg, m, field, &keys).note(if level == "trajectory" {
        "the first prompt gets the system message, the tools and one observation; the response (every later turn and observation) the rest"
    } else {
        "each turn's prompt gets the context less one turn's response (the agent's max_response)"
    });
}

/// A task dataset the job read, with its row count: every field carried into the rows.
pub(crate) fn dataset_used(c: &mut Ctx<'_>, id: &str, rows: usize) {
    let Some(n) = c.d.node(id) else { return };
    for leaf in crate::report::leaves(n) {
        if !c.has(n, &leaf) {
            c.wrl(n, &leaf, &[("data", json!(format!("{rows} rows")))])
                .note("tasks converted into the rows' extra_info.task_json");
        }
    }
}

/// A task dataset the job could not convert: refused at its path.
pub(crate) fn dataset_refused(c: &mut Ctx<'_>, id: &str, why: &str) {
    let Some(n) = c.d.node(id) else { return };
    let field = if n.params.contains_key("path") { "path" } else { "kind" };
    if !c.has(n, field) {
        c.not_mapped(n, field, why.to_string(), "no rows: convert the tasks to task JSONL (docs/sandbox.md) and lower again where the file is").refuse(E_DATA);
    }
    dataset_used(c, id, 0);
}
