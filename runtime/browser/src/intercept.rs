//! Request interception for the allow-list: `Fetch.enable` on the browser session pauses every
//! request of every page; allowed ones continue, others fail with `BlockedByClient` and are
//! recorded (per frame) so the episode can report them in feedback.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError, Weak};

use chromiumoxide::Browser;
use chromiumoxide::cdp::browser_protocol::fetch::{
    ContinueRequestParams, EnableParams, EventRequestPaused, FailRequestParams,
};
use chromiumoxide::cdp::browser_protocol::network::ErrorReason;
use chromiumoxide::cdp::browser_protocol::target::EventTargetCreated;
use futures::StreamExt;
use futures::stream::FuturesUnordered;

use crate::allow::AllowList;

/// A blocked request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    /// Sequence number (increasing).
    pub seq: u64,
    /// Frame that made the request (the main frame's id equals its page's target id).
    pub frame: String,
    /// URL, shortened to 100 chars.
    pub url: String,
    /// Why it was blocked.
    pub reason: String,
}

/// What the interceptor has seen, shared with the episodes.
#[derive(Debug, Default)]
pub struct Seen {
    seq: AtomicU64,
    blocked: Mutex<Vec<Blocked>>,
    opened: Mutex<Vec<(u64, String, String)>>,
}

impl Seen {
    /// The current sequence number; compare with later calls to find new events.
    pub fn seq(&self) -> u64 {
        self.seq.load(Ordering::SeqCst)
    }

    /// Blocked requests after `since` from any of `frames`.
    pub fn blocked_since(&self, since: u64, frames: &[String]) -> Vec<Blocked> {
        let b = self.blocked.lock().unwrap_or_else(PoisonError::into_inner);
        b.iter().filter(|x| x.seq > since && frames.contains(&x.frame)).cloned().collect()
    }

    /// Targets opened (popups, `target=_blank`) after `since` by any of `frames`: target ids.
    pub fn opened_since(&self, since: u64, frames: &[String]) -> Vec<String> {
        let o = self.opened.lock().unwrap_or_else(PoisonError::into_inner);
        o.iter()
            .filter(|(s, opener, _)| *s > since && frames.contains(opener))
            .map(|(_, _, t)| t.clone())
            .collect()
    }

    /// Records that `opener` opened `target`.
    pub fn record_opened(&self, opener: String, target: String) {
        let seq = self.seq.fetch_add(1, Ordering::SeqCst) + 1;
        let mut o = self.opened.lock().unwrap_or_else(PoisonError::into_inner);
        o.push((seq, opener, target));
        if o.len() > 10_000 {
            o.drain(..5_000);
        }
    }

    /// Forgets everything about `frames` (when an episode ends).
    pub fn forget(&self, frames: &[String]) {
        self.blocked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|x| !frames.contains(&x.frame));
        self.opened
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(_, o, _)| !frames.contains(o));
    }

    fn record_blocked(&self, frame: String, url: String, reason: String) {
        let seq = self.seq.fetch_add(1, Ordering::SeqCst) + 1;
        let mut b = self.blocked.lock().unwrap_or_else(PoisonError::into_inner);
        b.push(Blocked { seq, frame, url, reason });
        if b.len() > 10_000 {
            b.drain(..5_000);
        }
    }
}

/// Something that owns a browser (so the interceptor task can hold it weakly).
pub trait HasBrowser: Send + Sync + 'static {
    /// The browser.
    fn browser(&self) -> &Browser;
}

/// Spawns the task recording which page opened which new target (for "new tab opened").
pub async fn watch_targets(
    browser: &Browser,
    seen: std::sync::Arc<Seen>,
) -> Result<tokio::task::JoinHandle<()>, chromiumoxide::error::CdpError> {
    let mut events = browser.event_listener::<EventTargetCreated>().await?;
    Ok(tokio::spawn(async move {
        while let Some(ev) = events.next().await {
            if let Some(opener) = &ev.target_info.opener_id
                && ev.target_info.r#type == "page"
            {
                seen.record_opened(
                    opener.as_ref().to_string(),
                    ev.target_info.target_id.as_ref().to_string(),
                );
            }
        }
    }))
}

/// Enables interception on `owner`'s browser session and spawns the task answering paused
/// requests. The task ends when the owner is dropped or the connection closes. Answers are
/// sent from that one task (their replies awaited together), not from a task per request: a
/// paused request holds its page's navigation, and each extra task hop costs a scheduler
/// wake-up on a busy machine.
pub async fn start<T: HasBrowser>(
    owner: Weak<T>,
    browser: &Browser,
    allow: AllowList,
    seen: std::sync::Arc<Seen>,
) -> Result<tokio::task::JoinHandle<()>, chromiumoxide::error::CdpError> {
    let mut events = browser.event_listener::<EventRequestPaused>().await?.fuse();
    browser.execute(EnableParams::default()).await?;
    Ok(tokio::spawn(async move {
        let mut answers = FuturesUnordered::new();
        loop {
            futures::select! {
                ev = events.next() => {
                    let Some(ev) = ev else { break };
                    let Some(owner) = owner.upgrade() else { break };
                    answers.push(answer(owner, &allow, &seen, ev));
                }
                _ = answers.select_next_some() => {}
            }
        }
    }))
}

/// Continues an allowed request, fails a blocked one (recording it).
async fn answer<T: HasBrowser>(
    owner: std::sync::Arc<T>,
    allow: &AllowList,
    seen: &Seen,
    ev: std::sync::Arc<EventRequestPaused>,
) {
    match allow.check(&ev.request.url) {
        Ok(()) => {
            let continued = ContinueRequestParams::new(ev.request_id.clone());
            let _ = owner.browser().execute(continued).await;
        }
        Err(reason) => {
            let url: String = ev.request.url.chars().take(100).collect();
            seen.record_blocked(ev.frame_id.as_ref().to_string(), url, reason);
            let failed =
                FailRequestParams::new(ev.request_id.clone(), ErrorReason::BlockedByClient);
            let _ = owner.browser().execute(failed).await;
        }
    }
}
