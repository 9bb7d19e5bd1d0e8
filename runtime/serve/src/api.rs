//! The OpenAI-compatible endpoints: `GET /health`, `GET /v1/models`, `POST
//! /v1/chat/completions` (messages rendered with the trainer's own prompt format, sampling on a
//! blocking thread holding the policy's lock), and OpenAI-shaped errors for everything else.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value as Json, json};
use wrl_trainer::{Completion, FinishReason, Role, SampleParams, Segment};

use crate::{AppState, now};

/// An OpenAI-style error reply: `{"error": {"message", "type", "code"}}`.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    kind: &'static str,
    code: &'static str,
    message: String,
}

impl ApiError {
    fn invalid(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            kind: "invalid_request_error",
            code,
            message: message.into(),
        }
    }
    fn server(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            kind: "server_error",
            code: "internal_error",
            message: message.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {
            "message": self.message,
            "type": self.kind,
            "param": Json::Null,
            "code": self.code,
        }});
        (self.status, axum::Json(body)).into_response()
    }
}

pub(crate) async fn method_not_allowed() -> ApiError {
    ApiError {
        status: StatusCode::METHOD_NOT_ALLOWED,
        kind: "invalid_request_error",
        code: "method_not_allowed",
        message: "wrong method; chat completions are POST, models and health are GET".into(),
    }
}

pub(crate) async fn not_found() -> ApiError {
    ApiError {
        status: StatusCode::NOT_FOUND,
        kind: "invalid_request_error",
        code: "not_found",
        message: "no such endpoint; this server has POST /v1/chat/completions, GET /v1/models and \
                  GET /health"
            .into(),
    }
}

pub(crate) async fn health(State(s): State<Arc<AppState>>) -> axum::Json<Json> {
    axum::Json(json!({"status": "ok", "model": s.model}))
}

fn model_card(s: &AppState) -> Json {
    json!({"id": s.model, "object": "model", "created": s.started, "owned_by": "wrl"})
}

pub(crate) async fn models(State(s): State<Arc<AppState>>) -> axum::Json<Json> {
    axum::Json(json!({"object": "list", "data": [model_card(&s)]}))
}

