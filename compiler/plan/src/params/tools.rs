//! Tool sets as the runtime and the env service check calls against them: how actions address
//! the page, each tool's parameters with their types (parsed from the stdlib's text) and
//! defaults, and which tools end an episode.

use serde::Deserialize;

/// A tool set: how actions address the page, and its typed tools.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Toolset {
    pub coordinates: Coordinates,
    pub calls_per_turn: CallsPerTurn,
    pub answer_tag: String,
    /// The MCP servers that serve the tools its environment does not run itself.
    pub mcp: Vec<McpServer>,
    pub tools: Vec<Tool>,
}

/// A Model Context Protocol server (`mcp(url)`, `mcp_stdio(command)`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub enum McpServer {
    /// `mcp(url)`: streamable HTTP.
    #[serde(rename = "mcp")]
    Http(McpHttp),
    /// `mcp_stdio(command)`: a child process over its stdin and stdout.
    #[serde(rename = "mcp_stdio")]
    Stdio(McpStdio),
}

/// `mcp(url) { … }`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpHttp {
    pub url: String,
    pub api_key_env: String,
    pub timeout: super::units::Seconds,
    pub result_chars: u64,
    pub max_calls: super::or::OrUnlimited<u32>,
    pub on_error: McpOnError,
}

/// `mcp_stdio(command) { … }`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpStdio {
    pub command: String,
    pub args: Vec<String>,
    pub timeout: super::units::Seconds,
    pub result_chars: u64,
    pub max_calls: super::or::OrUnlimited<u32>,
    pub on_error: McpOnError,
}

/// What a call the tool itself failed does (`on_error`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpOnError {
    /// The policy reads the error as the tool's response.
    Text,
    /// The episode ends as an `env_error`.
    EndEpisode,
}

/// How every call of one server is made and answered, whichever transport it has.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct McpLimits {
    pub timeout: super::units::Seconds,
    pub result_chars: u64,
    /// `None`: unlimited.
    pub max_calls: Option<u32>,
    pub on_error: McpOnError,
}

impl McpServer {
    /// The server as messages name it: its URL, or its command line.
    pub fn name(&self) -> String {
        match self {
            McpServer::Http(h) => h.url.clone(),
            McpServer::Stdio(s) => std::iter::once(s.command.as_str())
                .chain(s.args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
        }
    }

    /// Its calls' limits.
    pub fn limits(&self) -> McpLimits {
        let (timeout, result_chars, max_calls, on_error) = match self {
            McpServer::Http(McpHttp {
                url: _,
                api_key_env: _,
                timeout,
                result_chars,
                max_calls,
                on_error,
            }) => (*timeout, *result_chars, *max_calls, *on_error),
            McpServer::Stdio(McpStdio {
                command: _,
                args: _,
                timeout,
                result_chars,
                max_calls,
                on_error,
            }) => (*timeout, *result_chars, *max_calls, *on_error),
        };
        McpLimits { timeout, result_chars, max_calls: max_calls.value().copied(), on_error }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Coordinates {
    Pixels,
    Norm1000,
    ElementIds,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallsPerTurn {
    One,
    Many,
}

/// One tool of a tool set.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tool {
    pub name: String,
    pub params: Vec<ToolParam>,
    /// Calling it ends the episode.
    pub terminal: bool,
}

/// One parameter of a tool.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolParam {
    pub name: String,
    pub ty: ToolTy,
    /// `None`: the call must give it.
    pub default: Option<Literal>,
}

/// A tool parameter's type: as the stdlib writes it (`list(float)`, `enum(up, down)`), for the
/// schema a model is shown, and parsed, for checking the arguments of a call.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolTy {
    pub text: String,
    pub kind: ToolKind,
}

/// What a tool parameter takes.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolKind {
    Int {
        min: Option<f64>,
        max: Option<f64>,
    },
    Float {
        min: Option<f64>,
        max: Option<f64>,
    },
    Bool,
    Str,
    Enum(Vec<String>),
    List(Box<ToolKind>),
    /// Anything (`any`, or a type a tool schema does not check).
    Any,
}

impl ToolKind {
    /// The kind of a stdlib type.
    pub fn of(ty: &wrl_check::Ty) -> ToolKind {
        use wrl_check::Ty;
        match ty {
            Ty::Int { min, max } => ToolKind::Int { min: *min, max: *max },
            Ty::Float { min, max } => ToolKind::Float { min: *min, max: *max },
            // A quantity in a tool call is its canonical number (`seconds`, a ratio).
            Ty::Qty { min, max, .. } => ToolKind::Float { min: *min, max: *max },
            Ty::Bool => ToolKind::Bool,
            Ty::Str | Ty::Path => ToolKind::Str,
            Ty::Enum(words) => ToolKind::Enum(words.clone()),
            Ty::List(t) => ToolKind::List(Box::new(ToolKind::of(t))),
            Ty::Any
            | Ty::Record(_)
            | Ty::Map(_)
            | Ty::Range(_)
            | Ty::OneOf(_)
            | Ty::Dims
            | Ty::Kind(_)
            | Ty::UnknownLit => ToolKind::Any,
        }
    }
}

impl ToolTy {
    /// Parses a type as the stdlib writes it; `None` for text that is not a type.
    pub fn parse(text: &str) -> Option<ToolTy> {
        let e = wrl_syntax::parse_expr(wrl_diagnostics::FileId::default(), text).ok()?;
        let ty = wrl_check::parse_type(&e).ok()?;
        Some(ToolTy { text: text.to_string(), kind: ToolKind::of(&ty) })
    }
}

impl<'de> Deserialize<'de> for ToolTy {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        ToolTy::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!("`{text}` is not a tool parameter's type"))
        })
    }
}

/// A literal value (a tool parameter's default).
#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    Num(f64),
    Bool(bool),
    Str(String),
    /// An enum word.
    Word(String),
    List(Vec<Literal>),
}

impl<'de> Deserialize<'de> for Literal {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{EnumAccess, SeqAccess, VariantAccess};
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Literal;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a number, boolean, string, word or list")
            }
            fn visit_f64<E>(self, v: f64) -> Result<Literal, E> {
                Ok(Literal::Num(v))
            }
            fn visit_bool<E>(self, v: bool) -> Result<Literal, E> {
                Ok(Literal::Bool(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Literal, E> {
                Ok(Literal::Str(v.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Literal, A::Error> {
                let mut out = Vec::new();
                while let Some(x) = a.next_element()? {
                    out.push(x);
                }
                Ok(Literal::List(out))
            }
            fn visit_enum<A: EnumAccess<'de>>(self, a: A) -> Result<Literal, A::Error> {
                let (word, rest): (String, _) = a.variant()?;
                rest.unit_variant()?;
                Ok(Literal::Word(word))
            }
        }
        d.deserialize_any(V)
    }
}
