//! `--error-format sarif`: the diagnostics of a command as one SARIF 2.1.0 log, for code
//! scanning (GitHub's upload-sarif, IDE viewers). Built from the JSON diagnostic objects
//! (docs/diagnostics-json.md), so both formats say the same; a rule per reported code, titled
//! from the registry. Checked against the SARIF 2.1.0 schema by `tests/scripts/sarif-check.sh`.

use std::collections::BTreeMap;

use serde_json::{Value as Json, json};

/// A path as a relative URI reference: `/` separators, spaces and `%` escaped.
fn uri(path: &str) -> String {
    let mut out = String::new();
    for c in path.replace('\\', "/").chars() {
        match c {
            ' ' => out.push_str("%20"),
            '%' => out.push_str("%25"),
            '#' => out.push_str("%23"),
            '?' => out.push_str("%3F"),
            c => out.push(c),
        }
    }
    out
}

fn location(l: &Json) -> Option<Json> {
    let file = l["file"].as_str()?;
    let n = |k: &str| l[k].as_u64().filter(|&x| x >= 1);
    let mut region = serde_json::Map::new();
    for (from, to) in [
        ("line", "startLine"),
        ("column", "startColumn"),
        ("end_line", "endLine"),
        ("end_column", "endColumn"),
    ] {
        if let Some(x) = n(from) {
            region.insert(to.into(), json!(x));
        }
    }
    if let (Some(s), Some(e)) = (l["span"]["start"].as_u64(), l["span"]["end"].as_u64()) {
        region.insert("byteOffset".into(), json!(s));
        region.insert("byteLength".into(), json!(e.saturating_sub(s)));
    }
    let mut loc = json!({"physicalLocation": {"artifactLocation": {"uri": uri(file)}}});
    if !region.is_empty() {
        loc["physicalLocation"]["region"] = Json::Object(region);
    }
    if let Some(m) = l["message"].as_str().filter(|m| !m.is_empty()) {
        loc["message"] = json!({"text": m});
    }
    Some(loc)
}

/// The SARIF log of `diagnostics` (JSON diagnostic objects) from a command that exited `exit`.
pub fn log(diagnostics: &[Json], exit: u8) -> Json {
    let mut rules: BTreeMap<String, Json> = BTreeMap::new();
    let results: Vec<Json> = diagnostics
        .iter()
        .map(|d| {
            let code = d["code"].as_str().unwrap_or(crate::stream::USAGE_CODE).to_string();
            rules.entry(code.clone()).or_insert_with(|| {
                let title = wrl_diagnostics::lookup(&code).map_or(code.as_str(), |c| c.title);
                let help = format!("wrlc explain {code}");
                json!({"id": code, "shortDescription": {"text": title}, "help": {"text": help}})
            });
            let mut text = d["message"].as_str().unwrap_or("").to_string();
            if let Some(h) = d["help"].as_str() {
                text.push_str("\nhelp: ");
                text.push_str(h);
            }
            let level = if d["severity"] == "warning" { "warning" } else { "error" };
            let labels = d["labels"].as_array().cloned().unwrap_or_default();
            let mut locs = labels.iter().filter_map(location);
            let mut r = json!({"ruleId": code, "level": level, "message": {"text": text}});
            if let Some(first) = locs.next() {
                r["locations"] = json!([first]);
            }
            let related: Vec<Json> = locs
                .enumerate()
                .map(|(i, mut l)| {
                    l["id"] = json!(i + 1);
                    l
                })
                .collect();
            if !related.is_empty() {
                r["relatedLocations"] = Json::Array(related);
            }
            r
        })
        .collect();
    let rule_list: Vec<Json> = rules.into_values().collect();
    let mut ids: BTreeMap<String, usize> = BTreeMap::new();
    for (i, r) in rule_list.iter().enumerate() {
        ids.insert(r["id"].as_str().unwrap_or("").to_string(), i);
    }
    let results: Vec<Json> = results
        .into_iter()
        .map(|mut r| {
            if let Some(&i) = r["ruleId"].as_str().and_then(|id| ids.get(id)) {
                r["ruleIndex"] = json!(i);
            }
            r
        })
        .collect();
    let successful = exit == crate::EXIT_OK || exit == crate::EXIT_USER;
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "wrlc",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": "https://example.invalid/wrl",
                "rules": rule_list,
            }},
            "columnKind": "unicodeCodePoints",
            "invocations": [{"executionSuccessful": successful}],
            "results": results,
        }],
    })
}
