//! What the driver can do to the active page (click, type, press, scroll, open a URL, go through
//! history, manage tabs, select, wait), each answering with its feedback line; after anything
//! that may navigate it waits for the tab to settle, picks up new tabs and says what changed.

use std::time::Duration;

use chromiumoxide::cdp::browser_protocol::page::{
    GetNavigationHistoryParams, NavigateToHistoryEntryParams,
};

use crate::action::{Direction, MouseButton};
use crate::allow::origin;
use crate::cdp;
use crate::failure::AgentError;
use crate::js;
use crate::keys;
use crate::tabs::Tabs;

/// Pixel point in the viewport.
pub(super) type Pt = (f64, f64);

/// Characters of a text file `get_file` shows the policy.
const FILE_PREVIEW: usize = 2000;
/// Bytes of a file `get_file` decodes at most.
const FILE_MAX_BYTES: usize = 1 << 20;

/// Why one action stopped the turn.
pub(crate) enum Stop {
    /// The agent erred (a bad element, point, key or tab): the turn ends, the episode goes on.
    Agent(AgentError),
    /// The browser failed: the episode ends with `env_error`.
    Env(String),
    /// A terminal action, with the answer if it gave one.
    Terminal(Option<String>),
}

/// Runs actions on an episode's tabs, lent to it for one turn.
pub(crate) struct Driver<'a> {
    tabs: &'a mut Tabs,
    /// The step timeout (a `wait` lasts at most half of it).
    step_timeout: Duration,
    /// Whether an action may have changed the page since the driver was made.
    changed: bool,
}

/// A document marked before an action that may navigate: its URL and the interceptor's
/// sequence number then (tabs opened after it are the action's).
pub(super) struct Mark {
    url: String,
    seq: u64,
}

#[derive(Debug, serde::Deserialize)]
struct Center {
    x: f64,
    y: f64,
    desc: String,
    /// The document's URL, when the script also marked it.
    #[serde(default)]
    href: Option<String>,
}

fn env(e: String) -> Stop {
    Stop::Env(e)
}

pub(super) fn agent(e: AgentError) -> Stop {
    Stop::Agent(e)
}

