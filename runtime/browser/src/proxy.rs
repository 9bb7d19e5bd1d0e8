//! The allow-list proxy: the one door out of the browser. Every browser context the pool opens
//! (and, for a browser it launches, the whole browser) sends all its traffic — page loads,
//! subresources, WebSockets, prefetch and prerender, workers, WebRTC's TURN over TCP — through
//! this HTTP proxy on the pool's side, which opens a connection only to an endpoint the
//! allow-list admits. Request interception (`intercept`) stays for feedback; this is the
//! guarantee, since it sees traffic that interception does not (docs/run.md).

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::allow::{AllowList, origin};

/// Longest request head read (request line and headers).
const MAX_HEAD: usize = 64 * 1024;
/// How long a client may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// How long connecting to an allowed endpoint may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// A running proxy; stops when dropped.
#[derive(Debug)]
pub struct Proxy {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    /// Listens on `ip` (an ephemeral port) and admits what `allow` admits; the proxy's own port
    /// is added to the list's control ports first.
    pub async fn start(ip: IpAddr, allow: Arc<Mutex<AllowList>>) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind((ip, 0)).await?;
        let addr = listener.local_addr()?;
        allow.lock().unwrap_or_else(PoisonError::into_inner).block_control_port(addr.port());
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let allow = allow.clone();
                tokio::spawn(async move {
                    let snapshot = allow.lock().unwrap_or_else(PoisonError::into_inner).clone();
                    if let Err(why) = serve(client, &snapshot).await {
                        tracing::debug!("proxy: {why}");
                    }
                });
            }
        });
        Ok(Proxy { addr, task })
    }

    /// `http://IP:PORT`, for `--proxy-server` and `Target.createBrowserContext`.
    pub fn url(&self) -> String {
        match self.addr {
            SocketAddr::V4(a) => format!("http://{a}"),
            SocketAddr::V6(a) => format!("http://[{}]:{}", a.ip(), a.port()),
        }
    }
}

/// The bypass list that sends loopback through the proxy too (Chromium bypasses it by default).
pub const BYPASS: &str = "<-loopback>";

/// Answers one client connection: a `CONNECT host:port` tunnel (HTTPS, WebSockets, TURN over
/// TCP) or one plain HTTP request in absolute form, forwarded with `Connection: close` so that
/// a kept-alive connection cannot carry a second request to another host.
async fn serve(mut client: TcpStream, allow: &AllowList) -> Result<(), String> {
    let (head, rest) = read_head(&mut client).await?;
    let text = String::from_utf8_lossy(&head).to_string();
    let mut lines = text.split("\r\n");
    let first = lines.next().unwrap_or_default();
    let mut parts = first.split(' ');
    let (method, target, version) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or("HTTP/1.1"),
    );
    if method.eq_ignore_ascii_case("CONNECT") {
        // Any web scheme reads the same to the list; the port tells HTTPS from the rest.
        let url = format!("http://{target}/");
        let mut upstream = match admit(allow, &url).await {
            Ok(s) => s,
            Err(why) => return refuse(&mut client, why).await,
        };
        client
            .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .await
            .map_err(|e| e.to_string())?;
        if !rest.is_empty() {
            upstream.write_all(&rest).await.map_err(|e| e.to_string())?;
        }
        let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
        return Ok(());
    }
    if !target.to_ascii_lowercase().starts_with("http://") {
        return refuse(&mut client, (403, format!("not a proxy request: {method} {target}"))).await;
    }
    let mut upstream = match admit(allow, target).await {
        Ok(s) => s,
        Err(why) => return refuse(&mut client, why).await,
    };
    let after_scheme = &target["http://".len()..];
    let path = after_scheme.find('/').map_or("/", |i| &after_scheme[i..]);
    let mut out = format!("{method} {path} {version}\r\n");
    for line in lines.filter(|l| !l.is_empty()) {
        let name = line.split(':').next().unwrap_or_default().trim().to_ascii_lowercase();
        if !matches!(name.as_str(), "connection" | "proxy-connection" | "keep-alive") {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    out.push_str("Connection: close\r\n\r\n");
    upstream.write_all(out.as_bytes()).await.map_err(|e| e.to_string())?;
    upstream.write_all(&rest).await.map_err(|e| e.to_string())?;
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
    Ok(())
}

/// Connects to `url`'s endpoint if the list admits it and every address its host resolves to
/// (a name pointing at a control port on loopback is refused too). Refused: 403; allowed but
/// unreachable: 502, as a gateway says it.
async fn admit(allow: &AllowList, url: &str) -> Result<TcpStream, (u16, String)> {
    let blocked = |why: String| (403, why);
    let down = |why: String| (502, why);
    allow.check(url).map_err(blocked)?;
    let o = origin(url).ok_or_else(|| blocked(format!("not a web URL: {url}")))?;
    let host = o.host.clone();
    let addrs: Vec<SocketAddr> =
        tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::lookup_host((host.as_str(), o.port)))
            .await
            .map_err(|_| down(format!("resolving {host} timed out")))?
            .map_err(|e| down(format!("cannot resolve {host}: {e}")))?
            .collect();
    for a in &addrs {
        allow.check_addr(a).map_err(blocked)?;
    }
    let first = addrs.first().ok_or_else(|| down(format!("{host} has no address")))?;
    tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(first))
        .await
        .map_err(|_| down(format!("connecting to {first} timed out")))?
        .map_err(|e| down(format!("cannot connect to {first}: {e}")))
}

