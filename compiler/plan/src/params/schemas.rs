//! A tool set as the JSON function schemas instruction-tuned models are shown (OpenAI's
//! `{"type": "function", "function": {name, description, parameters}}`, which Hermes chat
//! templates render into the system prompt): one schema per tool, its parameters typed from the
//! stdlib's types, required unless they have a default. Written once here so every consumer of
//! the plan (the verl lowering, the env service, a chat template) shows a model the same tools.

use serde::Serialize;
use serde_json::{Value as Json, json};

use super::tools::{Coordinates, Literal, Tool, ToolKind, Toolset};

impl Toolset {
    /// Every tool's function schema, in the tool set's order.
    pub fn function_schemas(&self) -> Vec<Json> {
        self.tools.iter().map(|t| t.function_schema(self.coordinates)).collect()
    }

    /// Every tool's function schema as JSON text with its keys in the order transformers'
    /// `get_json_schema` writes them (`type`, `function`; `name`, `description`, `parameters`;
    /// each property's `type` first) and the properties in the tool's order: what a chat
    /// template's `tools` is given, so the model reads its tools as it was trained to.
    pub fn function_schema_texts(&self) -> Vec<String> {
        self.tools
            .iter()
            .map(|t| serde_json::to_string(&t.schema(self.coordinates)).unwrap_or_default())
            .collect()
    }
}

/// `{"type": "function", "function": {…}}`, fields in schema order.
#[derive(Serialize)]
struct Schema<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    function: Function<'a>,
}

#[derive(Serialize)]
struct Function<'a> {
    name: &'a str,
    description: String,
    parameters: Parameters<'a>,
}

#[derive(Serialize)]
struct Parameters<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    properties: Properties<'a>,
    required: Vec<&'a str>,
}

/// The parameters by name, in the tool's order.
struct Properties<'a>(Vec<(&'a str, Prop)>);

impl Serialize for Properties<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// The JSON schema of one parameter (or of a list's items).
#[derive(Serialize, Default)]
struct Prop {
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    ty: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(rename = "enum", skip_serializing_if = "Option::is_none")]
    words: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    items: Option<Box<Prop>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    minimum: Option<Json>,
    #[serde(skip_serializing_if = "Option::is_none")]
    maximum: Option<Json>,
    #[serde(skip_serializing_if = "Option::is_none")]
    default: Option<Json>,
}

impl Tool {
    /// The tool's function schema; `coordinates` says what its points mean.
    pub fn function_schema(&self, coordinates: Coordinates) -> Json {
        serde_json::to_value(self.schema(coordinates)).unwrap_or(Json::Null)
    }

    fn schema(&self, coordinates: Coordinates) -> Schema<'_> {
        let mut properties = Vec::new();
        let mut required = Vec::new();
        for p in &self.params {
            let prop = Prop {
                description: Some(describe(&p.name, &p.ty.text)),
                default: p.default.as_ref().map(literal),
                ..kind_schema(&p.ty.kind)
            };
            properties.push((p.name.as_str(), prop));
            if p.default.is_none() {
                required.push(p.name.as_str());
            }
        }
        let space = match coordinates {
            Coordinates::Pixels => "points are screenshot pixels",
            Coordinates::Norm1000 => "points are 0-1000 over the viewport",
            Coordinates::ElementIds => "elements are the ids of the page's element list",
        };
        let ends = if self.terminal { "; calling it ends the episode" } else { "" };
        Schema {
            ty: "function",
            function: Function {
                name: &self.name,
                description: format!("`{}` ({space}){ends}", self.name),
                parameters: Parameters {
                    ty: "object",
                    properties: Properties(properties),
                    required,
                },
            },
        }
    }
}

fn describe(name: &str, ty: &str) -> String {
    format!("{name}: {ty}")
}

/// The JSON schema of a parameter kind.
fn kind_schema(kind: &ToolKind) -> Prop {
    // An integer's bounds are written as integers (`"minimum": 0`), as JSON schemas write them.
    let bound = |x: f64, int: bool| {
        if int && x.fract() == 0.0 && x.abs() < 1e15 { json!(x as i64) } else { json!(x) }
    };
    let bounded = |ty: &'static str, min: &Option<f64>, max: &Option<f64>| Prop {
        ty: Some(ty),
        minimum: min.map(|x| bound(x, ty == "integer")),
        maximum: max.map(|x| bound(x, ty == "integer")),
        ..Prop::default()
    };
    match kind {
        ToolKind::Int { min, max } => bounded("integer", min, max),
        ToolKind::Float { min, max } => bounded("number", min, max),
        ToolKind::Bool => Prop { ty: Some("boolean"), ..Prop::default() },
        ToolKind::Str => Prop { ty: Some("string"), ..Prop::default() },
        ToolKind::Enum(words) => {
            Prop { ty: Some("string"), words: Some(words.clone()), ..Prop::default() }
        }
        ToolKind::List(item) => {
            Prop { ty: Some("array"), items: Some(Box::new(kind_schema(item))), ..Prop::default() }
        }
        ToolKind::Any => Prop::default(),
    }
}

fn literal(l: &Literal) -> Json {
    l.to_json()
}

impl Literal {
    /// The value as JSON: a whole number as an integer, a word or string as a string.
    pub fn to_json(&self) -> Json {
        let l = self;
        match l {
            Literal::Num(x) if x.fract() == 0.0 && x.abs() < 1e15 => json!(*x as i64),
            Literal::Num(x) => json!(x),
            Literal::Bool(b) => json!(b),
            Literal::Str(s) | Literal::Word(s) => json!(s),
            Literal::List(items) => Json::Array(items.iter().map(literal).collect()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tools::{CallsPerTurn, ToolParam, ToolTy};
    use super::*;

    #[test]
    fn schemas_type_parameters_and_mark_the_required_ones() {
        let param = |name: &str, ty: &str, default: Option<Literal>| ToolParam {
            name: name.into(),
            ty: ToolTy::parse(ty).unwrap(),
            default,
        };
        let set = Toolset {
            coordinates: Coordinates::Pixels,
            calls_per_turn: CallsPerTurn::Many,
            answer_tag: String::new(),
            mcp: Vec::new(),
            tools: vec![Tool {
                name: "click".into(),
                params: vec![
                    param("point_2d", "list(float)", None),
                    param("clicks", "int(min: 1, max: 3)", Some(Literal::Num(1.0))),
                    param("button", "enum(left, right)", Some(Literal::Word("left".into()))),
                ],
                terminal: false,
            }],
        };
        let s = &set.function_schemas()[0];
        assert_eq!(s["function"]["name"], "click");
        let p = &s["function"]["parameters"];
        assert_eq!(p["required"], json!(["point_2d"]));
        assert_eq!(p["properties"]["point_2d"]["items"], json!({"type": "number"}));
        assert_eq!(p["properties"]["clicks"]["maximum"], json!(3));
        assert_eq!(p["properties"]["clicks"]["default"], json!(1));
        assert_eq!(p["properties"]["button"]["enum"], json!(["left", "right"]));
        // The text a chat template is given: keys in schema order, properties in tool order.
        let text = &set.function_schema_texts()[0];
        assert!(text.starts_with(r#"{"type":"function","function":{"name":"click","description""#));
        assert!(text.contains(r#""properties":{"point_2d":{"type":"array","description":"point_2d: list(float)","items":{"type":"number"}},"clicks":{"type":"integer","#), "{text}");
        assert_eq!(serde_json::from_str::<Json>(text).unwrap(), *s);
    }
}
