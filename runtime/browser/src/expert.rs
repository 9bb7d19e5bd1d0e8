//! The scripted expert: solves sandbox tasks from the text observation alone (as a text
//! policy would), one terse action per turn. Used for demonstrations and as a sanity check.

use wrl_sandbox::Task;
use wrl_sandbox::checker::url_path;

use crate::snapshot::{Item, Snapshot};

fn eq(a: &str, b: &str) -> bool {
    a.trim().eq_ignore_ascii_case(b.trim())
}

/// Id of the first element with this role and label.
fn find(s: &Snapshot, role: &str, label: &str) -> Option<u32> {
    s.items.iter().find_map(|i| match i {
        Item::Element { id, role: r, label: l, .. } if r == role && eq(l, label) => Some(*id),
        _ => None,
    })
}

/// (id, value) of the first element with this role and label.
fn field(s: &Snapshot, label: &str) -> Option<(u32, String)> {
    s.items.iter().find_map(|i| match i {
        Item::Element { id, role, label: l, value, .. } if role == "textbox" && eq(l, label) => {
            Some((*id, value.clone().unwrap_or_default()))
        }
        _ => None,
    })
}

/// Index of the item that is a link with this label.
fn link_pos(s: &Snapshot, label: &str) -> Option<usize> {
    s.items.iter().position(
        |i| matches!(i, Item::Element { role, label: l, .. } if role == "link" && eq(l, label)),
    )
}

/// First text line after item `pos`.
fn text_after(s: &Snapshot, pos: usize) -> Option<&str> {
    s.items[pos + 1..].iter().find_map(|i| match i {
        Item::Text { text } => Some(text.as_str()),
        Item::Element { .. } => None,
    })
}

/// A text line starting with `prefix`, without it.
fn text_with<'a>(s: &'a Snapshot, prefix: &str) -> Option<&'a str> {
    s.items.iter().find_map(|i| match i {
        Item::Text { text } => text.strip_prefix(prefix),
        Item::Element { .. } => None,
    })
}

fn search_then(s: &Snapshot, box_label: &str, query: &str) -> Option<String> {
    let (id, value) = field(s, box_label)?;
    if !eq(&value, query) {
        return Some(format!("type {id} {query}"));
    }
    find(s, "button", "Search").map(|b| format!("click {b}"))
}

fn param<'a>(task: &'a Task, k: &str) -> &'a str {
    task.params.get(k).map_or("", String::as_str)
}

/// The expert's next action (terse syntax) for `task` given the current snapshot and the
/// feedback and actions so far; `None` when it is stuck.
pub fn next_action(
    task: &Task,
    snap: &Snapshot,
    feedback: &str,
    history: &[String],
) -> Option<String> {
    let path = url_path(&snap.url);
    match task.template.as_str() {
        "shop_price" => {
            let product = param(task, "product");
            if let Some(pos) = link_pos(snap, product) {
                let price = text_after(snap, pos)?.trim_start_matches('$');
                return Some(format!("answer {price}"));
            }
            search_then(snap, "Search products", product)
        }
        "shop_cart" => {
            let product = param(task, "product");
            if path.starts_with("/shop/cart") && history.iter().any(|h| h.starts_with("click")) {
                return Some("done".into());
            }
            if path.starts_with("/shop/product/") {
                return find(snap, "button", "Add to cart").map(|b| format!("click {b}"));
            }
            if let Some(pos) = link_pos(snap, product)
                && let Item::Element { id, .. } = &snap.items[pos]
            {
                return Some(format!("click {id}"));
            }
            search_then(snap, "Search products", product)
        }
        "shop_cheapest" => {
            let item = param(task, "item");
            if path.contains("sort=price_asc") {
                let first = snap.items.iter().find_map(|i| match i {
                    Item::Element { role, label, .. }
                        if role == "link" && label.ends_with(&format!(" {item}")) =>
                    {
                        Some(label.clone())
                    }
                    _ => None,
                })?;
                return Some(format!("answer {first}"));
            }
            if path.starts_with("/shop/search")
                && field(snap, "Search products").is_some_and(|(_, v)| eq(&v, item))
            {
                return find(snap, "link", "Price low to high").map(|l| format!("click {l}"));
            }
            search_then(snap, "Search products", item)
        }
        "wiki_founded" | "wiki_population" | "wiki_open" => {
            let town = param(task, "town");
            if path.starts_with("/wiki/article/")
                && snap.items.iter().any(|i| matches!(i, Item::Text { text } if eq(text, town)))
            {
                return match task.template.as_str() {
                    "wiki_founded" => text_with(snap, "Founded: ").map(|v| format!("answer {v}")),
                    "wiki_population" => {
                        text_with(snap, "Population: ").map(|v| format!("answer {v}"))
                    }
                    _ => Some("done".into()),
                };
            }
            if let Some(pos) = link_pos(snap, town)
                && path.starts_with("/wiki/search")
                && let Item::Element { id, .. } = &snap.items[pos]
            {
                return Some(format!("click {id}"));
            }
            search_then(snap, "Search wiki", town)
        }
        "forum_upvote" => {
            if feedback.contains("clicked button \"Upvote\"") {
                return Some("done".into());
            }
            let title = param(task, "title");
            if let Some(pos) = link_pos(snap, title) {
                let up = snap.items[pos..].iter().find_map(|i| match i {
                    Item::Element { id, role, label, .. }
                        if role == "button" && label == "Upvote" =>
                    {
                        Some(*id)
                    }
                    _ => None,
                })?;
                return Some(format!("click {up}"));
            }
            find(snap, "link", "Next page").map(|l| format!("click {l}"))
        }
        "forum_author" => {
            if path.starts_with("/forum/post/") {
                return text_with(snap, "by ").map(|a| format!("answer {a}"));
            }
            let title = param(task, "title");
            if let Some(pos) = link_pos(snap, title)
                && let Item::Element { id, .. } = &snap.items[pos]
            {
                return Some(format!("click {id}"));
            }
            find(snap, "link", "Next page").map(|l| format!("click {l}"))
        }
        "forum_login" => {
            let (user, pw) = (param(task, "user"), param(task, "password"));
            if text_with(snap, "Logged in as ").is_some_and(|u| eq(u, user)) {
                return Some("done".into());
            }
            let (uid, uval) = field(snap, "Username")?;
            if !eq(&uval, user) {
                return Some(format!("type {uid} {user}"));
            }
            let (pid, _) = field(snap, "Password")?;
            let typed_pw = format!("type {pid} {pw}");
            if !history.contains(&typed_pw) {
                return Some(typed_pw);
            }
            find(snap, "button", "Log in").map(|b| format!("click {b}"))
        }
        _ => None,
    }
}
