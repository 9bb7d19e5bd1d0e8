//! Per-episode mutable state of the sandbox web (cart, votes, comments, login), resettable.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;

/// Name of the cookie that tells the server which episode a request belongs to.
pub const EPISODE_COOKIE: &str = "wrl_ep";
/// Episode key used for requests without the cookie (a person browsing `wrlc sandbox serve`).
pub const PUBLIC_EPISODE: &str = "public";

/// Everything an episode can change on the sandbox web.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct EpisodeState {
    /// Product ids in the cart, in the order they were added (duplicates allowed).
    pub cart: Vec<usize>,
    /// Post ids this episode upvoted.
    pub votes: BTreeSet<usize>,
    /// Comments this episode posted: (post id, author, text).
    pub comments: Vec<(usize, String, String)>,
    /// The forum user logged in, if any.
    pub user: Option<String>,
}

/// Shared store of episode states, keyed by episode id.
#[derive(Debug, Clone, Default)]
pub struct StateStore {
    inner: Arc<Mutex<BTreeMap<String, EpisodeState>>>,
}

impl StateStore {
    /// Runs `f` on the state of `episode`, creating a fresh state on first use.
    pub fn with<R>(&self, episode: &str, f: impl FnOnce(&mut EpisodeState) -> R) -> R {
        // A panic while holding the lock cannot leave an EpisodeState half-written in a way that
        // matters (each field update is atomic from the caller's view), so poisoning is ignored.
        let mut map = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        f(map.entry(episode.to_string()).or_default())
    }

    /// A copy of the state of `episode` (fresh state if it never made a request).
    pub fn snapshot(&self, episode: &str) -> EpisodeState {
        let map = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        map.get(episode).cloned().unwrap_or_default()
    }

    /// Resets `episode` to a fresh state.
    pub fn reset(&self, episode: &str) {
        let mut map = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        map.insert(episode.to_string(), EpisodeState::default());
    }

    /// Forgets `episode` entirely (call when the episode is over to bound memory).
    pub fn remove(&self, episode: &str) {
        let mut map = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        map.remove(episode);
    }
}

/// Extracts the episode id from a `Cookie` header value, or [`PUBLIC_EPISODE`].
pub fn episode_from_cookie(header: Option<&str>) -> String {
    header
        .into_iter()
        .flat_map(|h| h.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == EPISODE_COOKIE)
        .map(|(_, v)| v.to_string())
        .filter(|v| !v.is_empty() && v.len() <= 64)
        .unwrap_or_else(|| PUBLIC_EPISODE.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookie_parsing_and_reset() {
        assert_eq!(episode_from_cookie(Some("a=1; wrl_ep=ep7; b=2")), "ep7");
        assert_eq!(episode_from_cookie(None), PUBLIC_EPISODE);
        let s = StateStore::default();
        s.with("x", |st| st.cart.push(3));
        assert_eq!(s.snapshot("x").cart, vec![3]);
        assert!(s.snapshot("y").cart.is_empty());
        s.reset("x");
        assert!(s.snapshot("x").cart.is_empty());
    }
}
