//! `format_ok(mode)`: whether every turn the agent wrote has the form its source's format reward
//! asks for, read off each turn's reply as written (`TrajStep::said`) and whether its tool set
//! refused it (`TrajStep::malformed`) — OpenWebRL's `browser_env` and slime (`strict_tags`)
//! rules and WebDancer's (`react_tags`), each scored turn by turn, 1 only when every turn passes;
//! and `tags_ok`, a recipe's own rule over each turn's tag blocks.

use std::sync::LazyLock;

use fancy_regex::Regex;
use wrl_plan::params::{FormatMode, Outside, TagOrder, TagsOk};
use wrl_sandbox::Trajectory;

/// One turn as format rewards read it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TurnForm {
    /// What the agent wrote: the reply as written, or its terse lines where nothing else was
    /// recorded.
    pub text: String,
    /// The tool set refused the turn (text that is no call, an unknown tool, bad arguments).
    pub malformed: bool,
}

/// The turns the agent wrote in `traj`, in order. A step it wrote nothing in (it gave up, or
/// what it writes with broke down) is no turn.
pub fn turns(traj: &Trajectory) -> Vec<TurnForm> {
    traj.steps
        .iter()
        .map(|s| TurnForm { text: s.written().into_owned(), malformed: s.malformed })
        .filter(|t| t.malformed || !t.text.trim().is_empty())
        .collect()
}

/// Whether every turn passes `mode`'s rule; an episode without a turn does not (OpenWebRL's
/// `compute_format_reward` scores an empty response 0).
pub fn ok(mode: FormatMode, turns: &[TurnForm]) -> bool {
    !turns.is_empty() && turns.iter().all(|t| turn_ok(mode, t))
}

/// Whether every turn keeps to `rule` ([`turn_keeps`]); an episode without a turn does not.
pub fn tags_ok(rule: &TagsOk, turns: &[TurnForm]) -> bool {
    !turns.is_empty() && turns.iter().all(|t| turn_keeps(rule, t))
}

/// One turn under a `tags_ok` rule: not refused by its tool set; its listed tags in blocks,
/// none inside another, none left open, no stray close; the blocks in the listed order (a tag
/// repeating in place) with `order = listed`; only whitespace outside them with `outside =
/// whitespace`; each `required` tag written.
pub fn turn_keeps(rule: &TagsOk, turn: &TurnForm) -> bool {
    if turn.malformed {
        return false;
    }
    let text = reply(&turn.text);
    let Some((blocks, outside)) = blocks(text, &rule.tags) else { return false };
    let ordered = match rule.order {
        TagOrder::Listed => blocks.windows(2).all(|w| w[0] <= w[1]),
        TagOrder::Any => true,
    };
    let bare = match rule.outside {
        Outside::Whitespace => outside.trim().is_empty(),
        Outside::Text => true,
    };
    let written = rule.required.iter().all(|r| blocks.iter().any(|&b| rule.tags[b] == *r));
    ordered && bare && written
}

/// The blocks of `tags` in `text`, in order (each as its index in `tags`), and the text outside
/// them; `None` when a block opens inside another, is never closed, or a close has no open.
fn blocks(text: &str, tags: &[String]) -> Option<(Vec<usize>, String)> {
    let mut found = Vec::new();
    let mut outside = String::new();
    let mut rest = text;
    loop {
        // The next marker of any listed tag, open or close.
        let next = tags
            .iter()
            .enumerate()
            .flat_map(|(i, t)| {
                [(format!("<{t}>"), i, true), (format!("</{t}>"), i, false)]
                    .into_iter()
                    .filter_map(|(m, i, open)| rest.find(&m).map(|at| (at, m.len(), i, open)))
            })
            .min_by_key(|&(at, ..)| at);
        let Some((at, len, i, open)) = next else {
            outside.push_str(rest);
            return Some((found, outside));
        };
        if !open {
            return None;
        }
        outside.push_str(&rest[..at]);
        let inner = &rest[at + len..];
        let close = format!("</{}>", tags[i]);
        let end = inner.find(&close)?;
        let body = &inner[..end];
        if tags
            .iter()
            .any(|t| body.contains(&format!("<{t}>")) || body.contains(&format!("</{t}>")))
        {
            return None;
        }
        found.push(i);
        rest = &inner[end + close.len()..];
    }
}

