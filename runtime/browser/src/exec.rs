//! Running one action of any tool set in an episode, with its feedback line.

use std::time::Duration;

use chromiumoxide::cdp::browser_protocol::page::{
    GetNavigationHistoryParams, NavigateToHistoryEntryParams,
};

use crate::action::{Action, Direction, Elem, MouseButton, OpAgent, OpenWebRl};
use crate::cdp;
use crate::episode::{Episode, Stop};
use crate::failure::AgentError;
use crate::js;
use crate::keys;

/// Pixel point in the viewport.
type Pt = (f64, f64);

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

fn agent(e: AgentError) -> Stop {
    Stop::Agent(e)
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

/// Implemented by `Episode`: runs actions.
pub(crate) trait Exec {
    /// Runs one action, returning its feedback line.
    async fn exec(&mut self, a: &Action) -> Result<String, Stop>;
}

impl Exec for Episode {
    async fn exec(&mut self, a: &Action) -> Result<String, Stop> {
        match a {
            Action::Openwebrl(t) => self.exec_openwebrl(t).await,
            Action::Opagent(t) => self.exec_opagent(t).await,
            Action::Elem(t) => self.exec_elem(t).await,
        }
    }
}

impl Episode {
    fn viewport(&self) -> (f64, f64) {
        let (w, h) = self.tabs.viewport();
        (f64::from(w), f64::from(h))
    }

    /// Checks a CSS-pixel point against the viewport.
    fn px(&self, p: [f64; 2]) -> Result<Pt, Stop> {
        let (w, h) = self.viewport();
        if !(p[0].is_finite()
            && p[1].is_finite()
            && p[0] >= 0.0
            && p[1] >= 0.0
            && p[0] < w
            && p[1] < h)
        {
            return Err(agent(AgentError::InvalidCoordinates(format!(
                "({}, {}) is outside the {w}x{h} viewport",
                p[0], p[1]
            ))));
        }
        Ok((p[0], p[1]))
    }

    /// Converts a 0–1000 normalised point to CSS pixels.
    fn norm(&self, p: [f64; 2]) -> Result<Pt, Stop> {
        if !(p[0].is_finite()
            && p[1].is_finite()
            && (0.0..=1000.0).contains(&p[0])
            && (0.0..=1000.0).contains(&p[1]))
        {
            return Err(agent(AgentError::InvalidCoordinates(format!(
                "({}, {}) is outside 0–1000",
                p[0], p[1]
            ))));
        }
        let (w, h) = self.viewport();
        Ok(((p[0] / 1000.0 * w).min(w - 1.0), (p[1] / 1000.0 * h).min(h - 1.0)))
    }

    /// Centre of element `id` (scrolled into view).
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

    /// Clicks element `id`, finding it and marking the document in one script.
    async fn click_elem(&mut self, id: u32) -> Result<String, Stop> {
        self.mark_seq = self.tabs.seq();
        self.tabs.watch().await;
        let c = self.center(id, true).await?;
        let before = c.href.unwrap_or_default();
        self.click_marked((c.x, c.y), c.desc, before, MouseButton::Left, 1).await
    }

    async fn describe(&self, p: Pt) -> String {
        cdp::eval_string(self.tabs.page(), &js::describe_at(p.0, p.1))
            .await
            .unwrap_or_else(|_| "unknown".into())
    }

    /// Marks the document before an action that may navigate, and watches the tab's
    /// navigation events (before the action, so none is missed) for `settle`.
    async fn mark(&mut self) -> Result<String, Stop> {
        self.mark_seq = self.tabs.seq();
        self.tabs.watch().await;
        cdp::eval_string(self.tabs.page(), js::MARK_DOCUMENT).await.map_err(env)
    }

    /// After an action that may navigate: waits, picks up new tabs, says what changed.
    async fn after(
        &mut self,
        url_before: &str,
        known_nav: bool,
        grace: u32,
    ) -> Result<String, Stop> {
        let seq = self.mark_seq;
        let mut url = self.tabs.settle(known_nav, url_before, grace).await;
        if !self.tabs.is_alive() {
            return Err(env("browser connection lost".into()));
        }
        let mut notes = Vec::new();
        for target in self.tabs.opened_since(seq) {
            if let Some(tab) = self.tabs.adopt(&target).await {
                self.mark_seq = seq;
                self.tabs.watch().await;
                url = self.tabs.settle(true, "about:blank", 2).await;
                notes.push(format!("new tab opened (tab {tab})"));
            }
        }
        if url.is_empty() {
            url = cdp::eval_string(self.tabs.page(), "location.href").await.map_err(env)?;
        }
        if url != url_before && notes.is_empty() {
            notes.push(format!("navigated to {}", short(&url)));
        }
        self.last = None;
        Ok(if notes.is_empty() { String::new() } else { format!("; {}", notes.join("; ")) })
    }

    async fn click_at(
        &mut self,
        p: Pt,
        desc: String,
        button: MouseButton,
        clicks: u32,
    ) -> Result<String, Stop> {
        let before = self.mark().await?;
        self.click_marked(p, desc, before, button, clicks).await
    }

    /// Clicks at `p` on a document already marked (its URL was `before`).
    async fn click_marked(
        &mut self,
        p: Pt,
        desc: String,
        before: String,
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
        let nav = self.after(&before, false, grace).await?;
        Ok(format!("{what} {desc}{nav}"))
    }

    async fn write(&mut self, text: &str) -> Result<String, Stop> {
        let focused = cdp::eval(self.tabs.page(), js::SELECT_FOCUSED).await.map_err(env)?;
        if focused != serde_json::Value::Bool(true) {
            return Ok("failed: no text field is focused; click one first".into());
        }
        cdp::insert_text(self.tabs.page(), text).await.map_err(env)?;
        let got = cdp::eval(self.tabs.page(), js::FOCUSED_VALUE).await.map_err(env)?;
        self.last = None;
        match got.as_str() {
            Some(v) if v == text => Ok(format!("typed {:?}", clip(text))),
            Some(v) => {
                Ok(format!("typed {:?}; value mismatch: field has {:?}", clip(text), clip(v)))
            }
            None => Ok(format!("typed {:?}", clip(text))),
        }
    }

    async fn press_combo(&mut self, combo: &str, presses: u32) -> Result<String, Stop> {
        let keys = keys::parse_combo(combo).map_err(|e| agent(AgentError::BadArguments(e)))?;
        let before = self.mark().await?;
        for _ in 0..presses.clamp(1, 50) {
            cdp::press(self.tabs.page(), &keys, keys.len() > 1).await.map_err(env)?;
        }
        let grace = if combo.to_ascii_lowercase().contains("enter") { 6 } else { 2 };
        let nav = self.after(&before, false, grace).await?;
        Ok(format!("pressed {combo}{nav}"))
    }

    async fn press_list(
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
        let before = self.mark().await?;
        for _ in 0..presses.clamp(1, 50) {
            cdp::press(self.tabs.page(), &defs, hotkey).await.map_err(env)?;
        }
        let grace = if keys.iter().any(|k| k.eq_ignore_ascii_case("enter")) { 6 } else { 2 };
        let nav = self.after(&before, false, grace).await?;
        Ok(format!("pressed {}{nav}", keys.join(if hotkey { "+" } else { " " })))
    }

    async fn scroll(&mut self, d: Direction, dist: f64, at: Option<Pt>) -> Result<String, Stop> {
        let (dx, dy) = dir_delta(d, dist);
        let r =
            cdp::eval_string(self.tabs.page(), &js::scroll_by(dx, dy, at)).await.map_err(env)?;
        self.last = None;
        Ok(if r == "moved" {
            format!("scrolled {}", dir_name(d))
        } else {
            format!("cannot scroll {}: already at the boundary", dir_name(d))
        })
    }

    async fn goto(&mut self, url: &str) -> Result<String, Stop> {
        if let Some(o) = crate::allow::origin(url)
            && self.tabs.blacklist().contains(&o.host)
        {
            return Ok(format!("failed: host {} is blacklisted", o.host));
        }
        // Checked here as well as in the browser: Chromium may preconnect to a navigation's
        // origin before the request reaches interception.
        if let Err(why) = self.tabs.check_url(url) {
            return Ok(format!("failed to open {}: blocked ({why})", short(url)));
        }
        let before = self.mark().await?;
        match self.tabs.navigate(url).await {
            Ok(()) => {
                let nav = self.after(&before, true, 2).await?;
                Ok(format!("opened {}{nav}", short(url)))
            }
            Err(e) if !self.tabs.is_alive() => Err(env(e)),
            Err(e) => {
                self.last = None;
                Ok(format!("failed to open {}: {e}", short(url)))
            }
        }
    }

    async fn history(&mut self, delta: i64) -> Result<String, Stop> {
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
        let before = self.mark().await?;
        self.tabs
            .page()
            .execute(NavigateToHistoryEntryParams::new(entry.id))
            .await
            .map_err(|e| env(e.to_string()))?;
        let nav = self.after(&before, true, 2).await?;
        Ok(format!("went {}{nav}", if delta < 0 { "back" } else { "forward" }))
    }

    async fn new_tab(&mut self) -> Result<String, Stop> {
        let tab = self.tabs.open_tab().await.map_err(env)?;
        self.last = None;
        Ok(format!("new tab opened (tab {tab})"))
    }

    async fn switch_tab(&mut self, i: usize) -> Result<String, Stop> {
        if !self.tabs.switch(i).await {
            return Err(agent(AgentError::InvalidTab(format!(
                "no tab {i}; there are {}",
                self.tabs.len()
            ))));
        }
        self.last = None;
        Ok(format!("switched to tab {i}"))
    }

    async fn close_tab(&mut self) -> Result<String, Stop> {
        if !self.tabs.close_active().await {
            return Err(agent(AgentError::InvalidTab("cannot close the last tab".into())));
        }
        self.last = None;
        Ok(format!("closed tab; active tab is {}", self.tabs.active()))
    }

    async fn select(
        &mut self,
        target_js: &str,
        option: &str,
        desc: String,
    ) -> Result<String, Stop> {
        let before = self.mark().await?;
        let r = cdp::eval_string(self.tabs.page(), &js::select_option(target_js, option))
            .await
            .map_err(env)?;
        if r != "ok" {
            return Err(agent(AgentError::InvalidElement(format!("{desc}: {r}"))));
        }
        let nav = self.after(&before, false, 2).await?;
        Ok(format!("selected {option:?} in {desc}{nav}"))
    }

    async fn wait(&mut self, seconds: f64) -> Result<String, Stop> {
        let cap = self.cfg.step_timeout.as_secs_f64() / 2.0;
        let s = if seconds.is_finite() { seconds.clamp(0.0, cap) } else { 0.0 };
        tokio::time::sleep(Duration::from_secs_f64(s)).await;
        self.last = None;
        Ok(format!("waited {s:.1}s"))
    }

    async fn exec_openwebrl(&mut self, t: &OpenWebRl) -> Result<String, Stop> {
        match t {
            OpenWebRl::Click { point_2d, clicks, button } => {
                let p = self.px(*point_2d)?;
                let desc = self.describe(p).await;
                self.click_at(p, desc, *button, *clicks).await
            }
            OpenWebRl::Write { message } => self.write(message).await,
            OpenWebRl::Scroll { direction, amount, point_2d } => {
                let at = point_2d.map(|p| self.px(p)).transpose()?;
                let (w, h) = self.viewport();
                let span =
                    if matches!(direction, Direction::Left | Direction::Right) { w } else { h };
                let amount = if amount.is_finite() { amount.clamp(0.0, 1.0) } else { 0.5 };
                self.scroll(*direction, span * amount, at).await
            }
            OpenWebRl::PressKeys { keys, is_hotkey, presses } => {
                self.press_list(keys, *is_hotkey, *presses).await
            }
            OpenWebRl::Wait { seconds } => self.wait(*seconds).await,
            OpenWebRl::GotoUrl { url } => self.goto(url).await,
            OpenWebRl::GoBack => self.history(-1).await,
            OpenWebRl::Hover { point_2d } => {
                let p = self.px(*point_2d)?;
                cdp::mouse_move(self.tabs.page(), p.0, p.1).await.map_err(env)?;
                self.last = None;
                Ok(format!("hovering {}", self.describe(p).await))
            }
            OpenWebRl::Drag { start_point_2d, end_point_2d, steps } => {
                let (a, b) = (self.px(*start_point_2d)?, self.px(*end_point_2d)?);
                cdp::drag(self.tabs.page(), a, b, *steps).await.map_err(env)?;
                self.last = None;
                Ok(format!("dragged from ({:.0}, {:.0}) to ({:.0}, {:.0})", a.0, a.1, b.0, b.1))
            }
            OpenWebRl::NewTab => self.new_tab().await,
            OpenWebRl::SwitchTab { tab_index } => self.switch_tab(*tab_index).await,
            OpenWebRl::CloseTab => self.close_tab().await,
            OpenWebRl::Done { response } => Err(Stop::Terminal(Some(response.clone()))),
        }
    }

    async fn exec_opagent(&mut self, t: &OpAgent) -> Result<String, Stop> {
        match t {
            OpAgent::Click { coords } => {
                let p = self.norm(*coords)?;
                let desc = self.describe(p).await;
                self.click_at(p, desc, MouseButton::Left, 1).await
            }
            OpAgent::DoubleClick { coords } => {
                let p = self.norm(*coords)?;
                let desc = self.describe(p).await;
                self.click_at(p, desc, MouseButton::Left, 2).await
            }
            OpAgent::Type { coords, content, press_enter_after } => {
                let p = self.norm(*coords)?;
                let desc = self.describe(p).await;
                let clicked = self.click_at(p, desc, MouseButton::Left, 1).await?;
                let typed = self.write(content).await?;
                let enter = if *press_enter_after > 0 {
                    format!("; {}", self.press_combo("Enter", 1).await?)
                } else {
                    String::new()
                };
                Ok(format!("{clicked}; {typed}{enter}"))
            }
            OpAgent::Hover { coords } => {
                let p = self.norm(*coords)?;
                cdp::mouse_move(self.tabs.page(), p.0, p.1).await.map_err(env)?;
                self.last = None;
                Ok(format!("hovering {}", self.describe(p).await))
            }
            OpAgent::Press { key, coords } => {
                let mut pre = String::new();
                if let Some(c) = coords {
                    let p = self.norm(*c)?;
                    let desc = self.describe(p).await;
                    pre = format!("{}; ", self.click_at(p, desc, MouseButton::Left, 1).await?);
                }
                Ok(format!("{pre}{}", self.press_combo(key, 1).await?))
            }
            OpAgent::Scroll { direction, distance, coords } => {
                let at = coords.map(|c| self.norm(c)).transpose()?;
                let d = if distance.is_finite() { distance.clamp(0.0, 10_000.0) } else { 300.0 };
                self.scroll(*direction, d, at).await
            }
            OpAgent::NewTab => self.new_tab().await,
            OpAgent::TabFocus { tab_index } => self.switch_tab(*tab_index).await,
            OpAgent::GoBack => self.history(-1).await,
            OpAgent::GoForward => self.history(1).await,
            OpAgent::Goto { url } => self.goto(url).await,
            OpAgent::BrowserSelectOption { coords, option } => {
                let p = self.norm(*coords)?;
                let desc = self.describe(p).await;
                self.select(&format!("document.elementFromPoint({}, {})", p.0, p.1), option, desc)
                    .await
            }
            OpAgent::Wait { seconds } => self.wait(*seconds).await,
            OpAgent::Find { search_term } => {
                let n =
                    cdp::eval(self.tabs.page(), &js::find_text(search_term)).await.map_err(env)?;
                self.last = None;
                Ok(format!(
                    "found {} match(es) for {:?}",
                    n.as_u64().unwrap_or(0),
                    clip(search_term)
                ))
            }
            OpAgent::Answer { text } => Err(Stop::Terminal(Some(text.clone()))),
        }
    }

    async fn exec_elem(&mut self, t: &Elem) -> Result<String, Stop> {
        match t {
            Elem::Click { id } => self.click_elem(*id).await,
            Elem::Type { id, text, submit } => {
                let (p, desc) = self.elem(*id).await?;
                cdp::click(self.tabs.page(), p.0, p.1, MouseButton::Left, 1).await.map_err(env)?;
                let typed = self.write(text).await?;
                let typed = typed.replacen("typed", &format!("typed into {desc}:"), 1);
                if *submit {
                    Ok(format!("{typed}; {}", self.press_combo("Enter", 1).await?))
                } else {
                    Ok(typed)
                }
            }
            Elem::Select { id, option } => {
                let (_, desc) = self.elem(*id).await?;
                self.select(
                    &format!("document.querySelector('[data-wrl-id=\"{id}\"]')"),
                    option,
                    desc,
                )
                .await
            }
            Elem::Hover { id } => {
                let (p, desc) = self.elem(*id).await?;
                cdp::mouse_move(self.tabs.page(), p.0, p.1).await.map_err(env)?;
                self.last = None;
                Ok(format!("hovering {desc}"))
            }
            Elem::Scroll { direction } => {
                let (w, h) = self.viewport();
                let span =
                    if matches!(direction, Direction::Left | Direction::Right) { w } else { h };
                self.scroll(*direction, span / 2.0, None).await
            }
            Elem::Press { key } => self.press_combo(key, 1).await,
            Elem::Goto { url } => self.goto(url).await,
            Elem::Back => self.history(-1).await,
            Elem::Forward => self.history(1).await,
            Elem::Answer { text } => Err(Stop::Terminal(Some(text.clone()))),
            Elem::Done => Err(Stop::Terminal(None)),
        }
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
