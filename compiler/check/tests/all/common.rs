//! Helpers shared by the checker's integration tests: checking a text in memory and reading the
//! codes it reports.

#![allow(dead_code)]

use wrl_check::{MemLoader, check_source};
use wrl_diagnostics::Diagnostic;

/// Every diagnostic `text` gets, checked as `name` with `files` importable from memory.
pub fn diags_with(name: &str, text: &str, files: &[(&str, &str)]) -> Vec<Diagnostic> {
    let mut loader = MemLoader::default();
    for (n, t) in files {
        loader.files.insert((*n).to_string(), (*t).to_string());
    }
    check_source(name, text, &loader).1.diagnostics
}

pub fn diags(text: &str) -> Vec<Diagnostic> {
    diags_with("recipe.wrl", text, &[])
}

pub fn codes(text: &str) -> Vec<&'static str> {
    diags(text).iter().map(|d| d.code).collect()
}

/// The one diagnostic with `code`, failing with everything reported otherwise.
pub fn only(text: &str, code: &str) -> Diagnostic {
    let all = diags(text);
    let hits: Vec<&Diagnostic> = all.iter().filter(|d| d.code == code).collect();
    assert!(!hits.is_empty(), "expected {code}, got {all:#?}");
    hits[0].clone()
}

pub fn help(d: &Diagnostic) -> &str {
    d.help.as_deref().unwrap_or("")
}

/// A small valid RL recipe on the sandbox; `{stage}` is the body of its GRPO stage.
pub fn rl(stage_fields: &str) -> String {
    format!(
        r#"use std::rewards::task_check

model policy = std::models::tiny
dataset tasks = std::sandbox::tasks(count: 256)
env web = browser {{
  target = std::sandbox::web
  tools = std::tools::elements
  observe = [elements(max: 32), url, feedback]
}}
agent actor = react(policy, web) {{ history = action_only, max_response = 48 tokens, max_turns = 6 turns }}
stage online = grpo(policy, tasks, actor) {{
  reward = task_check
  phases = [{{ iters = 12, horizon = 6 steps, lr = 3e-4 }}]
{stage_fields}
}}
"#
    )
}
