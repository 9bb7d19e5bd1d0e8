//! The sandbox wiki: a search page and one article per fictional town.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::response::{Html, IntoResponse, Response};
use serde::Deserialize;

use crate::html::{esc, page};
use crate::site::{Site, not_found};

fn search_form(q: &str) -> String {
    format!(
        "<header><a href=\"/wiki/\">Wiki</a></header><form action=\"/wiki/search\" method=\"get\">\
         <input name=\"q\" aria-label=\"Search wiki\" value=\"{}\"><button type=\"submit\">Search</button></form>",
        esc(q)
    )
}

/// `GET /wiki/`: the search page.
pub async fn home() -> Html<String> {
    Html(page("Wiki", &format!("{}<h1>Wiki</h1><p>Search for a town.</p>", search_form(""))))
}

/// Query of the search page.
#[derive(Debug, Deserialize, Default)]
pub struct SearchQuery {
    #[serde(default)]
    q: String,
}

/// `GET /wiki/search?q=`: matching articles (at most 5).
pub async fn search(State(site): State<Arc<Site>>, Query(q): Query<SearchQuery>) -> Html<String> {
    let hits = site.content.search_towns(&q.q);
    let items: String = hits
        .iter()
        .take(5)
        .map(|t| format!("<li><a href=\"/wiki/article/{}\">{}</a></li>", t.slug, esc(&t.name)))
        .collect();
    let body = format!(
        "{}<h1>Search results</h1><p>{} found</p><ul>{items}</ul>",
        search_form(&q.q),
        hits.len()
    );
    Html(page("Wiki search", &body))
}

/// `GET /wiki/article/{slug}`: a town's facts.
pub async fn article(State(site): State<Arc<Site>>, Path(slug): Path<String>) -> Response {
    let Some(t) = site.content.towns.iter().find(|t| t.slug == slug) else {
        return not_found("no such article");
    };
    let body = format!(
        "{}<h1>{}</h1><p>{} is a town on the river {}.</p><p>Founded: {}</p><p>Population: {}</p>",
        search_form(""),
        esc(&t.name),
        esc(&t.name),
        t.river,
        t.founded,
        t.population
    );
    Html(page(&t.name, &body)).into_response()
}
