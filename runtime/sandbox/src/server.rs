//! The axum server of the sandbox web on 127.0.0.1: routes, the shared site, start and stop.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;

use axum::response::Html;
use axum::routing::{get, post};
use tokio::sync::oneshot;

use crate::content::Content;
use crate::html::page;
use crate::site::{Site, not_found};
use crate::state::{EpisodeState, StateStore};
use crate::{forum, lab, search_api, shop, wiki};

async fn index() -> Html<String> {
    Html(page(
        "Sandbox",
        "<h1>Sandbox web</h1><ul><li><a href=\"/shop/\">Shop</a></li><li><a href=\"/forum/\">Forum</a></li>\
         <li><a href=\"/wiki/\">Wiki</a></li><li><a href=\"/lab/\">Lab</a></li></ul>",
    ))
}

/// Builds the router of the whole sandbox web.
pub fn router(site: Arc<Site>) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/shop/", get(shop::home))
        .route("/shop/search", get(shop::search))
        .route("/shop/product/{id}", get(shop::product))
        .route("/shop/cart", get(shop::cart))
        .route("/shop/cart/add", post(shop::cart_add))
        .route("/shop/cart/remove", post(shop::cart_remove))
        .route("/forum/", get(forum::home))
        .route("/forum/post/{id}", get(forum::post))
        .route("/forum/vote/{id}", post(forum::vote))
        .route("/forum/comment/{id}", post(forum::comment))
        .route("/forum/login", get(forum::login_form).post(forum::login))
        .route("/wiki/", get(wiki::home))
        .route("/wiki/search", get(wiki::search))
        .route("/wiki/article/{slug}", get(wiki::article))
        .route("/api/search", get(search_api::api_search))
        .route("/api/visit", get(search_api::api_visit))
        .route("/lab/", get(lab::lab))
        .route("/lab/other", get(lab::other))
        .route("/lab/empty", get(lab::empty))
        .route("/lab/slow", get(lab::slow))
        .route("/lab/files", get(lab::files))
        .route("/lab/files/{name}", get(lab::file))
        .fallback(|| async { not_found("no such page") })
        .with_state(site)
}

/// Errors starting the sandbox server.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// Binding the TCP port failed.
    #[error(
        "cannot listen on 127.0.0.1:{port}: {source} (choose another port with --port, or 0 for any)"
    )]
    Bind {
        /// The requested port.
        port: u16,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// A running sandbox web. Dropping it stops the server.
#[derive(Debug)]
pub struct Sandbox {
    site: Arc<Site>,
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
}

impl Sandbox {
    /// Serves the sandbox web for `seed` on 127.0.0.1:`port` (0 = any free port).
    /// Must be called inside a tokio runtime; the server runs on a spawned task.
    pub async fn start(seed: u64, port: u16) -> Result<Sandbox, SandboxError> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|source| SandboxError::Bind { port, source })?;
        let addr = listener.local_addr().map_err(|source| SandboxError::Bind { port, source })?;
        let site = Arc::new(Site { content: Content::new(seed), store: StateStore::default() });
        let app = router(site.clone());
        let (tx, rx) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = rx.await;
                })
                .await;
            if let Err(e) = served {
                tracing::warn!("sandbox server stopped: {e}");
            }
        });
        Ok(Sandbox { site, addr, stop: Some(tx) })
    }

    /// `http://127.0.0.1:PORT` (no trailing slash).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The content served.
    pub fn content(&self) -> &Content {
        &self.site.content
    }

    /// Resets the state of `episode` (call before the episode starts).
    pub fn reset(&self, episode: &str) {
        self.site.store.reset(episode);
    }

    /// A copy of the state of `episode`, for checkers.
    pub fn state(&self, episode: &str) -> EpisodeState {
        self.site.store.snapshot(episode)
    }

    /// Forgets the state of `episode`.
    pub fn forget(&self, episode: &str) {
        self.site.store.remove(episode);
    }

    /// The URLs of the sites, for people: (name, url).
    pub fn site_urls(&self) -> Vec<(&'static str, String)> {
        let b = self.base_url();
        vec![
            ("shop", format!("{b}/shop/")),
            ("forum", format!("{b}/forum/")),
            ("wiki", format!("{b}/wiki/")),
            ("lab", format!("{b}/lab/")),
            ("search", format!("{b}/api/search?q=")),
        ]
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}