impl<'a> Driver<'a> {
    /// A driver of `tabs` for one turn of a step that may last `step_timeout`.
    pub(crate) fn new(tabs: &'a mut Tabs, step_timeout: Duration) -> Driver<'a> {
        Driver { tabs, step_timeout, changed: false }
    }

    /// Whether an action may have changed the page (the episode's last snapshot is then stale).
    pub(crate) fn changed(&self) -> bool {
        self.changed
    }

    /// The viewport in CSS pixels.
    pub(super) fn viewport(&self) -> (f64, f64) {
        let (w, h) = self.tabs.viewport();
        (f64::from(w), f64::from(h))
    }

    /// Centre of element `id` (scrolled into view) and its description.
    async fn elem(&self, id: u32) -> Result<(Pt, String), Stop> {
        let c = self.center(id, false).await?;
        Ok(((c.x, c.y), c.desc))
    }

    async fn center(&self, id: u32, mark: bool) -> Result<Center, Stop> {
        let s =
            cdp::eval_string(self.tabs.page(), &js::element_center(id, mark)).await.map_err(env)?;
        if s == "null" {
            return Err(agent(AgentError::InvalidElement(format!(
                "no element [{id}] on this page"
            ))));
        }
        serde_json::from_str(&s).map_err(|e| env(format!("bad element geometry: {e}")))
    }

    async fn describe(&self, p: Pt) -> String {
        cdp::eval_string(self.tabs.page(), &js::describe_at(p.0, p.1))
            .await
            .unwrap_or_else(|_| "unknown".into())
    }

    /// Marks the document before an action that may navigate, and watches the tab's
    /// navigation events (before the action, so none is missed) for `settle`.
    async fn mark(&mut self) -> Result<Mark, Stop> {
        let seq = self.tabs.seq();
        self.tabs.watch().await;
        let url = cdp::eval_string(self.tabs.page(), js::MARK_DOCUMENT).await.map_err(env)?;
        Ok(Mark { url, seq })
    }

    /// After an action that may navigate: waits, picks up new tabs, says what changed.
    async fn after(&mut self, mark: &Mark, known_nav: bool, grace: u32) -> Result<String, Stop> {
        let mut url = self.tabs.settle(known_nav, &mark.url, grace).await;
        if !self.tabs.is_alive() {
            return Err(env("browser connection lost".into()));
        }
        let mut notes = Vec::new();
        for target in self.tabs.opened_since(mark.seq) {
            if let Some(tab) = self.tabs.adopt(&target).await {
                self.tabs.watch().await;
                url = self.tabs.settle(true, "about:blank", 2).await;
                notes.push(format!("new tab opened (tab {tab})"));
            }
        }
        if url.is_empty() {
            url = cdp::eval_string(self.tabs.page(), "location.href").await.map_err(env)?;
        }
        if url != mark.url && notes.is_empty() {
            notes.push(format!("navigated to {}", short(&url)));
        }
        self.changed = true;
        Ok(if notes.is_empty() { String::new() } else { format!("; {}", notes.join("; ")) })
    }

    /// Clicks what is at `p`.
    pub(super) async fn click(
        &mut self,
        p: Pt,
        button: MouseButton,
        clicks: u32,
    ) -> Result<String, Stop> {
        let desc = self.describe(p).await;
        let mark = self.mark().await?;
        self.click_marked(p, desc, mark, button, clicks).await
    }

    /// Clicks element `id`, finding it and marking the document in one script.
    pub(super) async fn click_elem(&mut self, id: u32) -> Result<String, Stop> {
        let seq = self.tabs.seq();
        self.tabs.watch().await;
        let c = self.center(id, true).await?;
        let mark = Mark { url: c.href.unwrap_or_default(), seq };
        self.click_marked((c.x, c.y), c.desc, mark, MouseButton::Left, 1).await
    }

    /// Clicks at `p` on a document already marked.
    async fn click_marked(
        &mut self,
        p: Pt,
        desc: String,
        mark: Mark,
        button: MouseButton,
        clicks: u32,
    ) -> Result<String, Stop> {
        cdp::click(self.tabs.page(), p.0, p.1, button, clicks).await.map_err(env)?;
        let what = match (clicks, button) {
            (2, _) => "double-clicked",
            (_, MouseButton::Right) => "right-clicked",
            (_, MouseButton::Middle) => "middle-clicked",
            _ => "clicked",
        };
        let grace = if desc.starts_with("link") || desc.starts_with("button") { 6 } else { 2 };
        let nav = self.after(&mark, false, grace).await?;
        Ok(format!("{what} {desc}{nav}"))
    }

    /// Moves the mouse to `p`, then says what is there.
    pub(super) async fn hover(&mut self, p: Pt) -> Result<String, Stop> {
        cdp::mouse_move(self.tabs.page(), p.0, p.1).await.map_err(env)?;
        self.changed = true;
        Ok(format!("hovering {}", self.describe(p).await))
    }

    /// Moves the mouse onto element `id`.
    pub(super) async fn hover_elem(&mut self, id: u32) -> Result<String, Stop> {
        let (p, desc) = self.elem(id).await?;
        cdp::mouse_move(self.tabs.page(), p.0, p.1).await.map_err(env)?;
        self.changed = true;
        Ok(format!("hovering {desc}"))
    }

    /// Drags the mouse from `a` to `b` in `steps` moves.
    pub(super) async fn drag(&mut self, a: Pt, b: Pt, steps: u32) -> Result<String, Stop> {
        cdp::drag(self.tabs.page(), a, b, steps).await.map_err(env)?;
        self.changed = true;
        Ok(format!("dragged from ({:.0}, {:.0}) to ({:.0}, {:.0})", a.0, a.1, b.0, b.1))
    }

    /// Types `text` into the focused text field.
    pub(super) async fn write(&mut self, text: &str) -> Result<String, Stop> {
        let focused = cdp::eval(self.tabs.page(), js::SELECT_FOCUSED).await.map_err(env)?;
        if focused != serde_json::Value::Bool(true) {
            return Ok("failed: no text field is focused; click one first".into());
        }
        cdp::insert_text(self.tabs.page(), text).await.map_err(env)?;
        let got = cdp::eval(self.tabs.page(), js::FOCUSED_VALUE).await.map_err(env)?;
        self.changed = true;
        match got.as_str() {
            Some(v) if v == text => Ok(format!("typed {:?}", clip(text))),
            Some(v) => {
                Ok(format!("typed {:?}; value mismatch: field has {:?}", clip(text), clip(v)))
            }
            None => Ok(format!("typed {:?}", clip(text))),
        }
    }

    /// Clicks element `id` (without waiting for a navigation) and types `text` into it.
    pub(super) async fn type_into(&mut self, id: u32, text: &str) -> Result<String, Stop> {
        let (p, desc) = self.elem(id).await?;
        cdp::click(self.tabs.page(), p.0, p.1, MouseButton::Left, 1).await.map_err(env)?;
        let typed = self.write(text).await?;
        Ok(typed.replacen("typed", &format!("typed into {desc}:"), 1))
    }

    /// Presses a key combination such as `Control+a`, `presses` times.
    pub(super) async fn press_combo(&mut self, combo: &str, presses: u32) -> Result<String, Stop> {
        let keys = keys::parse_combo(combo).map_err(|e| agent(AgentError::BadArguments(e)))?;
        let mark = self.mark().await?;
        for _ in 0..presses.clamp(1, 50) {
            cdp::press(self.tabs.page(), &keys, keys.len() > 1).await.map_err(env)?;
        }
        let grace = if combo.to_ascii_lowercase().contains("enter") { 6 } else { 2 };
        let nav = self.after(&mark, false, grace).await?;
        Ok(format!("pressed {combo}{nav}"))
    }

    /// Presses `keys` one after another, or together as a `hotkey`, `presses` times.
    pub(super) async fn press_list(
        &mut self,
        keys: &[String],
        hotkey: bool,
        presses: u32,
    ) -> Result<String, Stop> {
        let defs = keys
            .iter()
            .map(|k| {
                keys::key_def(k)
                    .ok_or_else(|| agent(AgentError::BadArguments(format!("unknown key {k:?}"))))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if defs.is_empty() {
            return Err(agent(AgentError::BadArguments(
                "press_keys needs at least one key".into(),
            )));
        }
        let mark = self.mark().await?;
        for _ in 0..presses.clamp(1, 50) {
            cdp::press(self.tabs.page(), &defs, hotkey).await.map_err(env)?;
        }
        let grace = if keys.iter().any(|k| k.eq_ignore_ascii_case("enter")) { 6 } else { 2 };
        let nav = self.after(&mark, false, grace).await?;
        Ok(format!("pressed {}{nav}", keys.join(if hotkey { "+" } else { " " })))
    }

    /// Scrolls `dist` pixels in direction `d`, at `at` (the page if `None`).
    pub(super) async fn scroll(
        &mut self,
        d: Direction,
        dist: f64,
        at: Option<Pt>,
    ) -> Result<String, Stop> {
        let (dx, dy) = dir_delta(d, dist);
        let r =
            cdp::eval_string(self.tabs.page(), &js::scroll_by(dx, dy, at)).await.map_err(env)?;
        self.changed = true;
        Ok(if r == "moved" {
            format!("scrolled {}", dir_name(d))
        } else {
            format!("cannot scroll {}: already at the boundary", dir_name(d))
        })
    }

    /// Scrolls `fraction` of the viewport's width or height (as `d` goes).
    pub(super) async fn scroll_viewport(
        &mut self,
        d: Direction,
        fraction: f64,
        at: Option<Pt>,
    ) -> Result<String, Stop> {
        let (w, h) = self.viewport();
        let span = if matches!(d, Direction::Left | Direction::Right) { w } else { h };
        self.scroll(d, span * fraction, at).await
    }

    /// Opens `url` in the active tab, unless the blacklist or the allow-list refuses it.
    pub(super) async fn goto(&mut self, url: &str) -> Result<String, Stop> {
        if let Some(o) = origin(url)
            && self.tabs.blacklist().contains(&o.host)
        {
            return Ok(format!("failed: host {} is blacklisted", o.host));
        }
        // Checked here as well as in the browser: Chromium may preconnect to a navigation's
        // origin before the request reaches interception.
        if let Err(why) = self.tabs.check_url(url) {
            return Ok(format!("failed to open {}: blocked ({why})", short(url)));
        }
        let mark = self.mark().await?;
        match self.tabs.navigate(url).await {
            Ok(()) => {
                let nav = self.after(&mark, true, 2).await?;
                Ok(format!("opened {}{nav}", short(url)))
            }
            Err(e) if !self.tabs.is_alive() => Err(env(e)),
            Err(e) => {
                self.changed = true;
                Ok(format!("failed to open {}: {e}", short(url)))
            }
        }
    }

    /// Goes `delta` entries back (negative) or forward in the tab's history.
    pub(super) async fn history(&mut self, delta: i64) -> Result<String, Stop> {
        let h = self
            .tabs
            .page()
            .execute(GetNavigationHistoryParams::default())
            .await
            .map_err(|e| env(e.to_string()))?;
        let idx = h.result.current_index + delta;
        let Some(entry) = usize::try_from(idx).ok().and_then(|i| h.result.entries.get(i)) else {
            return Ok(format!(
                "failed: no {} page in history",
                if delta < 0 { "previous" } else { "next" }
            ));
        };
        let mark = self.mark().await?;
        self.tabs
            .page()
            .execute(NavigateToHistoryEntryParams::new(entry.id))
            .await
            .map_err(|e| env(e.to_string()))?;
        let nav = self.after(&mark, true, 2).await?;
        Ok(format!("went {}{nav}", if delta < 0 { "back" } else { "forward" }))
    }

    /// Opens a blank tab and makes it active.
    pub(super) async fn new_tab(&mut self) -> Result<String, Stop> {
        let tab = self.tabs.open_tab().await.map_err(env)?;
        self.changed = true;
        Ok(format!("new tab opened (tab {tab})"))
    }

    /// Makes tab `i` active.
    pub(super) async fn switch_tab(&mut self, i: usize) -> Result<String, Stop> {
        if !self.tabs.switch(i).await {
            return Err(agent(AgentError::InvalidTab(format!(
                "no tab {i}; there are {}",
                self.tabs.len()
            ))));
        }
        self.changed = true;
        Ok(format!("switched to tab {i}"))
    }

    /// Closes the active tab, unless it is the last one.
    pub(super) async fn close_tab(&mut self) -> Result<String, Stop> {
        if !self.tabs.close_active().await {
            return Err(agent(AgentError::InvalidTab("cannot close the last tab".into())));
        }
        self.changed = true;
        Ok(format!("closed tab; active tab is {}", self.tabs.active()))
    }

    /// Selects `option` in the `<select>` at `p`.
    pub(super) async fn select_at(&mut self, p: Pt, option: &str) -> Result<String, Stop> {
        let desc = self.describe(p).await;
        self.select(&format!("document.elementFromPoint({}, {})", p.0, p.1), option, desc).await
    }

    /// Selects `option` in the `<select>` element `id`.
    pub(super) async fn select_elem(&mut self, id: u32, option: &str) -> Result<String, Stop> {
        let (_, desc) = self.elem(id).await?;
        self.select(&format!("document.querySelector('[data-wrl-id=\"{id}\"]')"), option, desc)
            .await
    }

    async fn select(
        &mut self,
        target_js: &str,
        option: &str,
        desc: String,
    ) -> Result<String, Stop> {
        let mark = self.mark().await?;
        let r = cdp::eval_string(self.tabs.page(), &js::select_option(target_js, option))
            .await
            .map_err(env)?;
        if r != "ok" {
            return Err(agent(AgentError::InvalidElement(format!("{desc}: {r}"))));
        }
        let nav = self.after(&mark, false, 2).await?;
        Ok(format!("selected {option:?} in {desc}{nav}"))
    }

    /// Highlights the matches of `term` on the page and counts them.
    pub(super) async fn find(&mut self, term: &str) -> Result<String, Stop> {
        let n = cdp::eval(self.tabs.page(), &js::find_text(term)).await.map_err(env)?;
        self.changed = true;
        Ok(format!("found {} match(es) for {:?}", n.as_u64().unwrap_or(0), clip(term)))
    }

    /// Fetches the file the link at `p` points to (OpAgent's `get_file`) through the page, so the
    /// allow-list applies, and answers with its name, type, size and, for a text file, its
    /// first `FILE_PREVIEW` characters. Nothing is written to disk.
    pub(super) async fn get_file(&mut self, p: Pt) -> Result<String, Stop> {
        let js = js::fetch_link_at(p.0, p.1, FILE_PREVIEW, FILE_MAX_BYTES);
        let v = cdp::eval_awaited(self.tabs.page(), &js).await.map_err(env)?;
        if let Some(e) = v.get("error").and_then(|e| e.as_str()) {
            return Err(agent(AgentError::InvalidElement(e.to_string())));
        }
        let text = |k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string();
        let size = v.get("size").and_then(|x| x.as_u64()).unwrap_or(0);
        let status = v.get("status").and_then(|x| x.as_u64()).unwrap_or(0);
        let (name, kind) = (text("name"), text("type"));
        let kind = if kind.is_empty() { "unknown type".to_string() } else { kind };
        if !(200..300).contains(&status) {
            return Ok(format!("the link to `{name}` answered HTTP {status}: no file"));
        }
        Ok(match v.get("text").and_then(|t| t.as_str()) {
            Some(body) => {
                let cut = if (body.chars().count() as u64) < size { " (first part)" } else { "" };
                format!("file `{name}` ({kind}, {size} bytes){cut}:\n{body}")
            }
            None => format!("file `{name}` ({kind}, {size} bytes): binary, not shown"),
        })
    }

    /// Waits `seconds`, at most half the step timeout.
    pub(super) async fn wait(&mut self, seconds: f64) -> Result<String, Stop> {
        let cap = self.step_timeout.as_secs_f64() / 2.0;
        let s = if seconds.is_finite() { seconds.clamp(0.0, cap) } else { 0.0 };
        tokio::time::sleep(Duration::from_secs_f64(s)).await;
        self.changed = true;
        Ok(format!("waited {s:.1}s"))
    }
}

fn dir_name(d: Direction) -> &'static str {
    match d {
        Direction::Up => "up",
        Direction::Down => "down",
        Direction::Left => "left",
        Direction::Right => "right",
    }
}

fn dir_delta(d: Direction, dist: f64) -> Pt {
    match d {
        Direction::Up => (0.0, -dist),
        Direction::Down => (0.0, dist),
        Direction::Left => (-dist, 0.0),
        Direction::Right => (dist, 0.0),
    }
}

fn clip(s: &str) -> String {
    if s.chars().count() > 40 {
        format!("{}…", s.chars().take(39).collect::<String>())
    } else {
        s.to_string()
    }
}

fn short(url: &str) -> String {
    if url.chars().count() > 100 {
        format!("{}…", url.chars().take(99).collect::<String>())
    } else {
        url.to_string()
    }
}
