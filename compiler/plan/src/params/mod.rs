//! Typed parameters: the one contract between the plan and whatever runs it. Every stdlib
//! constructor the runtime runs has one Rust type here, decoded once from a node's `params`
//! (serde over the plan's values, unknown fields rejected) with an enum for every stdlib word.
//! Defaults live only in the stdlib: the checker has filled every field, so a missing one is a
//! format error, never a value made up in Rust. A new constructor reaches the runtime by one
//! variant in [`decode`]'s table and its type; the contract test holds each type to the
//! stdlib's signature, field by field and word by word.

mod access;
mod agents;
pub(crate) mod claims;
mod data;
mod de;
mod envs;
mod error;
mod evals;
mod models;
mod or;
pub mod partial;
mod rewards;
mod rl;
mod schemas;
pub mod shape;
mod stages;
mod tools;
mod units;
mod view;

pub use agents::*;
pub use claims::*;
pub use data::*;
pub use envs::*;
pub use error::{DecodeError, Problem};
pub use evals::*;
pub use models::*;
pub use or::*;
pub use rewards::*;
pub use rl::*;
pub use stages::*;
pub use units::*;

use crate::model::{Node, NodeKind, Plan};
use crate::value::PObj;

/// An `Option` field that must still be in the plan (`unknown` there means `None`): serde
/// would otherwise read a missing `Option` field as `None`, a default made up in Rust.
pub(crate) fn opt<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    <Option<T> as serde::Deserialize>::deserialize(d)
}