/// A reply without its surrounding whitespace and trailing `<|im_end|>`.
fn reply(text: &str) -> &str {
    let text = text.trim();
    text.strip_suffix("<|im_end|>").map_or(text, str::trim_end)
}

/// One turn under `mode`:
/// - `browser_env` (OpenWebRL's `_compute_turn_format_reward_browser_env`): the thinking close
///   tag `</think>` somewhere in the reply, and at least one `<tool_call>`, every call
///   accepted by the tool set (the thinking opens in the prompt's prefill, so only its close is
///   the reply's);
/// - `strict_tags` (slime's `_compute_turn_format_reward_slime`, all five criteria): the whole
///   reply is `<thinking>…</thinking>`, `<action>…</action>`, then `<tool_call>…</tool_call>`
///   (one or more), with only whitespace around them; the action block describes the action in
///   words, not as a call; and the calls are accepted;
/// - `react_tags` (WebDancer): the turn is a turn of the tool set (its `<tool_call>` JSON valid,
///   or an `<answer>`), with every `<think>`, `<tool_call>` and `<answer>` tag closed.
///
/// A reply's trailing `<|im_end|>` is not part of it, as in both OpenWebRL rules.
pub fn turn_ok(mode: FormatMode, turn: &TurnForm) -> bool {
    if turn.malformed {
        return false;
    }
    let text = reply(&turn.text);
    match mode {
        FormatMode::BrowserEnv => text.contains("</think>") && text.contains("<tool_call>"),
        FormatMode::StrictTags => strict(text),
        FormatMode::ReactTags => ["think", "tool_call", "answer"].iter().all(|t| closed(text, t)),
    }
}

/// slime's rule: the three blocks in order and nothing else, the action in words.
fn strict(text: &str) -> bool {
    static WHOLE: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(
            r"(?s)^\s*<thinking>.*?</thinking>\s*<action>.*?</action>\s*<tool_call>.*?</tool_call>\s*$",
        )
        .ok()
    });
    static ACTION: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r"(?s)<action>(.*?)</action>").ok());
    let (Some(whole), Some(action)) = (WHOLE.as_ref(), ACTION.as_ref()) else {
        return false;
    };
    let described = match action.captures(text) {
        Ok(Some(c)) => c.get(1).is_some_and(|a| !calls_itself(a.as_str())),
        _ => false,
    };
    described && whole.is_match(text).unwrap_or(false)
}

/// Whether an action block holds a call rather than words (slime's
/// `_action_contains_function_call`): a JSON `"name":` key, a call with keyword arguments
/// (`click(point_2d=[3, 4])`, not "English (UK)"), or an `arguments` key.
fn calls_itself(action: &str) -> bool {
    static CALLS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
        [r#"[{"']\s*name\s*["']\s*:"#, r"(?s)\b\w+\s*\([^)]*=.*\)", r"\barguments?\s*[=:{]"]
            .iter()
            .filter_map(|p| Regex::new(p).ok())
            .collect()
    });
    let action = action.trim();
    CALLS.iter().any(|r| r.is_match(action).unwrap_or(false))
}

/// Whether every `<tag>` in `text` is closed by a `</tag>` before the next opens.
fn closed(text: &str, tag: &str) -> bool {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let mut rest = text;
    loop {
        let next_open = rest.find(&open);
        let next_close = rest.find(&close);
        match (next_open, next_close) {
            (None, None) => return true,
            // A close before any open, or an open never closed.
            (None, Some(_)) | (Some(_), None) => return false,
            (Some(o), Some(c)) if c < o => return false,
            (Some(o), Some(c)) => {
                let inner = &rest[o + open.len()..c];
                if inner.contains(&open) {
                    return false;
                }
                rest = &rest[c + close.len()..];
            }
        }
    }
}

#[cfg(test)]
#[path = "format_tests.rs"]
mod tests;
