//! Accepting connections with limits, so idle or slow clients cannot exhaust the server: at most
//! `max_connections` are served at once (the rest get a 503 with `Retry-After` and are closed),
//! and a connection that sends no complete request head within `idle_timeout` — a new one or a
//! kept-alive one between requests — is closed. Bodies are read under the same limit
//! (`api::read_body`). HTTP/1.1 only (what OpenAI's clients speak).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use crate::ServeError;
use crate::error::overloaded_reply;

/// The connection limits of a server.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub(crate) max_connections: usize,
    pub(crate) idle_timeout: Duration,
}

/// Serves `app` on `listener` until `shutdown`, then lets requests in flight finish.
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            () = &mut shutdown => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(_) => {
                // Out of file descriptors or a connection reset before accept: wait for
                // connections to close instead of spinning.
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tokio::spawn(turn_away(stream));
            continue;
        };
        let conn = http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.idle_timeout)
            .keep_alive(true)
            .serve_connection(TokioIo::new(stream), TowerToHyperService::new(app.clone()));
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// Answers 503 before the request is read, then closes; what the client sent is drained for a
/// moment first, so the close does not reset the connection before the client reads the reply.
async fn turn_away(mut stream: TcpStream) {
    let reply = overloaded_reply();
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let _ = stream.write_all(&reply).await;
        let _ = stream.shutdown().await;
        let mut sink = [0u8; 4096];
        let mut left = 64 * 1024;
        while left > 0 {
            match stream.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => left -= n.min(left),
            }
        }
    })
    .await;
}
