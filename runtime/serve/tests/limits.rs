//! `wrlc serve` under idle and slow connections (#25 item 5), with real sockets on loopback:
//! 1,100 connections that send nothing must neither be held for ever nor keep a normal request
//! out for longer than the idle timeout; beyond the connection cap they are answered 503 with
//! `Retry-After`; a client that trickles its request head is cut off.

#![allow(clippy::unwrap_used)] // test helpers fail loudly, like the tests they serve

use std::time::{Duration, Instant};

use serde_json::json;
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
    let base = server.base_url();

    // The idle timeout of the first connections runs from their accept, during this loop.
    let started = Instant::now();
    let mut conns = Vec::new();
    for _ in 0..1_100 {
        conns.push(TcpStream::connect(addr).await.unwrap());
    }
    let opened = Instant::now();

    // A normal request is served once the idle connections time out, not never.
    let http = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let body = json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2});
    let mut turned_away = 0;
    let served = loop {
        match http.post(format!("{base}/chat/completions")).json(&body).send().await {
            Ok(r) if r.status() == 200 => break started.elapsed(),
            Ok(r) => {
                assert_eq!(r.status().as_u16(), 503, "only a full server turns a request away");
                assert_eq!(r.headers()["retry-after"], "1");
                let e: serde_json::Value = r.json().await.unwrap();
                assert_eq!(e["error"]["code"], "too_many_connections", "{e}");
                turned_away += 1;
            }
            // A connection closed before the reply was read also counts as turned away.
            Err(_) => turned_away += 1,
        }
        assert!(opened.elapsed() < idle * 4, "no request served while idle connections were held");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(turned_away > 0, "1,100 idle connections did not fill a cap of {cap}");
    assert!(served >= idle / 2, "served after {served:?}, before any idle connection timed out");

    // Every idle connection was closed by the server: the ones beyond the cap at once with a
    // 503, the others after the idle timeout without a reply.
    let (mut refused, mut silent) = (0, 0);
    for c in &mut conns {
        let got =
            read_to_close(c, idle * 3).await.expect("the server keeps an idle connection open");
        if got.starts_with(b"HTTP/1.1 503") {
            refused += 1;
        } else {
            silent += 1;
        }
    }
    assert!(silent <= cap, "{silent} idle connections were held, more than the cap of {cap}");
    assert_eq!(refused + silent, 1_100);
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
    let head = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
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
    k.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let got =
        read_to_close(&mut k, idle * 4).await.expect("a quiet kept-alive connection stays open");
    assert!(got.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&got));
    server.stop().await.unwrap();
}
