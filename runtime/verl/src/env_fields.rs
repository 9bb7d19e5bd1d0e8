//! What an agent's env means to the run: its fields are carried by the env service (which reads
//! the same plan) or refused where the service cannot honour them, its tools go to `tools.yaml`
//! for the chat template, and the agent loop learns what the env records.

use serde_json::{Value as Json, json};
use wrl_plan::Node;
use wrl_plan::params::{self, Env, Observation, OlderPages, Params, Site};

use crate::ctx::{Ctx, E_UNMAPPED};
use crate::record::{once, put_al};

/// The env's fields (carried by the env service) and the agent loop's view of them; returns its
/// `step_text` budget.
pub(crate) fn env_fields(c: &mut Ctx<'_>, env: &str, al: &mut Json) -> Option<u64> {
    let n = c.d.node(env)?;
    match c.d.get(env).cloned() {
        Some(Params::Env(Env::Browser(b))) => Some(browser_fields(c, n, b, al)),
        Some(Params::Env(Env::SearchApi(s))) => {
            let params::SearchApi {
                base_url: _,
                target,
                tools,
                concurrency: _,
                timeout: _,
                step_text,
            } = s;
            if let Site::Simulated(_) = target {
                c.not_mapped(
                    n,
                    "target",
                    "the env service does not run a simulated search engine: its noisy-document \
                     curriculum follows the trainer's iterations, which the service does not see, \
                     and its prompt carries each task's reference answer",
                    "target a search API (`retriever(corpus)` or a `base_url`); ZeroSearch runs \
                     its simulator in its own fork of verl's generation loop",
                )
                .refuse(E_UNMAPPED);
            }
            for f in ["base_url", "target", "concurrency", "timeout.step", "timeout.task"] {
                service(c, n, f, "");
            }
            tools_file(c, n, &tools);
            Some(text_env(c, n, al, step_text.0, "tool responses"))
        }
        Some(Params::Env(Env::EnvServer(s))) => Some(env_server_fields(c, n, s, al)),
        _ => None,
    }
}

/// `field` as the env service carries it (its plan value), with `note` when there is one.
fn service(c: &mut Ctx<'_>, n: &Node, field: &str, note: &str) {
    once(c, n, field, |c, n, f| {
        let v = crate::report::plan_value(n, f);
        let e = c.wrl(n, f, &[("env service", v)]);
        if !note.is_empty() {
            e.note(note);
        }
    });
}

/// A browser env's fields: its site and tools, its pool, what it observes, how episodes are
/// retried, and what the env service does not implement; returns its `step_text` budget.
fn browser_fields(c: &mut Ctx<'_>, n: &Node, b: params::Browser, al: &mut Json) -> u64 {
    let params::Browser {
        target,
        tools,
        viewport: _,
        device_scale: _,
        per_turn: _,
        observe,
        concurrency: _,
        timeout: _,
        retries,
        step_retries,
        step_backoff: _,
        slow_mo,
        settle,
        blacklist: _,
        blacklist_file: _,
        remote: _,
        conflict_key,
        step_text,
    } = b;
    let allow = match &target {
        Site::Live { allow } => format!("the live web, allow-list {allow:?}"),
        Site::Webarena { .. } => "a self-hosted WebArena (its hosts allowed)".into(),
        Site::SandboxSites { .. } | Site::SandboxWeb | Site::SandboxSearch => {
            "the sandbox web on loopback".into()
        }
        // A browser cannot open a search API: the env service refuses it.
        Site::Retriever { .. } => "a retriever (a search API, not a web site)".into(),
        Site::Simulated(_) => "a simulated search engine (a search API, not a web site)".into(),
    };
    service(c, n, "target", &format!("{allow}; enforced in the browser by the env service"));
    tools_file(c, n, &tools);
    for f in ["viewport.width", "viewport.height", "device_scale"] {
        service(c, n, f, "the env service's browser pool");
    }
    service(c, n, "per_turn", "how many of a turn's actions run, as in `wrlc run`");
    let shots = observed_screenshots(c, n, &observe, al);
    service(
        c,
        n,
        "concurrency",
        "episodes the env service runs at once; more are answered 429 with Retry-After, and the agent loop waits and retries",
    );
    for f in ["timeout.step", "timeout.task", "timeout.acquire"] {
        service(c, n, f, "");
    }
    browser_retries(c, n, (retries, step_retries), al);
    not_implemented(c, n, (slow_mo, settle), &conflict_key);
    once(c, n, "step_text", |c, n, f| {
        c.implied(n, f, "an observation's token budget: with `level = trajectory` it sizes the first prompt (data.max_prompt_length)");
    });
    crate::ctx::set(al, "images", json!(shots > 0));
    step_text.0
}

/// What a browser observes, for the agent loop: the screenshots a turn's prompt keeps (0
/// without a screenshot observation). Returns them.
fn observed_screenshots(c: &mut Ctx<'_>, n: &Node, observe: &[Observation], al: &mut Json) -> u32 {
    let (shots, older) = observe
        .iter()
        .find_map(|o| match o {
            Observation::Screenshot { last, older } => Some((*last, *older)),
            _ => None,
        })
        .unwrap_or((0, OlderPages::Drop));
    // The agent loop keeps the last N images and drops the rest without a word; a placeholder
    // line where an older screenshot was (`wrlc run`'s `older = placeholder`) it does not write.
    if older == OlderPages::Placeholder && shots > 0 && !c.has(n, "observe") {
        c.not_mapped(
            n,
            "observe",
            "the agent loop drops screenshots older than the last N without the placeholder line \
             `screenshot(older: placeholder)` asks for",
            "write `screenshot(last: N, older: drop)` for verl",
        )
        .refuse(E_UNMAPPED);
    }
    put_al(
        c,
        al,
        n,
        "observe",
        &[("screenshots", json!(shots))],
        "the env service returns what `observe` shows (text; PNG screenshots when a screenshot is observed); the agent loop keeps the last N images in a turn's prompt (all of them in a trajectory-level row)",
    );
    shots
}

