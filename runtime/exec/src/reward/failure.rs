//! Why a reward endpoint gave no score (`endpoint.rs` calls it; `classes.rs` counts it): each
//! failure is its own class in the run's counts, named as `metrics.jsonl` and `summary.json`
//! name it.

/// Why an endpoint gave no score: each is its own failure class in the run's counts.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum EndpointFailure {
    /// No answer within `timeout` (after the retries).
    #[error("the reward endpoint did not answer in time")]
    Timeout,
    /// The endpoint refused the request (HTTP 4xx).
    #[error("the reward endpoint refused the request: HTTP {0}")]
    Refused(u16),
    /// The endpoint failed (HTTP 5xx, after the retries).
    #[error("the reward endpoint failed: HTTP {0}")]
    Failed(u16),
    /// No connection (refused, reset, no such host).
    #[error("the reward endpoint is unreachable: {0}")]
    Unreachable(String),
    /// An answer outside the schema: not JSON, no finite score, components not the declared.
    #[error("the reward endpoint's answer is not a score: {0}")]
    Malformed(String),
}

impl EndpointFailure {
    /// The class `metrics.jsonl`, `summary.json` and trajectories count it under.
    pub fn word(&self) -> &'static str {
        match self {
            EndpointFailure::Timeout => "reward_timeout",
            EndpointFailure::Refused(_) => "reward_http_4xx",
            EndpointFailure::Failed(_) => "reward_http_5xx",
            EndpointFailure::Unreachable(_) => "reward_unreachable",
            EndpointFailure::Malformed(_) => "reward_malformed",
        }
    }

    /// Every class, as [`EndpointFailure::word`] names them.
    pub const WORDS: [&'static str; 5] = [
        "reward_timeout",
        "reward_http_4xx",
        "reward_http_5xx",
        "reward_unreachable",
        "reward_malformed",
    ];

    /// Whether the call is tried again: timeouts, connection failures, 5xx, 408 and 429.
    pub(super) fn retryable(&self) -> bool {
        match self {
            EndpointFailure::Timeout
            | EndpointFailure::Failed(_)
            | EndpointFailure::Unreachable(_) => true,
            EndpointFailure::Refused(code) => matches!(code, 408 | 429),
            EndpointFailure::Malformed(_) => false,
        }
    }
}
