//! Prompt prefixes already prefilled, kept for the prompts after them: the episodes of one
//! GRPO group start from the same page, and an episode's turns repeat its task and page. The
//! forward is row-stable and does not depend on how a sequence's tokens were split between
//! passes (`tiny::forward`), so a reused prefix is exactly what prefilling it again would give:
//! caching changes the time, never a token.

use super::Sequence;

/// Prompts kept at most.
const ENTRIES: usize = 32;
/// Tokens kept at most, over every prompt (about 2.5 KB each for the embedded policy).
const TOKENS: usize = 16_384;
/// Shortest prefix worth reusing: below it, a prefill is cheaper than the clone.
pub(crate) const MIN_REUSE: usize = 16;

/// Prefilled prompts, least recently used first out.
#[derive(Debug)]
pub struct PrefixCache<S> {
    /// (last use, sequence fed exactly its prompt).
    entries: Vec<(u64, S)>,
    clock: u64,
    /// Prompt tokens served from the cache, in all.
    reused: u64,
}

impl<S> Default for PrefixCache<S> {
    fn default() -> Self {
        PrefixCache { entries: Vec::new(), clock: 0, reused: 0 }
    }
}

impl<S: Sequence> PrefixCache<S> {
    /// How many leading tokens of `prompt` (to be fed to `fresh`) [`PrefixCache::start`] would
    /// serve (0: none).
    pub fn longest(&self, prompt: &[u32], fresh: &S) -> usize {
        let limit = prompt.len().saturating_sub(1);
        let best = self.entries.iter().map(|(_, s)| shared(s, prompt, fresh).min(limit));
        best.max().filter(|&c| c >= MIN_REUSE).unwrap_or(0)
    }

    /// The sequence to start `prompt` (to be fed to `fresh`, whose plan it takes on) from: a
    /// copy of the cached prompt sharing its longest prefix (tokens and, for a VL prompt, the
    /// images standing there), cut there (leaving at least the last token to feed), or `None`
    /// when no prompt shares at least [`MIN_REUSE`] tokens.
    pub fn start(&mut self, prompt: &[u32], fresh: &S) -> Option<S> {
        let limit = prompt.len().saturating_sub(1);
        let (at, common) = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, (_, seq))| (i, shared(seq, prompt, fresh).min(limit)))
            .max_by_key(|&(i, c)| (c, std::cmp::Reverse(i)))?;
        if common < MIN_REUSE {
            return None;
        }
        self.clock += 1;
        self.reused += common as u64;
        let entry = &mut self.entries[at];
        entry.0 = self.clock;
        let mut seq = entry.1.clone();
        seq.truncate(common);
        Some(seq)
    }

    /// Keeps `seq` (fed exactly its prompt) for later prompts; prompts it extends go.
    pub fn keep(&mut self, seq: &S) {
        if seq.len() < MIN_REUSE || seq.len() > TOKENS {
            return;
        }
        self.clock += 1;
        let ids = seq.ids();
        let same = |s: &S| s.ids() == ids && s.agree(s.len(), seq) == s.len();
        if let Some(e) = self.entries.iter_mut().find(|(_, s)| same(s)) {
            e.0 = self.clock;
            return;
        }
        self.entries
            .retain(|(_, s)| !(ids.starts_with(s.ids()) && s.agree(s.len(), seq) == s.len()));
        self.entries.push((self.clock, seq.clone()));
        while self.entries.len() > ENTRIES || self.tokens() > TOKENS {
            let oldest =
                self.entries.iter().enumerate().min_by_key(|(_, (t, _))| *t).map(|(i, _)| i);
            let Some(oldest) = oldest else { break };
            self.entries.swap_remove(oldest);
        }
    }

    /// Prompt tokens served from the cache so far.
    pub fn reused(&self) -> u64 {
        self.reused
    }

    fn tokens(&self) -> usize {
        self.entries.iter().map(|(_, s)| s.len()).sum()
    }
}

/// How many leading positions the cached `seq` and `prompt` (to be fed to `fresh`) share: their
/// tokens, and what stands at them beyond tokens (`Sequence::agree`).
fn shared<S: Sequence>(seq: &S, prompt: &[u32], fresh: &S) -> usize {
    seq.agree(common_prefix(seq.ids(), prompt), fresh)
}

/// How many leading tokens `a` and `b` share.
pub(crate) fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}
