//! OpenAI-shaped error replies, `{"error": {"message", "type", "param", "code"}}`, with the
//! field at fault in `param` and `Retry-After` on 429, so clients' retry logic and error
//! messages work as they do against OpenAI.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value as Json, json};

/// Seconds a client is told to wait before retrying a 429 or 503.
pub(crate) const RETRY_AFTER_SECS: u64 = 1;

/// An OpenAI-style error reply.
#[derive(Debug)]
pub(crate) struct ApiError {
    pub(crate) status: StatusCode,
    pub(crate) kind: &'static str,
    pub(crate) code: &'static str,
    pub(crate) message: String,
    /// The request field at fault (`messages[0].role`), when one is.
    pub(crate) param: Option<String>,
}

impl ApiError {
    /// A 400 about the field `param`.
    pub(crate) fn invalid(
        code: &'static str,
        param: impl Into<String>,
        message: impl Into<String>,
    ) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            kind: "invalid_request_error",
            code,
            message: message.into(),
            param: Some(param.into()),
        }
    }
    /// A 400 about the whole body.
    pub(crate) fn body(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            kind: "invalid_request_error",
            code,
            message: message.into(),
            param: None,
        }
    }
    pub(crate) fn server(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            kind: "server_error",
            code: "internal_error",
            message: message.into(),
            param: None,
        }
    }
    pub(crate) fn busy() -> ApiError {
        ApiError {
            status: StatusCode::TOO_MANY_REQUESTS,
            kind: "rate_limit_error",
            code: "rate_limit_exceeded",
            message: "the server is busy (max concurrency reached); retry later".into(),
            param: None,
        }
    }
    pub(crate) fn model_not_found(asked: &str, served: &str) -> ApiError {
        ApiError {
            status: StatusCode::NOT_FOUND,
            kind: "invalid_request_error",
            code: "model_not_found",
            message: format!("the model `{asked}` does not exist; this server serves `{served}`"),
            param: Some("model".into()),
        }
    }

    /// The JSON body.
    pub(crate) fn to_json(&self) -> Json {
        json!({"error": {
            "message": self.message,
            "type": self.kind,
            "param": self.param,
            "code": self.code,
        }})
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let retry =
            matches!(self.status, StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE);
        let mut resp = (self.status, axum::Json(self.to_json())).into_response();
        if retry {
            resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
        }
        resp
    }
}

/// The raw HTTP/1.1 reply to a connection turned away because the server holds its maximum
/// number of connections: written before the request is read, then the connection closes.
pub(crate) fn overloaded_reply() -> Vec<u8> {
    let body = ApiError {
        status: StatusCode::SERVICE_UNAVAILABLE,
        kind: "server_error",
        code: "too_many_connections",
        message: "the server holds its maximum number of connections; retry later".into(),
        param: None,
    }
    .to_json()
    .to_string();
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: \
         {RETRY_AFTER_SECS}\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}
