//! The agent constructors the runtime runs: `react` (a policy thinking and calling tools in a
//! loop) and `graph` (modules joined by guarded edges), with the modules a graph is made of.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::envs::{OlderPages, Toolset};
use super::or::{OrAll, OrNone, OrOff, OrUnlimited};
use super::units::{NodeRef, Seconds, Tokens, Turns, Word};

/// How much of the episode so far a ReAct agent's prompt carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum History {
    FullText,
    HideThinking,
    ActionOnly,
    None,
}

/// `react(policy, env) { … }`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct React {
    pub policy: NodeRef,
    pub env: NodeRef,
    pub history: History,
    pub max_parse_failures: u32,
    pub max_turns: Turns,
    pub max_response: Tokens,
    pub prompt: String,
    pub step_response: Tokens,
    pub pages: OrAll<u32>,
    pub older_pages: OlderPages,
    /// The past actions an `action_only` prompt keeps: the last K, or all.
    pub actions: OrAll<u32>,
    pub overflow: Overflow,
    pub task_text: Tokens,
    pub trajectory_tokens: OrUnlimited<Tokens>,
    /// Characters of each tool response the conversation keeps.
    pub tool_response_chars: OrUnlimited<u64>,
    /// The time one policy call may take (`off`: no limit of its own).
    pub call_timeout: OrOff<Seconds>,
    /// How the policy writes its calls.
    pub calls: Calls,
}

/// How a ReAct policy writes its tool calls (`calls`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Calls {
    /// A reply per turn, its calls Hermes `<tool_call>` JSON (the tiny policy: terse lines).
    Hermes,
    /// `tags() { … }`: Search-R1's tags, results inline in one generated sequence.
    Tags(Tags),
}

/// `tags() { result, tools }`: tag-style calls.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tags {
    /// The tag the env's response is wrapped in (`information`).
    pub result: String,
    /// A tool's tag where it is not the tool's name.
    pub tools: BTreeMap<String, String>,
}

impl Tags {
    /// The tag `tool` is called by: its own, or its name.
    pub fn tag_of<'a>(&'a self, tool: &'a str) -> &'a str {
        self.tools.get(tool).map_or(tool, String::as_str)
    }
}

impl Calls {
    /// The tag-style settings, when the calls are tags.
    pub fn tags(&self) -> Option<&Tags> {
        match self {
            Calls::Hermes => None,
            Calls::Tags(t) => Some(t),
        }
    }
}

/// What a turn whose prompt does not fit the model's context does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Overflow {
    /// The checker's estimate must fit (E0404); the runtime cuts from the left what still
    /// does not.
    Check,
    TruncateLeft,
    EndEpisode,
}

/// Whether a graph's trainable roles share one copy of the weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Weights {
    Shared,
    PerRole,
}

/// `graph { … }`: the agent's fields, its modules by name and its edges in source order.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Graph {
    pub env: NodeRef,
    pub weights: Weights,
    pub max_turns: Turns,
    pub max_parse_failures: u32,
    pub step_response: Tokens,
    pub modules: BTreeMap<String, Module>,
    pub graph: Vec<GraphEdge>,
}

/// `from -> to [when …]`, taken at most `limit` times per episode when limited.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphEdge {
    pub from: String,
    pub to: String,
    pub when: Vec<String>,
    pub limit: Option<u32>,
}

/// A module of a graph.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Module {
    /// A frozen model, called over HTTP or run locally.
    #[serde(rename = "llm")]
    Llm(Llm),
    /// A module backed by a trainable policy.
    #[serde(rename = "policy_of")]
    PolicyOf(PolicyOf),
}

/// What a module's prompt shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModuleInput {
    Screenshot,
    History,
    Notes,
    Instruction,
    Feedback,
    Url,
}

/// `llm(model) { … }`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Llm {
    pub model: NodeRef,
    pub prompt: String,
    pub emits: Vec<Word>,
    pub inputs: Vec<ModuleInput>,
    pub max_response: Tokens,
    /// Strings that end the module's reply (empty: the model's end of turn).
    pub stop: Vec<String>,
}

/// `policy_of(model) { … }`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyOf {
    pub model: NodeRef,
    pub prompt: String,
    /// `none`: the module only writes text for the next module.
    pub tools: OrNone<Toolset>,
    pub emits: Vec<Word>,
    pub inputs: Vec<ModuleInput>,
    pub trainable: bool,
    pub role: String,
    pub max_response: Tokens,
    /// Strings that end the module's reply (empty: the model's end of turn).
    pub stop: Vec<String>,
}

impl Module {
    pub fn model(&self) -> &NodeRef {
        match self {
            Module::Llm(m) => &m.model,
            Module::PolicyOf(m) => &m.model,
        }
    }

    /// The strings that end the module's reply.
    pub fn stop(&self) -> &[String] {
        match self {
            Module::Llm(m) => &m.stop,
            Module::PolicyOf(m) => &m.stop,
        }
    }
}
