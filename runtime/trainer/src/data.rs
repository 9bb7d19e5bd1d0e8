//! SFT data: trajectories of role-tagged segments, rendering to tokens with loss masks,
//! per-turn expansion, JSONL loading and dataset mixtures (fixed or effective-number weights).

use std::path::Path;

use rand::Rng;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use crate::chat::conversation::Conversation;
use crate::chat::template::{ChatRole, Message};
use crate::error::{Result, TrainerError, config_err};
use crate::rng::rng_from_seed;
use crate::tokenizer::{Role, Tokenizer};

pub use crate::example::Example;

/// One segment of a conversation or trajectory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    /// Who produced it.
    pub role: Role,
    /// Its text.
    #[serde(alias = "content")]
    pub text: String,
    /// Override the loss mask: by default only assistant segments are trained on.
    #[serde(default)]
    pub train: Option<bool>,
    /// The tool calls of an assistant segment, after its text (a chat template renders them in
    /// the model's own call format; without one they are not rendered).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<crate::chat::template::CallText>,
}

impl Segment {
    /// A segment with the default mask for its role.
    pub fn new(role: Role, text: impl Into<String>) -> Self {
        Segment { role, text: text.into(), train: None, tool_calls: Vec::new() }
    }
    /// Whether its content tokens carry loss.
    pub fn trained(&self) -> bool {
        self.train.unwrap_or(self.role == Role::Assistant)
    }
}

/// A whole conversation / agent trajectory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trajectory {
    /// Its segments in order.
    #[serde(alias = "messages")]
    pub segments: Vec<Segment>,
    /// The tools the conversation may call (JSON texts of function schemas), shown by a chat
    /// template's `tools`; ignored without one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
}

impl Trajectory {
    /// A trajectory without tools.
    pub fn new(segments: Vec<Segment>) -> Trajectory {
        Trajectory { segments, tools: Vec::new() }
    }
}

/// Render a trajectory into one example (with a chat template, the spans it renders for the
/// assistant, see `chat::spans`): headers and trailers are masked, content is trained
/// when the segment is, and an assistant segment's end-of-turn token is trained with it.
/// Examples longer than `max_len` are cut at the end (their start is kept).
pub fn render(tok: &Tokenizer, traj: &Trajectory, max_len: usize) -> Result<Example> {
    if tok.chat().is_some() {
        // The model's own template: one sequence when it renders every trained turn as written.
        let conv = conversation_of(&traj.segments, &traj.tools);
        let mut out = crate::chat::encode::examples(tok, &conv, max_len)?;
        if out.len() != 1 {
            return Err(TrainerError::Data(format!(
                "the chat template renders this trajectory's trained turns in {} sequences; \
                 train it with `chat::examples`",
                out.len()
            )));
        }
        return Ok(out.remove(0));
    }
    let mut tokens = tok.sequence_start();
    let mut weights = vec![0.0; tokens.len()];
    let (end, trailer) = tok.turn_end()?;
    for seg in &traj.segments {
        let w = if seg.trained() { 1.0 } else { 0.0 };
        let head = tok.turn_header(seg.role)?;
        weights.extend(std::iter::repeat_n(0.0, head.len()));
        tokens.extend(head);
        let body = tok.encode(&seg.text)?;
        weights.extend(std::iter::repeat_n(w, body.len()));
        tokens.extend(body);
        weights.extend(std::iter::repeat_n(w, end.len()));
        tokens.extend(end.iter().copied());
        weights.extend(std::iter::repeat_n(0.0, trailer.len()));
        tokens.extend(trailer.iter().copied());
    }
    tokens.truncate(max_len);
    weights.truncate(max_len);
    if let Some(w) = weights.first_mut() {
        *w = 0.0;
    }
    Ok(Example::new(tokens, weights))
}

/// Render a prompt for generation: the history followed by an assistant header (with a chat
/// template, its generation prompt).
pub fn render_prompt(tok: &Tokenizer, history: &[Segment]) -> Result<Vec<u32>> {
    render_prompt_with(tok, history, &[])
}

