//! `wrlc serve` under abuse, with real sockets on loopback: 1,100 connections that send nothing
//! are neither held for ever nor keep a normal request out (#25 item 5, #50 item 1); a
//! sustained slowloris that reconnects as soon as it is dropped does not either; a server whose
//! every connection carries a request in flight answers 503 with `Retry-After`; a client that
//! trickles its request head is cut off. A request may not ask for more samples or a larger
//! answer than its share, does not hold the policy from the requests that come after it, must
//! be `application/json`, and on a loopback bind must name a loopback `Host` (#50 item 1).

#![allow(clippy::unwrap_used)] // test helpers fail loudly, like the tests they serve

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value as Json, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wrl_serve::{Limits, ServeOptions, Server};
use wrl_trainer::{Trainer, TrainerConfig};

fn tiny_trainer() -> Trainer {
    let config: TrainerConfig = serde_json::from_value(json!({
        "policy": {"family": "tiny", "layers": 1, "d_model": 16, "heads": 2, "context": 256},
        "seed": 5,
        "device": "cpu",
    }))
    .unwrap();
    Trainer::new(config).unwrap()
}

/// Reads until the server closes; `None` if it has not within `wait`.
async fn read_to_close(s: &mut TcpStream, wait: Duration) -> Option<Vec<u8>> {
    let mut got = Vec::new();
    let r = tokio::time::timeout(wait, async {
        let mut buf = [0u8; 1024];
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    r.ok().map(|()| got)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_cannot_starve_requests() {
    let idle = Duration::from_millis(800);
    let cap = 64;
    let opts = ServeOptions {
        addr: "127.0.0.1:0".into(),
        model_name: "m".into(),
        ..ServeOptions::default()
    };
    let limits = Limits { max_connections: cap, idle_timeout: idle };
    let server = Server::bind_with(tiny_trainer(), &opts, limits).await.unwrap().spawn();
    let addr = server.local_addr();
    let base_url = server.base_url();

    let base = open_fds();
    let mut conns = Vec::new();
    for _ in 0..1_100 {
        conns.push(TcpStream::connect(addr).await.unwrap());
    }
    let opened = Instant::now();
    // The connections the server holds are this process's fds beyond the clients' own.
    let held = |conns: &Vec<TcpStream>| open_fds().saturating_sub(base + conns.len());
    assert!(held(&conns) <= cap + 32, "{} held, past the cap of {cap}", held(&conns));

    // A normal request is served: the idle connections make way for it (the oldest first),
    // without waiting for their idle timeout and without turning it away.
    let http = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let body = json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2});
    let r = tokio::time::timeout(
        idle * 5,
        http.post(format!("{base_url}/chat/completions")).json(&body).send(),
    )
    .await
    .expect("no request served while idle connections were held")
    .unwrap();
    assert_eq!(r.status(), 200, "{:?}", r.text().await);
    assert!(opened.elapsed() < idle * 5, "served only after {:?}", opened.elapsed());

    // Soon the server holds none of them; none was answered: they asked nothing.
    while held(&conns) > 16 {
        assert!(opened.elapsed() < idle * 20, "{} idle connections still held", held(&conns));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for c in &mut conns {
        let mut buf = [0u8; 64];
        let read = tokio::time::timeout(Duration::from_millis(5), c.read(&mut buf)).await;
        assert!(!matches!(read, Ok(Ok(n)) if n > 0), "an idle connection was answered");
    }
    server.stop().await.unwrap();
}

/// File descriptors this process has open (the server's sockets among them).
fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0)
}

/// Half a request head on `s`, then a byte every 300 ms until the server drops it (or `stop`).
async fn trickle(s: &mut TcpStream, stop: &AtomicBool) {
    if s.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ").await.is_err() {
        return;
    }
    let mut buf = [0u8; 1024];
    while !stop.load(Ordering::SeqCst) {
        match tokio::time::timeout(Duration::from_millis(300), s.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return,
            // A reply (503): the server closes next.
            Ok(Ok(_)) => {}
            Err(_) => {
                if s.write_all(b"a").await.is_err() {
                    return;
                }
            }
        }
    }
}

