//! A tool set as the JSON function schemas instruction-tuned models are shown (OpenAI's
//! `{"type": "function", "function": {name, description, parameters}}`, which Hermes chat
//! templates render into the system prompt): one schema per tool, its parameters typed from the
//! stdlib's types, required unless they have a default. Written once here so every consumer of
//! the plan (the verl lowering, the env service, a chat template) shows a model the same tools.

use serde_json::{Map, Value as Json, json};

use super::tools::{Coordinates, Literal, Tool, ToolKind, Toolset};

impl Toolset {
    /// Every tool's function schema, in the tool set's order.
    pub fn function_schemas(&self) -> Vec<Json> {
        self.tools.iter().map(|t| t.function_schema(self.coordinates)).collect()
    }
}

impl Tool {
    /// The tool's function schema; `coordinates` says what its points mean.
    pub fn function_schema(&self, coordinates: Coordinates) -> Json {
        let mut properties = Map::new();
        let mut required = Vec::new();
        for p in &self.params {
            let mut s = kind_schema(&p.ty.kind);
            if let Json::Object(m) = &mut s {
                m.insert("description".into(), Json::String(describe(&p.name, &p.ty.text)));
                if let Some(d) = &p.default {
                    m.insert("default".into(), literal(d));
                }
            }
            properties.insert(p.name.clone(), s);
            if p.default.is_none() {
                required.push(Json::String(p.name.clone()));
            }
        }
        let space = match coordinates {
            Coordinates::Pixels => "points are screenshot pixels",
            Coordinates::Norm1000 => "points are 0-1000 over the viewport",
            Coordinates::ElementIds => "elements are the ids of the page's element list",
        };
        let ends = if self.terminal { "; calling it ends the episode" } else { "" };
        json!({
            "type": "function",
            "function": {
                "name": self.name,
                "description": format!("`{}` ({space}){ends}", self.name),
                "parameters": {"type": "object", "properties": properties, "required": required},
            }
        })
    }
}

fn describe(name: &str, ty: &str) -> String {
    format!("{name}: {ty}")
}

/// The JSON schema of a parameter kind.
fn kind_schema(kind: &ToolKind) -> Json {
    let bounded = |ty: &str, min: &Option<f64>, max: &Option<f64>| {
        let mut m = Map::new();
        m.insert("type".into(), Json::String(ty.into()));
        if let Some(x) = min {
            m.insert("minimum".into(), json!(x));
        }
        if let Some(x) = max {
            m.insert("maximum".into(), json!(x));
        }
        Json::Object(m)
    };
    match kind {
        ToolKind::Int { min, max } => bounded("integer", min, max),
        ToolKind::Float { min, max } => bounded("number", min, max),
        ToolKind::Bool => json!({"type": "boolean"}),
        ToolKind::Str => json!({"type": "string"}),
        ToolKind::Enum(words) => json!({"type": "string", "enum": words}),
        ToolKind::List(item) => json!({"type": "array", "items": kind_schema(item)}),
        ToolKind::Any => json!({}),
    }
}

fn literal(l: &Literal) -> Json {
    match l {
        Literal::Num(x) if x.fract() == 0.0 && x.abs() < 1e15 => json!(*x as i64),
        Literal::Num(x) => json!(x),
        Literal::Bool(b) => json!(b),
        Literal::Str(s) | Literal::Word(s) => json!(s),
        Literal::List(items) => Json::Array(items.iter().map(literal).collect()),
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
        assert_eq!(p["properties"]["clicks"]["maximum"], json!(3.0));
        assert_eq!(p["properties"]["clicks"]["default"], json!(1));
        assert_eq!(p["properties"]["button"]["enum"], json!(["left", "right"]));
    }
}
