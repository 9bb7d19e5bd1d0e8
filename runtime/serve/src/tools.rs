//! Tool calling in chat completions, for a policy with its own chat template: the request's
//! `tools` (OpenAI function schemas, kept as the client wrote them, key order included) go to
//! the template's `tools`; an assistant message's `tool_calls` to the template's calls; and the
//! Hermes `<tool_call>{"name": …, "arguments": …}</tool_call>` blocks of a reply come back as
//! OpenAI's `message.tool_calls` with `finish_reason: "tool_calls"`. A reply whose calls do not
//! all parse (not JSON, no name, a tool the request did not offer) is returned as content.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value as Json, json};
use wrl_trainer::chat::CallText;

use crate::error::ApiError;

/// The tools a chat request offers: each schema's JSON text and its function's name.
#[derive(Debug, Default, Clone)]
pub(crate) struct Offered {
    pub(crate) schemas: Vec<String>,
    pub(crate) names: Vec<String>,
    /// `tool_choice: "none"`: the tools are shown but a reply is not read as calls.
    pub(crate) parse_reply: bool,
}

#[derive(Deserialize)]
struct Body<'a> {
    #[serde(borrow, default)]
    tools: Option<Vec<&'a RawValue>>,
}

/// The request's `tools` (`obj` is the parsed body, `body` its text, which keeps key order).
pub(crate) fn offered(
    body: &[u8],
    obj: &serde_json::Map<String, Json>,
) -> Result<Offered, ApiError> {
    let bad = |i: usize, k: &str, what: &str| {
        let at = if k.is_empty() { format!("tools[{i}]") } else { format!("tools[{i}].{k}") };
        ApiError::invalid("invalid_value", at.clone(), format!("`{at}` {what}"))
    };
    let Some(list) = obj.get("tools").filter(|t| t.as_array().is_none_or(|a| !a.is_empty())) else {
        // No tools: a `tool_choice` other than "none" has nothing to choose from.
        return match obj.get("tool_choice").filter(|c| !c.is_null()) {
            None => Ok(Offered::default()),
            Some(Json::String(s)) if s == "none" => Ok(Offered::default()),
            Some(_) => Err(ApiError::invalid(
                "invalid_value",
                "tool_choice",
                "`tool_choice` is only allowed when `tools` are given",
            )),
        };
    };
    let list = list
        .as_array()
        .ok_or_else(|| ApiError::invalid("invalid_type", "tools", "`tools` must be an array"))?;
    let raw: Body<'_> = serde_json::from_slice(body)
        .map_err(|e| ApiError::invalid("invalid_type", "tools", format!("`tools`: {e}")))?;
    let raw = raw.tools.unwrap_or_default();
    let mut out = Offered { parse_reply: true, ..Offered::default() };
    for (i, (t, text)) in list.iter().zip(raw).enumerate() {
        if t.get("type").and_then(Json::as_str) != Some("function") {
            return Err(bad(i, "type", "must be \"function\""));
        }
        let f = t
            .get("function")
            .and_then(Json::as_object)
            .ok_or_else(|| bad(i, "function", "must be an object"))?;
        let name = f.get("name").and_then(Json::as_str).filter(|n| !n.is_empty());
        let name = name.ok_or_else(|| bad(i, "function.name", "must be a non-empty string"))?;
        if f.get("parameters").is_some_and(|p| !p.is_object()) {
            return Err(bad(i, "function.parameters", "must be a JSON schema object"));
        }
        if f.get("description").is_some_and(|d| !d.is_string()) {
            return Err(bad(i, "function.description", "must be a string"));
        }
        if let Some(k) = t
            .as_object()
            .and_then(|o| o.keys().find(|k| !["type", "function"].contains(&k.as_str())))
        {
            return Err(bad(i, k, "is not a field of a tool"));
        }
        out.names.push(name.to_string());
        out.schemas.push(text.get().to_string());
    }
    match obj.get("tool_choice").filter(|c| !c.is_null()) {
        None => {}
        Some(Json::String(s)) if s == "auto" => {}
        Some(Json::String(s)) if s == "none" => out.parse_reply = false,
        Some(_) => {
            return Err(ApiError::invalid(
                "unsupported_parameter",
                "tool_choice",
                "`tool_choice` can be \"auto\" or \"none\": this server does not constrain the \
                 policy's output to a call",
            ));
        }
    }
    Ok(out)
}

/// An assistant message's `tool_calls` (OpenAI's shape; `arguments` a JSON string or object)
/// as the template's calls.
pub(crate) fn message_calls(i: usize, calls: &Json) -> Result<Vec<CallText>, ApiError> {
    let at = |j: usize, k: &str| format!("messages[{i}].tool_calls[{j}].{k}");
    let bad = |j: usize, k: &str, what: &str| {
        ApiError::invalid("invalid_value", at(j, k), format!("`{}` {what}", at(j, k)))
    };
    let list = calls.as_array().ok_or_else(|| {
        let p = format!("messages[{i}].tool_calls");
        ApiError::invalid("invalid_type", p.clone(), format!("`{p}` must be an array"))
    })?;
    let mut out = Vec::new();
    for (j, c) in list.iter().enumerate() {
        let f = c.get("function").ok_or_else(|| bad(j, "function", "is required"))?;
        let name = f
            .get("name")
            .and_then(Json::as_str)
            .ok_or_else(|| bad(j, "function.name", "must be a string"))?;
        let arguments = match f.get("arguments") {
            Some(Json::String(s)) => s.clone(),
            Some(o @ Json::Object(_)) => o.to_string(),
            None | Some(Json::Null) => "{}".into(),
            Some(_) => return Err(bad(j, "function.arguments", "must be a JSON string")),
        };
        if !serde_json::from_str::<Json>(&arguments).is_ok_and(|v| v.is_object()) {
            return Err(bad(j, "function.arguments", "must be the JSON text of an object"));
        }
        out.push(CallText { name: name.to_string(), arguments });
    }
    Ok(out)
}

