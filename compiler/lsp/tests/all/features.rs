//! Every feature of `wrlc lsp` on the shipped `recipes/openwebrl.wrl`, through the server's
//! own main loop (the real-client test is `editors/lsp-test.sh`).

use crate::common;

use common::{Session, doc_pos, pos, workspace_root};
use serde_json::{Value, json};

fn recipe() -> String {
    std::fs::read_to_string(workspace_root().join("recipes/openwebrl.wrl")).expect("recipe")
}

fn hover_text(s: &mut Session, uri: &str, p: Value) -> String {
    let r = s.request("textDocument/hover", doc_pos(uri, p)).expect("hover");
    r["contents"]["value"].as_str().unwrap_or("").to_string()
}

#[test]
fn hover_shows_type_default_doc_and_values_per_profile() {
    let mut s = Session::start();
    let uri = s.open("recipes/openwebrl.wrl");
    let text = recipe();
    let h = hover_text(&mut s, &uri, pos(&text, "group = 5", 0, 1));
    assert!(h.contains("field of `grpo`"), "{h}");
    assert!(h.contains("`int(min: 1, max: 1024)`, default `8`"), "{h}");
    assert!(h.contains("**value** `5`"), "{h}");
    assert!(h.contains("profile `smoke`: `4`, set by `online.group = 4`"), "{h}");
    // A field the profile changes through a whole-list override, inside a record.
    let h = hover_text(&mut s, &uri, pos(&text, "iters = 90", 0, 1));
    assert!(h.contains("`2 iters`") && h.contains("online.phases = ["), "{h}");
    // A field with a stdlib doc.
    let h = hover_text(&mut s, &uri, pos(&text, "per_turn = many", 0, 1));
    assert!(h.contains("only a turn's first action runs"), "{h}");
    assert!(h.contains("profile `smoke`: `one`"), "{h}");
    // A unit literal: its normalised value.
    let h = hover_text(&mut s, &uri, pos(&text, "32Ki tokens", 0, 1));
    assert!(h.contains("= **32768 tokens**"), "{h}");
    let h = hover_text(&mut s, &uri, pos(&text, "600 s", 0, 1));
    assert!(h.contains("= **600 s**"), "{h}");
    // A reference: its declaration and doc comment.
    let h = hover_text(&mut s, &uri, pos(&text, "actor, webvoyager)", 0, 1));
    assert!(h.contains("agent actor = react(policy, web)") && h.contains("ReAct"), "{h}");
    // An enum word.
    let h = hover_text(&mut s, &uri, pos(&text, "uniform_groups", 0, 1));
    assert!(h.contains("a value of `drop` of `grpo`"), "{h}");
    // A field in a judge inside the reward expression.
    let h = hover_text(&mut s, &uri, pos(&text, "verdict = binary", 0, 1));
    assert!(
        h.contains("field of `std::rewards::judge`") && h.contains("**value** `binary`"),
        "{h}"
    );
    // An override path in the profile.
    let h = hover_text(&mut s, &uri, pos(&text, "max_turns = 6 turns", 0, 7));
    assert!(h.contains("field of `react`") && h.contains("profile `smoke`: `6 turns`"), "{h}");
    // The profile's own name: its estimate.
    let h = hover_text(&mut s, &uri, pos(&text, "profile smoke {", 0, 9));
    assert!(h.contains("trajectories"), "{h}");
    assert_eq!(s.finish(), 0);
}

