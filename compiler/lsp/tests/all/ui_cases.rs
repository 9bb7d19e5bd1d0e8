//! The UI cases of `tests/ui/` through the language server, held to the rule `wrlc check` is
//! held to (`tests/src/lib.rs`, `compare`): every expected code at its place, no error the
//! header does not list (nor warning, when it lists one); `ok/` cases report nothing. Cases
//! checked with `--profile` are `wrlc check`-only.

use crate::common;

use common::{Session, workspace_root};

struct Expect {
    code: String,
    at: Option<(u64, u64)>,
}

fn header(text: &str) -> Vec<Expect> {
    let mut out = Vec::new();
    for line in text.lines().take_while(|l| l.starts_with("//")) {
        let Some(rest) = line.strip_prefix("// expect:") else { continue };
        for part in rest.split(',') {
            let part = part.trim();
            let (code, at) = match part.split_once('@') {
                Some((c, p)) => {
                    let (l, col) = p.trim().split_once(':').unwrap_or(("0", "0"));
                    (c.trim(), Some((l.parse().unwrap_or(0), col.parse().unwrap_or(0))))
                }
                None => (part, None),
            };
            out.push(Expect { code: code.to_string(), at });
        }
    }
    out
}

#[test]
fn every_case_reports_what_its_header_says() {
    let root = workspace_root();
    let mut s = Session::start();
    let mut checked = 0;
    for phase in ["syntax", "check", "plan", "ok"] {
        let dir = root.join("tests/ui").join(phase);
        let mut cases: Vec<_> =
            std::fs::read_dir(&dir).expect("ui dir").flatten().map(|e| e.path()).collect();
        cases.sort();
        for path in cases.into_iter().filter(|p| p.extension().is_some_and(|e| e == "wrl")) {
            let bytes = std::fs::read(&path).expect("case");
            let text = String::from_utf8_lossy(&bytes).into_owned();
            if text.starts_with("// wrlc:") {
                continue;
            }
            let rel = path.strip_prefix(&root).expect("under root").display().to_string();
            let uri = s.open(&rel);
            let d = s.diagnostics(&uri);
            let got: Vec<(String, u64, u64, String)> = d["diagnostics"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .iter()
                .map(|x| {
                    let start = &x["range"]["start"];
                    (
                        x["code"].as_str().unwrap_or("").to_string(),
                        start["line"].as_u64().unwrap_or(0) + 1,
                        start["character"].as_u64().unwrap_or(0) + 1,
                        x["message"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect();
            let want = header(&text);
            for e in &want {
                let hit = got.iter().any(|(c, l, col, _)| {
                    *c == e.code && e.at.is_none_or(|(wl, wc)| (wl, wc) == (*l, *col))
                });
                assert!(hit, "{rel}: expected {} at {:?}, got {got:?}", e.code, e.at);
            }
            let strict_warnings = want.iter().any(|e| e.code.starts_with('W'));
            for (c, ..) in &got {
                let checked = c.starts_with('E') || strict_warnings;
                assert!(
                    !checked || want.iter().any(|e| e.code == *c),
                    "{rel}: unexpected {c}: {got:?}"
                );
            }
            if phase == "ok" {
                assert!(got.is_empty(), "{rel}: {got:?}");
            }
            checked += 1;
            s.notify(
                "textDocument/didClose",
                serde_json::json!({ "textDocument": { "uri": uri } }),
            );
        }
    }
    assert!(checked > 60, "{checked} cases");
    assert_eq!(s.finish(), 0);
}
