//! The three tool sets' actions (OpenWebRL, OpAgent, element ids) as the driver's operations:
//! each tool set's arguments checked and turned into points (CSS pixels, or 0–1000 of the
//! viewport), distances and keys.

use crate::action::{Action, Elem, MouseButton, OpAgent, OpenWebRl};
use crate::failure::AgentError;

use super::ops::{Driver, Pt, Stop, agent};

impl Driver<'_> {
    /// Runs one action, returning its feedback line.
    pub(crate) async fn run(&mut self, a: &Action) -> Result<String, Stop> {
        match a {
            Action::Openwebrl(t) => self.openwebrl(t, px).await,
            Action::OpenwebrlNorm(t) => self.openwebrl(t, norm).await,
            Action::Opagent(t) => self.opagent(t).await,
            Action::Elem(t) => self.element_ids(t).await,
        }
    }

    /// OpenWebRL's tools, their points read by `px` (CSS pixels) or `norm` (0–1000).
    async fn openwebrl(&mut self, t: &OpenWebRl, px: Space) -> Result<String, Stop> {
        let viewport = self.viewport();
        match t {
            OpenWebRl::Click { point_2d, clicks, button } => {
                self.click(px(viewport, *point_2d)?, *button, *clicks).await
            }
            OpenWebRl::Write { message } => self.write(message).await,
            OpenWebRl::Scroll { direction, amount, point_2d } => {
                let at = point_2d.map(|p| px(viewport, p)).transpose()?;
                let amount = if amount.is_finite() { amount.clamp(0.0, 1.0) } else { 0.5 };
                self.scroll_viewport(*direction, amount, at).await
            }
            OpenWebRl::PressKeys { keys, is_hotkey, presses } => {
                self.press_list(keys, *is_hotkey, *presses).await
            }
            OpenWebRl::Wait { seconds } => self.wait(*seconds).await,
            OpenWebRl::GotoUrl { url } => self.goto(url).await,
            OpenWebRl::GoBack => self.history(-1).await,
            OpenWebRl::Hover { point_2d } => self.hover(px(viewport, *point_2d)?).await,
            OpenWebRl::Drag { start_point_2d, end_point_2d, steps } => {
                let (a, b) = (px(viewport, *start_point_2d)?, px(viewport, *end_point_2d)?);
                self.drag(a, b, *steps).await
            }
            OpenWebRl::NewTab => self.new_tab().await,
            OpenWebRl::SwitchTab { tab_index } => self.switch_tab(*tab_index).await,
            OpenWebRl::CloseTab => self.close_tab().await,
            OpenWebRl::Done { response } => Err(Stop::Terminal(Some(response.clone()))),
        }
    }

    async fn opagent(&mut self, t: &OpAgent) -> Result<String, Stop> {
        let viewport = self.viewport();
        match t {
            OpAgent::Click { coords } => {
                self.click(norm(viewport, *coords)?, MouseButton::Left, 1).await
            }
            OpAgent::DoubleClick { coords } => {
                self.click(norm(viewport, *coords)?, MouseButton::Left, 2).await
            }
            OpAgent::Type { coords, content, press_enter_after } => {
                let p = norm(viewport, *coords)?;
                let clicked = self.click(p, MouseButton::Left, 1).await?;
                let typed = self.write(content).await?;
                let enter = if *press_enter_after > 0 {
                    format!("; {}", self.press_combo("Enter", 1).await?)
                } else {
                    String::new()
                };
                Ok(format!("{clicked}; {typed}{enter}"))
            }
            OpAgent::Hover { coords } => self.hover(norm(viewport, *coords)?).await,
            OpAgent::Press { key, coords } => {
                let mut pre = String::new();
                if let Some(c) = coords {
                    let p = norm(viewport, *c)?;
                    pre = format!("{}; ", self.click(p, MouseButton::Left, 1).await?);
                }
                Ok(format!("{pre}{}", self.press_combo(key, 1).await?))
            }
            OpAgent::Scroll { direction, distance, coords } => {
                let at = coords.map(|c| norm(viewport, c)).transpose()?;
                let d = if distance.is_finite() { distance.clamp(0.0, 10_000.0) } else { 300.0 };
                self.scroll(*direction, d, at).await
            }
            OpAgent::NewTab => self.new_tab().await,
            OpAgent::TabFocus { tab_index } => self.switch_tab(*tab_index).await,
            OpAgent::GoBack => self.history(-1).await,
            OpAgent::GoForward => self.history(1).await,
            OpAgent::Goto { url } => self.goto(url).await,
            OpAgent::BrowserSelectOption { coords, option } => {
                self.select_at(norm(viewport, *coords)?, option).await
            }
            OpAgent::Wait { seconds } => self.wait(*seconds).await,
            OpAgent::Find { search_term } => self.find(search_term).await,
            OpAgent::GetFile { coords } => self.get_file(norm(viewport, *coords)?).await,
            OpAgent::Answer { text } => Err(Stop::Terminal(Some(text.clone()))),
        }
    }

    async fn element_ids(&mut self, t: &Elem) -> Result<String, Stop> {
        match t {
            Elem::Click { id } => self.click_elem(*id).await,
            Elem::Type { id, text, submit } => {
                let typed = self.type_into(*id, text).await?;
                if *submit {
                    Ok(format!("{typed}; {}", self.press_combo("Enter", 1).await?))
                } else {
                    Ok(typed)
                }
            }
            Elem::Select { id, option } => self.select_elem(*id, option).await,
            Elem::Hover { id } => self.hover_elem(*id).await,
            Elem::Scroll { direction } => self.scroll_viewport(*direction, 0.5, None).await,
            Elem::Press { key } => self.press_combo(key, 1).await,
            Elem::Goto { url } => self.goto(url).await,
            Elem::Back => self.history(-1).await,
            Elem::Forward => self.history(1).await,
            Elem::Answer { text } => Err(Stop::Terminal(Some(text.clone()))),
            Elem::Done => Err(Stop::Terminal(None)),
        }
    }
}

/// A tool set's point as a viewport point in CSS pixels: [`px`] or [`norm`].
type Space = fn((f64, f64), [f64; 2]) -> Result<Pt, Stop>;

/// Checks an OpenWebRL CSS-pixel point against the viewport (`w`, `h`).
fn px((w, h): (f64, f64), p: [f64; 2]) -> Result<Pt, Stop> {
    if !(p[0].is_finite() && p[1].is_finite() && p[0] >= 0.0 && p[1] >= 0.0 && p[0] < w && p[1] < h)
    {
        return Err(agent(AgentError::InvalidCoordinates(format!(
            "({}, {}) is outside the {w}x{h} viewport",
            p[0], p[1]
        ))));
    }
    Ok((p[0], p[1]))
}

/// Converts a 0–1000 normalised point (OpAgent's, OpenWebRL's own) to CSS pixels of the viewport (`w`, `h`).
fn norm((w, h): (f64, f64), p: [f64; 2]) -> Result<Pt, Stop> {
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
    Ok(((p[0] / 1000.0 * w).min(w - 1.0), (p[1] / 1000.0 * h).min(h - 1.0)))
}
