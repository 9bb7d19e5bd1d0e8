//! The tabs of one episode's isolated browser context, and the page work that every caller
//! shares: loading a URL, waiting for a tab to settle after something may have navigated it,
//! and taking a snapshot. The episode and the actions it runs both work through [`Tabs`]; it
//! knows nothing of steps, agents or feedback.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::browser::BrowserContextId;
use chromiumoxide::cdp::browser_protocol::page::NavigateParams;
use chromiumoxide::cdp::browser_protocol::target::{
    CreateBrowserContextParams, CreateTargetParams,
};
use serde::{Deserialize, Serialize};

use crate::allow::origin;
use crate::blacklist::Blacklist;
use crate::cdp;
use crate::intercept::Blocked;
use crate::js;
use crate::navwatch::{Nav, NavWatch};
use crate::pool::{BrowserPool, Live};
use crate::snapshot::Snapshot;

/// A tab of the episode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TabInfo {
    /// Index for `switch_tab`.
    pub index: usize,
    /// URL.
    pub url: String,
    /// Title, ≤ 50 chars.
    pub title: String,
    /// Whether it is the active tab.
    pub active: bool,
}

/// The tabs of an isolated browser context on one live browser; never empty.
pub(crate) struct Tabs {
    live: Arc<Live>,
    ctx: BrowserContextId,
    pages: Vec<Page>,
    active: usize,
    /// Navigation events of the active tab (see [`Tabs::watch`]).
    nav: Option<NavWatch>,
    /// The pool the browser belongs to: its viewport, allow-list and blacklist (which learns
    /// from failed loads).
    pool: BrowserPool,
    /// How long settling and loading may take (the step timeout).
    patience: Duration,
}

impl Tabs {
    /// Opens an isolated browser context on `live` with one blank tab.
    pub(crate) async fn open(
        live: &Arc<Live>,
        pool: &BrowserPool,
        patience: Duration,
    ) -> Result<Tabs, String> {
        // Every connection of the context goes through the pool's allow-list proxy, loopback
        // included (for a remote browser, this is what enforces the allow-list).
        let isolated = CreateBrowserContextParams::builder()
            .proxy_server(live.proxy.url())
            .proxy_bypass_list(crate::proxy::BYPASS)
            .build();
        let ctx = live.browser.create_browser_context(isolated).await.map_err(|e| e.to_string())?;
        let params = CreateTargetParams::builder()
            .url("about:blank")
            .browser_context_id(ctx.clone())
            .build()
            .map_err(|e| e.to_string())?;
        let page = live.browser.new_page(params).await.map_err(|e| e.to_string())?;
        Ok(Tabs {
            live: live.clone(),
            ctx,
            pages: vec![page],
            active: 0,
            nav: None,
            pool: pool.clone(),
            patience,
        })
    }

    /// The active tab.
    pub(crate) fn page(&self) -> &Page {
        // `pages` is never empty: `close_active` refuses to close the last tab.
        &self.pages[self.active.min(self.pages.len() - 1)]
    }

    /// The active tab's index.
    pub(crate) fn active(&self) -> usize {
        self.active
    }

    /// How many tabs are open.
    pub(crate) fn len(&self) -> usize {
        self.pages.len()
    }

    /// Whether the browser's connection is still up.
    pub(crate) fn is_alive(&self) -> bool {
        self.live.is_alive()
    }

    /// Every tab's viewport in CSS pixels (the pool's browsers are launched with it).
    pub(crate) fn viewport(&self) -> (u32, u32) {
        self.pool.inner.cfg.viewport
    }

    /// Every tab's device scale factor.
    pub(crate) fn scale(&self) -> f64 {
        self.pool.inner.cfg.scale
    }

    /// The pool's blacklist.
    pub(crate) fn blacklist(&self) -> &Blacklist {
        &self.pool.inner.blacklist
    }

    /// Checks a URL against the pool's allow-list.
    pub(crate) fn check_url(&self, url: &str) -> Result<(), String> {
        self.pool.inner.check_url(url)
    }

    /// The tabs' target ids (also their main frames' ids).
    pub(crate) fn frames(&self) -> Vec<String> {
        self.pages.iter().map(|p| p.target_id().as_ref().to_string()).collect()
    }

    /// The interceptor's sequence number now; compare with later calls to find new events.
    pub(crate) fn seq(&self) -> u64 {
        self.live.seen.seq()
    }

