//! Actions of the three tool sets (OpenWebRL, OpAgent, element ids) as one serde enum, and the
//! mapping from JSON tool calls (`{"name": …, "arguments": {…}}`) onto it. OpenWebRL's tools
//! come in two coordinate spaces: CSS pixels (`openwebrl`) and 0–1000 of the viewport
//! (`openwebrl_norm`, OpenWebRL's own `resize_output_coords`).
//!
//! JSON form: `{"toolset":"openwebrl","tool":"click","point_2d":[120,40]}`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::failure::AgentError;

/// Mouse button.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum MouseButton {
    /// Left button (default).
    #[default]
    Left,
    /// Right button.
    Right,
    /// Middle button.
    Middle,
}

/// Scroll direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Up.
    Up,
    /// Down (default).
    #[default]
    Down,
    /// Left.
    Left,
    /// Right.
    Right,
}

/// Accepts an optional point as `null`, missing, `[]` (the stdlib's "no point") or `[x, y]`.
fn opt_point<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<[f64; 2]>, D::Error> {
    let v: Option<Vec<f64>> = Option::deserialize(d)?;
    match v.as_deref() {
        None | Some([]) => Ok(None),
        Some([x, y]) => Ok(Some([*x, *y])),
        Some(other) => {
            Err(serde::de::Error::custom(format!("a point is [x, y], got {} numbers", other.len())))
        }
    }
}

fn one() -> u32 {
    1
}
fn half() -> f64 {
    0.5
}
fn three() -> f64 {
    3.0
}
fn two() -> f64 {
    2.0
}
fn ten() -> u32 {
    10
}

/// OpenWebRL's tools. Points are CSS pixels of the viewport (screenshot pixels / DPR).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "tool", rename_all = "snake_case")]
pub enum OpenWebRl {
    /// Click `clicks` times (2 = double click) with `button`.
    Click {
        /// Point [x, y].
        point_2d: [f64; 2],
        /// Number of clicks.
        #[serde(default = "one")]
        clicks: u32,
        /// Button.
        #[serde(default)]
        button: MouseButton,
    },
    /// Select all in the focused field, then type `message`.
    Write {
        /// Text.
        message: String,
    },
    /// Scroll the page (or the container at `point_2d`) by `amount` viewport heights/widths.
    Scroll {
        /// Direction.
        #[serde(default)]
        direction: Direction,
        /// Fraction of the viewport, 0–1.
        #[serde(default = "half")]
        amount: f64,
        /// Optional point of an inner scroll container.
        #[serde(default, deserialize_with = "opt_point")]
        point_2d: Option<[f64; 2]>,
    },
    /// Press keys, one after another, or together when `is_hotkey`.
    PressKeys {
        /// Key names (`Enter`, `Control`, `a`, …).
        keys: Vec<String>,
        /// Press simultaneously.
        #[serde(default)]
        is_hotkey: bool,
        /// Repetitions.
        #[serde(default = "one")]
        presses: u32,
    },
    /// Wait.
    Wait {
        /// Seconds.
        #[serde(default = "three")]
        seconds: f64,
    },
    /// Navigate the active tab.
    GotoUrl {
        /// URL.
        url: String,
    },
    /// History back.
    GoBack,
    /// Move the mouse.
    Hover {
        /// Point.
        point_2d: [f64; 2],
    },
    /// Press at `start_point_2d`, move in `steps`, release at `end_point_2d`.
    Drag {
        /// Start.
        start_point_2d: [f64; 2],
        /// End.
        end_point_2d: [f64; 2],
        /// Intermediate moves.
        #[serde(default = "ten")]
        steps: u32,
    },
    /// Open a blank tab and make it active.
    NewTab,
    /// Activate tab `tab_index`.
    SwitchTab {
        /// Index in the tab list.
        tab_index: usize,
    },
    /// Close the active tab.
    CloseTab,
    /// Terminal: finish with `response`.
    Done {
        /// The answer / final message.
        #[serde(default)]
        response: String,
    },
}

