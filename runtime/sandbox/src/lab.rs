//! The lab: a widget playground (buttons, fields, select, scroll box, tabs, drag, keys) that
//! exercises every browser action (and navigations that come late, return 204 or stay in the
//! document), and files to fetch (`/lab/files`); used by the browser tests and by people trying
//! actions.

use std::time::Duration;

use axum::extract::Query;
use axum::response::Html;
use serde::Deserialize;

use crate::html::{esc, page};

/// Query of the lab page: `leak` adds an image from that URL (to test the allow-list).
#[derive(Debug, Deserialize, Default)]
pub struct LabQuery {
    #[serde(default)]
    leak: String,
}

const LAB_BODY: &str = r#"<h1>Lab</h1>
<p id="status">ready</p>
<button id="counter" onclick="this.textContent='Clicked '+(++window.n)" ondblclick="st('double')" oncontextmenu="st('right');return false">Clicked 0</button>
<input id="name" aria-label="Name" oninput="st('typed '+this.value)">
<textarea id="notes" aria-label="Notes"></textarea>
<input id="short" aria-label="Short" maxlength="3">
<select id="color" aria-label="Color" onchange="st('color '+this.value)"><option value="r">Red</option><option value="g">Green</option><option value="b">Blue</option></select>
<input id="keys" aria-label="Keys" onkeydown="st('key '+(event.ctrlKey?'Control+':'')+(event.shiftKey?'Shift+':'')+event.key)">
<a href="/lab/other">Other page</a> <a href="/lab/other?tab=1" target="_blank">Open in new tab</a>
<button id="add" onclick="for(let i=0;i<3;i++){const b=document.createElement('button');b.textContent='Item '+(++window.m);b.className='item';document.getElementById('items').appendChild(b)}">Add items</button>
<button id="rm" onclick="document.querySelectorAll('.item').forEach(e=>e.remove())">Remove items</button>
<div id="items"></div>
<div id="hov" style="width:200px;height:40px;background:#eee" onmouseenter="st('hovered')">Hover me</div>
<div id="drag" style="width:200px;height:60px;background:#cde" onmousedown="window.d=[event.clientX,event.clientY]" onmouseup="if(window.d)st('dragged '+(event.clientX-window.d[0])+','+(event.clientY-window.d[1]))">Drag here</div>
<div id="box" style="width:300px;height:100px;overflow:auto;border:1px solid #888"><div style="height:600px">Scroll box top</div>Scroll box bottom</div>
<p>Secret word: pelican</p>
<div style="height:2000px"></div><p id="bottom">Page bottom</p>
<button id="later" onclick="setTimeout(()=>location.href='/lab/other',0)">Go later</button>
<a href="/lab/empty">No content</a> <a href='#bottom'>To bottom</a>
<script>window.n=0;window.m=0;function st(s){document.getElementById('status').textContent=s}</script>"#;

/// `GET /lab/?leak=URL`.
pub async fn lab(Query(q): Query<LabQuery>) -> Html<String> {
    let leak = if q.leak.is_empty() {
        String::new()
    } else {
        format!("<img id=\"leak\" alt=\"leak\" src=\"{}\">", esc(&q.leak))
    };
    Html(page("Lab", &format!("{LAB_BODY}{leak}")))
}

/// `GET /lab/other`: a second page to navigate to.
pub async fn other() -> Html<String> {
    Html(page("Other", "<h1>Other page</h1><a href=\"/lab/\">Back to lab</a>"))
}

/// `GET /lab/empty`: 204 No Content; a link here starts a navigation that never replaces the
/// page.
pub async fn empty() -> axum::http::StatusCode {
    axum::http::StatusCode::NO_CONTENT
}

/// Query of the slow page.
#[derive(Debug, Deserialize, Default)]
pub struct SlowQuery {
    #[serde(default)]
    ms: u64,
}

/// `GET /lab/slow?ms=N`: answers after N milliseconds (at most 60 s), to test timeouts.
pub async fn slow(Query(q): Query<SlowQuery>) -> Html<String> {
    tokio::time::sleep(Duration::from_millis(q.ms.min(60_000))).await;
    Html(page("Slow", "<h1>Slow page</h1>"))
}

/// `GET /lab/files`: links to files to fetch (OpAgent's `get_file`): a CSV with a `download`
/// name, a JSON file, a binary one, a link that answers 404, and text that is no link.
pub async fn files() -> Html<String> {
    Html(page(
        "Files",
        "<h1>Files</h1>\
         <p><a id=\"csv\" href=\"/lab/files/prices.csv\" download=\"kettle-prices.csv\">Price list (CSV)</a></p>\
         <p><a id=\"json\" href=\"/lab/files/stock.json\">Stock (JSON)</a></p>\
         <p><a id=\"bin\" href=\"/lab/files/logo.bin\">Logo</a></p>\
         <p><a id=\"gone\" href=\"/lab/files/missing.txt\">Old report</a></p>\
         <p id=\"plain\">Not a link</p>",
    ))
}

/// The price list the lab links to.
pub const PRICES_CSV: &str =
    "item,price\ngreen kettle,34.90\nsteel kettle,29.00\nglass teapot,19.50\n";

/// `GET /lab/files/{name}`: the lab's files; any other name is 404.
pub async fn file(
    axum::extract::Path(name): axum::extract::Path<String>,
) -> axum::response::Response {
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse;
    match name.as_str() {
        "prices.csv" => ([(header::CONTENT_TYPE, "text/csv")], PRICES_CSV).into_response(),
        "stock.json" => {
            ([(header::CONTENT_TYPE, "application/json")], r#"{"green kettle": 3}"#).into_response()
        }
        "logo.bin" => {
            let bytes: Vec<u8> = (0u8..=255).collect();
            ([(header::CONTENT_TYPE, "application/octet-stream")], bytes).into_response()
        }
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}
