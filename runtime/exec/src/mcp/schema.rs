//! A declared tool held to what an MCP server's `tools/list` says of it: the pure half of the
//! preflight's check (E0517), kept apart from the transport so that every rule is tested
//! without a server. A JSON-schema type is read as MCP servers write it (`"type": "string"`,
//! `"type": ["integer", "null"]`, pydantic's `anyOf` for an optional argument).

use serde_json::{Map, Value};
use wrl_plan::params::{Tool, ToolKind};

/// A tool as a server lists it: its name and its input schema (an object schema).
#[derive(Clone, Debug, PartialEq)]
pub struct Listed {
    pub name: String,
    pub input_schema: Map<String, Value>,
}

/// One way a declared tool differs from the server's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mismatch {
    /// The recipe declares an argument the server's schema does not have.
    UnknownArg { arg: String, suggestion: Option<String> },
    /// The argument's JSON-schema type differs.
    Type { arg: String, server: String, recipe: String },
    /// The server requires an argument the recipe does not declare.
    MissingRequired { arg: String },
}

impl Mismatch {
    /// The mismatch in words, naming `tool`.
    pub fn describe(&self, tool: &str) -> String {
        match self {
            Mismatch::UnknownArg { arg, suggestion } => {
                let dym = suggestion
                    .as_ref()
                    .map(|s| format!(" (did you mean `{s}`?)"))
                    .unwrap_or_default();
                format!("tool `{tool}`: the server takes no argument `{arg}`{dym}")
            }
            Mismatch::Type { arg, server, recipe } => format!(
                "tool `{tool}`: argument `{arg}` is `{server}` on the server, `{recipe}` in the recipe"
            ),
            Mismatch::MissingRequired { arg } => format!(
                "tool `{tool}`: the server requires argument `{arg}`, which the recipe does not declare"
            ),
        }
    }
}

/// The JSON-schema type a declared parameter's kind is sent as (`None`: anything).
pub fn json_type(kind: &ToolKind) -> Option<&'static str> {
    match kind {
        ToolKind::Int { .. } => Some("integer"),
        ToolKind::Float { .. } => Some("number"),
        ToolKind::Bool => Some("boolean"),
        ToolKind::Str | ToolKind::Enum(_) => Some("string"),
        ToolKind::List(_) => Some("array"),
        ToolKind::Any => None,
    }
}

/// The types a property schema allows, `null` left out (an optional argument may be sent or
/// not); empty: any.
fn allowed(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    match schema.get("type") {
        Some(Value::String(t)) => out.push(t.clone()),
        Some(Value::Array(ts)) => {
            out.extend(ts.iter().filter_map(Value::as_str).map(str::to_string))
        }
        _ => {}
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(alts)) = schema.get(key) {
            for a in alts {
                let inner = allowed(a);
                if inner.is_empty() && !a.get("type").is_some_and(|t| t == "null") {
                    // One alternative takes anything: so does the property.
                    return Vec::new();
                }
                out.extend(inner);
            }
        }
    }
    out.retain(|t| t != "null");
    out.sort();
    out.dedup();
    out
}

/// Whether a value the recipe's type allows is one of the server's types: an integer is also
/// a `number`; anything else must match by name.
fn fits(recipe: &str, server: &[String]) -> bool {
    server.is_empty()
        || server.iter().any(|s| s == recipe || (s == "number" && recipe == "integer"))
}

/// Every way `declared` differs from `listed`, in the declared parameters' order, then the
/// server's required arguments the recipe leaves out.
pub fn compare(declared: &Tool, listed: &Listed) -> Vec<Mismatch> {
    let empty = Map::new();
    let props = listed.input_schema.get("properties").and_then(Value::as_object).unwrap_or(&empty);
    let mut out = Vec::new();
    for p in &declared.params {
        let Some(schema) = props.get(&p.name) else {
            let suggestion = nearest(&p.name, props.keys().map(String::as_str));
            out.push(Mismatch::UnknownArg { arg: p.name.clone(), suggestion });
            continue;
        };
        let server = allowed(schema);
        if let Some(recipe) = json_type(&p.ty.kind)
            && !fits(recipe, &server)
        {
            out.push(Mismatch::Type {
                arg: p.name.clone(),
                server: server.join(" | "),
                recipe: format!("{} ({recipe})", p.ty.text),
            });
        }
    }
    let required = listed.input_schema.get("required").and_then(Value::as_array);
    for r in required.into_iter().flatten().filter_map(Value::as_str) {
        if !declared.params.iter().any(|p| p.name == r) {
            out.push(Mismatch::MissingRequired { arg: r.to_string() });
        }
    }
    out
}

/// The candidate closest to `wrong` by edit distance, when it is close enough to be a typo
/// (at most a third of the longer name's characters).
pub fn nearest<'a>(wrong: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    candidates
        .into_iter()
        .map(|c| (distance(wrong, c), c))
        .filter(|(d, c)| *d * 3 <= wrong.chars().count().max(c.chars().count()))
        .min()
        .map(|(_, c)| c.to_string())
}

/// Levenshtein distance over characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb { prev } else { 1 + prev.min(row[j]).min(row[j + 1]) };
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use wrl_plan::params::{ToolParam, ToolTy};

    fn tool(params: &[(&str, &str)]) -> Tool {
        Tool {
            name: "run_code".into(),
            params: params
                .iter()
                .map(|(n, t)| ToolParam {
                    name: n.to_string(),
                    ty: ToolTy::parse(t).expect("a type"),
                    default: None,
                })
                .collect(),
            terminal: false,
        }
    }

    fn listed(schema: Value) -> Listed {
        Listed {
            name: "run_code".into(),
            input_schema: schema.as_object().cloned().unwrap_or_default(),
        }
    }

    #[test]
    fn matching_types_pass_and_an_integer_is_a_number() {
        let l = listed(serde_json::json!({
            "type": "object",
            "properties": {
                "code": {"type": "string"},
                "n": {"type": "number"},
                "flags": {"type": "array", "items": {"type": "string"}},
                "timeout": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": null},
                "anything": {}
            },
            "required": ["code"]
        }));
        let t = tool(&[
            ("code", "string"),
            ("n", "int"),
            ("flags", "list(string)"),
            ("timeout", "int(min: 1)"),
            ("anything", "bool"),
        ]);
        assert_eq!(compare(&t, &l), vec![]);
    }

    #[test]
    fn each_difference_is_named() {
        let l = listed(serde_json::json!({
            "type": "object",
            "properties": {"code": {"type": "string"}, "a": {"type": "integer"}},
            "required": ["code", "a"]
        }));
        let t = tool(&[("cod", "string"), ("a", "float")]);
        let got = compare(&t, &l);
        assert_eq!(
            got,
            vec![
                Mismatch::UnknownArg { arg: "cod".into(), suggestion: Some("code".into()) },
                Mismatch::Type {
                    arg: "a".into(),
                    server: "integer".into(),
                    recipe: "float (number)".into()
                },
                Mismatch::MissingRequired { arg: "code".into() },
            ]
        );
        assert_eq!(
            got[1].describe("run_code"),
            "tool `run_code`: argument `a` is `integer` on the server, `float (number)` in the recipe"
        );
        assert!(got[0].describe("run_code").contains("did you mean `code`?"));
    }

    #[test]
    fn near_names_only() {
        assert_eq!(nearest("pyhton", ["python", "add"]), Some("python".into()));
        assert_eq!(nearest("search", ["python", "add"]), None);
    }
}
