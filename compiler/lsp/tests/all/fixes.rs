//! Every quick fix the server offers on the UI cases does what it says: applied as the client
//! would apply it, the diagnostic it fixes is gone from the next check. Every did-you-mean on
//! a place in the case's own file gets one.

use crate::common;

use common::{Session, workspace_root};
use serde_json::{Value, json};

/// Applies LSP text edits (UTF-16 positions; the cases are ASCII where edits land).
fn apply(text: &str, edits: &[Value]) -> String {
    let offset = |p: &Value| {
        let line = p["line"].as_u64().unwrap_or(0) as usize;
        let col = p["character"].as_u64().unwrap_or(0) as usize;
        let start: usize = text.split_inclusive('\n').take(line).map(str::len).sum();
        start + col
    };
    let mut spans: Vec<(usize, usize, String)> = edits
        .iter()
        .map(|e| {
            (
                offset(&e["range"]["start"]),
                offset(&e["range"]["end"]),
                e["newText"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    spans.sort_by_key(|s| std::cmp::Reverse(s.0));
    let mut out = text.to_string();
    for (s, e, t) in spans {
        out.replace_range(s..e, &t);
    }
    out
}

#[test]
fn quick_fixes_fix_what_they_say() {
    let root = workspace_root();
    let mut s = Session::start();
    let mut fixed = 0;
    let mut version = 1;
    for phase in ["syntax", "check", "plan"] {
        let mut cases: Vec<_> = std::fs::read_dir(root.join("tests/ui").join(phase))
            .expect("dir")
            .flatten()
            .map(|e| e.path())
            .collect();
        cases.sort();
        for path in cases.into_iter().filter(|p| p.extension().is_some_and(|e| e == "wrl")) {
            let Ok(text) = std::fs::read_to_string(&path) else { continue };
            if text.starts_with("// wrlc:") {
                continue;
            }
            let uri = s.open_text(&format!("file://{}", path.display()), &text);
            let diags = s.diagnostics(&uri)["diagnostics"].as_array().cloned().unwrap_or_default();
            for d in &diags {
                let msg = d["message"].as_str().unwrap_or("");
                let actions = s
                    .request("textDocument/codeAction", json!({ "textDocument": { "uri": uri }, "range": d["range"], "context": { "diagnostics": [d] } }))
                    .expect("actions");
                let mine: Vec<&Value> = actions
                    .as_array()
                    .map(|a| {
                        a.iter()
                            // Several diagnostics may share a place (W0220: one per field
                            // a call leaves to its default): each fix names its own.
                            .filter(|x| {
                                x["diagnostics"][0]["range"] == d["range"]
                                    && x["diagnostics"][0]["code"] == d["code"]
                                    && x["diagnostics"][0]["message"] == d["message"]
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                if msg.contains("did you mean `") && !msg.starts_with("in `") {
                    assert!(!mine.is_empty(), "{}: no fix for {msg}", path.display());
                }
                for a in mine {
                    let edits = a["edit"]["changes"][&uri].as_array().cloned().unwrap_or_default();
                    let new = apply(&text, &edits);
                    version += 1;
                    s.notify("textDocument/didChange", json!({ "textDocument": { "uri": uri, "version": version }, "contentChanges": [{ "text": new }] }));
                    let after =
                        s.diagnostics(&uri)["diagnostics"].as_array().cloned().unwrap_or_default();
                    let still = after
                        .iter()
                        .any(|x| x["code"] == d["code"] && x["message"] == d["message"]);
                    assert!(
                        !still,
                        "{}: `{}` left {} in place:\n{new}",
                        path.display(),
                        a["title"],
                        d["code"]
                    );
                    fixed += 1;
                    version += 1;
                    s.notify("textDocument/didChange", json!({ "textDocument": { "uri": uri, "version": version }, "contentChanges": [{ "text": text }] }));
                    let _ = s.diagnostics(&uri);
                }
            }
            s.notify("textDocument/didClose", json!({ "textDocument": { "uri": uri } }));
            let _ = s.diagnostics(&uri);
        }
    }
    eprintln!("{fixed} fixes applied");
    assert!(fixed >= 10, "only {fixed} fixes");
    assert_eq!(s.finish(), 0);
}

#[test]
fn an_old_field_gets_its_migration_as_a_quick_fix() {
    let root = workspace_root();
    let path = root.join("tests/ui/check/E0311_eval_every.wrl");
    let text = std::fs::read_to_string(&path).expect("case");
    let mut s = Session::start();
    let uri = s.open_text(&format!("file://{}", path.display()), &text);
    let diags = s.diagnostics(&uri)["diagnostics"].as_array().cloned().unwrap_or_default();
    let d = diags.iter().find(|d| d["code"] == "E0311").expect("E0311");
    let actions = s
        .request("textDocument/codeAction", json!({ "textDocument": { "uri": uri }, "range": d["range"], "context": { "diagnostics": [d] } }))
        .expect("actions");
    let a = actions
        .as_array()
        .and_then(|a| a.iter().find(|x| x["title"] == "Migrate `eval_every` to `validate`"))
        .expect("the migration");
    assert_eq!(a["isPreferred"], true);
    let edits = a["edit"]["changes"][&uri].as_array().cloned().unwrap_or_default();
    let new = apply(&text, &edits);
    assert!(new.contains("  validate = validation(tasks) { every = 4 iters }\n"), "{new}");
    s.notify("textDocument/didClose", json!({ "textDocument": { "uri": uri } }));
    let _ = s.diagnostics(&uri);
    assert_eq!(s.finish(), 0);
}
