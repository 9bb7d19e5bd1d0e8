//! The sandbox wiki's search ranking: which articles a query finds and how a result list
//! reads. Its own file so that the search API (`search_api.rs`) and the multi-hop questions
//! built on what a search finds (`hops.rs`) both use it without reaching into each other.

use crate::content::{Content, Town};

/// Results one search returns at most.
pub const MAX_HITS: usize = 5;

/// One search result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub title: String,
    /// The path to `visit` (the sandbox's own host is implied).
    pub url: String,
    pub snippet: String,
}

/// Lower-case words of `text`, punctuation dropped.
pub(crate) fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The wiki articles matching `query`: a town scores one point per query word that is its
/// name (or a prefix of it, three letters or more) and one per word naming its river; the best
/// [`MAX_HITS`], by score then name.
pub fn search(content: &Content, query: &str) -> Vec<Hit> {
    let q = words(query);
    let mut scored: Vec<(usize, &Town)> = content
        .towns
        .iter()
        .map(|t| {
            let river = t.river.to_lowercase();
            let score = q
                .iter()
                .filter(|w| {
                    **w == t.slug
                        || (w.len() >= 3 && t.slug.starts_with(w.as_str()))
                        || **w == river
                })
                .count();
            (score, t)
        })
        .filter(|(s, _)| *s > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name.cmp(&b.1.name)));
    scored
        .into_iter()
        .take(MAX_HITS)
        .map(|(_, t)| Hit {
            title: t.name.clone(),
            url: format!("/wiki/article/{}", t.slug),
            snippet: format!("a town on the river {}", t.river),
        })
        .collect()
}

/// The text a search answers: one line per hit, `[1] Title /url: snippet`.
pub fn render_hits(hits: &[Hit]) -> String {
    if hits.is_empty() {
        return "no results".into();
    }
    hits.iter()
        .enumerate()
        .map(|(i, h)| format!("[{}] {} {}: {}", i + 1, h.title, h.url, h.snippet))
        .collect::<Vec<_>>()
        .join("\n")
}
