//! Grounding the scripted expert's element actions in a coordinate tool set: `click 7` becomes
//! a click at the centre of element 7's box as the step's screenshot shows it, in the tool
//! set's space (CSS pixels, or 0–1000 of the viewport), so a vision-language policy with
//! OpenWebRL's or OpAgent's tools learns from demonstrations in its own calls.
//!
//! The boxes are the ones the expert's run recorded beside each screenshot (`TrajStep::boxes`,
//! from the snapshot taken with it). An element whose centre lies outside the viewport cannot
//! be clicked where the screenshot shows it: the expert's recorded run scrolls to it first
//! ([`scroll_to`]), and one left off-screen is an error, never a guessed point.

use wrl_sandbox::StepBoxes;

use crate::action::{Action, Direction, Elem, MouseButton, OpAgent, OpenWebRl, ToolSet};

/// Why an element action has no grounded form.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum GroundError {
    /// The step recorded no box for the element it acts on.
    #[error("no box was recorded for element {0}")]
    NoBox(u32),
    /// The element's centre was outside the viewport the screenshot shows.
    #[error("element {id}'s centre ({x}, {y}) is outside the {w}x{h} viewport of the screenshot")]
    OffScreen { id: u32, x: f64, y: f64, w: u32, h: u32 },
    /// The tool set has no tool for the action.
    #[error("{set:?} has no tool for `{action}`")]
    NoTool { set: ToolSet, action: &'static str },
}

/// The element an action addresses, if any.
pub fn target(e: &Elem) -> Option<u32> {
    match e {
        Elem::Click { id } | Elem::Hover { id } => Some(*id),
        Elem::Type { id, .. } | Elem::Select { id, .. } => Some(*id),
        Elem::Scroll { .. }
        | Elem::Press { .. }
        | Elem::Goto { .. }
        | Elem::Back
        | Elem::Forward
        | Elem::Answer { .. }
        | Elem::Done => None,
    }
}

/// The centre of `rect` (`[left, top, width, height]`, CSS pixels) when it lies inside the
/// `w`×`h` viewport.
fn centre(id: u32, rect: [i32; 4], [w, h]: [u32; 2]) -> Result<(f64, f64), GroundError> {
    let x = f64::from(rect[0]) + f64::from(rect[2]) / 2.0;
    let y = f64::from(rect[1]) + f64::from(rect[3]) / 2.0;
    if (0.0..f64::from(w)).contains(&x) && (0.0..f64::from(h)).contains(&y) {
        Ok((x, y))
    } else {
        Err(GroundError::OffScreen { id, x, y, w, h })
    }
}

/// The viewport point (`x`, `y`), CSS pixels, in `set`'s space: whole pixels, or whole units
/// of 0–1000 (the nearest, which the driver maps back to within half a unit's pixels).
pub fn point(set: ToolSet, (x, y): (f64, f64), [w, h]: [u32; 2]) -> [f64; 2] {
    let (w, h) = (f64::from(w), f64::from(h));
    match set {
        ToolSet::OpenwebrlNorm | ToolSet::Opagent => [
            (x / w * 1000.0).round().clamp(0.0, 1000.0),
            (y / h * 1000.0).round().clamp(0.0, 1000.0),
        ],
        ToolSet::Openwebrl | ToolSet::Elem => {
            [x.floor().clamp(0.0, w - 1.0), y.floor().clamp(0.0, h - 1.0)]
        }
    }
}

