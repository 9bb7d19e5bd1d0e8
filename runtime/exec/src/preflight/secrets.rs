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
    for (param, v) in &n.params {
        if let Some(why) = find(v) {
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
                     `api_key_env` names (`OPENAI_API_KEY` by default); wrl sends it and never \
                     writes it",
                )
                .at(n, Some(param), "a credential in a URL"),
            );
        }
    }
    out
}

/// What credential a value holds, looking into lists and records.
fn find(v: &PVal) -> Option<String> {
    match v {
        PVal::Str { value } => credential(value),
        PVal::List { items } => items.iter().find_map(find),
        PVal::Record { fields } => fields.values().find_map(find),
        _ => None,
    }
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
}
