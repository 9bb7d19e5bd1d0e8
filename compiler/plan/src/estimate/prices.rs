//! Money: judge calls, generated tokens and GPU-hours priced from a `--prices` JSON file.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::StageEstimate;

/// Prices for `wrlc estimate --prices FILE` (JSON; every field optional, USD or any currency).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    /// Price of one judge call, for judges not listed in `judge_call_by_model`.
    #[serde(default)]
    pub judge_call: Option<f64>,
    /// Price of one judge call by judge model (`"gpt-4.1": 0.01`).
    #[serde(default)]
    pub judge_call_by_model: BTreeMap<String, f64>,
    /// Price of 1M judge tokens by judge model (`"gpt-4.1": {"input": 2.0, "output": 8.0}`),
    /// for judges that declare `tokens_per_call`; it wins over the per-call price.
    #[serde(default)]
    pub judge_tokens_by_model: BTreeMap<String, TokenPrice>,
    /// Price of 1M generated tokens (policy and modules), e.g. on a hosted endpoint.
    #[serde(default)]
    pub per_million_tokens: Option<f64>,
    /// Price of one GPU-hour.
    #[serde(default)]
    pub gpu_hour: Option<f64>,
    /// GPU-hours per 1M generated tokens (your measured rollout throughput), used with
    /// `gpu_hour` to price generation on your own GPUs.
    #[serde(default)]
    pub gpu_hours_per_million_tokens: Option<f64>,
}

/// A price per 1M input and per 1M output tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenPrice {
    pub input: f64,
    pub output: f64,
}

/// Money for one stage or the whole recipe.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    pub judge: Option<f64>,
    pub tokens: Option<f64>,
    pub gpu: Option<f64>,
    pub total: Option<f64>,
}

pub(super) fn fadd(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(a? + b?)
}

pub(super) fn price(e: &StageEstimate, p: &Prices) -> Cost {
    let mut judge = Some(0.0);
    for (m, n) in &e.judge_calls_by_model {
        let by_tokens = p.judge_tokens_by_model.get(m).zip(e.judge_tokens_by_model.get(m));
        if let Some((tp, t)) = by_tokens
            && let (Some(i), Some(o)) = (t.input, t.output)
        {
            judge = fadd(judge, Some(i as f64 / 1e6 * tp.input + o as f64 / 1e6 * tp.output));
            continue;
        }
        let unit = p.judge_call_by_model.get(m).copied().or(p.judge_call);
        judge = fadd(
            judge,
            n.and_then(|n| Some(n as f64 * unit?)).or(if *n == Some(0) { Some(0.0) } else { None }),
        );
    }
    let mtok = e.max_generated_tokens.map(|t| t as f64 / 1e6);
    let tokens = match p.per_million_tokens {
        Some(pp) => mtok.map(|m| m * pp),
        None => Some(0.0),
    };
    let gpu = match (p.gpu_hour, p.gpu_hours_per_million_tokens) {
        (Some(h), Some(r)) => mtok.map(|m| m * r * h),
        _ => Some(0.0),
    };
    let total = fadd(fadd(judge, tokens), gpu);
    Cost { judge, tokens, gpu, total }
}
