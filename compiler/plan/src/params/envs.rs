//! The environment constructors the runtime runs — `browser` (real Chromium) and `search_api`
//! (text tools over HTTP) — with what they are made of: the site they may reach, the tool set
//! the agent acts with, and what an observation shows.

use serde::Deserialize;

pub use super::tools::{
    CallsPerTurn, Coordinates, Literal, McpHttp, McpLimits, McpOnError, McpServer, McpStdio, Tool,
    ToolKind, ToolParam, ToolTy, Toolset,
};
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
    pub step_retries: u32,
    pub step_backoff: Backoff,
    pub slow_mo: Seconds,
    pub settle: Seconds,
    pub blacklist: Blacklist,
    pub blacklist_file: String,
    pub remote: Vec<String>,
    pub conflict_key: String,
    pub step_text: Tokens,
}

/// How long to wait before a retry: `first`, then `factor` times longer each time.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Backoff {
    pub first: Seconds,
    pub factor: f64,
}

impl Backoff {
    /// The wait before retry `n` (0-based).
    pub fn before(&self, n: u32) -> std::time::Duration {
        let f = self.factor.max(1.0).powi(i32::try_from(n).unwrap_or(i32::MAX));
        Seconds(self.first.0 * f).duration()
    }
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

/// `env_server(base_url) { … }`: an environment behind an environment server's HTTP API.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvServer {
    pub base_url: String,
    pub endpoints: Endpoints,
    pub tools: super::or::OrNone<Toolset>,
    pub api_key_env: String,
    pub concurrency: u32,
    pub timeout: SearchTimeout,
    pub step_text: Tokens,
}

/// An environment server's endpoints, relative to its base URL (`observe` empty: the step's
/// response carries the observation).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Endpoints {
    pub create: String,
    pub reset: String,
    pub step: String,
    pub observe: String,
    pub close: String,
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
    /// A local corpus behind the search API protocol (BM25 search, document reader).
    #[serde(rename = "retriever")]
    Retriever { corpus: String, top_k: u32, max_chars: u32 },
    /// A search engine simulated by a language model (ZeroSearch).
    #[serde(rename = "simulated_search")]
    Simulated(SimulatedSearch),
}

/// `simulated_search(engine) { … }`: ZeroSearch's simulated search engine.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimulatedSearch {
    /// The `api(…)` model that writes the documents.
    pub engine: super::units::NodeRef,
    pub template: SimTemplate,
    pub top_k: u32,
    pub noise: Noise,
    pub noise_base: f64,
    pub max_tokens: Tokens,
}

/// Which of ZeroSearch's two prompts asks the engine (`search_mode` `simulate_sft` or
/// `simulate_prompt`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SimTemplate {
    Sft,
    Prompt,
}

/// The probability of noisy documents at the first and the last iteration of a stage.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Noise {
    pub start: f64,
    pub end: f64,
}

impl SimulatedSearch {
    /// The probability of noisy documents at the stage's iteration `i` of `n` (1-based;
    /// `None`: outside training): ZeroSearch's `dynamic_threshold`
    /// (llm_agent/generation.py), `end` from the last iteration on.
    pub fn noise_at(&self, at: Option<(u64, u64)>) -> f64 {
        let Noise { start, end } = self.noise;
        match at {
            Some((i, n)) if i < n && n > 0 => {
                let b = self.noise_base;
                let progress = i as f64 / n as f64;
                start + (b.powf(progress) - 1.0) / (b - 1.0) * (end - start)
            }
            Some(_) | None => end,
        }
    }
}

impl Site {
    /// Whether the site is the runtime's own sandbox.
    pub fn is_sandbox(&self) -> bool {
        match self {
            Site::SandboxSites { .. } | Site::SandboxWeb | Site::SandboxSearch => true,
            Site::Live { .. }
            | Site::Webarena { .. }
            | Site::Retriever { .. }
            | Site::Simulated(_) => false,
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

/// What a page that left a ReAct agent's window (`older_pages`), or a screenshot that left its
/// env's (`screenshot(older)`), leaves in the prompt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OlderPages {
    Drop,
    Placeholder,
}

/// What one observation shows.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Observation {
    /// The `last` most recent screenshots stay in context; what an older one leaves.
    #[serde(rename = "screenshot")]
    Screenshot { last: u32, older: OlderPages },
    #[serde(rename = "url")]
    Url,
    #[serde(rename = "tabs")]
    Tabs,
    /// Interactive elements with ids, at most `max`.
    #[serde(rename = "elements")]
    Elements { max: u32 },
    /// The page as simplified HTML (element tags with ids, text as paragraphs), at most `max`
    /// elements.
    #[serde(rename = "html")]
    Html { max: u32 },
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