/// [`render_prompt`] with the tools the conversation may call (JSON texts of function
/// schemas), given to a chat template's `tools`; a tokenizer without a template has no place
/// for them and renders the prompt without.
pub fn render_prompt_with(
    tok: &Tokenizer,
    history: &[Segment],
    tools: &[String],
) -> Result<Vec<u32>> {
    if tok.chat().is_some() {
        return crate::chat::encode::prompt(tok, &conversation_of(history, tools));
    }
    let mut tokens = render(tok, &Trajectory::new(history.to_vec()), usize::MAX)?.tokens;
    tokens.extend(tok.turn_header(Role::Assistant)?);
    Ok(tokens)
}

/// How per-turn examples treat observations before the current one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ObservationHistory {
    /// Keep all of them (whole text history).
    KeepAll,
    /// Keep only the latest observation before the trained turn; drop older ones (the default,
    /// like OpenWebRL's `mask_history` with one screenshot).
    #[default]
    CurrentOnly,
    /// Replace older observations with this placeholder text.
    Placeholder(String),
}

/// Expand a trajectory into one example per assistant turn: turn k sees the history up to it
/// (observations filtered by `history`) and only turn k carries loss.
pub fn per_turn(traj: &Trajectory, history: &ObservationHistory) -> Vec<Trajectory> {
    let mut out = Vec::new();
    for (k, seg) in traj.segments.iter().enumerate() {
        if seg.role != Role::Assistant || !seg.trained() {
            continue;
        }
        let prefix = &traj.segments[..=k];
        let last_obs = prefix.iter().rposition(|s| s.role == Role::Observation);
        let mut segs = Vec::new();
        for (j, s) in prefix.iter().enumerate() {
            let mut s = s.clone();
            if j != k {
                s.train = Some(false);
            }
            if s.role == Role::Observation && Some(j) != last_obs {
                match history {
                    ObservationHistory::KeepAll => {}
                    ObservationHistory::CurrentOnly => continue,
                    ObservationHistory::Placeholder(p) => s.text = p.clone(),
                }
            }
            segs.push(s);
        }
        out.push(Trajectory { segments: segs, tools: traj.tools.clone() });
    }
    out
}

/// Read a JSONL file: one trajectory per line, `{"segments": [...]}` or `{"messages": [...]}`
/// with `role` in system/user/assistant/tool/observation and `text` (or `content`).
pub fn load_jsonl(path: &Path) -> Result<Vec<Trajectory>> {
    let text = std::fs::read_to_string(path)?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let t: Trajectory = serde_json::from_str(line)
            .map_err(|e| TrainerError::Data(format!("{}:{}: {e}", path.display(), i + 1)))?;
        out.push(t);
    }
    Ok(out)
}

/// A named set of examples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dataset {
    /// Name (for metrics).
    pub name: String,
    /// Tokenised examples.
    pub examples: Vec<Example>,
}

/// How datasets in a mixture are weighted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum MixtureWeights {
    /// Every example once per epoch, shuffled together, loss weight 1.
    #[default]
    Uniform,
    /// Sampling probabilities per dataset (normalised). An epoch has as many draws as there are
    /// examples in total; each dataset is walked in its own shuffled order, cycling.
    Fixed(Vec<f64>),
    /// Every example once per epoch with loss weight ∝ 1/E_n, E_n = (1 − βⁿ)/(1 − β) for its
    /// dataset of n examples, normalised so the mean weight over all examples is 1.
    EffectiveNumber {
        /// β in [0, 1): 0 = no rebalancing, → 1 = every dataset gets equal total weight.
        beta: f64,
    },
}

/// Datasets plus their weighting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mixture {
    /// The datasets.
    pub datasets: Vec<Dataset>,
    /// Their weighting.
    #[serde(default)]
    pub weights: MixtureWeights,
}

/// Effective number of samples E_n = (1 − βⁿ)/(1 − β): 1 when β = 0, approaching n as β → 1.
pub fn effective_number(n: usize, beta: f64) -> f64 {
    if beta <= 0.0 { 1.0 } else { (1.0 - beta.powi(n as i32)) / (1.0 - beta) }
}

/// One entry of an epoch plan: dataset, example and loss weight.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlanEntry {
    /// Dataset index.
    pub dataset: usize,
    /// Example index in the dataset.
    pub example: usize,
    /// Loss weight multiplier.
    pub weight: f32,
}

impl Mixture {
    /// Total number of examples.
    pub fn len(&self) -> usize {
        self.datasets.iter().map(|d| d.examples.len()).sum()
    }

