//! The OpenAI-compatible endpoints: `GET /health`, `GET /v1/models`, `POST /v1/chat/completions`
//! and `POST /v1/completions`, answered whole or streamed as server-sent events, with
//! `logprobs` / `top_logprobs` in OpenAI's shapes and OpenAI-shaped errors for everything else.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value as Json, json};
use wrl_trainer::vision::Pixels;
use wrl_trainer::{Completion, Tokenizer};

use crate::answer::{Answer, chat_logprobs, text_logprobs, usage, visible_tokens};
use crate::error::ApiError;
use crate::generate::{self, Drawn, Event, finish_reason, visible_text};
use crate::images;
use crate::request::{self, Endpoint, GenRequest, Input};
use crate::{AppState, now, stream};

pub(crate) async fn method_not_allowed() -> ApiError {
    ApiError {
        status: StatusCode::METHOD_NOT_ALLOWED,
        kind: "invalid_request_error",
        code: "method_not_allowed",
        message: "wrong method; completions are POST, models and health are GET".into(),
        param: None,
    }
}

pub(crate) async fn not_found() -> ApiError {
    ApiError {
        status: StatusCode::NOT_FOUND,
        kind: "invalid_request_error",
        code: "not_found",
        message: "no such endpoint; this server has POST /v1/chat/completions, POST \
                  /v1/completions, GET /v1/models and GET /health"
            .into(),
        param: None,
    }
}

pub(crate) async fn health(State(s): State<Arc<AppState>>) -> axum::Json<Json> {
    axum::Json(json!({"status": "ok", "model": s.model}))
}

fn model_card(s: &AppState) -> Json {
    let mut card =
        json!({"id": s.model, "object": "model", "created": s.started, "owned_by": "wrl"});
    if let Some(r) = &s.recipe {
        card["recipe"] = json!({"plan": r.plan, "wrlc": r.wrlc});
    }
    card
}

pub(crate) async fn models(State(s): State<Arc<AppState>>) -> axum::Json<Json> {
    axum::Json(json!({"object": "list", "data": [model_card(&s)]}))
}

