//! Mistakes a client or a file can make: requests before `initialize`, unknown methods, bad
//! params, documents that are not open, frames that are not JSON-RPC, files that are not
//! UTF-8. Each gets an LSP error or a diagnostic, and the server goes on serving. Also: bursts
//! of edits are checked once, and a document is checked again when a file it imports changes.

use crate::common;

use common::{Session, doc_pos, pos, workspace_root};
use serde_json::{Value, json};
use wrl_lsp::Incoming;

fn still_serving(s: &mut Session) {
    let uri = s.open("recipes/quickstart.wrl");
    let text =
        std::fs::read_to_string(workspace_root().join("recipes/quickstart.wrl")).expect("recipe");
    let r = s
        .request("textDocument/hover", doc_pos(&uri, pos(&text, "model policy", 0, 7)))
        .expect("hover");
    assert!(r["contents"]["value"].as_str().is_some_and(|v| v.contains("model policy")), "{r}");
}

#[test]
fn protocol_mistakes_get_errors() {
    let mut s = Session::new();
    let early = s.request("textDocument/hover", json!({}));
    assert_eq!(early.map_err(|e| e.0), Err(-32002));
    let bad_init = s.request("initialize", json!({ "capabilities": 7 }));
    assert_eq!(bad_init.map_err(|e| e.0), Err(-32602));
    let ok =
        s.request("initialize", json!({ "processId": null, "rootUri": null, "capabilities": {} }));
    assert!(ok.is_ok());
    assert_eq!(
        s.request("initialize", json!({ "capabilities": {} })).map_err(|e| e.0),
        Err(-32600)
    );
    s.notify("initialized", json!({}));
    assert_eq!(s.request("wrl/nonsense", json!({})).map_err(|e| e.0), Err(-32601));
    assert_eq!(
        s.request("textDocument/hover", json!({ "textDocument": 3 })).map_err(|e| e.0),
        Err(-32602)
    );
    let missing = s.request(
        "textDocument/hover",
        doc_pos("file:///nowhere/x.wrl", json!({ "line": 0, "character": 0 })),
    );
    let (code, msg) = missing.expect_err("not open");
    assert_eq!(code, -32803);
    assert!(msg.contains("not open"), "{msg}");
    let not_std = s.request(
        "wrl/virtualTextDocument",
        json!({ "textDocument": { "uri": "wrl-stdlib:///std/none.wrl" } }),
    );
    assert_eq!(not_std.map_err(|e| e.0), Err(-32803));
    // A frame that is not a message: a parse error with a null id.
    s.send(Incoming::Malformed("malformed LSP payload".into()));
    // A notification with bad params is logged, not fatal.
    s.notify("textDocument/didOpen", json!({ "textDocument": "no" }));
    s.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": "file:///x.wrl", "version": 1 }, "contentChanges": [] }),
    );
    still_serving(&mut s);
    assert_eq!(s.raw.len(), 1);
    assert_eq!(s.raw[0]["id"], Value::Null);
    assert_eq!(s.raw[0]["error"]["code"], -32700);
    let logs: Vec<&str> = s
        .notes
        .iter()
        .filter(|n| n.method == "window/logMessage")
        .filter_map(|n| n.params["message"].as_str())
        .collect();
    assert!(logs.iter().any(|l| l.contains("didOpen")), "{logs:?}");
    // Out of range positions are clamped, not errors.
    let uri = format!("file://{}/recipes/quickstart.wrl", workspace_root().display());
    assert!(
        s.request("textDocument/hover", doc_pos(&uri, json!({ "line": 9999, "character": 9999 })))
            .is_ok()
    );
    assert!(
        s.request(
            "textDocument/completion",
            doc_pos(&uri, json!({ "line": 9999, "character": 0 }))
        )
        .is_ok()
    );
    assert_eq!(s.finish(), 0);
}

#[test]
fn exit_without_shutdown_is_status_1() {
    let s = Session::start();
    s.notify("exit", Value::Null);
    assert_eq!(s.join(), 1);
    let mut s = Session::start();
    assert!(s.request("shutdown", Value::Null).is_ok());
    assert_eq!(s.request("textDocument/hover", json!({})).map_err(|e| e.0), Err(-32600));
    assert_eq!(s.finish(), 0);
}

#[test]
fn a_file_that_is_not_utf8_gets_e0106() {
    let mut s = Session::start();
    let uri = s.open("tests/ui/syntax/E0106_invalid_utf8.wrl");
    let d = s.diagnostics(&uri);
    let ds = d["diagnostics"].as_array().cloned().unwrap_or_default();
    assert_eq!(ds.len(), 1, "{ds:?}");
    assert_eq!(ds[0]["code"], "E0106");
    assert_eq!(ds[0]["range"]["start"], json!({ "line": 2, "character": 17 }));
    // Every request on it answers (nothing to say, but no error).
    assert!(
        s.request("textDocument/hover", doc_pos(&uri, json!({ "line": 2, "character": 3 })))
            .is_ok()
    );
    assert!(
        s.request("textDocument/semanticTokens/full", json!({ "textDocument": { "uri": uri } }))
            .is_ok()
    );
    still_serving(&mut s);
    assert_eq!(s.finish(), 0);
}