/// A sustained slowloris: three times as many connections as the server holds, each trickling
/// its head and reconnecting as soon as it is dropped. Before, real clients were answered 503
/// (27 of 30); the idle connections now make way for them, the oldest first.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sustained_slowloris_does_not_keep_real_clients_out() {
    let cap = 32;
    let opts = ServeOptions {
        addr: "127.0.0.1:0".into(),
        model_name: "m".into(),
        ..ServeOptions::default()
    };
    let limits = Limits { max_connections: cap, idle_timeout: Duration::from_secs(2) };
    let server = Server::bind_with(tiny_trainer(), &opts, limits).await.unwrap().spawn();
    let addr = server.local_addr();
    let stop = Arc::new(AtomicBool::new(false));
    let reconnects = Arc::new(AtomicUsize::new(0));
    let mut attackers = Vec::new();
    for _ in 0..cap * 3 {
        let (stop, reconnects) = (stop.clone(), reconnects.clone());
        attackers.push(tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                match TcpStream::connect(addr).await {
                    Ok(mut s) => trickle(&mut s, &stop).await,
                    Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
                }
                reconnects.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let http = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let body = json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2});
    let mut served = 0;
    let mut refused = Vec::new();
    for _ in 0..30 {
        let sent = http
            .post(format!("{}/chat/completions", server.base_url()))
            .json(&body)
            .timeout(Duration::from_secs(10))
            .send()
            .await;
        match sent {
            Ok(r) if r.status() == 200 => served += 1,
            Ok(r) => refused.push(r.status().to_string()),
            Err(e) => refused.push(e.to_string()),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.store(true, Ordering::SeqCst);
    for a in attackers {
        let _ = a.await;
    }
    assert!(reconnects.load(Ordering::SeqCst) >= cap, "the attackers were never dropped");
    assert!(served >= 28, "{served} of 30 real requests served under slowloris: {refused:?}");
    server.stop().await.unwrap();
}

/// A server whose every connection carries a request in flight turns a new one away with a
/// 503 and `Retry-After` (requests in flight are never dropped to make room).
#[tokio::test]
async fn a_server_busy_with_requests_answers_503() {
    let opts = ServeOptions {
        addr: "127.0.0.1:0".into(),
        model_name: "m".into(),
        ..ServeOptions::default()
    };
    let limits = Limits { max_connections: 2, idle_timeout: Duration::from_secs(3) };
    let server = Server::bind_with(tiny_trainer(), &opts, limits).await.unwrap().spawn();
    let addr = server.local_addr();
    // Two requests whose bodies have not all arrived: both are in flight.
    let mut busy = Vec::new();
    for _ in 0..2 {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(
            b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"prompt\"",
        )
        .await
        .unwrap();
        busy.push(s);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut third = TcpStream::connect(addr).await.unwrap();
    third.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").await.unwrap();
    let got = read_to_close(&mut third, Duration::from_secs(2)).await.expect("no answer");
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 503"), "{text}");
    assert!(text.contains("retry-after: 1") && text.contains("too_many_connections"), "{text}");
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_trickled_request_head_is_cut_off() {
    let idle = Duration::from_millis(600);
    let opts = ServeOptions {
        addr: "127.0.0.1:0".into(),
        model_name: "m".into(),
        ..ServeOptions::default()
    };
    let limits = Limits { idle_timeout: idle, ..Limits::default() };
    let server = Server::bind_with(tiny_trainer(), &opts, limits).await.unwrap().spawn();
    let mut s = TcpStream::connect(server.local_addr()).await.unwrap();
    let started = Instant::now();
    // One byte of the head every 100 ms: each byte is in time, the head as a whole is not.
    let head = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
    let mut closed = false;
    for b in head {
        if s.write_all(&[*b]).await.is_err() {
            closed = true;
            break;
        }
        let mut buf = [0u8; 64];
        if let Ok(Ok(0)) = tokio::time::timeout(Duration::from_millis(100), s.read(&mut buf)).await
        {
            closed = true;
            break;
        }
    }
    assert!(closed, "a head trickled over {:?} was still being read", started.elapsed());
    assert!(started.elapsed() < idle * 3, "cut off only after {:?}", started.elapsed());

    // A kept-alive connection that goes quiet after a request is closed too.
    let mut k = TcpStream::connect(server.local_addr()).await.unwrap();
    k.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").await.unwrap();
    let got =
        read_to_close(&mut k, idle * 4).await.expect("a quiet kept-alive connection stays open");
    assert!(got.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&got));
    server.stop().await.unwrap();
}

/// A tiny policy with more room: a slower forward, so that a long request takes a while.
fn wider_trainer() -> Trainer {
    let config: TrainerConfig = serde_json::from_value(json!({
        "policy": {"family": "tiny", "layers": 2, "d_model": 128, "heads": 4, "context": 512},
        "seed": 5,
        "device": "cpu",
    }))
    .unwrap();
    Trainer::new(config).unwrap()
}

async fn bound(trainer: Trainer) -> wrl_serve::ServeHandle {
    let opts = ServeOptions {
        addr: "127.0.0.1:0".into(),
        model_name: "m".into(),
        ..ServeOptions::default()
    };
    Server::bind(trainer, &opts).await.unwrap().spawn()
}

/// The start of an answer, for a failed assertion (an answer may be megabytes).
fn short(v: &Json) -> String {
    v.to_string().chars().take(400).collect()
}

async fn post(http: &reqwest::Client, url: String, body: &Json) -> (u16, Json) {
    let r = http.post(url).json(body).send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Json::Null))
}

