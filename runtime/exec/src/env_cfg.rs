//! An environment's settings, read from its plan node. Every field that `browser` and
//! `search_api` declare in the stdlib is either honoured here ([`HONOURED`]), read only by the
//! checker ([`CHECKER_ONLY`]), or refused by the preflight when set to something this runtime
//! cannot do ([`refusals`]) — never silently ignored. A test holds the stdlib to it.

use std::time::Duration;

use wrl_browser::EpisodeCfg;
use wrl_browser::episode::TextView;
use wrl_plan::{Node, PVal};

use crate::exec::RunError;

/// Fields the runtime honours: the site, tools, browser pool (`viewport`, `device_scale`,
/// `concurrency`, `remote`, `blacklist`, `blacklist_file`), the episode ([`episode_cfg`]:
/// `timeout`, `per_turn`, `observe`), [`retries`], and a search API's `base_url` and
/// `step_text` (each tool response is cut to it).
pub const HONOURED: &[&str] = &[
    "target",
    "tools",
    "viewport",
    "device_scale",
    "concurrency",
    "remote",
    "blacklist",
    "blacklist_file",
    "timeout",
    "per_turn",
    "observe",
    "retries",
    "base_url",
];

/// Fields only the checker reads: a browser's `step_text` estimates the context (E0404).
pub const CHECKER_ONLY: &[&str] = &["step_text"];

/// Fields this runtime cannot honour yet; the preflight refuses them when set.
pub const REFUSED_WHEN_SET: &[&str] = &["slow_mo", "settle", "conflict_key"];

fn secs(v: Option<&PVal>) -> Option<Duration> {
    v.and_then(PVal::num).filter(|s| *s > 0.0).map(Duration::from_secs_f64)
}

/// The episodes of `env` (the defaults when there is none): its `timeout = { step, task,
/// acquire }`, `per_turn` and what its text observation shows (`observe`).
pub fn episode_cfg(env: Option<&Node>) -> EpisodeCfg {
    let d = EpisodeCfg::default();
    let Some(env) = env else { return d };
    let timeout = env.param("timeout");
    let field = |k: &str| timeout.and_then(|t| t.field(k));
    EpisodeCfg {
        step_timeout: secs(field("step")).unwrap_or(d.step_timeout),
        task_timeout: secs(field("task")).unwrap_or(d.task_timeout),
        acquire_timeout: secs(field("acquire")).unwrap_or(d.acquire_timeout),
        one_action_per_turn: env.param("per_turn").and_then(PVal::as_str) == Some("one"),
        view: view(env),
        ..d
    }
}

/// The observations of `observe` a text policy reads; without `observe`, everything.
pub fn view(env: &Node) -> TextView {
    let Some(PVal::List { items }) = env.param("observe") else { return TextView::default() };
    let mut v =
        TextView { url: false, tabs: false, elements: None, feedback: false, dom_diff: false };
    for item in items {
        let PVal::Obj(o) = item else { continue };
        match o.ctor.as_str() {
            "url" => v.url = true,
            "tabs" => v.tabs = true,
            "elements" => {
                let max = o.fields.get("max").and_then(PVal::num).unwrap_or(64.0);
                v.elements = Some(max.max(1.0) as usize);
            }
            "feedback" => {
                v.feedback = true;
                v.dom_diff = o.fields.get("detail").and_then(PVal::as_str) == Some("dom_diff");
            }
            // Screenshots go to judges and process rewards, never into a text policy's prompt
            // (refused when a policy would need them); `a11y_tree` is refused.
            _ => {}
        }
    }
    v
}

/// How often an episode that ended in an environment error or timeout is run again before it
/// counts (`retries`; a search API declares none).
pub fn retries(env: Option<&Node>) -> usize {
    env.and_then(|n| n.num("retries")).unwrap_or(0.0) as usize
}

/// Env settings this runtime cannot honour yet, refused at their field rather than ignored:
/// pacing (`slow_mo`, `settle`), conflict-free scheduling (`conflict_key`), and observations a
/// text policy cannot read (screenshots) or that are not implemented (`a11y_tree`).
pub fn refusals(n: &Node) -> Vec<RunError> {
    let mut errs = Vec::new();
    let mut refuse = |field: &str, what: String, help: String| {
        errs.push(RunError::new("E0502", format!("env `{}`: {what}", n.decl)).help(help).at(
            n,
            Some(field),
            "this runtime cannot do this yet",
        ));
    };
    for (field, what) in [
        ("slow_mo", "a delay between CDP commands (`slow_mo`)"),
        ("settle", "a wait after each action (`settle`)"),
    ] {
        if n.num(field).is_some_and(|s| s > 0.0) {
            refuse(
                field,
                format!("{what} is not implemented"),
                format!("set `{field} = 0 s` (a profile can)"),
            );
        }
    }
    if n.param("conflict_key").and_then(PVal::as_str).is_some_and(|k| !k.is_empty()) {
        refuse(
            "conflict_key",
            "keeping conflicting tasks apart (`conflict_key`) is not implemented".into(),
            "set `conflict_key = \"\"`; sandbox tasks reset their state per episode".into(),
        );
    }
    if n.ctor == "browser" {
        let items = match n.param("observe") {
            Some(PVal::List { items }) => items.as_slice(),
            _ => &[],
        };
        let text_only = "set `observe = [elements(max: 32), url, feedback]` (a profile can)";
        for item in items {
            let PVal::Obj(o) = item else { continue };
            let last = o.fields.get("last").and_then(PVal::num).unwrap_or(1.0);
            if o.ctor == "screenshot" && last > 0.0 {
                refuse(
                    "observe",
                    format!(
                        "`observe` shows the policy the last {last} screenshot(s), but this \
                         runtime's policies read text only"
                    ),
                    format!("{text_only}; `screenshot(last: 0)` keeps screenshots for judges"),
                );
            } else if o.ctor == "a11y_tree" {
                refuse(
                    "observe",
                    "the accessibility-tree observation (`a11y_tree`) is not implemented".into(),
                    text_only.into(),
                );
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rl_cfg::unaccounted_fields;

    #[test]
    fn every_declared_env_field_is_honoured_checked_or_refused() {
        for env in ["browser", "search_api"] {
            let missing = unaccounted_fields(env, &[HONOURED, CHECKER_ONLY, REFUSED_WHEN_SET]);
            assert!(
                missing.is_empty(),
                "`{env}` declares {missing:?} in the stdlib, but the runtime neither honours nor refuses them"
            );
        }
    }
}
