//! The sandbox forum: paged front page, posts with comments, voting and login.

use std::sync::Arc;

use axum::extract::{Form, Path, Query, State};
use axum::http::HeaderMap;
use axum::response::{Html, IntoResponse, Redirect, Response};
use serde::Deserialize;

use crate::html::{esc, page};
use crate::site::{Site, episode_of, not_found};

/// Posts per front page.
pub const PER_PAGE: usize = 6;

fn header(site: &Site, ep: &str) -> String {
    let user = site.store.with(ep, |s| s.user.clone());
    let who = match user {
        Some(u) => format!("<span>Logged in as {}</span>", esc(&u)),
        None => "<a href=\"/forum/login\">Log in</a>".to_string(),
    };
    format!("<header><a href=\"/forum/\">Forum</a>{who}</header>")
}

fn score(site: &Site, ep: &str, id: usize) -> i32 {
    let base = site.content.posts.get(id).map_or(0, |p| p.score);
    base + i32::from(site.store.with(ep, |s| s.votes.contains(&id)))
}

/// Query of the front page.
#[derive(Debug, Deserialize, Default)]
pub struct PageQuery {
    #[serde(default)]
    page: usize,
}

/// `GET /forum/?page=N`: posts with upvote buttons, [`PER_PAGE`] per page.
pub async fn home(
    State(site): State<Arc<Site>>,
    headers: HeaderMap,
    Query(q): Query<PageQuery>,
) -> Html<String> {
    let ep = episode_of(&headers);
    let pages = site.content.posts.len().div_ceil(PER_PAGE).max(1);
    let n = q.page.clamp(1, pages);
    let mut items = String::new();
    for p in site.content.posts.iter().skip((n - 1) * PER_PAGE).take(PER_PAGE) {
        items.push_str(&format!(
            "<li><a href=\"/forum/post/{}\">{}</a> <span>{} points</span><form action=\"/forum/vote/{}\" \
             method=\"post\" style=\"display:inline\"><button type=\"submit\">Upvote</button></form></li>",
            p.id,
            esc(&p.title),
            score(&site, &ep, p.id),
            p.id
        ));
    }
    let nav = if n < pages {
        format!("<a href=\"/forum/?page={}\">Next page</a>", n + 1)
    } else if n > 1 {
        format!("<a href=\"/forum/?page={}\">Previous page</a>", n - 1)
    } else {
        String::new()
    };
    let body = format!("{}<h1>Forum</h1><ul>{items}</ul>{nav}", header(&site, &ep));
    Html(page("Forum", &body))
}

/// `GET /forum/post/{id}`: a post, its comments and (when logged in) a comment form.
pub async fn post(
    State(site): State<Arc<Site>>,
    headers: HeaderMap,
    Path(id): Path<usize>,
) -> Response {
    let ep = episode_of(&headers);
    let Some(p) = site.content.posts.get(id) else {
        return not_found("no such post");
    };
    let st = site.store.snapshot(&ep);
    let comments: String = st
        .comments
        .iter()
        .filter(|(pid, _, _)| *pid == id)
        .map(|(_, who, text)| format!("<li>{}: {}</li>", esc(who), esc(text)))
        .collect();
    let form = if st.user.is_some() {
        format!(
            "<form action=\"/forum/comment/{id}\" method=\"post\"><textarea name=\"text\" aria-label=\"Comment\">\
             </textarea><button type=\"submit\">Post comment</button></form>"
        )
    } else {
        String::new()
    };
    let body = format!(
        "{}<h1>{}</h1><p>by {}</p><p>{}</p><p>{} points</p><form action=\"/forum/vote/{id}\" method=\"post\">\
         <button type=\"submit\">Upvote</button></form><h2>Comments</h2><ul>{comments}</ul>{form}",
        header(&site, &ep),
        esc(&p.title),
        p.author,
        esc(&p.body),
        score(&site, &ep, id)
    );
    Html(page(&p.title, &body)).into_response()
}

/// `POST /forum/vote/{id}`: upvotes once per episode, then returns to the front page.
pub async fn vote(
    State(site): State<Arc<Site>>,
    headers: HeaderMap,
    Path(id): Path<usize>,
) -> Response {
    if id >= site.content.posts.len() {
        return not_found("no such post");
    }
    let ep = episode_of(&headers);
    site.store.with(&ep, |s| s.votes.insert(id));
    let page_no = id / PER_PAGE + 1;
    Redirect::to(&format!("/forum/?page={page_no}")).into_response()
}

/// Form of the comment action.
#[derive(Debug, Deserialize)]
pub struct CommentForm {
    text: String,
}

/// `POST /forum/comment/{id}`: posts a comment as the logged-in user.
pub async fn comment(
    State(site): State<Arc<Site>>,
    headers: HeaderMap,
    Path(id): Path<usize>,
    Form(form): Form<CommentForm>,
) -> Response {
    if id >= site.content.posts.len() {
        return not_found("no such post");
    }
    let ep = episode_of(&headers);
    site.store.with(&ep, |s| {
        if let Some(u) = s.user.clone() {
            s.comments.push((id, u, form.text.trim().to_string()));
        }
    });
    Redirect::to(&format!("/forum/post/{id}")).into_response()
}

fn login_page(site: &Site, ep: &str, error: &str) -> Html<String> {
    let body = format!(
        "{}<h1>Log in</h1>{error}<form action=\"/forum/login\" method=\"post\">\
         <input name=\"user\" aria-label=\"Username\"><input name=\"password\" type=\"password\" \
         aria-label=\"Password\"><button type=\"submit\">Log in</button></form>",
        header(site, ep)
    );
    Html(page("Log in", &body))
}

/// `GET /forum/login`: the login form.
pub async fn login_form(State(site): State<Arc<Site>>, headers: HeaderMap) -> Html<String> {
    login_page(&site, &episode_of(&headers), "")
}

/// Form of the login action.
#[derive(Debug, Deserialize)]
pub struct LoginForm {
    user: String,
    password: String,
}

/// `POST /forum/login`: logs in on a correct password, else shows an error.
pub async fn login(
    State(site): State<Arc<Site>>,
    headers: HeaderMap,
    Form(form): Form<LoginForm>,
) -> Response {
    let ep = episode_of(&headers);
    let ok = site
        .content
        .users
        .iter()
        .any(|u| u.name == form.user.trim() && u.password == form.password);
    if ok {
        site.store.with(&ep, |s| s.user = Some(form.user.trim().to_string()));
        Redirect::to("/forum/").into_response()
    } else {
        login_page(&site, &ep, "<p>Wrong username or password</p>").into_response()
    }
}
