//! `wrlc serve`: an OpenAI-compatible HTTP endpoint over a trained policy, so judges and frozen
//! agent modules can call a local checkpoint through the same client code as a hosted model.
//! `POST /v1/chat/completions`, `POST /v1/completions` (whole or streamed), `GET /v1/models`,
//! `GET /health`; chat messages are rendered with the trainer's own `render_prompt_with` (a
//! templated policy's `tools` included, its calls returned as `tool_calls`: `tools`; a
//! vision-language policy's `image_url` parts read by its own processor: `images`), sampling
//! runs on a blocking thread that takes the policy in turns (`generate`), at most
//! `max_concurrency` requests are admitted at once (the rest get 429), each held to its share
//! of samples and answer (`request`), bodies must be JSON and a loopback bind answers loopback
//! `Host` names only (`guard`), and connections are capped and timed out, the idle ones making
//! way for new ones (`conn`, which `wrlc env serve` serves with too).

mod answer;
mod api;
mod checkpoint;
pub mod conn;
mod error;
mod generate;
mod guard;
mod images;
mod request;
mod share;
mod stream;
mod tools;

use std::future::Future;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::routing::{get, post};
use tokio::sync::{Semaphore, oneshot};
use wrl_trainer::{Tokenizer, Trainer};

pub use checkpoint::{ResolvedCheckpoint, Served, load_adapter, load_policy, resolve_checkpoint};

/// How to serve a policy.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// `host:port` to bind; port 0 picks a free port.
    pub addr: String,
    /// The model id clients name in requests and `/v1/models` lists.
    pub model_name: String,
    /// Requests admitted at once (one samples, the others wait for the policy); more get 429.
    pub max_concurrency: usize,
    /// Allow binding an address other than loopback.
    pub public: bool,
    /// A fixed `created` timestamp for every response (tests); `None` uses the clock.
    pub fixed_created: Option<u64>,
    /// The recipe whose run wrote the checkpoint (its `trainer_state.json`), which
    /// `/v1/models` states.
    pub recipe: Option<wrl_trainer::checkpoint::RecipeIdentity>,
}

/// Connection limits: how many connections are served at once and how long one may stay idle
/// (`conn` says how a full server makes room).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Connections served at once; beyond them, the idle one waiting longest makes room, and
    /// when every one carries a request in flight a new one is answered 503 and closed.
    pub max_connections: usize,
    /// A connection that sends no complete request head (or body) within this is closed.
    pub idle_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_connections: 256, idle_timeout: Duration::from_secs(10) }
    }
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            addr: "127.0.0.1:8000".into(),
            model_name: "policy".into(),
            max_concurrency: 16,
            public: false,
            fixed_created: None,
            recipe: None,
        }
    }
}

/// Why the server did not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The address does not parse or resolve.
    #[error("`{addr}` is not an address to listen on: {reason}")]
    BadAddr { addr: String, reason: String },
    /// A non-loopback address without `public`.
    #[error("refusing to serve on `{addr}`, which is not a loopback address")]
    NotLoopback { addr: String },
    /// Binding failed (port in use, permission).
    #[error("cannot listen on `{addr}`: {source}")]
    Bind { addr: String, source: std::io::Error },
    /// The server failed while running.
    #[error("the server stopped: {0}")]
    Serve(std::io::Error),
}

/// The served policy and what every handler shares.
pub(crate) struct AppState {
    trainer: generate::Policy,
    /// A copy of the policy's tokenizer, to render prompts without the lock.
    tokenizer: Tokenizer,
    /// A vision-language policy's processor and image pads (`images`), to read a request's
    /// images without the lock; `None` for a text policy.
    vision: Option<wrl_trainer::vision::VisionSide>,
    model: String,
    context: usize,
    /// One permit per admitted request, held until its sampling ends (even if the client left).
    admitted: Arc<Semaphore>,
    created: Option<u64>,
    started: u64,
    counter: AtomicU64,
    idle_timeout: Duration,
    recipe: Option<wrl_trainer::checkpoint::RecipeIdentity>,
    /// Bound to a loopback address: only loopback `Host` names are answered (`guard`).
    loopback: bool,
}

