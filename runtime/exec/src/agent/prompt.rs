//! A turn's prompt as text: the page (with the past pages an agent's window keeps), the actions
//! so far and the task, cut to the room the policy has — the task and the actions never, the
//! oldest page first — and the room itself ([`Window::fit`], from the model's context). The
//! trained policy, module graphs, SFT examples, the conversation of `history = full_text` and
//! `wrlc env serve` all prompt through it, so what a policy imitates is what it later sees.

use wrl_plan::params;
use wrl_trainer::{Role, Segment, Trainer, render_prompt_with};

/// How much of the episode so far the prompt carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum History {
    /// Only the current observation.
    None,
    /// The current observation and the actions taken so far (`history = action_only`).
    ActionOnly,
    /// The whole episode (`full_text`; `hide_thinking` without past reasoning): a policy with
    /// a chat template sees it as a conversation (`agent::conversation`); the tiny policy,
    /// which has none and whose turns are its actions, sees the actions so far.
    Conversation { hide_thinking: bool },
}

impl History {
    /// Whether a one-message prompt lists the actions so far.
    fn keeps_actions(self) -> bool {
        match self {
            History::None => false,
            History::ActionOnly | History::Conversation { .. } => true,
        }
    }
}

impl From<params::History> for History {
    fn from(h: params::History) -> History {
        match h {
            params::History::None => History::None,
            params::History::ActionOnly => History::ActionOnly,
            params::History::FullText => History::Conversation { hide_thinking: false },
            params::History::HideThinking => History::Conversation { hide_thinking: true },
        }
    }
}

/// The largest prompt, in bytes, kept for the tiny byte-level policy's context (a policy with
/// a chat template gets the room its context leaves: [`Window::fit`]).
pub const MAX_PROMPT_BYTES: usize = 900;

/// Which past text observations a ReAct agent's prompt keeps (`pages`, `older_pages`), and
/// what a prompt that does not fit does (`overflow`). The default keeps the current page only
/// and cuts what does not fit: the prompt every agent had before these fields existed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Pages kept, the current one included; `None`: all of them.
    pub pages: Option<u32>,
    /// A page that left the window leaves a line saying so.
    pub placeholder: bool,
    /// The past actions an `action_only` prompt lists (`actions`), each numbered as it was;
    /// `None`: all of them, unnumbered (the prompt before `actions` existed).
    pub actions: Option<u32>,
    /// A prompt that does not fit ends the episode (`context_overflow`) instead of being cut.
    pub end_on_overflow: bool,
    /// The tokens the policy may write over the episode (`trajectory_tokens`); `None`: no cap.
    pub reply_budget: Option<usize>,
    /// The bytes a turn's user text may take: [`MAX_PROMPT_BYTES`] for the tiny policy, what
    /// the context leaves for a policy with a chat template ([`Window::fit`]).
    pub room: usize,
    /// The screenshots a vision-language policy's prompt keeps (the env's `screenshot(last:
    /// K, older)` with K > 0; set by `AgentCfg::in_plan`, which sees the env); `None`: none.
    pub screens: Option<Screens>,
}

/// The env's `screenshot(last: K, older)`, as a vision-language policy's prompt keeps them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Screens {
    /// The most recent screenshots kept, each as its image tokens.
    pub last: usize,
    /// An older screenshot leaves the line [`SCREEN_OMITTED`] (else nothing).
    pub placeholder: bool,
}

/// What a screenshot that left the window leaves with `older = placeholder`.
pub const SCREEN_OMITTED: &str = "[screenshot omitted]";

impl Default for Window {
    fn default() -> Window {
        Window {
            pages: Some(1),
            placeholder: false,
            actions: None,
            end_on_overflow: false,
            reply_budget: None,
            room: MAX_PROMPT_BYTES,
            screens: None,
        }
    }
}

impl Window {
    /// A ReAct agent's window.
    pub fn of(r: &params::React) -> Window {
        Window {
            pages: r.pages.value().copied(),
            placeholder: r.older_pages == params::OlderPages::Placeholder,
            actions: r.actions.value().copied(),
            end_on_overflow: r.overflow == params::Overflow::EndEpisode,
            reply_budget: r.trajectory_tokens.value().map(|t| t.0 as usize),
            room: MAX_PROMPT_BYTES,
            screens: None,
        }
    }

    /// The window as `trainer`'s policy fills it: a policy with a chat template (an `hf(…)`
    /// model) gets the room `length` tokens (its context, or SFT's `max_length`) leave after
    /// its reply (`reply` tokens) and the template's own tokens (the prompt rendered with an
    /// empty user text and `tools`). A token covers at least one byte, so a user text of that
    /// many bytes always fits. The tiny policy keeps [`MAX_PROMPT_BYTES`].
    pub fn fit(self, trainer: &Trainer, length: usize, reply: usize, tools: &[String]) -> Window {
        self.fit_with(trainer.tokenizer(), length, reply, tools)
    }