pub(crate) async fn model_by_id(
    State(s): State<Arc<AppState>>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Result<axum::Json<Json>, ApiError> {
    if id == s.model {
        Ok(axum::Json(model_card(&s)))
    } else {
        Err(ApiError::model_not_found(&id, &s.model))
    }
}

pub(crate) async fn chat_completions(State(s): State<Arc<AppState>>, body: Body) -> Response {
    generate_for(s, body, Endpoint::Chat).await
}

pub(crate) async fn completions(State(s): State<Arc<AppState>>, body: Body) -> Response {
    generate_for(s, body, Endpoint::Completions).await
}

/// Largest request body read (as axum's default).
const BODY_LIMIT: usize = 2 * 1024 * 1024;
/// Largest request body read by a vision-language model's server: room for a few screenshots as
/// base64 data URLs.
const VL_BODY_LIMIT: usize = 16 * 1024 * 1024;

/// Reads a request body whole, within the size limit and the idle timeout (a client that
/// trickles its body is cut off like one that trickles its headers).
async fn read_body(s: &AppState, body: Body) -> Result<Bytes, ApiError> {
    let limit = if s.vision.is_some() { VL_BODY_LIMIT } else { BODY_LIMIT };
    match tokio::time::timeout(s.idle_timeout, axum::body::to_bytes(body, limit)).await {
        Ok(Ok(b)) => Ok(b),
        Ok(Err(e)) => {
            let too_large = std::error::Error::source(&e)
                .is_some_and(|c| c.is::<http_body_util::LengthLimitError>());
            Err(if too_large {
                ApiError {
                    status: StatusCode::PAYLOAD_TOO_LARGE,
                    ..ApiError::body(
                        "request_too_large",
                        format!("the request body is larger than {limit} bytes"),
                    )
                }
            } else {
                ApiError::body("invalid_body", format!("the request body cannot be read: {e}"))
            })
        }
        Err(_) => Err(ApiError {
            status: StatusCode::REQUEST_TIMEOUT,
            ..ApiError::body(
                "request_timeout",
                format!("the request body did not arrive within {:?}", s.idle_timeout),
            )
        }),
    }
}

async fn generate_for(s: Arc<AppState>, body: Body, endpoint: Endpoint) -> Response {
    let body = match read_body(&s, body).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let templated = s.tokenizer.chat().is_some();
    let sees = s.vision.is_some();
    let mut req = match request::parse(&body, endpoint, &s.model, s.context, templated, sees) {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    // A request with images is admitted before they are decoded: at most `max_concurrency`
    // requests decode images at once.
    let with_images = matches!(&req.input, Input::Chat(_, parts) if !parts.is_empty());
    let mut admitted = None;
    if with_images {
        let Ok(permit) = s.admitted.clone().try_acquire_owned() else {
            return ApiError::busy().into_response();
        };
        admitted = Some(permit);
    }
    let images = match read_images(&s, &mut req).await {
        Ok(i) => i,
        Err(e) => return e.into_response(),
    };
    let prompts = match generate::prepare(&req, &s.tokenizer, s.context, s.vision.as_ref(), &images)
    {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    let permit = match admitted {
        Some(p) => p,
        None => match s.admitted.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => return ApiError::busy().into_response(),
        },
    };
    let n = s.counter.fetch_add(1, Ordering::Relaxed);
    let created = s.created.unwrap_or_else(now);
    let prefix = match endpoint {
        Endpoint::Chat => "chatcmpl",
        Endpoint::Completions => "cmpl",
    };
    let answer = Answer {
        id: format!("{prefix}-{created:x}{n:06x}"),
        created,
        model: s.model.clone(),
        endpoint,
    };
    let prompt_tokens: usize = prompts.tokens.iter().map(Vec::len).sum();
    let rx = generate::start(
        s.trainer.clone(),
        prompts.tokens,
        images,
        req.params.clone(),
        req.seed,
        req.logprobs.unwrap_or(0),
        permit,
    );
    if req.stream {
        return stream::respond(answer, req, prompts.texts, prompt_tokens, s.tokenizer.clone(), rx);
    }
    let mut rx = rx;
    let mut drawn: Vec<Vec<Drawn>> = Vec::new();
    let completions = loop {
        match rx.recv().await {
            Some(Event::Token(d)) => {
                if drawn.len() <= d.completion {
                    drawn.resize_with(d.completion + 1, Vec::new);
                }
                drawn[d.completion].push(d);
            }
            Some(Event::Done(Ok(c))) => break c,
            Some(Event::Done(Err(e))) => return e.into_response(),
            None => return ApiError::server("sampling stopped").into_response(),
        }
    };
    let body =
        whole(&answer, &req, &prompts.texts, prompt_tokens, &s.tokenizer, &completions, &drawn);
    axum::Json(body).into_response()
}

/// The request's images read by the model's processor on a blocking thread (decoding and
/// resizing take a while), in the order their placeholders stand; none for a text request.
async fn read_images(s: &AppState, req: &mut GenRequest) -> Result<Vec<Pixels>, ApiError> {
    let parts = match &mut req.input {
        Input::Chat(_, parts) => std::mem::take(parts),
        Input::Text(_) => Vec::new(),
    };
    let Some(side) = s.vision.clone().filter(|_| !parts.is_empty()) else {
        return Ok(Vec::new());
    };
    tokio::task::spawn_blocking(move || parts.iter().map(|p| images::read(&side, p)).collect())
        .await
        .map_err(|e| ApiError::server(format!("reading the images failed: {e}")))?
}

fn whole(
    a: &Answer,
    req: &GenRequest,
    prompt_texts: &[String],
    prompt_tokens: usize,
    tok: &Tokenizer,
    completions: &[Completion],
    drawn: &[Vec<Drawn>],
) -> Json {
    let none: Vec<Drawn> = Vec::new();
    let choices: Vec<Json> = completions
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let text = visible_text(c, &req.params.stop);
            let d = drawn.get(i).unwrap_or(&none);
            let (kept, offs) = visible_tokens(tok, c, d, text.len());
            match a.endpoint {
                Endpoint::Chat => {
                    // Hermes calls in the reply of a request with tools: OpenAI's `tool_calls`.
                    let calls = req
                        .tools
                        .parse_reply
                        .then(|| crate::tools::reply_calls(&text, &req.tools, &format!("{}_{i}", a.id)))
                        .flatten();
                    let (message, finish) = match calls {
                        Some((content, calls)) => (
                            json!({"role": "assistant", "content": content, "refusal": Json::Null, "tool_calls": calls}),
                            "tool_calls",
                        ),
                        None => (
                            json!({"role": "assistant", "content": text, "refusal": Json::Null}),
                            finish_reason(&c.finish),
                        ),
                    };
                    json!({
                        "index": i,
                        "message": message,
                        "logprobs": req.logprobs.map(|_| chat_logprobs(tok, kept)),
                        "finish_reason": finish,
                    })
                }
                Endpoint::Completions => {
                    let prompt = if req.echo {
                        prompt_texts.get(c.prompt_index).cloned().unwrap_or_default()
                    } else {
                        String::new()
                    };
                    let offs: Vec<usize> = offs.iter().map(|o| o + prompt.len()).collect();
                    json!({
                        "index": i,
                        "text": prompt + &text,
                        "logprobs": req.logprobs.map(|_| text_logprobs(tok, kept, &offs)),
                        "finish_reason": finish_reason(&c.finish),
                    })
                }
            }
        })
        .collect();
    let object = match a.endpoint {
        Endpoint::Chat => "chat.completion",
        Endpoint::Completions => "text_completion",
    };
    json!({
        "id": a.id,
        "object": object,
        "created": a.created,
        "model": a.model,
        "choices": choices,
        "usage": usage(prompt_tokens, completions),
    })
}