/// A bound server, not yet accepting: read [`Server::local_addr`], then [`Server::run`] or
/// [`Server::spawn`].
pub struct Server {
    listener: tokio::net::TcpListener,
    addr: SocketAddr,
    app: Router,
    limits: Limits,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("addr", &self.addr).finish()
    }
}

/// A server running on the tokio runtime; [`ServeHandle::stop`] shuts it down.
#[derive(Debug)]
pub struct ServeHandle {
    addr: SocketAddr,
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<(), ServeError>>,
}

impl ServeHandle {
    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
    /// `http://ADDR/v1`, the base URL clients use.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }
    /// Stops accepting, lets requests in flight finish, and waits for the server.
    pub async fn stop(self) -> Result<(), ServeError> {
        let _ = self.stop.send(());
        match self.task.await {
            Ok(r) => r,
            Err(e) => Err(ServeError::Serve(std::io::Error::other(e.to_string()))),
        }
    }
}

/// Resolves `addr` and refuses a non-loopback address unless `public`.
pub fn check_addr(addr: &str, public: bool) -> Result<SocketAddr, ServeError> {
    let bad = |reason: String| ServeError::BadAddr { addr: addr.to_string(), reason };
    let resolved = addr
        .to_socket_addrs()
        .map_err(|e| bad(e.to_string()))?
        .next()
        .ok_or_else(|| bad("it resolves to nothing".into()))?;
    if !public && !resolved.ip().is_loopback() {
        return Err(ServeError::NotLoopback { addr: addr.to_string() });
    }
    Ok(resolved)
}

impl Server {
    /// Binds the address (loopback only unless `opts.public`) for serving `trainer`.
    pub async fn bind(trainer: Trainer, opts: &ServeOptions) -> Result<Server, ServeError> {
        Server::bind_with(trainer, opts, Limits::default()).await
    }

    /// As [`Server::bind`], with connection limits.
    pub async fn bind_with(
        trainer: Trainer,
        opts: &ServeOptions,
        limits: Limits,
    ) -> Result<Server, ServeError> {
        let target = check_addr(&opts.addr, opts.public)?;
        let listener = tokio::net::TcpListener::bind(target)
            .await
            .map_err(|source| ServeError::Bind { addr: opts.addr.clone(), source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| ServeError::Bind { addr: opts.addr.clone(), source })?;
        let state = Arc::new(AppState {
            context: trainer.model().context(),
            tokenizer: trainer.tokenizer().clone(),
            vision: trainer.model().vision().cloned(),
            trainer: Arc::new(tokio::sync::Mutex::new(trainer)),
            model: opts.model_name.clone(),
            admitted: Arc::new(Semaphore::new(opts.max_concurrency.max(1))),
            created: opts.fixed_created,
            started: opts.fixed_created.unwrap_or_else(now),
            counter: AtomicU64::new(0),
            idle_timeout: limits.idle_timeout,
            recipe: opts.recipe.clone(),
            loopback: target.ip().is_loopback(),
        });
        Ok(Server { listener, addr, app: router(state), limits })
    }

    /// The bound address (the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves until `shutdown` completes, then lets requests in flight finish.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        let reply = error::overloaded_reply();
        conn::serve(self.listener, self.app, self.limits, reply, shutdown)
            .await
            .map_err(ServeError::Serve)
    }

    /// Serves on a background task until [`ServeHandle::stop`].
    pub fn spawn(self) -> ServeHandle {
        let (stop, rx) = oneshot::channel::<()>();
        let addr = self.addr;
        let task = tokio::spawn(self.run(async move {
            let _ = rx.await;
        }));
        ServeHandle { addr, stop, task }
    }
}

pub(crate) fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(api::chat_completions))
        .route("/v1/completions", post(api::completions))
        .route("/v1/models", get(api::models))
        .route("/v1/models/{id}", get(api::model_by_id))
        .route("/health", get(api::health))
        .fallback(api::not_found)
        .method_not_allowed_fallback(api::method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(state.clone(), guard::guard))
        .with_state(state)
}
