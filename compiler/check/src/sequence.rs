//! The one rule for how long an episode's sequence can be: the prompt of its turn `t` (task
//! text + the observations it keeps + the past replies it keeps + screenshots) plus the reply
//! of that turn, with every reply of the episode together bounded by the agent's
//! `trajectory_tokens`. The checker's context budget (E0404), the estimate's generated tokens
//! and the memory an RL phase is sized for (`wrlc estimate`'s footprint) all read it, so the
//! three never disagree on what an episode can hold.

/// Tokens one past response keeps with `history = action_only`.
pub const ACTION_ONLY_TOKENS: f64 = 32.0;

/// Tokens the line an omitted page leaves takes (`older_pages = placeholder`).
pub const PLACEHOLDER_TOKENS: f64 = 8.0;

/// Every part of an episode's sequence, in tokens (an `f64` as the checker's numbers are).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Episode {
    /// The system prompt and the task, in every turn (`task_text`).
    pub task: f64,
    /// Tokens one observation (a page, a tool response) adds (`step_text`).
    pub step_text: f64,
    /// Whether turn 1 already holds an observation: a browser's first page or an env server's
    /// reset do; a `search_api` env answers only once the policy has called a tool.
    pub first_observation: bool,
    /// The observations a prompt keeps (`pages`; `f64::INFINITY` for `all`).
    pub pages: f64,
    /// Tokens each observation that left the window leaves behind (`older_pages`).
    pub placeholder: f64,
    /// Tokens one past reply keeps in the prompt (by `history`).
    pub kept: f64,
    /// The past replies a prompt keeps (`actions`, an `action_only` window; `f64::INFINITY`
    /// for `all`): each of the rest costs nothing.
    pub actions: f64,
    /// `history = none`: only the current turn counts.
    pub no_history: bool,
    /// Screenshots kept (`screenshot(last: K)`) and the tokens of one.
    pub shots: f64,
    pub image: f64,
    /// The reply cap of one turn (`max_response`).
    pub max_response: f64,
    /// The replies of the whole episode together (`trajectory_tokens`); None: unlimited.
    pub trajectory: Option<f64>,
}

impl Episode {
    /// The observations turn `t`'s prompt has seen: one per earlier step, plus the first one
    /// where the env shows it before any call.
    pub fn observations(&self, t: f64) -> f64 {
        if self.first_observation { t } else { (t - 1.0).max(0.0) }
    }

    /// The observations turn `t`'s prompt holds in full, and those left behind as placeholders.
    pub fn pages(&self, t: f64) -> (f64, f64) {
        let seen = self.observations(t);
        if self.no_history {
            return (seen.min(1.0), 0.0);
        }
        let full = self.pages.min(seen);
        (full, seen - full)
    }

    /// The screenshots turn `t`'s prompt holds.
    pub fn screenshots(&self, t: f64) -> f64 {
        if self.no_history { self.shots.min(1.0) } else { self.shots.min(t) }
    }

    /// The replies turn `t`'s sequence holds: the past ones its prompt keeps and its own reply,
    /// and whether `trajectory_tokens` bounds them (every reply the episode writes, kept or
    /// not, counts against it, so what is kept of them and the last reply fit in it).
    pub fn replies(&self, t: f64) -> (f64, bool) {
        let past =
            if self.no_history { 0.0 } else { (t - 1.0).max(0.0).min(self.actions) * self.kept };
        let all = past + self.max_response;
        match self.trajectory {
            Some(b) if b < all => (b, true),
            _ => (all, false),
        }
    }

    /// The tokens turn `t`'s sequence needs: its prompt and its reply.
    pub fn need(&self, t: f64) -> f64 {
        let (full, left) = self.pages(t);
        self.task
            + full * self.step_text
            + left * self.placeholder
            + self.screenshots(t) * self.image
            + self.replies(t).0
    }
}

/// The pixels one image token stands for, per side, in a vision-language family: patch ×
/// spatial merge (Qwen3-VL 16 × 2, Qwen2.5-VL 14 × 2); None for a text family or `auto`.
pub fn image_factor(family: &str) -> Option<u32> {
    match family {
        "qwen3_vl" => Some(32),
        "qwen2_5_vl" => Some(28),
        _ => None,
    }
}

/// The image tokens a `width` × `height` screenshot takes once the processor has resized it
/// under a pixel budget `max_pixels` (transformers' `smart_resize`: each side rounded to the
/// `factor`, ties to even, then scaled down by √(area / budget) and floored to it), one token per
/// `factor` × `factor` pixels. The processor's minimum (a few hundred pixels a side) is below
/// any viewport, so it is not applied. None for a zero side or a ratio over 200 (the processor
/// refuses those). `wrl_trainer::vision::smart_resize` is the runtime's, held equal to this one
/// by its tests.
pub fn screenshot_tokens(width: f64, height: f64, factor: u32, max_pixels: f64) -> Option<f64> {
    let f = f64::from(factor.max(1));
    if width < 1.0 || height < 1.0 || width.max(height) / width.min(height) > 200.0 {
        return None;
    }
    let (mut h, mut w) = ((height / f).round_ties_even() * f, (width / f).round_ties_even() * f);
    if h * w > max_pixels {
        let beta = (height * width / max_pixels).sqrt();
        h = f.max((height / beta / f).floor() * f);
        w = f.max((width / beta / f).floor() * f);
    }
    (h >= f && w >= f).then_some((h / f) * (w / f))
}

