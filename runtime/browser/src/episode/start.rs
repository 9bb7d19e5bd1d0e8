//! Starting an episode: what a running episode holds, and how it gets a slot of the pool, an
//! isolated browser context, the sandbox's state and its start URL.

use std::time::{Duration, Instant};

use chromiumoxide::cdp::browser_protocol::network::CookieParam;
use tokio::sync::OwnedSemaphorePermit;

use crate::allow::origin;
use crate::failure::EndReason;
use crate::pool::{BrowserPool, PoolError};
use crate::snapshot::Snapshot;
use crate::tabs::Tabs;

use super::spec::{EpisodeCfg, EpisodeSpec};

/// A running episode. Holds one slot of the pool's semaphore until finished or dropped.
pub struct Episode {
    pub(super) tabs: Tabs,
    pub(super) id: String,
    pub(super) cfg: EpisodeCfg,
    pub(super) spec: EpisodeSpec,
    pub(super) steps: u32,
    pub(super) agent_errors: u32,
    pub(super) end: Option<EndReason>,
    pub(super) started: Instant,
    pub(super) last: Option<Snapshot>,
    pub(super) feedback: String,
    _permit: OwnedSemaphorePermit,
}

impl std::fmt::Debug for Episode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Episode")
            .field("id", &self.id)
            .field("steps", &self.steps)
            .field("end", &self.end)
            .finish()
    }
}

static EPISODE_COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Errors starting an episode (the start URL failing to load is not one: the episode is
/// returned already ended with `env_error`).
#[derive(Debug, thiserror::Error)]
pub enum EpisodeError {
    /// The pool could not provide a browser.
    #[error(transparent)]
    Pool(#[from] PoolError),
    /// The pool is shut down.
    #[error("the browser pool is closed")]
    Closed,
    /// No browser slot came free in time (`timeout.acquire`).
    #[error("no browser came free within {0:?}")]
    NoSlot(Duration),
}

impl BrowserPool {
    /// Starts an episode: waits for a free slot, opens an isolated browser context, resets the
    /// sandbox state (for sandbox tasks) and loads the start URL. If the browser is dead it is
    /// restarted first. A start URL that fails to load gives an episode that has already ended
    /// with `env_error` (its host blacklisted on DNS/connection errors).
    pub async fn episode(
        &self,
        spec: EpisodeSpec,
        cfg: EpisodeCfg,
    ) -> Result<Episode, EpisodeError> {
        let wait = cfg.acquire_timeout;
        let permit = tokio::time::timeout(wait, self.inner.sem.clone().acquire_owned())
            .await
            .map_err(|_| EpisodeError::NoSlot(wait))?
            .map_err(|_| EpisodeError::Closed)?;
        let slot = self.inner.next_slot();
        let id = format!("ep{}", EPISODE_COUNTER.fetch_add(1, std::sync::atomic::Ordering::SeqCst));
        let mut attempt = 0;
        loop {
            attempt += 1;
            let live = self.inner.live(slot).await?;
            match Tabs::open(&live, self, cfg.step_timeout).await {
                Ok(tabs) => {
                    let mut ep = Episode {
                        tabs,
                        id,
                        cfg,
                        spec,
                        steps: 0,
                        agent_errors: 0,
                        end: None,
                        started: Instant::now(),
                        last: None,
                        feedback: String::new(),
                        _permit: permit,
                    };
                    ep.start().await;
                    return Ok(ep);
                }
                Err(e) => {
                    // A dead browser is restarted once; a second failure is a pool error.
                    live.mark_dead();
                    if attempt >= 2 {
                        return Err(EpisodeError::Pool(PoolError::Cdp(e)));
                    }
                }
            }
        }
    }
}

impl Episode {
    /// The episode id (also the sandbox state key).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Steps taken.
    pub fn steps(&self) -> u32 {
        self.steps
    }

    /// How it ended, if it did.
    pub fn ended(&self) -> Option<&EndReason> {
        self.end.as_ref()
    }

    async fn start(&mut self) {
        let url = self.spec.start_url.clone();
        if let Some(b) = &self.spec.sandbox {
            b.sandbox.reset(&self.id);
            let mut cookie = CookieParam::new(wrl_sandbox::EPISODE_COOKIE, self.id.clone());
            cookie.url = Some(b.sandbox.base_url());
            if let Err(e) = self.tabs.page().set_cookie(cookie).await {
                self.end_env(format!("cannot set the episode cookie: {e}"));
                return;
            }
        }
        if let Some(o) = origin(&url)
            && self.tabs.blacklist().contains(&o.host)
        {
            self.end =
                Some(EndReason::EnvError { message: format!("host {} is blacklisted", o.host) });
            return;
        }
        if let Err(why) = self.tabs.check_url(&url) {
            self.end =
                Some(EndReason::EnvError { message: format!("start URL {url} is blocked: {why}") });
            return;
        }
        let res = tokio::time::timeout(self.cfg.step_timeout, async {
            self.tabs.watch().await;
            let r = self.tabs.navigate(&url).await;
            if r.is_ok() {
                self.tabs.settle(true, "about:blank", 2).await;
            }
            r
        })
        .await;
        match res {
            Ok(Ok(())) => {}
            Ok(Err(e)) => self.end_env(format!("cannot load start URL {url}: {e}")),
            Err(_) => self.end_env(format!(
                "start URL {url} did not load within {:?}",
                self.cfg.step_timeout
            )),
        }
    }

    /// Ends the episode with `env_error`, as a crash if the browser is gone.
    pub(super) fn end_env(&mut self, message: String) {
        if !self.tabs.is_alive() {
            self.end = Some(EndReason::EnvError { message: format!("browser crashed: {message}") });
        } else {
            self.end = Some(EndReason::EnvError { message });
        }
    }
}