/// OpAgent's coordinate tools; coordinates are 0–1000 normalised over the viewport.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "tool", rename_all = "snake_case")]
pub enum OpAgent {
    /// Click.
    Click {
        /// [x, y] in 0–1000.
        coords: [f64; 2],
    },
    /// Click, select all, type `content`, optionally press Enter.
    Type {
        /// [x, y] in 0–1000.
        coords: [f64; 2],
        /// Text.
        content: String,
        /// 1 = press Enter afterwards.
        #[serde(default)]
        press_enter_after: u32,
    },
    /// Move the mouse.
    Hover {
        /// [x, y] in 0–1000.
        coords: [f64; 2],
    },
    /// Press a key combination such as `ctrl+a` or `enter`.
    Press {
        /// Key combination.
        key: String,
        /// Optional point to click first.
        #[serde(default, deserialize_with = "opt_point")]
        coords: Option<[f64; 2]>,
    },
    /// Scroll by `distance` pixels.
    Scroll {
        /// Direction.
        #[serde(default)]
        direction: Direction,
        /// Pixels.
        #[serde(default = "default_distance")]
        distance: f64,
        /// Optional point of the block to scroll.
        #[serde(default, deserialize_with = "opt_point")]
        coords: Option<[f64; 2]>,
    },
    /// New blank tab.
    NewTab,
    /// Focus tab.
    TabFocus {
        /// Index.
        tab_index: usize,
    },
    /// History back.
    GoBack,
    /// History forward.
    GoForward,
    /// Double click.
    DoubleClick {
        /// [x, y] in 0–1000.
        coords: [f64; 2],
    },
    /// Navigate.
    Goto {
        /// URL.
        url: String,
    },
    /// Choose `option` in the dropdown at `coords`.
    BrowserSelectOption {
        /// [x, y] in 0–1000 of the `<select>`.
        coords: [f64; 2],
        /// Option text or value.
        option: String,
    },
    /// Wait.
    Wait {
        /// Seconds.
        #[serde(default = "two")]
        seconds: f64,
    },
    /// Find text on the page and scroll it into view.
    Find {
        /// Text.
        search_term: String,
    },
    /// Fetch the file the link at `coords` points to and read it (a download).
    GetFile {
        /// [x, y] in 0–1000 of the link.
        coords: [f64; 2],
    },
    /// Terminal `<answer>…</answer>`.
    Answer {
        /// Answer text.
        text: String,
    },
}

fn default_distance() -> f64 {
    300.0
}

/// Element-id tools for text policies; ids come from the text observation (`[7] button …`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "tool", rename_all = "snake_case")]
pub enum Elem {
    /// Click element `id`.
    Click {
        /// Element id.
        id: u32,
    },
    /// Clear element `id`, type `text`, optionally press Enter (`submit`).
    Type {
        /// Element id.
        id: u32,
        /// Text.
        text: String,
        /// Press Enter afterwards.
        #[serde(default, alias = "enter")]
        submit: bool,
    },
    /// Choose `option` in the `<select>` `id`.
    Select {
        /// Element id.
        id: u32,
        /// Option text or value.
        option: String,
    },
    /// Hover element `id`.
    Hover {
        /// Element id.
        id: u32,
    },
    /// Scroll the page by half a viewport.
    Scroll {
        /// Direction.
        direction: Direction,
    },
    /// Press a key combination (`Enter`, `ctrl+a`).
    Press {
        /// Key combination.
        key: String,
    },
    /// Navigate.
    Goto {
        /// URL.
        url: String,
    },
    /// History back (tool name `go_back`, alias `back`).
    #[serde(rename = "go_back", alias = "back")]
    Back,
    /// History forward (tool name `go_forward`, alias `forward`).
    #[serde(rename = "go_forward", alias = "forward")]
    Forward,
    /// Terminal: answer.
    Answer {
        /// Answer text.
        text: String,
    },
    /// Terminal: done without an answer.
    Done,
}

/// One action of any tool set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "toolset", rename_all = "snake_case")]
pub enum Action {
    /// OpenWebRL tool, its points in CSS pixels.
    Openwebrl(OpenWebRl),
    /// OpenWebRL tool, its points in 0–1000 of the viewport.
    OpenwebrlNorm(OpenWebRl),
    /// OpAgent tool.
    Opagent(OpAgent),
    /// Element-id tool.
    Elem(Elem),
}

/// The tool sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolSet {
    /// OpenWebRL's, points in CSS pixels.
    Openwebrl,
    /// OpenWebRL's, points in 0–1000 of the viewport.
    OpenwebrlNorm,
    /// OpAgent.
    Opagent,
    /// Element ids.
    Elem,
}

