//! The environment constructors the runtime runs — `browser` (real Chromium) and `search_api`
//! (text tools over HTTP) — with what they are made of: the site they may reach, the tool set
//! the agent acts with, and what an observation shows.

use serde::Deserialize;

use super::units::{Dims, Seconds, Tokens};

/// `browser { … }`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Browser {
    pub target: Site,
    pub tools: Toolset,
    pub viewport: Dims,
    pub device_scale: f64,
    pub per_turn: PerTurn,
    pub observe: Vec<Observation>,
    pub concurrency: u32,
    pub timeout: BrowserTimeout,
    pub retries: u32,
    pub slow_mo: Seconds,
    pub settle: Seconds,
    pub blacklist: Blacklist,
    pub blacklist_file: String,
    pub remote: Vec<String>,
    pub conflict_key: String,
    pub step_text: Tokens,
}

/// `browser`'s `timeout`.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BrowserTimeout {
    pub step: Seconds,
    pub task: Seconds,
    pub acquire: Seconds,
}

/// How many of a turn's actions run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PerTurn {
    One,
    Many,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Blacklist {
    Off,
    OnNavigationError,
}

/// `search_api(base_url) { … }`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchApi {
    pub base_url: String,
    pub target: Site,
    pub tools: Toolset,
    pub concurrency: u32,
    pub timeout: SearchTimeout,
    pub step_text: Tokens,
}

/// `search_api`'s `timeout`.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchTimeout {
    pub step: Seconds,
    pub task: Seconds,
}

/// The web an environment may reach.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Site {
    /// The open web, limited to hosts matching `allow`.
    #[serde(rename = "live")]
    Live { allow: Vec<String> },
    /// A self-hosted WebArena.
    #[serde(rename = "webarena")]
    Webarena { sites: WebarenaSites, reset: WebarenaReset },
    /// Some of the sandbox's sites.
    #[serde(rename = "std::sandbox::sandbox_web")]
    SandboxSites { sites: Vec<super::data::SandboxSite>, seed: u64 },
    /// The whole sandbox web.
    #[serde(rename = "std::sandbox::web")]
    SandboxWeb,
    /// The sandbox wiki's search API.
    #[serde(rename = "std::sandbox::search")]
    SandboxSearch,
}

impl Site {
    /// Whether the site is the runtime's own sandbox.
    pub fn is_sandbox(&self) -> bool {
        match self {
            Site::SandboxSites { .. } | Site::SandboxWeb | Site::SandboxSearch => true,
            Site::Live { .. } | Site::Webarena { .. } => false,
        }
    }
}

/// WebArena's sites and their base URLs.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebarenaSites {
    pub shopping: String,
    pub admin: String,
    pub reddit: String,
    pub gitlab: String,
    pub map: String,
    pub wikipedia: String,
    pub homepage: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WebarenaReset {
    None,
    PerTask,
}

/// What one observation shows.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Observation {
    /// The `last` most recent screenshots stay in context.
    #[serde(rename = "screenshot")]
    Screenshot { last: u32 },
    #[serde(rename = "url")]
    Url,
    #[serde(rename = "tabs")]
    Tabs,
    /// Interactive elements with ids, at most `max`.
    #[serde(rename = "elements")]
    Elements { max: u32 },
    #[serde(rename = "feedback")]
    Feedback { detail: FeedbackDetail },
    #[serde(rename = "a11y_tree")]
    A11yTree,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FeedbackDetail {
    Plain,
    DomDiff,
}

/// A tool set: how actions address the page, and its typed tools.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Toolset {
    pub coordinates: Coordinates,
    pub calls_per_turn: CallsPerTurn,
    pub answer_tag: String,
    pub tools: Vec<Tool>,
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
    /// The type as the stdlib writes it (`list(float)`, `enum(up, down)`).
    pub ty: String,
    pub default: Option<Literal>,
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
