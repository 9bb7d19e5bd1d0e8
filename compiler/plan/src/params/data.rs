//! The dataset constructors the runtime reads: files (`jsonl`, `parquet`), Hugging Face
//! datasets, mixtures, the sandbox's generators (`std::sandbox::tasks`, `demos`, `qa`), and
//! task slots an environment server draws itself (`env_tasks`).

use std::collections::BTreeMap;

use serde::Deserialize;

use super::units::NodeRef;

/// What the records of a dataset are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    Trajectories,
    Tasks,
    Qa,
    /// Grounding pairs: a screenshot, an instruction and the point it means (a grounder's SFT
    /// data).
    Grounding,
    /// Chat conversations (`messages` with tool calls, and the `tools` they may call): SFT data
    /// as TRL and LLaMA-Factory read it.
    Chat,
}

impl RecordKind {
    pub fn word(self) -> &'static str {
        match self {
            RecordKind::Trajectories => "trajectories",
            RecordKind::Tasks => "tasks",
            RecordKind::Qa => "qa",
            RecordKind::Grounding => "grounding",
            RecordKind::Chat => "chat",
        }
    }

    /// The fields of a row of this kind: what a `columns` mapping may name (the checker's list,
    /// which the language defines; `wrl-exec` holds its record types to it).
    pub fn fields(self) -> &'static [&'static str] {
        wrl_check::record_fields(self.word()).unwrap_or_default()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    Train,
    Test,
    All,
}

/// `jsonl(path) { … }` and `parquet(path) { … }`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct File {
    pub path: String,
    pub kind: RecordKind,
    /// Record field → the column it is read from (empty: every field by its own name).
    pub columns: BTreeMap<String, String>,
    #[serde(deserialize_with = "super::opt")]
    pub count: Option<u64>,
    pub split: Split,
}

/// `hf_dataset(id) { … }`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HfDataset {
    pub id: String,
    pub file: String,
    pub kind: RecordKind,
    /// Record field → the column it is read from (empty: every field by its own name).
    pub columns: BTreeMap<String, String>,
    #[serde(deserialize_with = "super::opt")]
    pub count: Option<u64>,
    pub split: Split,
}

/// `mixture(parts) { … }`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mixture {
    pub parts: Vec<NodeRef>,
    pub weights: MixtureWeights,
    pub kind: RecordKind,
}

/// Fixed weights (empty: each part in proportion to its size), or a weighting rule.
#[derive(Clone, Debug, PartialEq)]
pub enum MixtureWeights {
    Fixed(Vec<f64>),
    Rule(WeightRule),
}

/// A weighting rule of `mixture`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum WeightRule {
    /// Weights ∝ 1/E_n with E_n = (1 − βⁿ)/(1 − β) (Cui et al. 2019).
    #[serde(rename = "effective_samples")]
    EffectiveSamples { beta: f64 },
}

impl<'de> Deserialize<'de> for MixtureWeights {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = MixtureWeights;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of weights or `effective_samples(…)`")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(w) = a.next_element::<f64>()? {
                    out.push(w);
                }
                Ok(MixtureWeights::Fixed(out))
            }
            fn visit_enum<A: serde::de::EnumAccess<'de>>(
                self,
                a: A,
            ) -> Result<Self::Value, A::Error> {
                WeightRule::deserialize(serde::de::value::EnumAccessDeserializer::new(a))
                    .map(MixtureWeights::Rule)
            }
        }
        d.deserialize_any(V)
    }
}

/// A site of the sandbox web.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxSite {
    Shop,
    Forum,
    Wiki,
}

impl SandboxSite {
    pub fn word(self) -> &'static str {
        match self {
            SandboxSite::Shop => "shop",
            SandboxSite::Forum => "forum",
            SandboxSite::Wiki => "wiki",
        }
    }
}

/// A split of a sandbox generator (there is no `all`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxSplit {
    Train,
    Test,
}

/// The only record kind a sandbox generator makes, spelled in the stdlib for the checker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TasksKind {
    Tasks,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrajectoriesKind {
    Trajectories,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QaKind {
    Qa,
}

/// `std::sandbox::tasks(count) { … }`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxTasks {
    pub count: u64,
    pub split: SandboxSplit,
    pub sites: Vec<SandboxSite>,
    pub seed: u64,
    pub kind: TasksKind,
}

/// Where the scripted expert records its demonstrations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DemoEnv {
    Browser,
    SearchApi,
}

/// `std::sandbox::demos(count) { … }`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxDemos {
    pub count: u64,
    pub env: DemoEnv,
    pub sites: Vec<SandboxSite>,
    pub seed: u64,
    pub augment: u32,
    pub questions: Vec<QaQuestion>,
    pub kind: TrajectoriesKind,
}

/// A kind of question `std::sandbox::qa` asks (its `questions`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QaQuestion {
    Lookup,
    Compare,
    Chain,
    Difference,
}

/// `std::sandbox::qa(count) { … }`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxQa {
    pub count: u64,
    pub split: SandboxSplit,
    pub seed: u64,
    pub questions: Vec<QaQuestion>,
    pub kind: QaKind,
}

/// `env_tasks(count) { … }`: `count` task slots, ids 0 to count − 1, whose goals an
/// environment server draws itself at reset (AgentGym's WebShop and ALFWorld servers).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvTasks {
    pub count: u64,
    pub kind: TasksKind,
}
