//! Drawing tokens, what every decoder shares: the sampling settings (temperature, top-k, top-p,
//! a repetition penalty, stop strings, max tokens), one token drawn from a row of logits with
//! its log-probability, and a prompt's group of rows drawn together (`Group`), so that
//! candle's ops (`sample.rs`) and the batched decoder (`decode/`) stop and penalise alike.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::error::{Result, config_err};
use crate::tokenizer::Tokenizer;

fn d_temp() -> f32 {
    1.0
}
fn d_top_p() -> f32 {
    1.0
}
fn d_max() -> usize {
    128
}
fn d_n() -> usize {
    1
}
fn d_penalty() -> f32 {
    1.0
}

/// How to sample. Defaults: temperature 1, no top-k/top-p truncation, 128 tokens, 1 sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleParams {
    /// Softmax temperature; 0 means greedy (argmax).
    #[serde(default = "d_temp")]
    pub temperature: f32,
    /// Nucleus sampling mass in (0, 1]; 1 disables it.
    #[serde(default = "d_top_p")]
    pub top_p: f32,
    /// Keep only the k most likely tokens; 0 disables it.
    #[serde(default)]
    pub top_k: usize,
    /// Maximum number of generated tokens.
    #[serde(default = "d_max")]
    pub max_tokens: usize,
    /// Stop as soon as the generated text contains one of these (it stays in the output).
    #[serde(default)]
    pub stop: Vec<String>,
    /// Completions per prompt (a GRPO group). They are decoded together as one batch.
    #[serde(default = "d_n")]
    pub n: usize,
    /// A token already in the prompt or the completion has its positive logit divided by this
    /// and its negative one multiplied, before temperature (Hugging Face's and vLLM's rule);
    /// 1 disables it. Log-probs are then those of the penalised distribution.
    #[serde(default = "d_penalty")]
    pub repetition_penalty: f32,
    /// The first this many tokens of each completion have their entropy measured
    /// ([`Completion::entropy`], [`top_entropy`]); 0 measures none. Draws are unchanged.
    #[serde(default)]
    pub entropy_tokens: usize,
}

impl Default for SampleParams {
    fn default() -> Self {
        SampleParams {
            temperature: d_temp(),
            top_p: d_top_p(),
            top_k: 0,
            max_tokens: d_max(),
            stop: Vec::new(),
            n: d_n(),
            repetition_penalty: d_penalty(),
            entropy_tokens: 0,
        }
    }
}

/// Why generation ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// An end token was sampled (it is the last token of the completion).
    Eos,
    /// A stop string appeared; holds the stop string.
    Stop(String),
    /// `max_tokens` or the model's context was reached (the completion is truncated).
    Length,
}

/// One sampled completion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    /// Index of the prompt it answers.
    pub prompt_index: usize,
    /// Decoded text of `tokens` (special tokens dropped).
    pub text: String,
    /// Generated token ids (including the end-of-turn token when `finish` is `Eos`).
    pub tokens: Vec<u32>,
    /// Log-probability of each generated token under the temperature-scaled distribution
    /// before top-k/top-p truncation (log-softmax of logits / T; T = 1 when greedy).
    pub logprobs: Vec<f32>,
    /// Why it stopped.
    pub finish: FinishReason,
    /// The entropy of the first `SampleParams::entropy_tokens` draws ([`top_entropy`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entropy: Vec<f32>,
}

/// The tokens a draw's entropy is measured over: the likeliest 20, as ARPO reads vLLM's top-20
/// log-probs.
pub const ENTROPY_TOP: usize = 20;

/// The entropy of the distribution a token is drawn from (`logits` / T; T = 1 when greedy) over
/// its [`ENTROPY_TOP`] likeliest tokens, −Σ p·ln p with the full distribution's p, divided by ln of
/// the vocabulary's size, so that 1 is a uniform draw over every token (ARPO's measure).
pub fn top_entropy(logits: &[f32], temperature: f32) -> f32 {
    if logits.len() < 2 {
        return 0.0;
    }
    let t = if temperature > 0.0 { temperature } else { 1.0 };
    let scaled: Vec<f32> = logits.iter().map(|&x| x / t).collect();
    let mut lp = log_softmax(&scaled);
    let k = ENTROPY_TOP.min(lp.len());
    lp.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a));
    let h: f64 = lp[..k]
        .iter()
        .map(|&l| {
            let p = (l as f64).exp();
            if p > 0.0 { -p * l as f64 } else { 0.0 }
        })
        .sum();
    (h / (logits.len() as f64).ln()) as f32
}