    /// Whether there are no examples.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Per-dataset loss weights (1 unless effective-number weighting).
    pub fn loss_weights(&self) -> Result<Vec<f64>> {
        match &self.weights {
            MixtureWeights::Uniform | MixtureWeights::Fixed(_) => {
                Ok(vec![1.0; self.datasets.len()])
            }
            MixtureWeights::EffectiveNumber { beta } => {
                if !(0.0..1.0).contains(beta) {
                    return Err(config_err(format!(
                        "effective-number beta {beta} is not in [0, 1)"
                    )));
                }
                let raw: Vec<f64> = self
                    .datasets
                    .iter()
                    .map(|d| 1.0 / effective_number(d.examples.len(), *beta))
                    .collect();
                let total: f64 =
                    self.datasets.iter().zip(&raw).map(|(d, w)| d.examples.len() as f64 * w).sum();
                let norm = self.len() as f64 / total.max(f64::MIN_POSITIVE);
                Ok(raw.iter().map(|w| w * norm).collect())
            }
        }
    }

    /// The deterministic order of epoch `epoch` under `seed`.
    pub fn epoch_plan(&self, seed: u64, epoch: u64) -> Result<Vec<PlanEntry>> {
        if self.is_empty() {
            return Err(config_err("the SFT mixture has no examples"));
        }
        let mut rng = rng_from_seed(seed ^ 0x5f7_d47a ^ epoch.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let lw = self.loss_weights()?;
        match &self.weights {
            MixtureWeights::Uniform | MixtureWeights::EffectiveNumber { .. } => {
                let mut plan: Vec<PlanEntry> = self
                    .datasets
                    .iter()
                    .enumerate()
                    .flat_map(|(d, ds)| {
                        let w = lw[d] as f32;
                        (0..ds.examples.len()).map(move |e| PlanEntry {
                            dataset: d,
                            example: e,
                            weight: w,
                        })
                    })
                    .collect();
                plan.shuffle(&mut rng);
                Ok(plan)
            }
            MixtureWeights::Fixed(probs) => {
                if probs.len() != self.datasets.len() || probs.iter().any(|&p| p < 0.0) {
                    return Err(config_err(
                        "fixed mixture weights: one non-negative weight per dataset",
                    ));
                }
                let usable: Vec<f64> = probs
                    .iter()
                    .zip(&self.datasets)
                    .map(|(&p, d)| if d.examples.is_empty() { 0.0 } else { p })
                    .collect();
                let total: f64 = usable.iter().sum();
                if total <= 0.0 {
                    return Err(config_err("fixed mixture weights sum to zero"));
                }
                let mut orders: Vec<Vec<usize>> = self
                    .datasets
                    .iter()
                    .map(|d| {
                        let mut o: Vec<usize> = (0..d.examples.len()).collect();
                        o.shuffle(&mut rng);
                        o
                    })
                    .collect();
                let mut next = vec![0usize; self.datasets.len()];
                let mut plan = Vec::with_capacity(self.len());
                for _ in 0..self.len() {
                    let mut u = rng.random::<f64>() * total;
                    let mut d = usable.len() - 1;
                    for (i, &p) in usable.iter().enumerate() {
                        if p > 0.0 && u < p {
                            d = i;
                            break;
                        }
                        u -= p;
                    }
                    while usable[d] <= 0.0 {
                        d -= 1;
                    }
                    let order = &mut orders[d];
                    let e = order[next[d] % order.len()];
                    next[d] += 1;
                    plan.push(PlanEntry { dataset: d, example: e, weight: 1.0 });
                }
                Ok(plan)
            }
        }
    }
}

/// A trainer trajectory as a conversation with `tools` (JSON texts of function schemas):
/// observations are the user's, tool output the tool's; an assistant segment's tool calls are
/// its message's; a segment is trained as it says.
pub fn conversation_of(segments: &[Segment], tools: &[String]) -> Conversation {
    let messages = segments
        .iter()
        .map(|s| {
            let role = match s.role {
                Role::System => ChatRole::System,
                Role::User | Role::Observation => ChatRole::User,
                Role::Assistant => ChatRole::Assistant,
                Role::Tool => ChatRole::Tool,
            };
            Message {
                train: s.trained(),
                tool_calls: s.tool_calls.clone(),
                ..Message::new(role, s.text.clone())
            }
        })
        .collect();
    Conversation { messages, tools: tools.to_vec() }
}