    /// Requests of these tabs blocked after `seq`.
    pub(crate) fn blocked_since(&self, seq: u64) -> Vec<Blocked> {
        self.live.seen.blocked_since(seq, &self.frames())
    }

    /// Targets that these tabs opened after `seq` (popups, `target=_blank`): target ids.
    pub(crate) fn opened_since(&self, seq: u64) -> Vec<String> {
        self.live.seen.opened_since(seq, &self.frames())
    }

    /// Tabs with their titles.
    pub(crate) async fn infos(&self) -> Vec<TabInfo> {
        let mut out = Vec::new();
        for (i, p) in self.pages.iter().enumerate() {
            let url = p.url().await.ok().flatten().unwrap_or_default();
            let title: String =
                p.get_title().await.ok().flatten().unwrap_or_default().chars().take(50).collect();
            out.push(TabInfo { index: i, url, title, active: i == self.active });
        }
        out
    }

    /// Navigates the active tab; `Err` carries Chromium's error text. Blacklists hosts that fail
    /// with DNS/connection errors.
    pub(crate) async fn navigate(&self, url: &str) -> Result<(), String> {
        let res = self.page().execute(NavigateParams::new(url)).await.map_err(|e| e.to_string())?;
        if let Some(err) = &res.result.error_text {
            if let Some(o) = origin(url) {
                self.blacklist().note_failure(&o.host, err);
            }
            return Err(err.clone());
        }
        Ok(())
    }

    /// Opens a blank tab in the context and makes it active; returns its index.
    pub(crate) async fn open_tab(&mut self) -> Result<usize, String> {
        let params = CreateTargetParams::builder()
            .url("about:blank")
            .browser_context_id(self.ctx.clone())
            .build()?;
        let page = self.live.browser.new_page(params).await.map_err(|e| e.to_string())?;
        self.pages.push(page);
        self.active = self.pages.len() - 1;
        Ok(self.active)
    }

