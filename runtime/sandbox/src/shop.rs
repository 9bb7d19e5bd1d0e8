//! The sandbox shop: search, category filter, sort, product pages and a cart.

use std::sync::Arc;

use axum::extract::{Form, Path, Query, State};
use axum::http::HeaderMap;
use axum::response::{Html, IntoResponse, Redirect, Response};
use serde::Deserialize;

use crate::content::CATEGORIES;
use crate::html::{esc, money, page, qenc};
use crate::site::{Site, episode_of, not_found};

/// Maximum results shown on one search page.
pub const MAX_RESULTS: usize = 8;

fn header(site: &Site, ep: &str) -> String {
    let n = site.store.with(ep, |s| s.cart.len());
    format!("<header><a href=\"/shop/\">Shop</a><a href=\"/shop/cart\">Cart ({n})</a></header>")
}

fn search_form(q: &str) -> String {
    format!(
        "<form action=\"/shop/search\" method=\"get\"><input name=\"q\" aria-label=\"Search products\" \
         value=\"{}\"><button type=\"submit\">Search</button></form>",
        esc(q)
    )
}

/// `GET /shop/`: search box and categories.
pub async fn home(State(site): State<Arc<Site>>, headers: HeaderMap) -> Html<String> {
    let ep = episode_of(&headers);
    let cats: String = CATEGORIES
        .iter()
        .map(|c| format!("<li><a href=\"/shop/search?cat={c}\">{c}</a></li>"))
        .collect();
    Html(page(
        "Shop",
        &format!(
            "{}<h1>Shop</h1>{}<h2>Categories</h2><ul>{cats}</ul>",
            header(&site, &ep),
            search_form("")
        ),
    ))
}

/// Query of the search page.
#[derive(Debug, Deserialize, Default)]
pub struct SearchQuery {
    #[serde(default)]
    q: String,
    #[serde(default)]
    cat: String,
    #[serde(default)]
    sort: String,
}

/// `GET /shop/search?q=&cat=&sort=price_asc|price_desc`: results, at most [`MAX_RESULTS`].
pub async fn search(
    State(site): State<Arc<Site>>,
    headers: HeaderMap,
    Query(query): Query<SearchQuery>,
) -> Html<String> {
    let ep = episode_of(&headers);
    let mut hits: Vec<_> = site
        .content
        .search_products(&query.q)
        .into_iter()
        .filter(|p| query.cat.is_empty() || p.category == query.cat)
        .collect();
    match query.sort.as_str() {
        "price_asc" => hits.sort_by_key(|p| (p.price_cents, p.id)),
        "price_desc" => hits.sort_by_key(|p| (std::cmp::Reverse(p.price_cents), p.id)),
        _ => {}
    }
    let total = hits.len();
    let items: String = hits
        .iter()
        .take(MAX_RESULTS)
        .map(|p| {
            format!(
                "<li><a href=\"/shop/product/{}\">{}</a><span class=\"price\">${}</span></li>",
                p.id,
                esc(&p.name),
                money(p.price_cents)
            )
        })
        .collect();
    let base = format!("/shop/search?q={}&cat={}", qenc(&query.q), qenc(&query.cat));
    let title = if query.cat.is_empty() {
        format!("Results for \"{}\"", esc(&query.q))
    } else {
        format!("Category {}", esc(&query.cat))
    };
    let body = format!(
        "{}{}<h1>{title}</h1><p>Sort: <a href=\"{base}&sort=price_asc\">Price low to high</a> \
         <a href=\"{base}&sort=price_desc\">Price high to low</a></p><p>{} found</p><ul>{items}</ul>",
        header(&site, &ep),
        search_form(&query.q),
        total
    );
    Html(page("Search", &body))
}

/// `GET /shop/product/{id}`: details and an "Add to cart" button.
pub async fn product(
    State(site): State<Arc<Site>>,
    headers: HeaderMap,
    Path(id): Path<usize>,
) -> Response {
    let ep = episode_of(&headers);
    let Some(p) = site.content.products.get(id) else {
        return not_found("no such product");
    };
    let body = format!(
        "{}<h1>{}</h1><p>Price: ${}</p><p>Category: {}</p><p>Rating: {}/5</p>\
         <form action=\"/shop/cart/add\" method=\"post\"><input type=\"hidden\" name=\"id\" value=\"{}\">\
         <button type=\"submit\">Add to cart</button></form>",
        header(&site, &ep),
        esc(&p.name),
        money(p.price_cents),
        p.category,
        p.rating,
        p.id
    );
    Html(page(&p.name, &body)).into_response()
}

/// Form of the cart actions.
#[derive(Debug, Deserialize)]
pub struct CartForm {
    id: usize,
}

/// `POST /shop/cart/add`: adds a product, then shows the cart.
pub async fn cart_add(
    State(site): State<Arc<Site>>,
    headers: HeaderMap,
    Form(form): Form<CartForm>,
) -> Response {
    if form.id >= site.content.products.len() {
        return not_found("no such product");
    }
    let ep = episode_of(&headers);
    site.store.with(&ep, |s| s.cart.push(form.id));
    Redirect::to("/shop/cart").into_response()
}

/// `POST /shop/cart/remove`: removes one unit of a product.
pub async fn cart_remove(
    State(site): State<Arc<Site>>,
    headers: HeaderMap,
    Form(form): Form<CartForm>,
) -> Response {
    let ep = episode_of(&headers);
    site.store.with(&ep, |s| {
        if let Some(pos) = s.cart.iter().position(|&i| i == form.id) {
            s.cart.remove(pos);
        }
    });
    Redirect::to("/shop/cart").into_response()
}

/// `GET /shop/cart`: the cart with a total.
pub async fn cart(State(site): State<Arc<Site>>, headers: HeaderMap) -> Html<String> {
    let ep = episode_of(&headers);
    let ids = site.store.snapshot(&ep).cart;
    let mut total = 0;
    let mut items = String::new();
    for id in &ids {
        if let Some(p) = site.content.products.get(*id) {
            total += p.price_cents;
            items.push_str(&format!(
                "<li>{}<span class=\"price\">${}</span><form action=\"/shop/cart/remove\" method=\"post\" \
                 style=\"display:inline\"><input type=\"hidden\" name=\"id\" value=\"{}\">\
                 <button type=\"submit\">Remove</button></form></li>",
                esc(&p.name),
                money(p.price_cents),
                p.id
            ));
        }
    }
    let body = format!(
        "{}<h1>Cart</h1><ul>{items}</ul><p>Total: ${}</p>",
        header(&site, &ep),
        money(total)
    );
    Html(page("Cart", &body))
}