#[test]
fn definitions_and_references() {
    let mut s = Session::start();
    let uri = s.open("recipes/openwebrl.wrl");
    let text = recipe();
    let def = s
        .request("textDocument/definition", doc_pos(&uri, pos(&text, "policy, web)", 0, 1)))
        .expect("def");
    assert_eq!(def["uri"], uri);
    assert_eq!(def["range"]["start"], pos(&text, "policy = hf", 0, 0));
    // A stdlib constructor opens the stdlib document.
    let def = s
        .request("textDocument/definition", doc_pos(&uri, pos(&text, "grpo(", 0, 1)))
        .expect("def");
    assert_eq!(def["uri"], "wrl-stdlib:///std/prelude.wrl");
    // A `use` import.
    let def = s
        .request("textDocument/definition", doc_pos(&uri, pos(&text, "judge, task_check", 0, 1)))
        .expect("def");
    assert_eq!(def["uri"], "wrl-stdlib:///std/rewards.wrl");
    let std_text = s
        .request(
            "wrl/virtualTextDocument",
            json!({ "textDocument": { "uri": "wrl-stdlib:///std/rewards.wrl" } }),
        )
        .expect("stdlib text");
    let line = def["range"]["start"]["line"].as_u64().unwrap_or(0) as usize;
    assert!(
        std_text
            .as_str()
            .unwrap_or("")
            .lines()
            .nth(line)
            .is_some_and(|l| l.starts_with("builtin judge("))
    );
    // A field goes to its slot in the stdlib.
    let def = s
        .request("textDocument/definition", doc_pos(&uri, pos(&text, "kl_estimator", 0, 1)))
        .expect("def");
    assert_eq!(def["uri"], "wrl-stdlib:///std/prelude.wrl");
    // References of `actor`: its declaration, the stage, three evals, the `smoke` profile's
    // eight overrides, `smoke_vl`'s five and `claims`'s eight.
    let refs = s
        .request(
            "textDocument/references",
            json!({
                "textDocument": { "uri": uri }, "position": pos(&text, "agent actor", 0, 7),
                "context": { "includeDeclaration": true }
            }),
        )
        .expect("refs");
    let n = refs.as_array().map_or(0, Vec::len);
    assert_eq!(n, 1 + 1 + 3 + 8 + 5 + 8, "{refs}");
    // References of a stdlib builtin: every use in the file, and its declaration.
    let refs = s
        .request("textDocument/references", json!({
            "textDocument": { "uri": uri }, "position": pos(&text, "judge(model: \"gpt-4o\")", 0, 1),
            "context": { "includeDeclaration": true }
        }))
        .expect("refs");
    let refs = refs.as_array().cloned().unwrap_or_default();
    assert!(refs.iter().any(|r| r["uri"] == "wrl-stdlib:///std/rewards.wrl"), "{refs:?}");
    // `judge` is imported, then used by the training judge and the three evaluation judges.
    assert_eq!(refs.iter().filter(|r| r["uri"] == uri).count(), 5, "{refs:?}");
    assert_eq!(s.finish(), 0);
}

fn labels(r: &Value) -> Vec<String> {
    r.as_array()
        .or_else(|| r["items"].as_array())
        .map(|a| a.iter().filter_map(|i| i["label"].as_str().map(String::from)).collect())
        .unwrap_or_default()
}