macro_rules! ctors {
    ($(
        $(#[$doc:meta])*
        $enum:ident for $kind:ident { $($ctor:literal => $variant:ident($ty:ty)),* $(,)? }
    )*) => {
        $(
            $(#[$doc])*
            // Decoded once per node: variant sizes do not matter.
            #[allow(clippy::large_enum_variant)]
            #[derive(Clone, Debug, PartialEq)]
            pub enum $enum {
                $($variant($ty),)*
            }

            impl $enum {
                fn decode(node: &Node) -> Result<$enum, DecodeError> {
                    match node.ctor.as_str() {
                        $($ctor => de::from_params::<$ty>(&node.params).map($enum::$variant),)*
                        other => Err(DecodeError::new(Problem::UnknownCtor {
                            kind: NodeKind::$kind.word().replace('_', " "),
                            ctor: other.to_string(),
                        })),
                    }
                }

                /// Every constructor of this kind and the shape of its type.
                pub fn shapes() -> Vec<(&'static str, shape::Shape)> {
                    vec![$(($ctor, shape::of::<$ty>()),)*]
                }
            }
        )*

        /// Every constructor the runtime runs, by node kind, with its type's shape (for the
        /// contract test and for tools that list what a plan field means); an RL phase's is
        /// the union of its sections.
        pub fn all_shapes() -> Vec<(NodeKind, &'static str, shape::Shape)> {
            let mut out = Vec::new();
            for (ctor, s) in RlPhase::shapes() {
                out.push((NodeKind::RlPhase, ctor, s));
            }
            $(
                for (ctor, s) in $enum::shapes() {
                    out.push((NodeKind::$kind, ctor, s));
                }
            )*
            out
        }
    };
}

ctors! {
    /// A `load_model` node.
    Model for LoadModel {
        "hf" => Hf(Hf),
        "tiny_transformer" => Tiny(TinyTransformer),
        "api" => Api(Api),
    }
    /// A `load_dataset` node.
    Dataset for LoadDataset {
        "jsonl" => Jsonl(File),
        "parquet" => Parquet(File),
        "hf_dataset" => HfDataset(HfDataset),
        "mixture" => Mixture(Mixture),
        "std::sandbox::tasks" => SandboxTasks(SandboxTasks),
        "std::sandbox::demos" => SandboxDemos(SandboxDemos),
        "std::sandbox::qa" => SandboxQa(SandboxQa),
        "env_tasks" => EnvTasks(EnvTasks),
    }
    /// An `env` node.
    Env for Env {
        "browser" => Browser(Browser),
        "search_api" => SearchApi(SearchApi),
        "env_server" => EnvServer(EnvServer),
    }
    /// An `agent` node.
    Agent for Agent {
        "react" => React(React),
        "graph" => Graph(Graph),
    }
    /// A `reward` node.
    RewardNode for Reward {
        "reward" => Reward(Reward),
    }
    /// An `sft` node.
    SftNode for Sft {
        "sft" => Sft(Sft),
    }
    /// A `checkpoint` node.
    CheckpointNode for Checkpoint {
        "checkpoint" => Checkpoint(Checkpoint),
    }
    /// An `eval` node.
    EvalNode for Eval {
        "evaluate" => Evaluate(Evaluate),
    }
}

/// A node's parameters, decoded.
// A plan has tens of nodes, decoded once: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum Params {
    Model(Model),
    Dataset(Dataset),
    Env(Env),
    Agent(Agent),
    Reward(Reward),
    Sft(Sft),
    RlPhase(RlPhase),
    Checkpoint(Checkpoint),
    Eval(Evaluate),
}

/// Decodes a node's parameters into its constructor's type.
pub fn decode(node: &Node) -> Result<Params, DecodeError> {
    Ok(match node.kind {
        NodeKind::LoadModel => Params::Model(Model::decode(node)?),
        NodeKind::LoadDataset => Params::Dataset(Dataset::decode(node)?),
        NodeKind::Env => Params::Env(Env::decode(node)?),
        NodeKind::Agent => Params::Agent(Agent::decode(node)?),
        NodeKind::Reward => match RewardNode::decode(node)? {
            RewardNode::Reward(r) => Params::Reward(r),
        },
        NodeKind::Sft => match SftNode::decode(node)? {
            SftNode::Sft(s) => Params::Sft(s),
        },
        NodeKind::RlPhase => Params::RlPhase(RlPhase::decode(node)?),
        NodeKind::Checkpoint => match CheckpointNode::decode(node)? {
            CheckpointNode::Checkpoint(c) => Params::Checkpoint(c),
        },
        NodeKind::Eval => match EvalNode::decode(node)? {
            EvalNode::Evaluate(e) => Params::Eval(e),
        },
    })
}

/// The shape of the type a node's constructor decodes into (`None` for a constructor this
/// build does not know).
pub fn shape_of(kind: NodeKind, ctor: &str) -> Option<shape::Shape> {
    all_shapes().into_iter().find(|(k, c, _)| *k == kind && *c == ctor).map(|(_, _, s)| s)
}

/// A signal of a reward expression, decoded.
pub fn decode_signal(obj: &PObj) -> Result<Signal, DecodeError> {
    de::from_obj(obj)
}

/// A plan with every node decoded: the nodes in the plan's order, each with its parameters.
#[derive(Clone, Debug)]
pub struct TypedPlan<'p> {
    pub plan: &'p Plan,
    pub nodes: Vec<(&'p Node, Params)>,
}

impl<'p> TypedPlan<'p> {
    /// Decodes every node; on failure, every node's first problem.
    pub fn decode(plan: &'p Plan) -> Result<TypedPlan<'p>, Vec<(&'p Node, DecodeError)>> {
        let mut nodes = Vec::new();
        let mut errs = Vec::new();
        for n in &plan.nodes {
            match decode(n) {
                Ok(p) => nodes.push((n, p)),
                Err(e) => errs.push((n, e)),
            }
        }
        if errs.is_empty() { Ok(TypedPlan { plan, nodes }) } else { Err(errs) }
    }

    /// The decoded parameters of node `id`.
    pub fn get(&self, id: &str) -> Option<&Params> {
        self.nodes.iter().find(|(n, _)| n.id == id).map(|(_, p)| p)
    }

    /// The node `id` and its parameters.
    pub fn node(&self, id: &str) -> Option<(&'p Node, &Params)> {
        self.nodes.iter().find(|(n, _)| n.id == id).map(|(n, p)| (*n, p))
    }
}