    /// Takes in the tab `target` that one of these tabs opened, and makes it active; returns its
    /// index, or `None` if it is one of these tabs already or does not show up within 2 s.
    pub(crate) async fn adopt(&mut self, target: &str) -> Option<usize> {
        if self.frames().iter().any(|f| f == target) {
            return None;
        }
        for _ in 0..100 {
            if let Ok(pages) = self.live.browser.pages().await
                && let Some(p) = pages.into_iter().find(|p| p.target_id().as_ref() == target)
            {
                self.pages.push(p);
                self.active = self.pages.len() - 1;
                return Some(self.active);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        None
    }

    /// Makes tab `i` active and brings it to the front; false if there is no tab `i`.
    pub(crate) async fn switch(&mut self, i: usize) -> bool {
        if i >= self.pages.len() {
            return false;
        }
        self.active = i;
        let _ = self.page().bring_to_front().await;
        true
    }

    /// Closes the active tab; false if it is the last one.
    pub(crate) async fn close_active(&mut self) -> bool {
        if self.pages.len() <= 1 {
            return false;
        }
        let page = self.pages.remove(self.active);
        let _ = page.close().await;
        self.active = self.active.min(self.pages.len() - 1);
        // As after a switch: the tab we now act on is brought to the front. Headless Chromium
        // draws every tab, but a headed remote one draws only its front tab, and a screenshot
        // of a page that is not drawn waits for a frame that never comes.
        let _ = self.page().bring_to_front().await;
        true
    }

    /// Forgets what the interceptor saw of these tabs and disposes of the context (which
    /// closes its tabs too) if the browser is still up.
    pub(crate) async fn close(self) {
        self.live.seen.forget(&self.frames());
        if self.live.is_alive() {
            let _ = tokio::time::timeout(
                Duration::from_secs(5),
                self.live.browser.dispose_browser_context(self.ctx.clone()),
            )
            .await;
        }
    }

    /// Subscribes to the active tab's navigation events unless they are already watched
    /// (before an action, so none is missed), dropping events of earlier actions.
    pub(crate) async fn watch(&mut self) {
        let target = self.page().target_id().as_ref().to_string();
        match &mut self.nav {
            Some(w) if w.target == target => w.clear(),
            _ => self.nav = NavWatch::subscribe(self.page()).await,
        }
    }

    /// Waits until the active tab has settled after an action: if a navigation was requested
    /// or started (or `navigated`: one is known to have happened), until the new document has
    /// loaded or loading stopped; otherwise for `grace` × 10 ms in case one is requested late
    /// (longer for clicks on links and buttons, which often navigate). Looks at the page only
    /// when the tab's navigation events (see [`Tabs::watch`]) say it is worth it, at the end
    /// of the grace period, or every 500 ms in case an event is missed: a script sent while a
    /// navigation is in flight waits for the new document anyway, and every one costs a busy
    /// renderer. Returns the settled URL ("" if unknown).
    pub(crate) async fn settle(&mut self, navigated: bool, url_before: &str, grace: u32) -> String {
        let frame = self.page().target_id().as_ref().to_string();
        let mut watch = self.nav.take().filter(|w| w.target == frame);
        let start = Instant::now();
        let deadline = start + self.patience;
        let grace_end = start + Duration::from_millis(10 * u64::from(grace));
        let mut st = Settling { in_flight: false, finished: false, look: false, next: grace_end };
        let mut href = String::new();
        loop {
            while let Some(ev) = watch.as_mut().and_then(NavWatch::ready) {
                st.on(ev);
            }
            let now = Instant::now();
            if st.look || now >= st.next {
                st.look = false;
                if let Ok(s) = cdp::eval_string(self.page(), js::CHECK_DOCUMENT).await {
                    let mut parts = s.splitn(3, '|');
                    let (mark, ready) = (parts.next(), parts.next());
                    href = parts.next().unwrap_or("").to_string();
                    let complete = ready == Some("complete");
                    let moved = navigated || st.in_flight;
                    // A new document, or one restored from the back-forward cache (still
                    // marked, but at another URL), that has loaded.
                    let replaced = mark == Some("0") || (moved && href != url_before);
                    // The same document: nothing requested within the grace period, a
                    // navigation that ended without replacing it (204, download, same-document),
                    // or a known navigation that has not shown up for 500 ms.
                    let kept = mark == Some("1")
                        && now >= grace_end
                        && if st.in_flight {
                            st.finished
                        } else {
                            !navigated || st.finished || now > start + SAFETY
                        };
                    if complete && (replaced || kept) {
                        break;
                    }
                }
                let wait = if st.in_flight && !st.finished { SAFETY } else { SAFETY / 2 };
                st.next = Instant::now() + wait;
            }
            if Instant::now() > deadline || !self.live.is_alive() {
                href.clear();
                break;
            }
            let sleep = tokio::time::sleep_until(st.next.into());
            match watch.as_mut() {
                Some(w) => tokio::select! {
                    _ = sleep => {}
                    ev = w.next() => match ev {
                        Some(ev) => st.on(ev),
                        None => watch = None,
                    },
                },
                None => sleep.await,
            }
        }
        self.nav = watch;
        href
    }

    /// Takes a fresh snapshot of the active tab (also tags new elements with ids). If the
    /// document is being replaced (a late navigation), waits for it and retries.
    pub(crate) async fn snapshot(&self) -> Result<Snapshot, String> {
        let mut last_err = String::new();
        for attempt in 0..4 {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(50 * attempt)).await;
                let _ = self.wait_loaded().await;
            }
            match cdp::eval_string(self.page(), js::SNAPSHOT).await {
                Ok(s) => return serde_json::from_str(&s).map_err(|e| format!("bad snapshot: {e}")),
                Err(e) if self.live.is_alive() => last_err = e,
                Err(e) => return Err(e),
            }
        }
        Err(last_err)
    }

    /// Waits (up to the step timeout) until the active document's readyState is complete.
    async fn wait_loaded(&self) -> bool {
        let deadline = Instant::now() + self.patience;
        while Instant::now() < deadline && self.live.is_alive() {
            if let Ok(s) = cdp::eval_string(self.page(), "document.readyState").await
                && s == "complete"
            {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }
}

/// How long [`Tabs::settle`] waits for an event before it looks at the page anyway.
const SAFETY: Duration = Duration::from_millis(500);

/// Where [`Tabs::settle`] stands.
struct Settling {
    /// A navigation was requested or started.
    in_flight: bool,
    /// It has since loaded, stopped loading or moved within the document.
    finished: bool,
    /// Look at the page now.
    look: bool,
    /// When to look at the page if no event comes first.
    next: Instant,
}

impl Settling {
    fn on(&mut self, ev: Nav) {
        match ev {
            Nav::Started => {
                (self.in_flight, self.finished) = (true, false);
                // Nothing to see until it finishes: the events say when.
                self.next = self.next.max(Instant::now() + SAFETY);
            }
            Nav::Finished => (self.finished, self.look) = (true, true),
        }
    }
}
