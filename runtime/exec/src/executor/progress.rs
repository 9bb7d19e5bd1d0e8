//! Progress of a stage: an `indicatif` bar (position, ETA, the key figure: loss, reward,
//! success) when standard error is a terminal, and the timestamped plain lines otherwise (logs,
//! CI, pipes), so that a person watching sees where a run stands and a log stays readable.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// One stage's progress.
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    /// Plain lines are printed at most every `every` steps (and at the last).
    every: u64,
    len: u64,
    enabled: bool,
}

impl Progress {
    /// A bar of `len` steps named `label` on a terminal (when `bars`); plain lines every tenth
    /// otherwise.
    pub(crate) fn new(enabled: bool, bars: bool, label: &str, len: u64, unit: &str) -> Progress {
        let bar = (enabled && bars && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
            let template = format!(
                "{{prefix}} [{{bar:30}}] {{pos}}/{{len}} {unit} · {{msg}} · {{elapsed_precise}} elapsed, ETA {{eta}}"
            );
            let style = ProgressStyle::with_template(&template)
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
            bar.set_style(style);
            bar.set_prefix(label.to_string());
            bar.enable_steady_tick(Duration::from_millis(500));
            bar
        });
        Progress { bar, every: (len / 10).max(1), len, enabled }
    }

    /// Step `pos` (1-based) is done; `figure` is the key figure (`loss 0.4120`), `line` the
    /// plain line for logs.
    pub(crate) fn step(
        &self,
        pos: u64,
        figure: &str,
        line: impl FnOnce() -> String,
        say: impl FnOnce(&str),
    ) {
        match &self.bar {
            Some(bar) => {
                bar.set_position(pos);
                bar.set_message(figure.to_string());
            }
            None if self.enabled && (pos.is_multiple_of(self.every) || pos == self.len) => {
                say(&line())
            }
            None => {}
        }
    }

    /// Moves the bar (if any) to `pos` with `figure`; prints nothing otherwise.
    pub(crate) fn advance(&self, pos: u64, figure: &str) {
        if let Some(bar) = &self.bar {
            bar.set_position(pos);
            bar.set_message(figure.to_string());
        }
    }

    /// A line printed above the bar (or plainly).
    pub(crate) fn println(&self, line: &str, say: impl FnOnce(&str)) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None => say(line),
        }
    }

    /// Ends the bar, leaving its last state on the terminal.
    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish();
        }
    }
}