pub(crate) async fn model_by_id(
    State(s): State<Arc<AppState>>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Result<axum::Json<Json>, ApiError> {
    if id == s.model { Ok(axum::Json(model_card(&s))) } else { Err(model_not_found(&id, &s.model)) }
}

fn model_not_found(asked: &str, served: &str) -> ApiError {
    ApiError {
        status: StatusCode::NOT_FOUND,
        kind: "invalid_request_error",
        code: "model_not_found",
        message: format!("the model `{asked}` does not exist; this server serves `{served}`"),
    }
}

/// A validated chat request.
#[derive(Debug)]
struct ChatRequest {
    history: Vec<Segment>,
    params: SampleParams,
    seed: Option<u64>,
}

/// Most completions one request may ask for.
const MAX_N: u64 = 64;

fn parse_request(body: &[u8], served: &str, context: usize) -> Result<ChatRequest, ApiError> {
    let v: Json = serde_json::from_slice(body).map_err(|e| {
        ApiError::invalid("invalid_json", format!("the request body is not valid JSON: {e}"))
    })?;
    let obj = v.as_object().ok_or_else(|| {
        ApiError::invalid("invalid_request", "the request body must be a JSON object")
    })?;
    let field = |k: &str| obj.get(k).filter(|x| !x.is_null());
    if let Some(m) = field("model") {
        let m = m
            .as_str()
            .ok_or_else(|| ApiError::invalid("invalid_type", "`model` must be a string"))?;
        if m != served {
            return Err(model_not_found(m, served));
        }
    }
    if let Some(s) = field("stream") {
        match s.as_bool() {
            Some(false) => {}
            Some(true) => {
                return Err(ApiError::invalid(
                    "stream_not_supported",
                    "`stream: true` is not supported by wrlc serve; send the request without it",
                ));
            }
            None => return Err(ApiError::invalid("invalid_type", "`stream` must be a boolean")),
        }
    }
    let messages = field("messages")
        .ok_or_else(|| ApiError::invalid("missing_required_parameter", "`messages` is required"))?
        .as_array()
        .ok_or_else(|| ApiError::invalid("invalid_type", "`messages` must be an array"))?;
    if messages.is_empty() {
        return Err(ApiError::invalid("invalid_value", "`messages` must not be empty"));
    }
    let history = messages
        .iter()
        .enumerate()
        .map(|(i, m)| parse_message(i, m))
        .collect::<Result<Vec<_>, _>>()?;

    let number = |k: &str, lo: f64, hi: f64| -> Result<Option<f64>, ApiError> {
        match field(k) {
            None => Ok(None),
            Some(x) => {
                let f = x.as_f64().ok_or_else(|| {
                    ApiError::invalid("invalid_type", format!("`{k}` must be a number"))
                })?;
                if !(lo..=hi).contains(&f) {
                    return Err(ApiError::invalid(
                        "invalid_value",
                        format!("`{k}` must be between {lo} and {hi}, not {f}"),
                    ));
                }
                Ok(Some(f))
            }
        }
    };
    let integer = |k: &str, lo: u64, hi: u64| -> Result<Option<u64>, ApiError> {
        match field(k) {
            None => Ok(None),
            Some(x) => {
                let n = x.as_u64().filter(|n| (lo..=hi).contains(n)).ok_or_else(|| {
                    ApiError::invalid(
                        "invalid_value",
                        format!("`{k}` must be an integer between {lo} and {hi}"),
                    )
                })?;
                Ok(Some(n))
            }
        }
    };
    let temperature = number("temperature", 0.0, 2.0)?.unwrap_or(1.0) as f32;
    let top_p = number("top_p", 0.0, 1.0)?.unwrap_or(1.0) as f32;
    if top_p <= 0.0 {
        return Err(ApiError::invalid("invalid_value", "`top_p` must be greater than 0"));
    }
    let max_tokens = match integer("max_completion_tokens", 1, u64::MAX)? {
        Some(n) => Some(n),
        None => integer("max_tokens", 1, u64::MAX)?,
    };
    let n = integer("n", 1, MAX_N)?.unwrap_or(1) as usize;
    let seed = match field("seed") {
        None => None,
        Some(x) => Some(
            x.as_u64()
                .or_else(|| x.as_i64().map(|i| i as u64))
                .ok_or_else(|| ApiError::invalid("invalid_type", "`seed` must be an integer"))?,
        ),
    };
    let stop = match field("stop") {
        None => Vec::new(),
        Some(Json::String(s)) => vec![s.clone()],
        Some(Json::Array(a)) => a
            .iter()
            .map(|x| {
                x.as_str().map(str::to_string).ok_or_else(|| {
                    ApiError::invalid(
                        "invalid_type",
                        "`stop` must be a string or a list of strings",
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => {
            return Err(ApiError::invalid(
                "invalid_type",
                "`stop` must be a string or a list of strings",
            ));
        }
    };
    let stop: Vec<String> = stop.into_iter().filter(|s| !s.is_empty()).collect();
    let max_tokens = max_tokens.map_or(context, |m| usize::try_from(m).unwrap_or(usize::MAX));
    Ok(ChatRequest {
        history,
        params: SampleParams {
            temperature,
            top_p,
            top_k: 0,
            max_tokens,
            stop,
            n,
            ..SampleParams::default()
        },
        seed,
    })
}

fn parse_message(i: usize, m: &Json) -> Result<Segment, ApiError> {
    let role = m.get("role").and_then(Json::as_str).ok_or_else(|| {
        ApiError::invalid("invalid_value", format!("`messages[{i}].role` is required"))
    })?;
    let role = match role {
        "system" | "developer" => Role::System,
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "tool" => Role::Tool,
        other => {
            return Err(ApiError::invalid(
                "invalid_value",
                format!(
                    "`messages[{i}].role` is `{other}`; expected `system`, `user`, `assistant` or `tool`"
                ),
            ));
        }
    };
    let text = match m.get("content") {
        None | Some(Json::Null) => String::new(),
        Some(Json::String(s)) => s.clone(),
        Some(Json::Array(parts)) => {
            let mut text = String::new();
            for (j, p) in parts.iter().enumerate() {
                match p.get("type").and_then(Json::as_str) {
                    Some("text") => {
                        let t = p.get("text").and_then(Json::as_str).ok_or_else(|| {
                            ApiError::invalid(
                                "invalid_value",
                                format!("`messages[{i}].content[{j}].text` must be a string"),
                            )
                        })?;
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(t);
                    }
                    Some(other) => {
                        return Err(ApiError::invalid(
                            "unsupported_content",
                            format!(
                                "`messages[{i}].content[{j}]` is `{other}`; this policy reads text only"
                            ),
                        ));
                    }
                    None => {
                        return Err(ApiError::invalid(
                            "invalid_value",
                            format!("`messages[{i}].content[{j}].type` is required"),
                        ));
                    }
                }
            }
            text
        }
        Some(_) => {
            return Err(ApiError::invalid(
                "invalid_type",
                format!("`messages[{i}].content` must be a string or a list of parts"),
            ));
        }
    };
    Ok(Segment::new(role, text))
}

/// The content a client sees: OpenAI leaves a matched stop sequence out.
fn visible_text(c: &Completion, stops: &[String]) -> String {
    match c.finish {
        FinishReason::Stop(_) => {
            let cut = stops.iter().filter_map(|s| c.text.find(s.as_str())).min();
            match cut {
                Some(at) => c.text[..at].to_string(),
                None => c.text.clone(),
            }
        }
        FinishReason::Eos | FinishReason::Length => c.text.clone(),
    }
}

pub(crate) async fn chat_completions(
    State(s): State<Arc<AppState>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match body {
        Ok(b) => b,
        Err(e) => {
            let status = e.status();
            let code = if status == StatusCode::PAYLOAD_TOO_LARGE {
                "request_too_large"
            } else {
                "invalid_body"
            };
            return ApiError {
                status,
                kind: "invalid_request_error",
                code,
                message: format!("the request body cannot be read: {}", e.body_text()),
            }
            .into_response();
        }
    };
    match complete(s, body).await {
        Ok(v) => axum::Json(v).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn complete(s: Arc<AppState>, body: Bytes) -> Result<Json, ApiError> {
    let req = parse_request(&body, &s.model, s.context)?;
    let permit = s.admitted.clone().try_acquire_owned().map_err(|_| ApiError {
        status: StatusCode::TOO_MANY_REQUESTS,
        kind: "rate_limit_error",
        code: "rate_limit_exceeded",
        message: "the server is busy (max concurrency reached); retry later".into(),
    })?;
    let trainer = s.trainer.clone();
    let context = s.context;
    let params = req.params.clone();
    let sampled = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        // Sampling never leaves the trainer half-updated, so a poisoned lock is still usable.
        let mut t = trainer.lock().unwrap_or_else(|p| p.into_inner());
        let prompt = wrl_trainer::render_prompt(t.tokenizer(), &req.history)
            .map_err(|e| ApiError::server(format!("cannot render the messages: {e}")))?;
        if prompt.len() >= context {
            return Err(ApiError::invalid(
                "context_length_exceeded",
                format!(
                    "the messages are {} tokens; this model's context is {context} tokens",
                    prompt.len()
                ),
            ));
        }
        let prompts = [prompt];
        let out = match req.seed {
            Some(seed) => {
                let mut rng = wrl_trainer::rng::rng_from_seed(seed);
                wrl_trainer::sample::sample(t.model(), t.tokenizer(), &prompts, &params, &mut rng)
            }
            None => t.sample(&prompts, &params),
        };
        let [prompt] = prompts;
        out.map(|c| (prompt.len(), c))
            .map_err(|e| ApiError::server(format!("sampling failed: {e}")))
    })
    .await
    .map_err(|e| ApiError::server(format!("sampling stopped: {e}")))??;
    let (prompt_tokens, completions) = sampled;
    let completion_tokens: usize = completions.iter().map(|c| c.tokens.len()).sum();
    let choices: Vec<Json> = completions
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let finish = match c.finish {
                FinishReason::Eos | FinishReason::Stop(_) => "stop",
                FinishReason::Length => "length",
            };
            json!({
                "index": i,
                "message": {"role": "assistant", "content": visible_text(c, &req.params.stop)},
                "finish_reason": finish,
            })
        })
        .collect();
    let n = s.counter.fetch_add(1, Ordering::Relaxed);
    let created = s.created.unwrap_or_else(now);
    Ok(json!({
        "id": format!("chatcmpl-{created:x}{n:06x}"),
        "object": "chat.completion",
        "created": created,
        "model": s.model,
        "choices": choices,
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ServeError, check_addr};

    #[test]
    fn requests_are_validated() {
        let ok = |b: &str| parse_request(b.as_bytes(), "m", 100);
        let r = ok(r#"{"model":"m","messages":[{"role":"user","content":"hi"}],"stop":"x","max_tokens":5}"#)
            .unwrap();
        assert_eq!(r.params.stop, vec!["x".to_string()]);
        assert_eq!(r.params.max_tokens, 5);
        assert_eq!(
            ok(r#"{"messages":[{"role":"user","content":"hi"}]}"#).unwrap().params.max_tokens,
            100
        );
        for (body, code) in [
            ("{", "invalid_json"),
            ("[]", "invalid_request"),
            (r#"{"messages":[]}"#, "invalid_value"),
            (r#"{"messages":[{"role":"robot","content":"x"}]}"#, "invalid_value"),
            (
                r#"{"messages":[{"role":"user","content":"x"}],"stream":true}"#,
                "stream_not_supported",
            ),
            (r#"{"messages":[{"role":"user","content":"x"}],"temperature":3}"#, "invalid_value"),
            (r#"{"messages":[{"role":"user","content":"x"}],"n":0}"#, "invalid_value"),
            (r#"{"messages":[{"role":"user","content":"x"}],"stop":5}"#, "invalid_type"),
            (
                r#"{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}"#,
                "unsupported_content",
            ),
            (r#"{"model":"other","messages":[{"role":"user","content":"x"}]}"#, "model_not_found"),
        ] {
            assert_eq!(ok(body).unwrap_err().code, code, "{body}");
        }
    }

    #[test]
    fn addresses_are_loopback_unless_public() {
        assert!(check_addr("127.0.0.1:0", false).is_ok());
        assert!(check_addr("[::1]:0", false).is_ok());
        assert!(matches!(check_addr("0.0.0.0:0", false), Err(ServeError::NotLoopback { .. })));
        assert!(check_addr("0.0.0.0:0", true).is_ok());
        assert!(matches!(check_addr("nonsense", false), Err(ServeError::BadAddr { .. })));
    }
}
