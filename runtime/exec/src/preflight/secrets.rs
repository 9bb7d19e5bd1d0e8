//! Credentials written into a recipe: a URL with a user and password (`https://u:KEY@host/`)
//! or a key in its query (`?api_key=…`) would be copied into `plan.json`, the report and every
//! log that shows the plan, so the preflight refuses it (E0520) and points at the field; keys
//! belong in the environment variable the field's `api_key_env` names.

use wrl_plan::{Node, PVal};

use crate::error::{Fault, RunError};

/// Query parameters that carry a credential.
const KEY_PARAMS: [&str; 8] =
    ["key", "api_key", "apikey", "api-key", "token", "access_token", "secret", "password"];

/// Every parameter of `n` holding a credential in a URL.
pub(super) fn secrets(n: &Node) -> Vec<RunError> {
    let mut out = Vec::new();
    for (top, v) in &n.params {
        if let Some((inner, why)) = find(v) {
            // The field that holds the URL (`base_url` of a judge inside `expr`), where the
            // recipe writes it.
            let param = inner.unwrap_or_else(|| top.clone());
            out.push(
                RunError::new(
                    Fault::Secret,
                    format!(
                        "`{}`'s `{param}` holds a credential ({why}); it would be written to `plan.json`",
                        n.decl
                    ),
                )
                .help(
                    "remove it from the URL and put the key in the environment variable that \
                     `api_key_env` names (`OPENAI_API_KEY` by default, `WRL_REWARD_API_KEY` for \
                     a reward endpoint); wrl sends it and never writes it",
                )
                .at(n, Some(&param), "a credential in a URL"),
            );
        }
    }
    out
}

/// What credential a value holds, looking everywhere inside it (lists, records, inline
/// objects, reward expressions and the judges in them): every string it would write to
/// `plan.json` is looked at.
fn find(v: &PVal) -> Option<(Option<String>, String)> {
    /// The credential and the name of the innermost record or object field holding it (a key
    /// of a `fields` map; the plan's own structure has other keys).
    fn walk(
        name: Option<&str>,
        parent: Option<&str>,
        j: &serde_json::Value,
    ) -> Option<(Option<String>, String)> {
        match j {
            serde_json::Value::String(s) => {
                credential(s).map(|why| (name.map(str::to_string), why))
            }
            serde_json::Value::Array(items) => items.iter().find_map(|i| walk(name, None, i)),
            serde_json::Value::Object(fields) => fields.iter().find_map(|(k, v)| {
                let name = if parent == Some("fields") { Some(k.as_str()) } else { name };
                walk(name, Some(k.as_str()), v)
            }),
            _ => None,
        }
    }
    walk(None, None, &serde_json::to_value(v).ok()?)
}

/// Whether the string `s` is a URL carrying a credential, and which.
pub(crate) fn credential(s: &str) -> Option<String> {
    let (_, rest) = s.split_once("://")?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    if rest[..end].contains('@') {
        return Some("a user and password before its host".into());
    }
    let query = s.split_once('?')?.1;
    let query = query.split('#').next().unwrap_or(query);
    query.split('&').find_map(|kv| {
        let name = kv.split('=').next().unwrap_or("").to_ascii_lowercase();
        KEY_PARAMS.contains(&name.as_str()).then(|| format!("`{name}` in its query"))
    })
}

#[cfg(test)]
mod tests {
    use super::credential;

    #[test]
    fn urls_with_credentials_are_found() {
        assert!(credential("https://user:sk-123@api.example/v1").is_some());
        assert!(credential("http://127.0.0.1:8000/v1?api_key=sk-1").is_some());
        assert!(credential("http://127.0.0.1:8000/v1?api-version=2").is_none());
        assert!(credential("http://127.0.0.1:8000/v1").is_none());
        assert!(credential("mailto@example").is_none());
    }

    /// A string deep inside a value is looked at (the E0520 page's judge, inside a reward
    /// expression, was once missed).
    #[test]
    fn a_key_deep_in_a_value_is_found() {
        use wrl_plan::PVal;
        let key = PVal::Str { value: "https://me:sk-1@api.example/v1".into() };
        let list = PVal::List { items: vec![PVal::Bool { value: true }, key] };
        let v = PVal::Record { fields: std::collections::BTreeMap::from([("expr".into(), list)]) };
        assert!(super::find(&v).is_some());
        assert!(super::find(&PVal::Str { value: "http://127.0.0.1/v1".into() }).is_none());
    }
}