#[test]
fn completion_of_fields_values_and_units() {
    let mut s = Session::start();
    let base = recipe();
    // Type a new field line in the grpo block.
    let at = base.find("  checkpoint_every = 5 iters").expect("line");
    let edited = format!("{}  te\n{}", &base[..at], &base[at..]);
    let uri =
        s.open_text(&format!("file://{}/recipes/scratch.wrl", workspace_root().display()), &edited);
    let r = s
        .request("textDocument/completion", doc_pos(&uri, pos(&edited, "  te\n", 0, 4)))
        .expect("completion");
    let got = labels(&r);
    assert!(!got.contains(&"group".to_string()), "group is already set: {got:?}");
    assert!(
        got.contains(&"dynamic_sampling".to_string()) || got.contains(&"loss_agg".to_string()),
        "{got:?}"
    );
    let item = r
        .as_array()
        .and_then(|a| a.iter().find(|i| i["label"] == "loss_agg").cloned())
        .unwrap_or(Value::Null);
    assert!(item["detail"].as_str().is_some_and(|d| d.starts_with("enum(")), "{item}");
    // Enum words of `per_turn`.
    let at = base.find("per_turn = many").expect("per_turn") + "per_turn = ".len();
    let edited = format!("{}{}", &base[..at], &base[at + "many".len()..]);
    s.notify("textDocument/didChange", json!({ "textDocument": { "uri": uri, "version": 2 }, "contentChanges": [{ "text": edited }] }));
    let p = pos(&edited, "per_turn = ", 0, 11);
    let got = labels(&s.request("textDocument/completion", doc_pos(&uri, p)).expect("completion"));
    assert!(got.contains(&"one".to_string()) && got.contains(&"many".to_string()), "{got:?}");
    // Units after a number, for a duration slot.
    let at = base.find("step = 45 s").expect("step") + "step = 45 ".len();
    let edited = format!("{}{}", &base[..at], &base[at + 1..]);
    s.notify("textDocument/didChange", json!({ "textDocument": { "uri": uri, "version": 3 }, "contentChanges": [{ "text": edited }] }));
    let p = pos(&edited, "step = 45 ", 0, 10);
    let got = labels(&s.request("textDocument/completion", doc_pos(&uri, p)).expect("completion"));
    assert!(
        got.contains(&"s".to_string())
            && got.contains(&"min".to_string())
            && !got.contains(&"tokens".to_string()),
        "{got:?}"
    );
    // Constructors and declarations of the kind a slot takes.
    let at = base.find("judge = webvoyager_judge").expect("judge") + "judge = ".len();
    let edited = format!("{}{}", &base[..at], &base[at + "webvoyager_judge".len()..]);
    s.notify("textDocument/didChange", json!({ "textDocument": { "uri": uri, "version": 4 }, "contentChanges": [{ "text": edited }] }));
    let p = pos(&edited, "judge = \n", 0, 8);
    let got = labels(&s.request("textDocument/completion", doc_pos(&uri, p)).expect("completion"));
    assert!(
        got.contains(&"mind2web_judge".to_string()) && got.contains(&"task_check".to_string()),
        "{got:?}"
    );
    // `std::` paths, and override paths in a profile.
    let edited = format!("{base}\nprofile extra {{\n  online.\n}}\n");
    s.notify("textDocument/didChange", json!({ "textDocument": { "uri": uri, "version": 5 }, "contentChanges": [{ "text": edited }] }));
    let p = pos(&edited, "  online.\n", 0, 9);
    let got = labels(&s.request("textDocument/completion", doc_pos(&uri, p)).expect("completion"));
    assert!(got.contains(&"group".to_string()) && got.contains(&"phases".to_string()), "{got:?}");
    let edited = format!("{base}\nmodel other = std::\n");
    s.notify("textDocument/didChange", json!({ "textDocument": { "uri": uri, "version": 6 }, "contentChanges": [{ "text": edited }] }));
    let p = pos(&edited, "std::\n", 0, 5);
    let got = labels(&s.request("textDocument/completion", doc_pos(&uri, p)).expect("completion"));
    assert!(got.contains(&"models".to_string()) && got.contains(&"rewards".to_string()), "{got:?}");
    // Inside a dataset's `columns`, the fields of its record kind (tasks), less those written.
    let at = base.find("  count = 595\n").expect("webvoyager");
    let edited =
        format!("{}  columns = {{ goal = \"instruction\",  }}\n{}", &base[..at], &base[at..]);
    s.notify("textDocument/didChange", json!({ "textDocument": { "uri": uri, "version": 7 }, "contentChanges": [{ "text": edited }] }));
    let p = pos(&edited, "\"instruction\",  }", 0, 15);
    let got = labels(&s.request("textDocument/completion", doc_pos(&uri, p)).expect("completion"));
    assert!(got.contains(&"start_path".to_string()) && got.contains(&"id".to_string()), "{got:?}");
    assert!(
        !got.contains(&"goal".to_string()) && !got.contains(&"question".to_string()),
        "{got:?}"
    );
    assert_eq!(s.finish(), 0);
}

