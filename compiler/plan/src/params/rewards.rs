//! Rewards as the runtime evaluates them: the plan's expression (`Expr`) over typed signals,
//! each stdlib signal one variant of [`Signal`] with its fields, and where a stage or eval
//! takes its reward from (another reward node, or an expression written in place).

use serde::Deserialize;

use super::envs::Backoff;
use super::or::OrNone;
use super::units::{NodeRef, Pixels, Seconds, Tokens};
use crate::value::{BinOp, Expr};

/// A reward node: its expression and whether it scores steps (`process`) or trajectories.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reward {
    #[serde(deserialize_with = "typed_expr")]
    pub expr: Expr<Signal>,
    pub level: RewardLevel,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewardLevel {
    Outcome,
    Process,
}

/// A reward a stage or eval names: a reward node, or an expression written in place.
#[derive(Clone, Debug, PartialEq)]
pub enum RewardRef {
    Node(NodeRef),
    Inline(Expr<Signal>),
}

impl<'de> Deserialize<'de> for RewardRef {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{EnumAccess, MapAccess};
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RewardRef;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a reward node or a reward expression")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<RewardRef, A::Error> {
                match a.next_entry::<String, String>()? {
                    Some((k, node)) if k == super::view::REF => Ok(RewardRef::Node(NodeRef(node))),
                    _ => Err(serde::de::Error::custom("expected a reward node")),
                }
            }
            fn visit_enum<A: EnumAccess<'de>>(self, a: A) -> Result<RewardRef, A::Error> {
                let t = Tagged::<Signal>::deserialize(
                    serde::de::value::EnumAccessDeserializer::new(a),
                )?;
                Ok(RewardRef::Inline(t.into_expr()))
            }
        }
        d.deserialize_any(V)
    }
}

fn typed_expr<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Expr<Signal>, D::Error> {
    Tagged::<Signal>::deserialize(d).map(Tagged::into_expr)
}

/// The expression as the typed decoder sees it: each node an enum variant named by its `op`.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum Tagged<S> {
    Const { value: f64 },
    Bool { value: bool },
    Signal { obj: S },
    Reward { node: String },
    Unary { neg: bool, arg: Box<Tagged<S>> },
    Binary { bin: BinOp, lhs: Box<Tagged<S>>, rhs: Box<Tagged<S>> },
    If { cond: Box<Tagged<S>>, then: Box<Tagged<S>>, otherwise: Box<Tagged<S>> },
}

impl<S> Tagged<S> {
    fn into_expr(self) -> Expr<S> {
        let b = |t: Box<Tagged<S>>| Box::new(t.into_expr());
        match self {
            Tagged::Const { value } => Expr::Const { value },
            Tagged::Bool { value } => Expr::Bool { value },
            Tagged::Signal { obj } => Expr::Signal { obj },
            Tagged::Reward { node } => Expr::Reward { node },
            Tagged::Unary { neg, arg } => Expr::Unary { neg, arg: b(arg) },
            Tagged::Binary { bin, lhs, rhs } => Expr::Binary { bin, lhs: b(lhs), rhs: b(rhs) },
            Tagged::If { cond, then, otherwise } => {
                Expr::If { cond: b(cond), then: b(then), otherwise: b(otherwise) }
            }
        }
    }
}

/// A judge's model: a model id the endpoint serves, or a model declaration.
#[derive(Clone, Debug, PartialEq)]
pub enum JudgeModel {
    Name(String),
    Model(NodeRef),
}