/// `e` as the actions of coordinate tool set `set`, at the boxes `boxes` recorded: a click at
/// the element's centre; a typing as a click on the field then `write` (OpenWebRL, many calls a
/// turn; Enter as `press_keys` after a submitted one) or OpAgent's one `type` call; a scroll by
/// half the viewport; history and navigation as the set's own; the answer (and `done`) as
/// OpenWebRL's `done(response)` or OpAgent's answer. The element-id set keeps `e` as it is.
pub fn ground(e: &Elem, boxes: &StepBoxes, set: ToolSet) -> Result<Vec<Action>, GroundError> {
    let at = |id: u32| -> Result<[f64; 2], GroundError> {
        let rect = boxes.elements.get(&id).ok_or(GroundError::NoBox(id))?;
        Ok(point(set, centre(id, *rect, boxes.viewport)?, boxes.viewport))
    };
    let no = |action: &'static str| GroundError::NoTool { set, action };
    let half = |d: Direction| match d {
        Direction::Up | Direction::Down => f64::from(boxes.viewport[1]) / 2.0,
        Direction::Left | Direction::Right => f64::from(boxes.viewport[0]) / 2.0,
    };
    // Called in OpenWebRL's branch only: its two spaces.
    let web = |t: OpenWebRl| match set {
        ToolSet::Openwebrl => Action::Openwebrl(t),
        ToolSet::OpenwebrlNorm | ToolSet::Opagent | ToolSet::Elem => Action::OpenwebrlNorm(t),
    };
    let click = |p| OpenWebRl::Click { point_2d: p, clicks: 1, button: MouseButton::Left };
    Ok(match set {
        ToolSet::Elem => vec![Action::Elem(e.clone())],
        ToolSet::Openwebrl | ToolSet::OpenwebrlNorm => match e {
            Elem::Click { id } => vec![web(click(at(*id)?))],
            Elem::Hover { id } => vec![web(OpenWebRl::Hover { point_2d: at(*id)? })],
            Elem::Type { id, text, submit } => {
                let mut out =
                    vec![web(click(at(*id)?)), web(OpenWebRl::Write { message: text.clone() })];
                if *submit {
                    let keys = vec!["Enter".to_string()];
                    out.push(web(OpenWebRl::PressKeys { keys, is_hotkey: false, presses: 1 }));
                }
                out
            }
            Elem::Select { .. } => return Err(no("select")),
            Elem::Scroll { direction } => {
                vec![web(OpenWebRl::Scroll { direction: *direction, amount: 0.5, point_2d: None })]
            }
            Elem::Press { key } => {
                let keys: Vec<String> = key.split('+').map(str::to_string).collect();
                let is_hotkey = keys.len() > 1;
                vec![web(OpenWebRl::PressKeys { keys, is_hotkey, presses: 1 })]
            }
            Elem::Goto { url } => vec![web(OpenWebRl::GotoUrl { url: url.clone() })],
            Elem::Back => vec![web(OpenWebRl::GoBack)],
            Elem::Forward => return Err(no("forward")),
            Elem::Answer { text } => vec![web(OpenWebRl::Done { response: text.clone() })],
            Elem::Done => vec![web(OpenWebRl::Done { response: String::new() })],
        },
        ToolSet::Opagent => vec![Action::Opagent(match e {
            Elem::Click { id } => OpAgent::Click { coords: at(*id)? },
            Elem::Hover { id } => OpAgent::Hover { coords: at(*id)? },
            Elem::Type { id, text, submit } => OpAgent::Type {
                coords: at(*id)?,
                content: text.clone(),
                press_enter_after: u32::from(*submit),
            },
            Elem::Select { id, option } => {
                OpAgent::BrowserSelectOption { coords: at(*id)?, option: option.clone() }
            }
            Elem::Scroll { direction } => {
                OpAgent::Scroll { direction: *direction, distance: half(*direction), coords: None }
            }
            Elem::Press { key } => OpAgent::Press { key: key.clone(), coords: None },
            Elem::Goto { url } => OpAgent::Goto { url: url.clone() },
            Elem::Back => OpAgent::GoBack,
            Elem::Forward => OpAgent::GoForward,
            Elem::Answer { text } => OpAgent::Answer { text: text.clone() },
            Elem::Done => OpAgent::Answer { text: String::new() },
        })],
    })
}

/// Where the expert must scroll before acting on element `id` of a snapshot, as a screenshot
/// shows it: `Some(direction)` when the element's centre is above or below the `w`×`h`
/// viewport (`rect` as [`Snapshot`](crate::Snapshot) records it), `None` when it is in view or
/// has no box.
pub fn scroll_to(rect: Option<[i32; 4]>, (w, h): (u32, u32)) -> Option<Direction> {
    let r = rect?;
    let y = f64::from(r[1]) + f64::from(r[3]) / 2.0;
    let x = f64::from(r[0]) + f64::from(r[2]) / 2.0;
    if y < 0.0 {
        Some(Direction::Up)
    } else if y >= f64::from(h) {
        Some(Direction::Down)
    } else if x < 0.0 {
        Some(Direction::Left)
    } else if x >= f64::from(w) {
        Some(Direction::Right)
    } else {
        None
    }
}

#[cfg(test)]
#[path = "ground_tests.rs"]
mod tests;