    /// [`Window::fit`] with the policy's tokenizer alone (what `wrlc env serve`, which builds
    /// no policy, reads from the model's files).
    pub fn fit_with(
        self,
        tok: &wrl_trainer::Tokenizer,
        length: usize,
        reply: usize,
        tools: &[String],
    ) -> Window {
        if tok.chat().is_none() {
            return self;
        }
        let empty = [Segment::new(Role::User, String::new())];
        let overhead = render_prompt_with(tok, &empty, tools).map_or(length, |p| p.len());
        Window { room: length.saturating_sub(reply.saturating_add(overhead)), ..self }
    }
}

/// The prompt of a turn with the pages seen before it (`past`, oldest first, each without its
/// task line), as `window` keeps them: kept pages come before the current one, each under a
/// `[page N]` line; with `end_on_overflow`, a prompt past the window's `room` is an
/// `Err` naming the overflow, otherwise the oldest text is cut first (then the current page's
/// end, as [`compose`] does), never the actions or the task.
pub fn prompt_in(
    observation: &str,
    past: &[String],
    history: &[String],
    mode: History,
    window: Window,
) -> Result<String, String> {
    let (text, need) = layout(observation, past, history, mode, window);
    if window.end_on_overflow && need > window.room {
        return Err(format!(
            "context_overflow: the turn's prompt needs {need} bytes, more than the policy's \
             {}",
            window.room
        ));
    }
    Ok(text)
}

/// [`prompt_in`] for a caller that never ends on overflow (SFT examples are imitated whole; the
/// env service hands the prompt to its client): the oldest text is cut.
pub fn prompt_cut(
    observation: &str,
    past: &[String],
    history: &[String],
    mode: History,
    window: Window,
) -> String {
    layout(observation, past, history, mode, window).0
}

/// The window's prompt, cut to its room, and the bytes it needed uncut.
fn layout(
    observation: &str,
    past: &[String],
    history: &[String],
    mode: History,
    window: Window,
) -> (String, usize) {
    let (task, page) = split_task(observation);
    let tail = tail(task, history, mode, window.actions);
    let kept = window.pages.map_or(past.len(), |p| (p as usize).saturating_sub(1).min(past.len()));
    let first = past.len() - kept;
    let mut earlier = String::new();
    if window.placeholder && first > 0 {
        let s = if first == 1 { "" } else { "s" };
        earlier.push_str(&format!("[{first} earlier page{s} omitted]\n"));
    }
    for (i, p) in past[first..].iter().enumerate() {
        earlier.push_str(&format!("[page {}]\n{p}", first + i + 1));
        if !p.ends_with('\n') {
            earlier.push('\n');
        }
    }
    if !earlier.is_empty() {
        earlier.push_str(&format!("[page {}]\n", past.len() + 1));
    }
    let need = earlier.len() + page.len() + 1 + tail.len();
    // The oldest text goes first: what is left of the room after the current page and the tail.
    let room = window.room.saturating_sub(page.len() + 1 + tail.len());
    let mut cut = earlier.len().saturating_sub(room);
    while !earlier.is_char_boundary(cut) {
        cut += 1;
    }
    let mut pages = earlier.split_off(cut);
    pages.push_str(page);
    (compose_in(&pages, &tail, window.room), need)
}

/// The user turn the policy sees: the page (URL, elements, feedback), then the actions so far,
/// then the task. The task comes last, next to the answer the policy writes, because that is
/// what it copies from most (a product or town name to search for); when the prompt is too long
/// the page is cut, never the task or the actions.
pub fn prompt_text(observation: &str, history: &[String], mode: History) -> String {
    let (task, page) = split_task(observation);
    compose(page, &tail(task, history, mode, None))
}

/// What follows the page and is never cut: the actions so far (`action_only`), then the task.
/// With a window of K actions (`actions`), the last K, each numbered as it was, after a line
/// counting those that left it.
fn tail(task: &str, history: &[String], mode: History, actions: Option<u32>) -> String {
    let mut tail = String::new();
    if mode.keeps_actions() && !history.is_empty() {
        tail.push_str("done: ");
        match actions {
            None => tail.push_str(&history.join("; ")),
            Some(k) => {
                let first = history.len().saturating_sub(k as usize);
                if first > 0 {
                    let s = if first == 1 { "" } else { "s" };
                    tail.push_str(&format!("[{first} earlier action{s} omitted] "));
                }
                let kept: Vec<String> = history[first..]
                    .iter()
                    .enumerate()
                    .map(|(i, a)| format!("{}. {a}", first + i + 1))
                    .collect();
                tail.push_str(&kept.join("; "));
            }
        }
        tail.push('\n');
    }
    tail.push_str(task);
    tail
}

/// An observation's `task: …` first line and the page after it.
pub fn split_task(observation: &str) -> (&str, &str) {
    match observation.split_once('\n') {
        Some((first, rest)) if first.starts_with("task: ") => (first, rest),
        _ => ("", observation),
    }
}

