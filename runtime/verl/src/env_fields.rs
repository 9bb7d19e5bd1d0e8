//! What an agent's env means to the run: its fields are carried by the env service (which reads
//! the same plan) or refused where the service cannot honour them, its tools go to `tools.yaml`
//! for the chat template, and the agent loop learns what the env records.

use serde_json::{Value as Json, json};
use wrl_plan::Node;
use wrl_plan::params::{self, Env, Observation, Params, Site};

use crate::ctx::{Ctx, E_UNMAPPED};
use crate::policy::{once, put_al};

/// The env's fields (carried by the env service) and the agent loop's view of them; returns its
/// `step_text` budget.
pub(crate) fn env_fields(c: &mut Ctx<'_>, env: &str, al: &mut Json) -> Option<u64> {
    let n = c.d.node(env)?;
    let service = |c: &mut Ctx<'_>, f: &str, note: &str| {
        once(c, n, f, |c, n, f| {
            let v = crate::report::plan_value(n, f);
            let e = c.wrl(n, f, &[("env service", v)]);
            if !note.is_empty() {
                e.note(note);
            }
        });
    };
    match c.d.get(env).cloned() {
        Some(Params::Env(Env::Browser(b))) => {
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
            };
            service(c, "target", &format!("{allow}; enforced in the browser by the env service"));
            tools_file(c, n, &tools);
            for f in ["viewport.width", "viewport.height", "device_scale"] {
                service(c, f, "the env service's browser pool");
            }
            service(c, "per_turn", "how many of a turn's actions run, as in `wrlc run`");
            let shots = observe
                .iter()
                .find_map(|o| match o {
                    Observation::Screenshot { last } => Some(*last),
                    _ => None,
                })
                .unwrap_or(0);
            put_al(
                c,
                al,
                n,
                "observe",
                &[("screenshots", json!(shots))],
                "the env service returns what `observe` shows (text; PNG screenshots when a screenshot is observed); the agent loop keeps the last N images in a turn's prompt (all of them in a trajectory-level row)",
            );
            service(
                c,
                "concurrency",
                "episodes the env service runs at once; more are answered 429 with Retry-After, and the agent loop waits and retries",
            );
            for f in ["timeout.step", "timeout.task", "timeout.acquire"] {
                service(c, f, "");
            }
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
                "step_retries",
                if step_retries == 0 {
                    "no step is retried"
                } else {
                    "refused by the env service as by `wrlc run` (E0502)"
                },
            );
            service(c, "step_backoff.first", "the pause before the first step retry");
            service(c, "step_backoff.factor", "how the pause grows between step retries");
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
                service(c, f, "");
            }
            once(c, n, "conflict_key", |c, n, f| {
                if conflict_key.is_empty() {
                    c.wrl(n, f, &[("env service", json!(""))]);
                } else {
                    c.not_mapped(n, f, "keeping conflicting tasks apart is not implemented by the env service (nor by `wrlc run`)", "tasks run whenever a slot is free").refuse(E_UNMAPPED);
                }
            });
            once(c, n, "step_text", |c, n, f| {
                c.implied(n, f, "an observation's token budget: with `level = trajectory` it sizes the first prompt (data.max_prompt_length)");
            });
            crate::ctx::set(al, "images", json!(shots > 0));
            Some(step_text.0)
        }
        Some(Params::Env(Env::SearchApi(s))) => {
            let params::SearchApi {
                base_url: _,
                target: _,
                tools,
                concurrency: _,
                timeout: _,
                step_text,
            } = s;
            for f in ["base_url", "target", "concurrency", "timeout.step", "timeout.task"] {
                service(c, f, "");
            }
            tools_file(c, n, &tools);
            Some(text_env(c, n, al, step_text.0, "tool responses"))
        }
        Some(Params::Env(Env::EnvServer(s))) => {
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
                service(c, f, "the env service opens one of the server's instances per episode");
            }
            service(c, "api_key_env", "read by the env service where it runs");
            match tools.value() {
                Some(t) => tools_file(c, n, t),
                None => {
                    once(c, n, "tools", |c, n, f| {
                        c.implied(
                            n,
                            f,
                            "no tool set: the server reads each turn as the model wrote it",
                        );
                    });
                }
            }
            Some(text_env(c, n, al, step_text.0, "observations"))
        }
        _ => None,
    }
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
        let names: Vec<&str> = tools.tools.iter().map(|t| t.name.as_str()).collect();
        c.wrl(n, f, &[("tools.yaml", json!(names)), ("env service", json!("checks each call against the typed schemas"))])
            .note("the schemas reach the chat template (Hermes `<tools>`); the env service parses and checks each turn's calls (raw `<tool_call>` text or parsed calls)");
    });
}