/// Answers 403 to a blocked request and closes; closes without an answer when the endpoint is
/// allowed but unreachable (502), so that the page meets a network error as it would without
/// the proxy (`ERR_EMPTY_RESPONSE`, `ERR_TUNNEL_CONNECTION_FAILED`), not a page.
async fn refuse(client: &mut TcpStream, (status, why): (u16, String)) -> Result<(), String> {
    if status != 403 {
        let _ = client.shutdown().await;
        return Err(format!("unreachable: {why}"));
    }
    let (line, body) = ("403 Forbidden", format!("blocked by the allow-list: {why}\n"));
    let resp = format!(
        "HTTP/1.1 {line}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = client.write_all(resp.as_bytes()).await;
    let _ = client.shutdown().await;
    Err(format!("refused: {why}"))
}

/// Reads up to the end of the request head; returns the head and what came after it.
async fn read_head(client: &mut TcpStream) -> Result<(Vec<u8>, Vec<u8>), String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    let read = async {
        loop {
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let rest = buf.split_off(end + 4);
                buf.truncate(end);
                return Ok((std::mem::take(&mut buf), rest));
            }
            if buf.len() > MAX_HEAD {
                return Err(format!("request head over {MAX_HEAD} bytes"));
            }
            match client.read(&mut chunk).await {
                Ok(0) => return Err("client closed before its request head ended".into()),
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e) => return Err(e.to_string()),
            }
        }
    };
    tokio::time::timeout(HEAD_TIMEOUT, read)
        .await
        .map_err(|_| "request head timed out".to_string())?
}

/// The local address a proxy for a browser at `remote` (a CDP URL) must listen on to be
/// reachable from it: the address this machine routes to that host from (loopback for a
/// browser on this machine). No packet is sent.
pub fn local_ip_toward(remote: &str) -> Option<IpAddr> {
    let o = origin(remote)?;
    let ip: IpAddr = match o.host.parse() {
        Ok(ip) => ip,
        Err(_) => {
            std::net::ToSocketAddrs::to_socket_addrs(&(o.host.as_str(), o.port)).ok()?.next()?.ip()
        }
    };
    if ip.is_loopback() {
        return Some(ip);
    }
    let any = if ip.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" };
    let bind: SocketAddr = any.parse().ok()?;
    let probe = std::net::UdpSocket::bind(bind).ok()?;
    probe.connect((ip, o.port.max(1))).ok()?;
    Some(probe.local_addr().ok()?.ip())
}