impl<'de> Deserialize<'de> for JudgeModel {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::MapAccess;
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = JudgeModel;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a model id or a model")
            }
            fn visit_str<E>(self, v: &str) -> Result<JudgeModel, E> {
                Ok(JudgeModel::Name(v.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<JudgeModel, A::Error> {
                match a.next_entry::<String, String>()? {
                    Some((k, node)) if k == super::view::REF => {
                        Ok(JudgeModel::Model(NodeRef(node)))
                    }
                    _ => Err(serde::de::Error::custom("expected a model")),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// A stdlib signal (`std::rewards::…`) with its fields.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Signal {
    #[serde(rename = "std::rewards::format_ok")]
    FormatOk { mode: FormatMode },
    #[serde(rename = "std::rewards::tags_ok")]
    TagsOk(TagsOk),
    #[serde(rename = "std::rewards::ended")]
    Ended { reason: EndedReason },
    #[serde(rename = "std::rewards::judge")]
    Judge(Judge),
    #[serde(rename = "std::rewards::webjudge")]
    Webjudge(Webjudge),
    #[serde(rename = "std::rewards::answer_match")]
    AnswerMatch {
        mode: AnswerMode,
        #[serde(deserialize_with = "super::opt")]
        judge_model: Option<JudgeModel>,
    },
    #[serde(rename = "std::rewards::qa_match")]
    QaMatch(QaMatch),
    #[serde(rename = "std::rewards::called")]
    Called { tool: String },
    #[serde(rename = "std::rewards::calls")]
    Calls { tool: String },
    #[serde(rename = "std::rewards::task_check")]
    TaskCheck,
    #[serde(rename = "std::rewards::env_reward")]
    EnvReward,
    #[serde(rename = "std::rewards::url_match")]
    UrlMatch { pattern: String },
    #[serde(rename = "std::rewards::bbox_hit")]
    BboxHit,
    #[serde(rename = "std::rewards::action_match")]
    ActionMatch { name_weight: f64, coord_decay: f64 },
    #[serde(rename = "std::rewards::url_changed")]
    UrlChanged,
    #[serde(rename = "std::rewards::dom_hit")]
    DomHit,
    #[serde(rename = "std::rewards::screen_changed")]
    ScreenChanged { threshold: f64 },
    #[serde(rename = "std::rewards::action_failed")]
    ActionFailed,
    #[serde(rename = "std::rewards::eval_types")]
    EvalTypes(EvalTypes),
    #[serde(rename = "std::rewards::screen_unchanged")]
    ScreenUnchanged,
    #[serde(rename = "std::rewards::vlm_progress")]
    VlmProgress(VlmProgress),
    #[serde(rename = "std::rewards::endpoint")]
    Endpoint(Endpoint),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FormatMode {
    BrowserEnv,
    StrictTags,
    ReactTags,
}

/// `std::rewards::tags_ok(tags) { order, outside, required }`: a format rule of the recipe's
/// own, over each turn's tag blocks.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TagsOk {
    /// The block tags, by name (`think`), in the order `order = listed` holds turns to.
    pub tags: Vec<String>,
    pub order: TagOrder,
    pub outside: Outside,
    /// The tags every turn writes at least once.
    pub required: Vec<String>,
}

/// Whether a turn's blocks must come in the order `tags` lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TagOrder {
    Listed,
    Any,
}

/// What may stand outside a turn's blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outside {
    Text,
    Whitespace,
}

/// How an episode ended, as rewards name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndedReason {
    Completed,
    FormatError,
    MaxSteps,
    Truncated,
    EnvError,
    Aborted,
    Timeout,
}

impl EndedReason {
    pub fn word(self) -> &'static str {
        match self {
            EndedReason::Completed => "completed",
            EndedReason::FormatError => "format_error",
            EndedReason::MaxSteps => "max_steps",
            EndedReason::Truncated => "truncated",
            EndedReason::EnvError => "env_error",
            EndedReason::Aborted => "aborted",
            EndedReason::Timeout => "timeout",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerMode {
    Exact,
    Normalized,
    F1,
    Judge,
}

/// `std::rewards::qa_match(metric) { … }`: the answer extracted, normalised and compared with
/// each of the task's references, the maximum taken.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QaMatch {
    pub metric: QaMetric,
    pub extract: QaExtract,
    /// The tag `extract = tag` reads (`answer`: the last `<answer>…</answer>`).
    pub tag: String,
    pub normalize: QaNormalize,
    /// What joins several references in one string of the record (empty: none does).
    pub separator: String,
    /// What separates the items of an answer and a reference under `metric = set_f1`.
    pub items: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QaMetric {
    Exact,
    Contains,
    TokenF1,
    SetF1,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QaExtract {
    Answer,
    Boxed,
    Tag,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QaNormalize {
    Squad,
    None,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Binary,
    Score,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JudgePrompt {
    Webvoyager,
    ActionHistory,
    Webjudge,
    Agenttrek,
    Deepshop,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnTimeout {
    Exclude,
    Zero,
}

/// `std::rewards::judge(model) { … }`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Judge {
    pub model: JudgeModel,
    pub screenshots: u32,
    pub verdict: Verdict,
    pub prompt: JudgePrompt,
    pub base_url: String,
    pub api_key_env: String,
    pub timeout: Seconds,
    pub retries: u32,
    pub backoff: Backoff,
    pub concurrency: u32,
    pub seed: u64,
    pub on_timeout: OnTimeout,
    /// Tokens one call reads and writes, for the estimate's money (`None`: not declared).
    #[serde(deserialize_with = "super::opt")]
    pub tokens_per_call: Option<CallTokens>,
}

/// The tokens of one judge call, as the estimate prices them.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallTokens {
    pub input: Tokens,
    pub output: Tokens,
}

/// WebJudge's aggregation weights.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebjudgeWeights {
    pub completion: f64,
    pub action: f64,
    pub efficiency: f64,
}

/// `std::rewards::webjudge(model) { … }`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Webjudge {
    pub model: JudgeModel,
    pub screenshots: u32,
    pub history: u32,
    pub max_side: Pixels,
    pub weights: WebjudgeWeights,
    pub base_url: String,
    pub api_key_env: String,
    pub timeout: Seconds,
    pub retries: u32,
    pub backoff: Backoff,
    pub concurrency: u32,
    pub seed: u64,
    #[serde(deserialize_with = "super::opt")]
    pub tokens_per_call: Option<CallTokens>,
}

/// `std::rewards::eval_types { … }`: WebArena's per-task evaluators. A task names its
/// evaluators; `string_match`, `url_match` and `program_html` are its own programmatic checks,
/// the others the rewards given here (`none`: a task naming it scores 0).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalTypes {
    pub page_image_query: OrNone<Box<RewardRef>>,
    pub webjudge: OrNone<Box<RewardRef>>,
    pub bbox_judge: OrNone<Box<RewardRef>>,
    pub action_judge: OrNone<Box<RewardRef>>,
    /// The score that replaces a 0 (OpAgent's training harness: `0.3 * webjudge`).
    pub fallback: OrNone<Box<RewardRef>>,
    /// Whose 0 `fallback` replaces: the product's, or each programmatic check's.
    pub fallback_per: FallbackPer,
}

/// Whose 0 an `eval_types` fallback replaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FallbackPer {
    /// The product of the task's evaluators, when it is 0.
    Product,
    /// Each programmatic check (`string_match`, `url_match`, `program_html`) that scores 0 or
    /// finds no answer, the fallback evaluated anew for each; the product multiplies them.
    Check,
}

/// `std::rewards::vlm_progress(model) { … }`: a VLM asked whether the step made progress on
/// the task, from the screenshots before and after it ("Final Answer: Yes").
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VlmProgress {
    pub model: JudgeModel,
    pub max_side: Pixels,
    pub base_url: String,
    pub api_key_env: String,
    pub timeout: Seconds,
    pub retries: u32,
    pub backoff: Backoff,
    pub concurrency: u32,
    pub seed: u64,
    #[serde(deserialize_with = "super::opt")]
    pub tokens_per_call: Option<CallTokens>,
}

/// `std::rewards::endpoint(url) { … }`: a reward served over HTTP, one POST of the episode
/// (docs/reward-endpoint.md) answered with a score and the declared components.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Endpoint {
    pub url: String,
    /// The named components the answer carries beside its score, each a logged metric.
    pub components: Vec<String>,
    pub api_key_env: String,
    pub timeout: Seconds,
    pub retries: u32,
    pub backoff: Backoff,
    pub concurrency: u32,
    /// The most characters of each turn's observation the request carries.
    pub observation_chars: u32,
}