#[test]
fn the_stdlib_is_served_read_only() {
    let mut s = Session::start();
    let uri = "wrl-stdlib:///std/prelude.wrl";
    let text = s
        .request("wrl/virtualTextDocument", json!({ "textDocument": { "uri": uri } }))
        .expect("text");
    assert!(text.as_str().is_some_and(|t| t.contains("builtin grpo(")));
    // Requests on a stdlib document work without opening it (syntax only).
    let toks = s
        .request("textDocument/semanticTokens/full", json!({ "textDocument": { "uri": uri } }))
        .expect("tokens");
    assert!(toks["data"].as_array().is_some_and(|d| !d.is_empty()));
    let syms = s
        .request("textDocument/documentSymbol", json!({ "textDocument": { "uri": uri } }))
        .expect("symbols");
    assert!(syms.as_array().is_some_and(|a| a.iter().any(|x| x["name"] == "grpo")));
    assert_eq!(
        s.request("textDocument/hover", doc_pos(uri, json!({ "line": 10, "character": 10 }))),
        Ok(Value::Null)
    );
    let fmt = s.request("textDocument/formatting", json!({ "textDocument": { "uri": uri }, "options": { "tabSize": 2, "insertSpaces": true } }));
    assert!(fmt.is_err());
    assert_eq!(s.finish(), 0);
}

#[test]
fn bursts_are_checked_once_and_importers_follow_their_imports() {
    let dir = tempfile::tempdir().expect("tempdir");
    let common = dir.path().join("common.wrl");
    let main = dir.path().join("main.wrl");
    std::fs::write(&common, "model policy = std::models::tiny\n").expect("write");
    let main_text = "use \"common.wrl\"\nstage s = sft(policy, std::sandbox::demos(count: 8))\n";
    std::fs::write(&main, main_text).expect("write");
    let mut s = Session::start();
    let m = s.open_text(&format!("file://{}", main.display()), main_text);
    let d = s.diagnostics(&m);
    assert_eq!(d["diagnostics"], json!([]), "{d}");
    let c =
        s.open_text(&format!("file://{}", common.display()), "model policy = std::models::tiny\n");
    let _ = s.diagnostics(&c);
    // Opening the file `main.wrl` imports checks `main.wrl` again (it may now read the editor's text).
    let _ = s.diagnostics(&m);
    // Ten edits in one burst: diagnostics for the last version only.
    for v in 2..12 {
        let text = format!("model policy = std::models::tiny{}\n", if v == 11 { "y" } else { "" });
        s.notify("textDocument/didChange", json!({ "textDocument": { "uri": c, "version": v }, "contentChanges": [{ "text": text }] }));
    }
    let d = s.diagnostics(&c);
    assert_eq!(d["version"], 11, "{d}");
    let codes: Vec<&str> = d["diagnostics"]
        .as_array()
        .map(|a| a.iter().filter_map(|x| x["code"].as_str()).collect())
        .unwrap_or_default();
    assert!(codes.contains(&"E0200"), "{d}");
    // The importer sees the broken import, on its `use`. A re-check of `main.wrl` from before the
    // burst (its import opened) may still be on its way under load: skip clean ones, a few at most.
    let mut d = s.diagnostics(&m);
    for _ in 0..3 {
        if d["diagnostics"].as_array().is_some_and(|a| !a.is_empty()) {
            break;
        }
        d = s.diagnostics(&m);
    }
    let first = &d["diagnostics"][0];
    assert!(first["message"].as_str().is_some_and(|t| t.starts_with("in `")), "{d}");
    assert_eq!(first["range"]["start"]["line"], 0);
    assert!(s.notes.iter().all(|n| n.params["uri"] != c), "one publish per burst: {:?}", s.notes);
    assert_eq!(s.finish(), 0);
}

#[test]
fn the_stdlib_as_read_only_files_for_editors_that_open_only_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = Session::new();
    let root = workspace_root();
    let init = json!({
        "processId": null, "rootUri": format!("file://{}", root.display()), "capabilities": {},
        "initializationOptions": { "stdlib": "files", "stdlibDir": dir.path() },
    });
    assert!(s.request("initialize", init).is_ok());
    s.notify("initialized", json!({}));
    let uri = s.open("recipes/quickstart.wrl");
    let text = std::fs::read_to_string(root.join("recipes/quickstart.wrl")).expect("recipe");
    let def = s
        .request("textDocument/definition", doc_pos(&uri, pos(&text, "grpo(", 0, 1)))
        .expect("def");
    let file = dir.path().join("std/prelude.wrl");
    assert_eq!(def["uri"], format!("file://{}", file.display()));
    assert_eq!(
        std::fs::read_to_string(&file).ok().as_deref(),
        Some(include_str!("../../../../stdlib/prelude.wrl"))
    );
    assert!(std::fs::metadata(&file).expect("meta").permissions().readonly());
    // Opened by the editor, it is a stdlib document: never checked on its own.
    let std_uri = s.open_text(
        def["uri"].as_str().unwrap_or(""),
        include_str!("../../../../stdlib/prelude.wrl"),
    );
    let d = s.diagnostics(&std_uri);
    assert_eq!(d["diagnostics"], json!([]));
    let bad = Session::new().request(
        "initialize",
        json!({ "capabilities": {}, "initializationOptions": { "stdlib": "disk" } }),
    );
    assert_eq!(bad.map_err(|e| e.0), Err(-32602));
    assert_eq!(s.finish(), 0);
}
