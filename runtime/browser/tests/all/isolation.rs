//! The isolation contract of web rollouts (docs/sandbox.md, "Isolation"): every episode runs in
//! a fresh browser context, so nothing one episode leaves in the browser — cookies,
//! localStorage, sessionStorage, IndexedDB, a service worker, Cache Storage, the HTTP cache — is
//! there for another, whether it runs after it or beside it (the G episodes of one group run at
//! once); and the sandbox's server-side state (a cart) is each episode's own. A probe page on a
//! real loopback server writes all of them in one episode and reads them in the others.

#![allow(clippy::unwrap_used)] // tests may unwrap (clippy.toml allows it only inside #[test] fns)

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value as Json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wrl_browser::{AllowList, BrowserPool, Episode, EpisodeCfg, EpisodeSpec, PoolCfg};

/// The probe: reads what an earlier or a concurrent episode could have left, writes its own
/// mark everywhere, waits, and reads its own marks back (another episode's would show there if
/// the storage were shared); the result is `window.__probe`.
const PROBE: &str = r#"<!doctype html><html><head><title>probe</title>
<script src="/cached.js"></script></head><body><p id="out">running</p><script>
(async () => {
  const me = new URLSearchParams(location.search).get('me');
  const cookie = () => (document.cookie.match(/(?:^|; )k=([^;]*)/) || [])[1] || null;
  const db = await new Promise((res, rej) => {
    const r = indexedDB.open('probe', 1);
    r.onupgradeneeded = () => r.result.createObjectStore('kv');
    r.onsuccess = () => res(r.result);
    r.onerror = () => rej(r.error);
  });
  const get = () => new Promise(res => {
    const q = db.transaction('kv').objectStore('kv').get('k');
    q.onsuccess = () => res(q.result === undefined ? null : q.result);
    q.onerror = () => res('error');
  });
  const put = v => new Promise(res => {
    const tx = db.transaction('kv', 'readwrite');
    tx.objectStore('kv').put(v, 'k');
    tx.oncomplete = () => res();
    tx.onerror = () => res();
  });
  window.__step = 'read';
  const seen = {
    local: localStorage.getItem('k'),
    session: sessionStorage.getItem('k'),
    cookie: cookie(),
    idb: await get(),
    workers: (await navigator.serviceWorker.getRegistrations()).length,
    caches: (await caches.keys()).length,
  };
  localStorage.setItem('k', me);
  sessionStorage.setItem('k', me);
  document.cookie = 'k=' + me + '; max-age=3600; path=/';
  await put(me);
  // A registration that never settles (the pool's interception may hold a worker's script)
  // leaves nothing to find either; the next episodes look for one all the same.
  const settled = p => Promise.race([p.then(() => true, () => false),
    new Promise(r => setTimeout(() => r(false), 3000))]);
  window.__step = 'register';
  await settled(navigator.serviceWorker.register('/sw.js'));
  window.__step = 'caches';
  await (await caches.open('probe')).put('/mark', new Response(me));
  window.__step = 'wait';
  await new Promise(r => setTimeout(r, 800));
  const after = { local: localStorage.getItem('k'), cookie: cookie(), idb: await get() };
  window.__probe = { seen, after };
})().catch(e => { window.__probe = { failed: String(e) }; });
</script></body></html>"#;

/// A loopback HTTP server of the probe page, its service worker and a cacheable script, which
/// counts how often the script is fetched (a second fetch: no HTTP cache was shared).
async fn probe_server() -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let fetched = Arc::new(AtomicUsize::new(0));
    let count = fetched.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else { continue };
            let count = count.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let mut got = 0;
                while !buf[..got].windows(4).any(|w| w == b"\r\n\r\n") && got < buf.len() {
                    match s.read(&mut buf[got..]).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got += n,
                    }
                }
                let head = String::from_utf8_lossy(&buf[..got]).into_owned();
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                let (ctype, extra, body) = if path.starts_with("/probe") {
                    ("text/html", "", PROBE.to_string())
                } else if path == "/sw.js" {
                    ("text/javascript", "", "self.addEventListener('fetch', () => {});".into())
                } else if path == "/cached.js" {
                    count.fetch_add(1, Ordering::SeqCst);
                    ("text/javascript", "Cache-Control: public, max-age=3600\r\n", "1;".into())
                } else {
                    ("text/plain", "", "no".into())
                };
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(reply.as_bytes()).await;
                let _ = s.shutdown().await;
            });
        }
    });
    (port, fetched)
}