/// log-softmax of one row.
fn log_softmax(row: &[f32]) -> Vec<f32> {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let lse = row.iter().map(|&x| ((x - max) as f64).exp()).sum::<f64>().ln() as f32 + max;
    row.iter().map(|&x| x - lse).collect()
}

/// The repetition penalty on one logits row: each seen token's positive logit divided by
/// `penalty`, its negative one multiplied.
pub fn penalise(row: &mut [f32], seen: &[bool], penalty: f32) {
    for (x, &s) in row.iter_mut().zip(seen) {
        if s {
            *x = if *x > 0.0 { *x / penalty } else { *x * penalty };
        }
    }
}

/// Draw one token id from a logits row; returns (id, logprob).
pub fn sample_token(logits: &[f32], p: &SampleParams, rng: &mut ChaCha8Rng) -> (u32, f32) {
    if p.temperature <= 0.0 {
        let lp = log_softmax(logits);
        let (best, _) = logits
            .iter()
            .enumerate()
            .fold((0usize, f32::NEG_INFINITY), |a, (i, &x)| if x > a.1 { (i, x) } else { a });
        return (best as u32, lp[best]);
    }
    let scaled: Vec<f32> = logits.iter().map(|&x| x / p.temperature).collect();
    let lp = log_softmax(&scaled);
    if p.top_k == 0 && p.top_p >= 1.0 {
        // No truncation: draw directly in id order (no sort over the vocabulary).
        let total: f64 = lp.iter().map(|&l| (l as f64).exp()).sum();
        let mut u = rng.random::<f64>() * total;
        for (i, &l) in lp.iter().enumerate() {
            u -= (l as f64).exp();
            if u <= 0.0 {
                return (i as u32, l);
            }
        }
        let last = lp.len() - 1;
        return (last as u32, lp[last]);
    }
    let mut order: Vec<usize> = (0..lp.len()).collect();
    // By probability, ties by id, so the draw is deterministic.
    let by_prob = |a: &usize, b: &usize| lp[*b].total_cmp(&lp[*a]).then(a.cmp(b));
    let mut keep = order.len();
    if p.top_k > 0 && p.top_k < order.len() {
        order.select_nth_unstable_by(p.top_k - 1, by_prob);
        order.truncate(p.top_k);
        keep = p.top_k;
    }
    order.sort_by(by_prob);
    if p.top_p < 1.0 {
        let mut mass = 0.0f64;
        for (i, &id) in order.iter().enumerate().take(keep) {
            mass += (lp[id] as f64).exp();
            if mass >= p.top_p as f64 {
                keep = i + 1;
                break;
            }
        }
    }
    let kept = &order[..keep.max(1)];
    let total: f64 = kept.iter().map(|&i| (lp[i] as f64).exp()).sum();
    let mut u = rng.random::<f64>() * total;
    for &i in kept {
        u -= (lp[i] as f64).exp();
        if u <= 0.0 {
            return (i as u32, lp[i]);
        }
    }
    let last = kept[kept.len() - 1];
    (last as u32, lp[last])
}

/// One token as it is drawn, for callers that stream completions or want the whole distribution
/// (`wrlc serve`'s `stream` and `top_logprobs`).
#[derive(Debug, Clone, Copy)]
pub struct TokenEvent<'a> {
    /// Index of the completion in the returned list (prompt index × n + row).
    pub completion: usize,
    /// The drawn token.
    pub token: u32,
    /// Its log-probability, as in [`Completion::logprobs`].
    pub logprob: f32,
    /// The logits row it was drawn from (before temperature).
    pub logits: &'a [f32],
}

/// One prompt's `n` completions as they are drawn: the rows, which have ended, the tokens each
/// has seen (for the repetition penalty), and the token budget. Both decoders (candle's ops
/// here, the batched one in `decode`) draw through it, so they stop and penalise alike.
#[derive(Debug, Clone)]
pub(crate) struct Group {
    prompt_index: usize,
    prompt: Vec<u32>,
    rows: Vec<Completion>,
    done: Vec<bool>,
    seen: Vec<Vec<bool>>,
    budget: usize,
    steps: usize,
}

