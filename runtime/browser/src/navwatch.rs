//! Navigation events of a tab's main frame, so that settling after an action waits on
//! Chromium's own signals (navigation requested or started, load, loading stopped) instead of
//! polling the page: each poll is a script run in a renderer that, at high concurrency, is
//! busy loading someone else's page.

use std::sync::{Mutex, PoisonError};

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::page::{
    EventFrameRequestedNavigation, EventFrameStartedLoading, EventFrameStoppedLoading,
    EventLoadEventFired, EventNavigatedWithinDocument,
};
use futures::stream::{BoxStream, SelectAll};
use futures::{FutureExt, Stream, StreamExt};

/// What happened to the main frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Nav {
    /// A navigation was requested or started loading: a document may replace this one.
    Started,
    /// The main document fired `load`, loading stopped (a 204, a download, a failed or
    /// cancelled navigation) or a same-document navigation happened: time to look.
    Finished,
}

/// The main-frame navigation events of one tab, subscribed once and kept for the tab's life
/// (subscribing costs a message to the CDP handler; the handler already receives the events).
pub(crate) struct NavWatch {
    /// The tab's target id (also its main frame's id).
    pub(crate) target: String,
    /// In a mutex only so that episodes stay `Sync`; always reached through `&mut self`.
    events: Mutex<SelectAll<BoxStream<'static, Nav>>>,
}

impl NavWatch {
    /// Subscribes to `page`'s navigation events; `None` if the connection is gone.
    pub(crate) async fn subscribe(page: &Page) -> Option<NavWatch> {
        let target = page.target_id().as_ref().to_string();
        let mut events = SelectAll::new();
        let requested = page.event_listener::<EventFrameRequestedNavigation>().await.ok()?;
        events.push(main_frame(requested, &target, |e| e.frame_id.as_ref(), Nav::Started));
        let started = page.event_listener::<EventFrameStartedLoading>().await.ok()?;
        events.push(main_frame(started, &target, |e| e.frame_id.as_ref(), Nav::Started));
        let stopped = page.event_listener::<EventFrameStoppedLoading>().await.ok()?;
        events.push(main_frame(stopped, &target, |e| e.frame_id.as_ref(), Nav::Finished));
        let same_doc = page.event_listener::<EventNavigatedWithinDocument>().await.ok()?;
        events.push(main_frame(same_doc, &target, |e| e.frame_id.as_ref(), Nav::Finished));
        // `Page.loadEventFired` is the main frame's only.
        let loads = page.event_listener::<EventLoadEventFired>().await.ok()?;
        events.push(loads.map(|_| Nav::Finished).boxed());
        Some(NavWatch { target, events: Mutex::new(events) })
    }

    /// Drops the events received so far (before an action: they belong to earlier ones).
    pub(crate) fn clear(&mut self) {
        while let Some(Some(_)) = self.events().next().now_or_never() {}
    }

    /// The next event; `None` once the tab's connection is gone.
    pub(crate) async fn next(&mut self) -> Option<Nav> {
        self.events().next().await
    }

    /// An event already received, without waiting.
    pub(crate) fn ready(&mut self) -> Option<Nav> {
        self.events().next().now_or_never().flatten()
    }

    fn events(&mut self) -> &mut SelectAll<BoxStream<'static, Nav>> {
        self.events.get_mut().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `stream`'s events of the frame `target` as `nav`.
fn main_frame<T, S>(
    stream: S,
    target: &str,
    frame: fn(&T) -> &str,
    nav: Nav,
) -> BoxStream<'static, Nav>
where
    T: Send + Sync + 'static,
    S: Stream<Item = std::sync::Arc<T>> + Send + 'static,
{
    let target = target.to_string();
    let filtered = stream.filter_map(move |e| {
        let hit = frame(&e) == target;
        std::future::ready(hit.then_some(nav))
    });
    filtered.boxed()
}