/// `n` was capped at 64 per prompt, but the legacy prompt list was not: 10,000 prompts with
/// `n` = 64 were 640,000 samples that held the policy for minutes and answered 48 MB. A
/// request now asks for at most 64 completions in all, and for an answer of a bounded size.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_is_held_to_its_share_of_samples_and_answer() {
    let server = bound(tiny_trainer()).await;
    let base = server.base_url();
    let http = reqwest::Client::new();
    let many = json!({"prompt": vec!["x"; 10_000], "n": 64, "max_tokens": 1});
    let (status, e) = tokio::time::timeout(
        Duration::from_secs(30),
        post(&http, format!("{base}/completions"), &many),
    )
    .await
    .expect("a request for 640,000 samples was not refused at once");
    assert_eq!(status, 400, "{}", short(&e));
    assert_eq!(e["error"]["code"], "too_many_samples", "{}", short(&e));
    assert_eq!(e["error"]["param"], "n", "{}", short(&e));
    let over = json!({"prompt": vec!["x"; 33], "n": 2, "max_tokens": 1});
    let (status, e) = post(&http, format!("{base}/completions"), &over).await;
    assert_eq!(
        (status, e["error"]["code"].as_str()),
        (400, Some("too_many_samples")),
        "{}",
        short(&e)
    );
    let at = json!({"prompt": vec!["x"; 32], "n": 2, "max_tokens": 1});
    let (status, v) = post(&http, format!("{base}/completions"), &at).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["choices"].as_array().unwrap().len(), 64);
    // 64 completions of 200 tokens with 20 alternatives each: an answer past the budget.
    let messages = json!([{"role": "user", "content": "hi"}]);
    let big = json!({"messages": messages, "n": 64, "max_tokens": 200, "logprobs": true, "top_logprobs": 20});
    let (status, e) = post(&http, format!("{base}/chat/completions"), &big).await;
    assert_eq!(status, 400, "{}", short(&e));
    assert_eq!(e["error"]["code"], "response_too_large", "{}", short(&e));
    assert_eq!(e["error"]["param"], "max_tokens", "{}", short(&e));
    server.stop().await.unwrap();
}

/// One request held the policy for its whole sampling: a short request sent while a long one
/// ran waited for all of it. The policy is now taken in turns, one prompt at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_request_does_not_hold_the_policy_from_the_next() {
    let server = bound(wider_trainer()).await;
    let base = server.base_url();
    let http = reqwest::Client::new();
    let long = json!({"prompt": vec!["a"; 32], "n": 2, "max_tokens": 300, "temperature": 0});
    let t0 = Instant::now();
    let long = {
        let (http, url) = (http.clone(), format!("{base}/completions"));
        tokio::spawn(async move {
            let (status, _) = post(&http, url, &long).await;
            (status, t0.elapsed())
        })
    };
    // The long request holds the policy by now.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let sent = Instant::now();
    let short = json!({"prompt": "b", "max_tokens": 2});
    let (status, v) = post(&http, format!("{base}/completions"), &short).await;
    assert_eq!(status, 200, "{v}");
    let waited = sent.elapsed();
    let (status, long_took) = long.await.unwrap();
    assert_eq!(status, 200);
    assert!(
        waited * 2 < long_took,
        "the short request took {waited:?} beside a long one of {long_took:?}: it waited for it"
    );
    server.stop().await.unwrap();
}

/// A raw HTTP/1.1 request: the reply's status and text.
async fn raw(addr: std::net::SocketAddr, request: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(request.as_bytes()).await.unwrap();
    let got = read_to_close(&mut s, Duration::from_secs(20)).await.expect("no reply");
    let text = String::from_utf8_lossy(&got).into_owned();
    let status = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, text)
}

/// JSON under any `Content-Type` made every completion a CORS-simple request any web page
/// could fire; any `Host` let DNS rebinding read the answers. A body must be
/// `application/json`, and a loopback bind answers loopback `Host` names only.
#[tokio::test]
async fn requests_must_be_json_and_name_a_loopback_host() {
    let server = bound(tiny_trainer()).await;
    let addr = server.local_addr();
    let port = addr.port();
    let body = r#"{"prompt": "a", "max_tokens": 1}"#;
    let post = |host: &str, ctype: &str| {
        format!(
            "POST /v1/completions HTTP/1.1\r\nHost: {host}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    let here = format!("127.0.0.1:{port}");
    let (status, text) = raw(addr, &post(&here, "text/plain")).await;
    assert_eq!(status, 415, "{text}");
    assert!(text.contains("unsupported_media_type"), "{text}");
    let (status, text) = raw(addr, &post(&here, "application/x-www-form-urlencoded")).await;
    assert_eq!(status, 415, "{text}");
    for ok in ["application/json", "application/json; charset=utf-8", "Application/JSON"] {
        let (status, text) = raw(addr, &post(&here, ok)).await;
        assert_eq!(status, 200, "{ok}: {text}");
    }
    for host in [format!("localhost:{port}"), format!("[::1]:{port}"), "127.0.0.1".into()] {
        let (status, text) = raw(addr, &post(&host, "application/json")).await;
        assert_eq!(status, 200, "{host}: {text}");
    }
    for host in [format!("evil.example:{port}"), "rebound.attacker.test".into(), "10.0.0.1".into()]
    {
        let (status, text) = raw(addr, &post(&host, "application/json")).await;
        assert_eq!(status, 403, "{host}: {text}");
        assert!(text.contains("invalid_host"), "{text}");
        let get = format!("GET /v1/models HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
        assert_eq!(raw(addr, &get).await.0, 403, "{host}");
    }
    server.stop().await.unwrap();
}