impl Group {
    /// Checks `params.n` and prompt `pi` against the model's context and starts the rows.
    pub(crate) fn new(
        pi: usize,
        prompt: &[u32],
        params: &SampleParams,
        context: usize,
    ) -> Result<Group> {
        if params.n == 0 {
            return Err(config_err("sample: n must be at least 1"));
        }
        if prompt.is_empty() {
            return Err(config_err(format!("sample: prompt {pi} is empty")));
        }
        if prompt.len() >= context {
            return Err(config_err(format!(
                "sample: prompt {pi} has {} tokens, the model's context is {context}",
                prompt.len(),
            )));
        }
        let row = Completion {
            prompt_index: pi,
            text: String::new(),
            tokens: Vec::new(),
            logprobs: Vec::new(),
            finish: FinishReason::Length,
            entropy: Vec::new(),
        };
        Ok(Group {
            prompt_index: pi,
            prompt: prompt.to_vec(),
            rows: vec![row; params.n],
            done: vec![false; params.n],
            seen: Vec::new(),
            budget: params.max_tokens.min(context - prompt.len()),
            steps: 0,
        })
    }

    /// The prompt.
    pub(crate) fn prompt(&self) -> &[u32] {
        &self.prompt
    }

    /// Whether row `r` has ended.
    pub(crate) fn is_done(&self, r: usize) -> bool {
        self.done[r]
    }

    /// Whether every row has ended or the budget is spent.
    pub(crate) fn finished(&self) -> bool {
        self.steps >= self.budget || self.done.iter().all(|&d| d)
    }

    /// Draws each unfinished row's next token from its row of `logits` (one per row, finished
    /// rows' ignored), rows in order from the one `rng`; returns each row's token (`None` for
    /// rows that had ended before).
    pub(crate) fn draw(
        &mut self,
        logits: &mut [Vec<f32>],
        params: &SampleParams,
        tokenizer: &Tokenizer,
        rng: &mut ChaCha8Rng,
        on_token: &mut dyn FnMut(TokenEvent<'_>),
    ) -> Result<Vec<Option<u32>>> {
        let n = self.rows.len();
        let penalised = params.repetition_penalty != 1.0;
        // Per row, the tokens seen so far (the prompt, then the completion).
        if penalised && self.seen.is_empty() {
            let vocab = logits.first().map_or(0, Vec::len);
            let mut first = vec![false; vocab];
            for &t in &self.prompt {
                if let Some(s) = first.get_mut(t as usize) {
                    *s = true;
                }
            }
            self.seen = vec![first; n];
        }
        let mut next = vec![None; n];
        for (r, row_logits) in logits.iter_mut().enumerate().take(n) {
            if self.done[r] {
                continue;
            }
            if penalised {
                penalise(row_logits, &self.seen[r], params.repetition_penalty);
            }
            if self.rows[r].tokens.len() < params.entropy_tokens {
                let h = top_entropy(row_logits, params.temperature);
                self.rows[r].entropy.push(h);
            }
            let (tok, lp) = sample_token(row_logits, params, rng);
            if let Some(s) = self.seen.get_mut(r).and_then(|s| s.get_mut(tok as usize)) {
                *s = true;
            }
            let row = &mut self.rows[r];
            row.tokens.push(tok);
            row.logprobs.push(lp);
            on_token(TokenEvent {
                completion: self.prompt_index * n + r,
                token: tok,
                logprob: lp,
                logits: row_logits,
            });
            next[r] = Some(tok);
            if tokenizer.is_stop(tok) {
                row.finish = FinishReason::Eos;
                self.done[r] = true;
            } else if !params.stop.is_empty() {
                let text = tokenizer.decode(&row.tokens)?;
                if let Some(s) = params.stop.iter().find(|s| text.contains(s.as_str())) {
                    row.finish = FinishReason::Stop(s.clone());
                    self.done[r] = true;
                }
            }
        }
        self.steps += 1;
        Ok(next)
    }

    /// The completions, their text decoded.
    pub(crate) fn complete(self, tokenizer: &Tokenizer) -> Result<Vec<Completion>> {
        self.rows
            .into_iter()
            .map(|mut row| {
                row.text = tokenizer.decode(&row.tokens)?;
                Ok(row)
            })
            .collect()
    }
}