/// A browser's retries: whole episodes by the agent loop, single steps by the env service.
fn browser_retries(c: &mut Ctx<'_>, n: &Node, (retries, step_retries): (u32, u32), al: &mut Json) {
    put_al(
        c,
        al,
        n,
        "retries",
        &[("retries", json!(retries))],
        "an episode that ends in env_error or infra_timeout is run again (new episode, new samples), as `wrlc run` does",
    );
    service(
        c,
        n,
        "step_retries",
        if step_retries == 0 {
            "no step is retried"
        } else {
            "refused by the env service as by `wrlc run` (E0502)"
        },
    );
    service(c, n, "step_backoff.first", "the pause before the first step retry");
    service(c, n, "step_backoff.factor", "how the pause grows between step retries");
}

/// What neither the env service nor `wrlc run` implements: delays between actions and keeping
/// conflicting tasks apart, refused when set; the blacklist and remote browsers are carried.
fn not_implemented(
    c: &mut Ctx<'_>,
    n: &Node,
    (slow_mo, settle): (params::Seconds, params::Seconds),
    conflict_key: &str,
) {
    for (f, v) in [("slow_mo", slow_mo.0), ("settle", settle.0)] {
        once(c, n, f, |c, n, f| {
            if v > 0.0 {
                c.not_mapped(
                    n,
                    f,
                    "not implemented by the env service (nor by `wrlc run`)",
                    "actions run without the delay",
                )
                .refuse(E_UNMAPPED);
            } else {
                c.wrl(n, f, &[("env service", json!(0))]);
            }
        });
    }
    for f in ["blacklist", "blacklist_file", "remote"] {
        service(c, n, f, "");
    }
    once(c, n, "conflict_key", |c, n, f| {
        if conflict_key.is_empty() {
            c.wrl(n, f, &[("env service", json!(""))]);
        } else {
            c.not_mapped(n, f, "keeping conflicting tasks apart is not implemented by the env service (nor by `wrlc run`)", "tasks run whenever a slot is free").refuse(E_UNMAPPED);
        }
    });
}

/// An environment server's fields: the service opens one of its instances per episode; its
/// tools (if any) go to `tools.yaml`. Returns its `step_text` budget.
fn env_server_fields(c: &mut Ctx<'_>, n: &Node, s: params::EnvServer, al: &mut Json) -> u64 {
    let params::EnvServer {
        base_url: _,
        endpoints: _,
        tools,
        api_key_env: _,
        concurrency: _,
        timeout: _,
        step_text,
    } = s;
    for f in ["base_url", "endpoints", "concurrency", "timeout.step", "timeout.task"] {
        service(c, n, f, "the env service opens one of the server's instances per episode");
    }
    service(c, n, "api_key_env", "read by the env service where it runs");
    match tools.value() {
        Some(t) => tools_file(c, n, t),
        None => {
            once(c, n, "tools", |c, n, f| {
                c.implied(n, f, "no tool set: the server reads each turn as the model wrote it");
            });
        }
    }
    text_env(c, n, al, step_text.0, "observations")
}

/// A text-only env (a search API, an environment server): `step_text` cuts `what` in the env
/// service, and the agent loop reads no screenshots, no images and no retries. Returns it.
fn text_env(c: &mut Ctx<'_>, n: &Node, al: &mut Json, step_text: u64, what: &str) -> u64 {
    once(c, n, "step_text", |c, n, f| {
        c.wrl(n, f, &[("env service", json!(step_text))])
            .note(format!("{what} are cut to it, as in `wrlc run`"));
    });
    crate::ctx::set(al, "screenshots", json!(0));
    crate::ctx::set(al, "images", json!(false));
    crate::ctx::set(al, "retries", json!(0));
    step_text
}

/// A tool set into `tools.yaml` (its function schemas), and the env's `tools` entry.
fn tools_file(c: &mut Ctx<'_>, n: &Node, tools: &params::Toolset) {
    for s in tools.function_schemas() {
        if let Some(name) = s.pointer("/function/name").and_then(Json::as_str) {
            c.tools.insert(name.to_string(), s.clone());
        }
    }
    once(c, n, "tools", |c, n, f| {
        if !tools.mcp.is_empty() {
            // verl 0.9.1 has an MCP tool (`verl.tools.mcp_base_tool.MCPBaseTool`, `type: mcp`,
            // HTTP servers from an `mcpServers` file), but the job's agent loop sends every call
            // of the tool set to the env service, which calls no MCP server; a stdio server has
            // no verl form at all.
            c.not_mapped(
                n,
                f,
                "tools served by MCP servers (`mcp`) are not mapped: the job's agent loop sends every call to the env service (`wrlc env serve`), which calls no MCP server, and verl's own MCP tool (`MCPBaseTool`) takes HTTP servers only, with neither `max_calls` nor `on_error`",
                "the MCP tools would fail at every call",
            )
            .refuse(E_UNMAPPED);
            return;
        }
        let names: Vec<&str> = tools.tools.iter().map(|t| t.name.as_str()).collect();
        c.wrl(n, f, &[("tools.yaml", json!(names)), ("env service", json!("checks each call against the typed schemas"))])
            .note("the schemas reach the chat template (Hermes `<tools>`); the env service parses and checks each turn's calls (raw `<tool_call>` text or parsed calls)");
    });
}
