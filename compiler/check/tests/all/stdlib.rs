//! The stdlib is the contract with the runtime, so it must check clean on its own and its
//! tool sets must each end episodes; and the shipped recipes must check clean.

use crate::common;

use common::{codes, diags};
use wrl_check::{FsLoader, STDLIB_MODULES, check_source};

#[test]
fn an_empty_file_with_the_stdlib_has_no_diagnostics() {
    assert_eq!(diags(""), vec![]);
}

#[test]
fn every_stdlib_module_parses_clean() {
    for (path, name, text) in STDLIB_MODULES {
        let mut sources = wrl_diagnostics::SourceMap::new();
        let id = sources.add(*name, *text);
        let parsed = wrl_syntax::parse(id, text);
        assert!(parsed.diagnostics.is_empty(), "{path}: {:#?}", parsed.diagnostics);
    }
}

#[test]
fn every_stdlib_tool_set_and_model_is_usable_without_diagnostics() {
    for set in ["openwebrl", "opagent", "elements", "webdancer"] {
        let text = format!(
            "model policy = std::models::tiny\nenv web = browser {{ target = std::sandbox::web, tools = std::tools::{set} }}\nagent actor = react(policy, web) {{ max_response = 48 tokens, history = none }}\neval probe = evaluate(actor, std::sandbox::tasks(count: 8))\n"
        );
        assert_eq!(codes(&text), Vec::<&str>::new(), "std::tools::{set}");
    }
    for model in ["tiny", "small"] {
        let text =
            format!("stage warmup = sft(std::models::{model}, std::sandbox::demos(count: 8))\n");
        assert_eq!(codes(&text), Vec::<&str>::new(), "std::models::{model}");
    }
}

#[test]
fn the_quickstart_checks_clean() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../recipes/quickstart.wrl");
    let text = std::fs::read_to_string(root).expect("recipes/quickstart.wrl");
    let (_, checked) = check_source("recipes/quickstart.wrl", &text, &FsLoader);
    assert_eq!(checked.diagnostics, vec![]);
    assert_eq!(checked.recipes.len(), 1);
}