#[test]
fn hints_symbols_tokens_and_formatting() {
    let mut s = Session::start();
    let uri = s.open("recipes/openwebrl.wrl");
    let text = recipe();
    let hints = s
        .request("textDocument/inlayHint", json!({ "textDocument": { "uri": uri }, "range": { "start": { "line": 0, "character": 0 }, "end": { "line": 999, "character": 0 } } }))
        .expect("hints");
    let labels: Vec<String> = hints
        .as_array()
        .map(|a| a.iter().filter_map(|h| h["label"].as_str().map(String::from)).collect())
        .unwrap_or_default();
    assert!(
        labels.iter().any(|l| l.starts_with("33,600 trajectories · ≤ 684,000 env steps")),
        "{labels:?}"
    );
    assert!(
        labels.iter().any(|l| l.contains("turn 30: ~") && l.contains("of 32,768 tokens (policy)")),
        "{labels:?}"
    );
    assert!(labels.iter().any(|l| l.starts_with("smoke: ")), "{labels:?}");
    let online = pos(&text, "stage online", 0, 0);
    assert!(
        hints.as_array().is_some_and(|a| a.iter().any(|h| h["position"]["line"] == online["line"]))
    );
    let syms = s
        .request("textDocument/documentSymbol", json!({ "textDocument": { "uri": uri } }))
        .expect("symbols");
    let names: Vec<&str> = syms
        .as_array()
        .map(|a| a.iter().filter_map(|x| x["name"].as_str()).collect())
        .unwrap_or_default();
    for n in ["policy", "online", "smoke", "webvoyager_eval"] {
        assert!(names.contains(&n), "{names:?}");
    }
    let toks = s
        .request("textDocument/semanticTokens/full", json!({ "textDocument": { "uri": uri } }))
        .expect("tokens");
    let data = toks["data"].as_array().map_or(0, Vec::len);
    assert!(data > 5 * 400, "{data}");
    // The shipped recipe is formatted: no edits. A misformatted copy gets one.
    let edits = s.request("textDocument/formatting", json!({ "textDocument": { "uri": uri }, "options": { "tabSize": 2, "insertSpaces": true } })).expect("format");
    assert_eq!(edits, json!([]));
    let ugly = text.replacen("prompts = 48", "prompts   =    48", 1);
    s.notify("textDocument/didChange", json!({ "textDocument": { "uri": uri, "version": 2 }, "contentChanges": [{ "text": ugly }] }));
    let edits = s.request("textDocument/formatting", json!({ "textDocument": { "uri": uri }, "options": { "tabSize": 2, "insertSpaces": true } })).expect("format");
    assert_eq!(edits[0]["newText"].as_str(), Some(text.as_str()));
    assert_eq!(s.finish(), 0);
}

#[test]
fn code_actions_fix_did_you_mean_and_warnings() {
    let mut s = Session::start();
    let text = recipe().replacen("kl_estimator = k3", "kl_estimater = k3", 1);
    let uri =
        s.open_text(&format!("file://{}/recipes/typo.wrl", workspace_root().display()), &text);
    let d = s.diagnostics(&uri);
    let diags = d["diagnostics"].as_array().cloned().unwrap_or_default();
    let e = diags.iter().find(|x| x["code"] == "E0301").expect("E0301");
    let r = s
        .request("textDocument/codeAction", json!({ "textDocument": { "uri": uri }, "range": e["range"], "context": { "diagnostics": [e] } }))
        .expect("actions");
    let a = &r[0];
    assert_eq!(a["title"], "Replace `kl_estimater` with `kl_estimator`");
    assert_eq!(a["edit"]["changes"][&uri][0]["newText"], "kl_estimator");
    assert_eq!(s.finish(), 0);
}