/// The most tokens the policy writes in an episode of `turns` turns of at most `per_turn`
/// tokens each, bounded by `trajectory` (`trajectory_tokens`; None: unlimited).
pub fn written(turns: u64, per_turn: u64, trajectory: Option<u64>) -> Option<u64> {
    let all = turns.checked_mul(per_turn)?;
    Some(trajectory.map_or(all, |b| all.min(b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ARPO's search agent (its verl launcher: 12,000 tokens of context, 10,000 of them the
    /// response budget): four turns, observations only after a search.
    fn arpo() -> Episode {
        Episode {
            task: 256.0,
            step_text: 500.0,
            first_observation: false,
            pages: f64::INFINITY,
            placeholder: 0.0,
            kept: 4096.0,
            actions: f64::INFINITY,
            no_history: false,
            shots: 0.0,
            image: 0.0,
            max_response: 4096.0,
            trajectory: Some(10_000.0),
        }
    }

    #[test]
    fn the_trajectory_budget_bounds_every_reply_together() {
        let e = arpo();
        // Turn 4: 256 + 3 × 500 observations + min(3 × 4096 + 4096, 10,000) = 11,756.
        assert_eq!(e.need(4.0), 11_756.0);
        assert_eq!(e.replies(4.0), (10_000.0, true));
        // Turn 2 is below the budget: 4096 + 4096.
        assert_eq!(e.replies(2.0), (8192.0, false));
        // Unlimited: every turn charges its full reply (the rule before #47: 18,240 at turn 4
        // with a first observation charged too).
        let u = Episode { trajectory: None, first_observation: true, ..e };
        assert_eq!(u.need(4.0), 256.0 + 4.0 * 500.0 + 4.0 * 4096.0);
    }

    #[test]
    fn a_search_episode_sees_no_observation_before_its_first_call() {
        let e = arpo();
        assert_eq!(e.pages(1.0), (0.0, 0.0));
        assert_eq!(e.need(1.0), 256.0 + 4096.0);
        let browser = Episode { first_observation: true, ..e };
        assert_eq!(browser.need(1.0), 256.0 + 500.0 + 4096.0);
    }

    /// OpenWebRL's 1280 × 1000 viewport under its 512² budget: 448 × 576 pixels, 14 × 18
    /// tokens; without a budget that binds, sides round to the factor.
    #[test]
    fn screenshots_resize_as_the_processor_does() {
        assert_eq!(screenshot_tokens(1280.0, 1000.0, 32, 262_144.0), Some(252.0));
        assert_eq!(screenshot_tokens(1280.0, 1000.0, 32, 16_777_216.0), Some(40.0 * 31.0));
        assert_eq!(screenshot_tokens(1280.0, 720.0, 28, 1_003_520.0), Some(1_196.0));
        assert_eq!(screenshot_tokens(0.0, 720.0, 28, 1e6), None);
        assert_eq!(image_factor("qwen3"), None);
    }

    #[test]
    fn written_tokens_stop_at_the_budget() {
        assert_eq!(written(4, 4096, Some(10_000)), Some(10_000));
        assert_eq!(written(2, 4096, Some(10_000)), Some(8192));
        assert_eq!(written(4, 4096, None), Some(16_384));
        assert_eq!(written(u64::MAX, 2, None), None);
    }

    /// An `action_only` history over 40 turns of a 2,048-token context: every action kept
    /// (39 × 32 = 1,248 tokens of history) does not fit; the last 14 (448 tokens) do.
    #[test]
    fn an_action_window_bounds_the_history() {
        let all = Episode {
            task: 64.0,
            step_text: 300.0,
            first_observation: true,
            pages: 1.0,
            placeholder: 0.0,
            kept: ACTION_ONLY_TOKENS,
            actions: f64::INFINITY,
            no_history: false,
            shots: 0.0,
            image: 0.0,
            max_response: 256.0,
            trajectory: None,
        };
        assert_eq!(all.need(40.0), 64.0 + 300.0 + 39.0 * 32.0 + 256.0);
        let last = Episode { actions: 14.0, ..all };
        assert_eq!(last.need(40.0), 64.0 + 300.0 + 14.0 * 32.0 + 256.0);
        // Before the window fills, the two agree.
        assert_eq!(last.need(10.0), all.need(10.0));
    }
}