/// Runs the probe as episode `me` and returns what it saw before writing and after.
async fn probe(pool: &BrowserPool, port: u16, me: &str) -> Json {
    let url = format!("http://127.0.0.1:{port}/probe?me={me}");
    let mut ep: Episode = pool
        .episode(
            EpisodeSpec::url("probe", url),
            EpisodeCfg { max_steps: 5, ..EpisodeCfg::default() },
        )
        .await
        .unwrap();
    assert!(ep.ended().is_none(), "{me}: {:?}", ep.ended());
    let start = Instant::now();
    let out = loop {
        let v = ep.eval_js("window.__probe || null").await.unwrap();
        if !v.is_null() {
            break v;
        }
        if start.elapsed() > Duration::from_secs(30) {
            let step = ep.eval_js("[window.__step, document.readyState, location.href]").await;
            panic!("{me}: the probe never finished: {step:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let _ = ep.finish().await;
    assert!(out.get("failed").is_none(), "{me}: {out}");
    out
}

/// What a fresh context shows the probe before it writes.
fn nothing() -> Json {
    serde_json::json!({"local": null, "session": null, "cookie": null, "idb": null, "workers": 0, "caches": 0})
}

#[test]
fn no_browser_state_crosses_from_one_episode_to_another() {
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let (port, fetched) = probe_server().await;
        let pool = BrowserPool::launch(PoolCfg {
            max_concurrent: 4,
            allow: AllowList::only([format!("127.0.0.1:{port}")]),
            ..PoolCfg::default()
        })
        .await
        .unwrap();
        // One after the other, in the same browser process.
        for me in ["first", "second"] {
            let out = probe(&pool, port, me).await;
            assert_eq!(out["seen"], nothing(), "{me} saw another episode's state: {out}");
            assert_eq!(out["after"]["local"], me, "{out}");
        }
        // A group: four episodes at once, each writing while the others run.
        let group: Vec<Json> = futures::future::join_all(["g0", "g1", "g2", "g3"].map(|me| {
            let pool = pool.clone();
            async move { probe(&pool, port, me).await }
        }))
        .await;
        for (i, out) in group.iter().enumerate() {
            let me = format!("g{i}");
            assert_eq!(out["seen"], nothing(), "{me} saw another episode's state: {out}");
            for k in ["local", "cookie", "idb"] {
                assert_eq!(out["after"][k], me.as_str(), "{me}'s `{k}` was overwritten: {out}");
            }
        }
        // No HTTP cache either: every episode fetched the cacheable script itself.
        assert_eq!(fetched.load(Ordering::SeqCst), 6, "an episode read another's HTTP cache");
    });
}

/// The sandbox's server-side state is each episode's own: what one episode of a group puts in
/// its cart is not in the cart of another that runs beside it or after it.
#[test]
fn a_cart_filled_in_one_episode_is_empty_in_the_others() {
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let sandbox = Arc::new(wrl_sandbox::Sandbox::start(0, 0).await.unwrap());
        let pool = BrowserPool::launch(PoolCfg {
            max_concurrent: 4,
            allow: AllowList::only([format!("127.0.0.1:{}", sandbox.addr().port())]),
            ..PoolCfg::default()
        })
        .await
        .unwrap();
        let task =
            wrl_sandbox::generate_on(sandbox.content(), wrl_sandbox::Split::Train, 1, 3, &["shop"])
                .remove(0);
        let spec = || EpisodeSpec::sandbox_task(&sandbox, &task);
        let cfg = || EpisodeCfg { max_steps: 5, ..EpisodeCfg::default() };
        // Two episodes of one task at once: the first adds the first product to its cart.
        let mut a = pool.episode(spec(), cfg()).await.unwrap();
        let b = pool.episode(spec(), cfg()).await.unwrap();
        a.eval_js(
            "fetch('/shop/cart/add', {method: 'POST', headers: {'Content-Type': \
             'application/x-www-form-urlencoded'}, body: 'id=0', credentials: 'include'}); 1",
        )
        .await
        .unwrap();
        let start = Instant::now();
        while sandbox.state(a.id()).cart.is_empty() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the first episode's cart stays empty"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(sandbox.state(a.id()).cart, vec![0]);
        assert!(sandbox.state(b.id()).cart.is_empty(), "the cart of the episode beside it");
        let _ = a.finish().await;
        let _ = b.finish().await;
        // And one after them starts empty.
        let c = pool.episode(spec(), cfg()).await.unwrap();
        assert!(sandbox.state(c.id()).cart.is_empty(), "the cart of a later episode");
        let _ = c.finish().await;
    });
}