#[cfg(test)]
mod tests {
    use crate::request::{Endpoint, parse};
    use crate::{ServeError, check_addr};

    #[test]
    fn requests_are_validated() {
        let ok = |b: &str| parse(b.as_bytes(), Endpoint::Chat, "m", 100, false, false);
        let r = ok(r#"{"model":"m","messages":[{"role":"user","content":"hi"}],"stop":"x","max_tokens":5}"#)
            .unwrap();
        assert_eq!(r.params.stop, vec!["x".to_string()]);
        assert_eq!(r.params.max_tokens, 5);
        assert_eq!(
            ok(r#"{"messages":[{"role":"user","content":"hi"}]}"#).unwrap().params.max_tokens,
            100
        );
        let m = r#""messages":[{"role":"user","content":"x"}]"#;
        for (body, code, param) in [
            ("{".to_string(), "invalid_json", None),
            ("[]".to_string(), "invalid_request", None),
            (r#"{"messages":[]}"#.to_string(), "invalid_value", Some("messages")),
            (r#"{"messages":[{"role":"robot","content":"x"}]}"#.to_string(), "invalid_value", Some("messages[0].role")),
            (format!(r#"{{{m},"temperature":3}}"#), "invalid_value", Some("temperature")),
            (format!(r#"{{{m},"n":0}}"#), "invalid_value", Some("n")),
            (format!(r#"{{{m},"stop":5}}"#), "invalid_type", Some("stop")),
            (
                r#"{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}"#.to_string(),
                "unsupported_content",
                Some("messages[0].content[0].type"),
            ),
            (format!(r#"{{"model":"other",{m}}}"#), "model_not_found", Some("model")),
            (format!(r#"{{{m},"tools":[{{"type":"function","function":{{"name":"f"}}}}]}}"#), "tools_not_supported", Some("tools")),
            (format!(r#"{{{m},"tool_choice":"auto"}}"#), "tools_not_supported", Some("tool_choice")),
            (format!(r#"{{{m},"response_format":{{"type":"json_object"}}}}"#), "response_format_not_supported", Some("response_format.type")),
            (format!(r#"{{{m},"frequency_penalty":0.5}}"#), "unsupported_parameter", Some("frequency_penalty")),
            (format!(r#"{{{m},"logit_bias":{{"5":1}}}}"#), "unsupported_parameter", Some("logit_bias")),
            (format!(r#"{{{m},"top_logprobs":2}}"#), "invalid_value", Some("top_logprobs")),
            (format!(r#"{{{m},"top_logprobs":21,"logprobs":true}}"#), "invalid_value", Some("top_logprobs")),
            (format!(r#"{{{m},"stream_options":{{"include_usage":true}}}}"#), "invalid_value", Some("stream_options")),
            (format!(r#"{{{m},"frobnicate":1}}"#), "unknown_parameter", Some("frobnicate")),
        ] {
            let e = ok(&body).unwrap_err();
            assert_eq!(e.code, code, "{body}");
            assert_eq!(e.param.as_deref(), param, "{body}");
        }
        // Accepted as OpenAI's clients send them: empty tools, text format, zero penalties.
        let r = ok(&format!(
            r#"{{{m},"tools":[],"tool_choice":"none","response_format":{{"type":"text"}},"presence_penalty":0,"user":"u","stream":true,"stream_options":{{"include_usage":true}},"logprobs":true,"top_logprobs":3}}"#
        ))
        .unwrap();
        assert!(r.stream && r.include_usage);
        assert_eq!(r.logprobs, Some(3));
        let text = |b: &str| parse(b.as_bytes(), Endpoint::Completions, "m", 100, true, false);
        let r = text(r#"{"prompt":"abc","logprobs":2}"#).unwrap();
        assert_eq!((r.params.max_tokens, r.logprobs), (16, Some(2)));
        assert!(text(r#"{"prompt":[[1,2],[3]],"n":2,"best_of":2}"#).is_ok());
        for (body, param) in [
            (r#"{}"#, "prompt"),
            (r#"{"prompt":"a","logprobs":6}"#, "logprobs"),
            (r#"{"prompt":"a","suffix":"b"}"#, "suffix"),
            (r#"{"prompt":"a","best_of":3}"#, "best_of"),
            (r#"{"prompt":"a","echo":true,"logprobs":1}"#, "echo"),
            (r#"{"prompt":[1,"a"]}"#, "prompt"),
            (r#"{"prompt":"a","messages":[]}"#, "messages"),
        ] {
            assert_eq!(text(body).unwrap_err().param.as_deref(), Some(param), "{body}");
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