impl Signal {
    /// The signal's short name (`judge`, `format_ok`).
    pub fn name(&self) -> &'static str {
        match self {
            Signal::FormatOk { .. } => "format_ok",
            Signal::TagsOk(_) => "tags_ok",
            Signal::Ended { .. } => "ended",
            Signal::Judge(_) => "judge",
            Signal::Webjudge(_) => "webjudge",
            Signal::AnswerMatch { .. } => "answer_match",
            Signal::QaMatch(_) => "qa_match",
            Signal::Called { .. } => "called",
            Signal::Calls { .. } => "calls",
            Signal::TaskCheck => "task_check",
            Signal::EnvReward => "env_reward",
            Signal::UrlMatch { .. } => "url_match",
            Signal::BboxHit => "bbox_hit",
            Signal::ActionMatch { .. } => "action_match",
            Signal::UrlChanged => "url_changed",
            Signal::DomHit => "dom_hit",
            Signal::ScreenChanged { .. } => "screen_changed",
            Signal::ActionFailed => "action_failed",
            Signal::EvalTypes(_) => "eval_types",
            Signal::ScreenUnchanged => "screen_unchanged",
            Signal::VlmProgress(_) => "vlm_progress",
            Signal::Endpoint(_) => "endpoint",
        }
    }
}
