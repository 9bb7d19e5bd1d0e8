//! What every page of the sandbox web shares: the site (content and per-episode state), the
//! episode a request belongs to, and the 404 page.

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};

use crate::content::Content;
use crate::html::page;
use crate::state::{StateStore, episode_from_cookie};

/// Content plus per-episode state: what every handler sees.
#[derive(Debug)]
pub struct Site {
    /// Deterministic content.
    pub content: Content,
    /// Per-episode state.
    pub store: StateStore,
}

/// The episode id of a request (from its cookie).
pub fn episode_of(headers: &HeaderMap) -> String {
    episode_from_cookie(headers.get(header::COOKIE).and_then(|v| v.to_str().ok()))
}

/// A 404 page.
pub fn not_found(what: &str) -> Response {
    (StatusCode::NOT_FOUND, Html(page("Not found", &format!("<h1>Not found</h1><p>{what}</p>"))))
        .into_response()
}