#[test]
fn the_first_line_shows_the_recipe_identity_and_a_lens_compares_recipes() {
    let mut s = Session::start();
    let uri = s.open("recipes/openwebrl.wrl");
    let h = hover_text(&mut s, &uri, json!({"line": 0, "character": 3}));
    assert!(h.contains("**recipe identity**"), "{h}");
    assert!(h.contains("- recipe: `sha256:") && h.contains("- profile `smoke`: `sha256:"), "{h}");
    let lenses = s.request("textDocument/codeLens", json!({"textDocument": {"uri": uri}})).unwrap();
    let lens = &lenses[0];
    assert_eq!(lens["range"]["start"]["line"], 0);
    assert_eq!(lens["command"]["command"], "wrl.diff");
    assert!(lens["command"]["title"].as_str().unwrap().starts_with("identity sha256:"));
    // The client asks for the other recipe and runs the command with both.
    let other = s.open("recipes/openwebrl-8b.wrl");
    let args = json!({"command": "wrl.diff", "arguments": [uri, other]});
    let d = s.request("workspace/executeCommand", args).unwrap();
    let d = d.as_str().unwrap();
    assert!(d.contains("  concurrency: 90 (recipe) -> 80 (recipe)"), "{d}");
    let one = json!({"command": "wrl.diff", "arguments": [uri]});
    assert!(s.request("workspace/executeCommand", one).is_err(), "one recipe is not a diff");
}

/// A reward endpoint's hover comes from its stdlib doc, as every builtin's: the constructor's
/// and each field's.
#[test]
fn hover_on_a_reward_endpoint_shows_its_stdlib_doc() {
    let mut s = Session::start();
    let uri = s.open("tests/recipes/reward_endpoint.wrl");
    let text = std::fs::read_to_string(workspace_root().join("tests/recipes/reward_endpoint.wrl"))
        .expect("recipe");
    let h = hover_text(&mut s, &uri, pos(&text, "endpoint(\"http", 0, 1));
    assert!(h.contains("wrl.reward/1") && h.contains("`reward_malformed`"), "{h}");
    let h = hover_text(&mut s, &uri, pos(&text, "observation_chars = 1000", 0, 1));
    assert!(h.contains("field of `std::rewards::endpoint`"), "{h}");
    assert!(h.contains("each turn's observation"), "{h}");
    assert_eq!(s.finish(), 0);
}

/// #45: a claim's `profiles` is known to the server: hover gives its type and doc, and a
/// value in its list completes to the document's profiles and `base` (not its variants).
#[test]
fn a_claims_profiles_hover_and_complete_to_the_recipes_profiles() {
    let mut s = Session::start();
    let text =
        std::fs::read_to_string(workspace_root().join("tests/ui/ok/claim_scoped_to_a_profile.wrl"))
            .expect("case");
    let uri = s.open_text(
        &format!("file://{}/tests/ui/ok/scratch.wrl", workspace_root().display()),
        &text,
    );
    let hover = hover_text(&mut s, &uri, pos(&text, "profiles = [claims]", 0, 2));
    assert!(hover.contains("list(profile)") && hover.contains("stated for"), "{hover}");
    let edited = format!(
        "{}\nvariant slow {{ warmup.lr = 1e-4 }}\n",
        text.replace("profiles = [claims]", "profiles = [ ]")
    );
    s.notify("textDocument/didChange", json!({ "textDocument": { "uri": uri, "version": 2 }, "contentChanges": [{ "text": edited }] }));
    let p = pos(&edited, "profiles = [ ]", 0, 12);
    let got = labels(&s.request("textDocument/completion", doc_pos(&uri, p)).expect("completion"));
    for want in ["claims", "quick", "base"] {
        assert!(got.contains(&want.to_string()), "{want}: {got:?}");
    }
    assert!(!got.contains(&"slow".to_string()), "a variant is no profile: {got:?}");
    assert_eq!(s.finish(), 0);
}
