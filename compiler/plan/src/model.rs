//! The execution plan: nodes (stages with fully resolved parameters) and edges (the data one
//! node hands to another). This is what `wrlc plan --format json` prints and the runtime reads;
//! `docs/plan-format.md` documents it field by field.

use std::collections::BTreeMap;

use petgraph::graph::{DiGraph, NodeIndex};
use serde::{Deserialize, Serialize};

use crate::value::PVal;

/// The version of the JSON format. Bump it on any change a reader could notice.
pub const PLAN_VERSION: u32 = 1;

/// A lowered recipe.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub version: u32,
    /// The recipe file as the user named it (relative, `/`-separated).
    pub recipe: String,
    /// The profile applied, if any.
    pub profile: Option<String>,
    /// The variant applied, if any (`variant NAME { … }`: a study runs each beside the recipe).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// Every node, in a topological order (producers before consumers; ties by id).
    pub nodes: Vec<Node>,
    /// Every edge, sorted by (to, port, from).
    pub edges: Vec<Edge>,
    /// The recipe's claims, by name (absent when it states none): what a run decides from its
    /// evaluations. They run nothing, so they are not part of the recipe's identity.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<crate::params::claims::Claim>,
}

/// What a node does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// Loads (or connects to) a model: its weights are the starting point of training, or it
    /// serves a frozen module or judge.
    LoadModel,
    /// Opens a dataset (file, hub dataset, sandbox generator, mixture).
    LoadDataset,
    /// An environment configuration (browser, search API) the agents act in.
    Env,
    /// An agent configuration (ReAct loop or module graph) bound to models and an env.
    Agent,
    /// A reward expression.
    Reward,
    /// Supervised fine-tuning.
    Sft,
    /// One phase of an RL stage: rollouts, rewards and updates, repeated `iters` times.
    RlPhase,
    /// The final checkpoint of a training stage, which later stages and evals start from.
    Checkpoint,
    /// A held-out evaluation.
    Eval,
}

impl NodeKind {
    pub fn word(self) -> &'static str {
        match self {
            NodeKind::LoadModel => "load_model",
            NodeKind::LoadDataset => "load_dataset",
            NodeKind::Env => "env",
            NodeKind::Agent => "agent",
            NodeKind::Reward => "reward",
            NodeKind::Sft => "sft",
            NodeKind::RlPhase => "rl_phase",
            NodeKind::Checkpoint => "checkpoint",
            NodeKind::Eval => "eval",
        }
    }

    /// The kind of data this node hands to its consumers.
    pub fn output(self) -> DataKind {
        match self {
            NodeKind::LoadModel => DataKind::Model,
            NodeKind::LoadDataset => DataKind::Dataset,
            NodeKind::Env => DataKind::Env,
            NodeKind::Agent => DataKind::Agent,
            NodeKind::Reward => DataKind::Reward,
            NodeKind::Sft | NodeKind::RlPhase | NodeKind::Checkpoint => DataKind::Checkpoint,
            NodeKind::Eval => DataKind::Metrics,
        }
    }

    /// Whether the node trains (and so counts in the training totals of an estimate).
    pub fn trains(self) -> bool {
        matches!(self, NodeKind::Sft | NodeKind::RlPhase)
    }
}

/// The data an edge carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DataKind {
    /// Untrained weights (or a frozen model's endpoint).
    Model,
    /// Trained weights (and, between phases, the optimiser state).
    Checkpoint,
    Dataset,
    Env,
    Agent,
    Reward,
    Metrics,
}

impl DataKind {
    pub fn word(self) -> &'static str {
        match self {
            DataKind::Model => "model",
            DataKind::Checkpoint => "checkpoint",
            DataKind::Dataset => "dataset",
            DataKind::Env => "env",
            DataKind::Agent => "agent",
            DataKind::Reward => "reward",
            DataKind::Metrics => "metrics",
        }
    }
}

/// One node with fully resolved parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Node {
    /// Stable id from declaration names: `model:policy`, `stage:online/phase:1`.
    pub id: String,
    pub kind: NodeKind,
    /// The declaration it lowers.
    pub decl: String,
    /// The stdlib constructor that built it (`hf`, `grpo`, `std::sandbox::tasks`).
    pub ctor: String,
    /// When the declaration is another declaration by name (`model policy =
    /// std::models::tiny`), that declaration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias_of: Option<String>,
    /// The declaration's doc comment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doc: Option<String>,
    /// Every parameter, defaults filled, units canonical; inputs appear as `ref` values.
    pub params: BTreeMap<String, PVal>,
}

/// Data handed from one node to another.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Edge {
    pub from: String,
    pub to: String,
    /// Where the consumer takes it: a parameter name or path (`init`, `modules.grounder.model`).
    pub port: String,
    pub data: DataKind,
}

impl Plan {
    pub fn node(&self, id: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// The edges into a node, by port.
    pub fn inputs<'a>(&'a self, id: &'a str) -> impl Iterator<Item = &'a Edge> + 'a {
        self.edges.iter().filter(move |e| e.to == id)
    }

    /// The plan as a petgraph graph (node weights are the nodes, edge weights the edges).
    pub fn graph(&self) -> (DiGraph<&Node, &Edge>, BTreeMap<&str, NodeIndex>) {
        let mut g = DiGraph::new();
        let mut ix = BTreeMap::new();
        for n in &self.nodes {
            ix.insert(n.id.as_str(), g.add_node(n));
        }
        for e in &self.edges {
            if let (Some(a), Some(b)) = (ix.get(e.from.as_str()), ix.get(e.to.as_str())) {
                g.add_edge(*a, *b, e);
            }
        }
        (g, ix)
    }
}

impl Node {
    pub fn param(&self, name: &str) -> Option<&PVal> {
        self.params.get(name)
    }

    pub fn num(&self, name: &str) -> Option<f64> {
        self.params.get(name).and_then(PVal::num)
    }
}