impl ToolSet {
    /// The tool names this browser runs for the set (a call to any other is an agent error,
    /// and a recipe tool set naming one is refused before a run: `wrlc run --dry-run`).
    pub fn tool_names(self) -> &'static [&'static str] {
        match self {
            ToolSet::Openwebrl | ToolSet::OpenwebrlNorm => &[
                "click",
                "write",
                "scroll",
                "press_keys",
                "wait",
                "goto_url",
                "go_back",
                "hover",
                "drag",
                "new_tab",
                "switch_tab",
                "close_tab",
                "done",
            ],
            ToolSet::Opagent => &[
                "click",
                "type",
                "hover",
                "press",
                "scroll",
                "new_tab",
                "tab_focus",
                "go_back",
                "go_forward",
                "double_click",
                "goto",
                "browser_select_option",
                "wait",
                "find",
                "get_file",
                "answer",
            ],
            ToolSet::Elem => &[
                "click", "type", "select", "hover", "scroll", "press", "goto", "back", "forward",
                "answer", "done",
            ],
        }
    }
}

impl Action {
    /// Builds an action from a JSON tool call of `toolset`: `name` plus an `arguments` object.
    /// Unknown tools and bad arguments are agent errors.
    pub fn from_tool_call(
        toolset: ToolSet,
        name: &str,
        arguments: &Value,
    ) -> Result<Action, AgentError> {
        let mut obj = match arguments {
            Value::Object(m) => m.clone(),
            Value::Null => serde_json::Map::new(),
            other => {
                return Err(AgentError::BadArguments(format!(
                    "{name}: arguments must be an object, got {other}"
                )));
            }
        };
        obj.insert("tool".into(), Value::String(name.to_string()));
        let v = Value::Object(obj);
        if !toolset.tool_names().contains(&name) {
            return Err(AgentError::UnknownTool(name.to_string()));
        }
        let res = match toolset {
            ToolSet::Openwebrl => serde_json::from_value(v).map(Action::Openwebrl),
            ToolSet::OpenwebrlNorm => serde_json::from_value(v).map(Action::OpenwebrlNorm),
            ToolSet::Opagent => serde_json::from_value(v).map(Action::Opagent),
            ToolSet::Elem => serde_json::from_value(v).map(Action::Elem),
        };
        res.map_err(|e| AgentError::BadArguments(format!("{name}: {e}")))
    }

    /// Whether this action ends the episode.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            Action::Openwebrl(OpenWebRl::Done { .. })
                | Action::OpenwebrlNorm(OpenWebRl::Done { .. })
                | Action::Opagent(OpAgent::Answer { .. })
                | Action::Elem(Elem::Answer { .. } | Elem::Done)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_calls_map_onto_actions() {
        let a = Action::from_tool_call(ToolSet::Openwebrl, "click", &json!({"point_2d": [10, 20]}))
            .unwrap();
        assert_eq!(
            a,
            Action::Openwebrl(OpenWebRl::Click {
                point_2d: [10.0, 20.0],
                clicks: 1,
                button: MouseButton::Left
            })
        );
        let s = serde_json::to_string(&a).unwrap();
        assert!(s.contains("\"toolset\":\"openwebrl\"") && s.contains("\"tool\":\"click\""), "{s}");
        assert_eq!(serde_json::from_str::<Action>(&s).unwrap(), a);
        let n = Action::from_tool_call(ToolSet::OpenwebrlNorm, "write", &json!({"message": "m"}))
            .unwrap();
        let s = serde_json::to_string(&n).unwrap();
        assert!(s.contains("\"toolset\":\"openwebrl_norm\""), "{s}");
        assert_eq!(serde_json::from_str::<Action>(&s).unwrap(), n);
        let t = Action::from_tool_call(
            ToolSet::Opagent,
            "type",
            &json!({"coords":[500,500],"content":"hi","press_enter_after":1}),
        )
        .unwrap();
        assert!(matches!(t, Action::Opagent(OpAgent::Type { press_enter_after: 1, .. })));
        assert!(
            Action::from_tool_call(ToolSet::Opagent, "answer", &json!({"text":"x"}))
                .unwrap()
                .is_terminal()
        );
    }

    #[test]
    fn unknown_tools_and_bad_arguments_are_agent_errors() {
        assert!(matches!(
            Action::from_tool_call(ToolSet::Openwebrl, "fly", &json!({})),
            Err(AgentError::UnknownTool(_))
        ));
        assert!(matches!(
            Action::from_tool_call(ToolSet::Openwebrl, "click", &json!({"point_2d": "x"})),
            Err(AgentError::BadArguments(_))
        ));
        assert!(matches!(
            Action::from_tool_call(ToolSet::Elem, "click", &json!(3)),
            Err(AgentError::BadArguments(_))
        ));
    }
}