#[derive(Deserialize)]
struct Hermes<'a> {
    name: String,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
}

/// A reply's Hermes calls as OpenAI's `tool_calls` (ids `call_<id>_<n>`) and the content before
/// them (`None` when empty); `None` when the reply makes no call or one does not parse.
pub(crate) fn reply_calls(
    text: &str,
    offered: &Offered,
    id: &str,
) -> Option<(Option<String>, Vec<Json>)> {
    const OPEN: &str = "<tool_call>";
    const CLOSE: &str = "</tool_call>";
    let first = text.find(OPEN)?;
    let mut calls = Vec::new();
    let mut rest = &text[first..];
    while let Some(start) = rest.find(OPEN) {
        // Only whitespace between calls.
        if !rest[..start].trim().is_empty() {
            return None;
        }
        let after = &rest[start + OPEN.len()..];
        let end = after.find(CLOSE)?;
        let call: Hermes<'_> = serde_json::from_str(after[..end].trim()).ok()?;
        if !offered.names.contains(&call.name) {
            return None;
        }
        let arguments = match call.arguments.map(RawValue::get) {
            None => "{}".to_string(),
            Some(raw) => match serde_json::from_str::<Json>(raw).ok()? {
                Json::Object(_) => raw.to_string(),
                Json::String(s)
                    if serde_json::from_str::<Json>(&s).is_ok_and(|v| v.is_object()) =>
                {
                    s
                }
                _ => return None,
            },
        };
        calls.push(json!({
            "id": format!("call_{id}_{}", calls.len()),
            "type": "function",
            "function": {"name": call.name, "arguments": arguments},
        }));
        rest = &after[end + CLOSE.len()..];
    }
    if !rest.trim().is_empty() {
        return None;
    }
    let content = text[..first].trim();
    Some(((!content.is_empty()).then(|| content.to_string()), calls))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offer(names: &[&str]) -> Offered {
        Offered {
            schemas: Vec::new(),
            names: names.iter().map(|n| n.to_string()).collect(),
            parse_reply: true,
        }
    }

    #[test]
    fn hermes_replies_become_openai_tool_calls() {
        let o = offer(&["search", "visit"]);
        let text = "I will look.\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": [\"Barvel\"], \"n\": 2}}\n</tool_call>\n<tool_call>{\"name\": \"visit\", \"arguments\": \"{\\\"url\\\": \\\"/x\\\"}\"}</tool_call>";
        let (content, calls) = reply_calls(text, &o, "c1").unwrap();
        assert_eq!(content.as_deref(), Some("I will look."));
        assert_eq!(calls[0]["id"], "call_c1_0");
        assert_eq!(calls[0]["function"]["name"], "search");
        // The arguments as the model wrote them, key order kept.
        assert_eq!(calls[0]["function"]["arguments"], "{\"query\": [\"Barvel\"], \"n\": 2}");
        assert_eq!(calls[1]["function"]["arguments"], "{\"url\": \"/x\"}");
        let (none, _) =
            reply_calls("<tool_call>{\"name\": \"visit\"}</tool_call>", &o, "c").unwrap();
        assert_eq!(none, None);
        // Malformed: left as content.
        for bad in [
            "no call at all",
            "<tool_call>{\"name\": \"search\", \"argu",
            "<tool_call>{nope}</tool_call>",
            "<tool_call>{\"name\": \"fly\", \"arguments\": {}}</tool_call>",
            "<tool_call>{\"name\": \"search\", \"arguments\": [1]}</tool_call>",
            "<tool_call>{\"name\": \"search\"}</tool_call> and then text",
        ] {
            assert!(reply_calls(bad, &o, "c").is_none(), "{bad}");
        }
    }

    #[test]
    fn request_tools_keep_the_clients_text_and_are_checked() {
        let body = br#"{"tools":[{"type":"function","function":{"name":"search","parameters":{"type":"object","properties":{"query":{"type":"string"},"a":{}}}}}],"tool_choice":"auto"}"#;
        let obj: serde_json::Map<String, Json> = serde_json::from_slice(body).unwrap();
        let o = offered(body, &obj).unwrap();
        assert_eq!(o.names, vec!["search"]);
        assert!(o.schemas[0].contains(r#""properties":{"query":{"type":"string"},"a":{}}"#));
        assert!(o.parse_reply);
        let check = |b: &str| {
            let obj: serde_json::Map<String, Json> = serde_json::from_str(b).unwrap();
            offered(b.as_bytes(), &obj).map(|_| ()).unwrap_err().param
        };
        assert_eq!(check(r#"{"tools":[{"type":"code"}]}"#).as_deref(), Some("tools[0].type"));
        assert_eq!(
            check(r#"{"tools":[{"type":"function","function":{}}]}"#).as_deref(),
            Some("tools[0].function.name")
        );
        assert_eq!(
            check(r#"{"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required"}"#)
                .as_deref(),
            Some("tool_choice")
        );
        let calls = json!([{"id": "x", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]);
        assert_eq!(message_calls(1, &calls).unwrap()[0].arguments, "{\"a\": 1}");
        let bad = json!([{"function": {"name": "f", "arguments": "[1]"}}]);
        assert_eq!(
            message_calls(1, &bad).unwrap_err().param.as_deref(),
            Some("messages[1].tool_calls[0].function.arguments")
        );
    }
}