/// `page` then `tail`, at most [`MAX_PROMPT_BYTES`]: the page is cut first, never the tail
/// (which ends with the task).
pub fn compose(page: &str, tail: &str) -> String {
    compose_in(page, tail, MAX_PROMPT_BYTES)
}

/// [`compose`] in `room` bytes.
pub fn compose_in(page: &str, tail: &str, room: usize) -> String {
    // One byte stays free for the newline between the page and the tail.
    let mut keep = room.saturating_sub(tail.len() + 1).min(page.len());
    while !page.is_char_boundary(keep) {
        keep -= 1;
    }
    let page = &page[..keep];
    let mut s = String::with_capacity(keep + tail.len() + 1);
    s.push_str(page);
    if !page.is_empty() && !page.ends_with('\n') {
        s.push('\n');
    }
    s.push_str(tail);
    if s.len() > room {
        let mut cut = s.len() - room;
        while !s.is_char_boundary(cut) {
            cut += 1;
        }
        s.drain(..cut);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_cut_the_page_never_the_actions_or_the_task() {
        assert!(prompt_text(&"x".repeat(5000), &[], History::None).len() <= MAX_PROMPT_BYTES);
        let long = format!("task: find it\n{}", "[9] link \"x\"\n".repeat(200));
        let p = prompt_text(&long, &["click 1".into()], History::ActionOnly);
        assert!(p.len() <= MAX_PROMPT_BYTES && p.ends_with("\ndone: click 1\ntask: find it"));
    }

    #[test]
    fn the_window_keeps_the_last_pages() {
        let past = vec!["[1] a\n".to_string(), "[2] b\n".to_string(), "[3] c\n".to_string()];
        let obs = "task: g\n[4] d";
        let w = |pages, placeholder, end| Window {
            pages,
            placeholder,
            actions: None,
            end_on_overflow: end,
            reply_budget: None,
            room: MAX_PROMPT_BYTES,
            screens: None,
        };
        // The default is the prompt without a window: the current page only.
        let one = prompt_in(obs, &past, &[], History::None, Window::default()).unwrap();
        assert_eq!(one, prompt_text(obs, &[], History::None));
        assert_eq!(one, "[4] d\ntask: g");
        let two = prompt_in(obs, &past, &[], History::None, w(Some(2), true, false)).unwrap();
        assert_eq!(two, "[2 earlier pages omitted]\n[page 3]\n[3] c\n[page 4]\n[4] d\ntask: g");
        let all = prompt_in(obs, &past, &[], History::None, w(None, false, false)).unwrap();
        assert!(all.starts_with("[page 1]\n[1] a\n[page 2]"), "{all}");
        // Past the budget: the oldest text is cut first, the current page and task stay whole.
        let big: Vec<String> = (0..40).map(|i| format!("[{i}] {}\n", "x".repeat(40))).collect();
        let cut = prompt_in(obs, &big, &[], History::None, w(None, false, false)).unwrap();
        assert!(cut.len() <= MAX_PROMPT_BYTES && cut.ends_with("[page 41]\n[4] d\ntask: g"));
        assert!(!cut.contains("[0] x"));
        // Or the episode ends, naming the overflow.
        let end = prompt_in(obs, &big, &[], History::None, w(None, false, true));
        assert!(end.is_err_and(|e| e.starts_with("context_overflow")));
    }

    #[test]
    fn the_action_window_keeps_the_last_actions_numbered_as_they_were() {
        let history: Vec<String> = (1..=6).map(|i| format!("click {i}")).collect();
        let obs = "task: g\n[1] a";
        let w = |actions| Window { actions, ..Window::default() };
        let all = prompt_in(obs, &[], &history, History::ActionOnly, w(None)).unwrap();
        assert_eq!(
            all,
            "[1] a\ndone: click 1; click 2; click 3; click 4; click 5; click 6\ntask: g"
        );
        let last = prompt_in(obs, &[], &history, History::ActionOnly, w(Some(2))).unwrap();
        assert_eq!(
            last,
            "[1] a\ndone: [4 earlier actions omitted] 5. click 5; 6. click 6\ntask: g"
        );
        let one = prompt_in(obs, &[], &history[..2], History::ActionOnly, w(Some(1))).unwrap();
        assert_eq!(one, "[1] a\ndone: [1 earlier action omitted] 2. click 2\ntask: g");
        // A window wider than the episode so far keeps every action, numbered.
        let wide = prompt_cut(obs, &[], &history[..2], History::ActionOnly, w(Some(14)));
        assert_eq!(wide, "[1] a\ndone: 1. click 1; 2. click 2\ntask: g");
        // Without a history of actions the window changes nothing.
        let none = prompt_in(obs, &[], &history, History::None, w(Some(2))).unwrap();
        assert_eq!(none, "[1] a\ntask: g");
    }
}
