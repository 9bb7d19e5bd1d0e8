//! Stepping: a turn of actions run on the tabs (and calls of tools beside the page's, in their
//! place among them), then settled, snapshotted and told back as feedback; a turn rejected
//! before it ran (its text was no action); giving up; breaking down. Each counts against the
//! step budget, all but the last against the agent-error budget too.

use std::time::Instant;

use crate::action::Action;
use crate::drive::{Driver, Stop};
use crate::failure::{AgentError, Breakdown, EndReason, StepResult};
use crate::side::{NoSideTools, SideTools, TurnLine};
use crate::snapshot::dom_diff;

use super::start::Episode;

impl Episode {
    /// Runs a turn: the actions in order, stopping at the first failing or terminal one. Then
    /// settles, snapshots, and builds the feedback (per-action lines, blocked requests, DOM diff).
    pub async fn act(&mut self, actions: &[Action]) -> StepResult {
        let turn: Vec<TurnLine> = actions.iter().cloned().map(TurnLine::Page).collect();
        self.act_turn(&turn, &mut NoSideTools).await
    }

    /// [`Episode::act`] for a turn whose lines may also call `side`'s tools: each runs in its
    /// place, its answer that line's feedback. A call's failure is text for the policy (never an
    /// agent error); a call whose answer ends the episode stops the turn there. The step's
    /// timeout is the page actions' time: a side call has its own.
    pub async fn act_turn(&mut self, turn: &[TurnLine], side: &mut dyn SideTools) -> StepResult {
        if let Some(end) = &self.end {
            return StepResult {
                feedback: "the episode is over".into(),
                done: true,
                end: Some(end.clone()),
                agent_errors: vec![],
            };
        }
        if self.started.elapsed() > self.cfg.task_timeout {
            self.end = Some(EndReason::InfraTimeout {
                message: format!("task exceeded {:?}", self.cfg.task_timeout),
            });
            return StepResult {
                feedback: "task timed out".into(),
                done: true,
                end: self.end.clone(),
                agent_errors: vec![],
            };
        }
        self.steps += 1;
        // `per_turn = one`: the first action (or call) runs; the others are reported, not run.
        let dropped = if self.cfg.one_action_per_turn { turn.len().saturating_sub(1) } else { 0 };
        let turn = &turn[..turn.len() - dropped];
        // The clickable elements before the turn, for the DOM diff (when the view shows it).
        let before = match &self.last {
            _ if !self.cfg.view.dom_diff => Vec::new(),
            Some(s) => s.clickables(),
            None => self.tabs.snapshot().await.map(|s| s.clickables()).unwrap_or_default(),
        };
        let seq0 = self.tabs.seq();
        let timeout = self.cfg.step_timeout;
        let mut lines = Vec::new();
        let mut errors = Vec::new();
        // The answer of a terminal action, once one has run.
        let mut answer = None;
        // What failed on the page (an environment error), or how a side call ended the episode.
        let mut failed = None;
        let mut side_end = None;
        // The page actions' share of the step's time left.
        let mut left = timeout;
        let mut driver = Driver::new(&mut self.tabs, timeout);
        for line in turn {
            match line {
                TurnLine::Page(a) => {
                    let t0 = Instant::now();
                    let ran = tokio::time::timeout(left, driver.run(a)).await;
                    left = left.saturating_sub(t0.elapsed());
                    match ran {
                        Ok(Ok(line)) => lines.push(line),
                        Ok(Err(Stop::Agent(e))) => {
                            lines.push(format!("error: {e}"));
                            errors.push(e);
                            break;
                        }
                        Ok(Err(Stop::Env(m))) => {
                            failed = Some(m);
                            break;
                        }
                        Ok(Err(Stop::Terminal(ans))) => {
                            answer = Some(ans);
                            break;
                        }
                        Err(_) => {
                            failed = Some(format!("step timed out after {timeout:?}"));
                            break;
                        }
                    }
                }
                TurnLine::Side(call) => {
                    let reply = side.call(call.clone()).await;
                    lines.push(reply.text.trim_end().to_string());
                    if reply.end.is_some() {
                        side_end = reply.end;
                        break;
                    }
                }
            }
        }
        if driver.changed() {
            self.last = None;
        }
        if let Some(answer) = answer {
            self.end = Some(EndReason::Completed { answer });
        }
        if let Some(m) = failed {
            self.end_env(m);
        }
        if side_end.is_some() {
            self.end = side_end;
        }
        if self.end.as_ref().is_none_or(|e| matches!(e, EndReason::Completed { .. })) {
            match self.tabs.snapshot().await {
                Ok(after) => {
                    if self.cfg.view.dom_diff
                        && let Some(d) = dom_diff(&before, &after.clickables())
                    {
                        lines.push(d);
                    }
                    self.last = Some(after);
                }
                Err(e) => {
                    if self.end.is_none() {
                        self.end_env(format!("page unavailable after the action: {e}"));
                    }
                }
            }
        }
        for b in self.tabs.blocked_since(seq0) {
            lines.push(format!("blocked request to {} ({})", b.url, b.reason));
        }
        if dropped > 0 {
            lines.push(format!("{dropped} more action(s) not run: one action per turn"));
        }
        if errors.is_empty() {
            self.agent_errors = 0;
        } else {
            self.agent_errors += 1;
            if self.end.is_none() && self.agent_errors >= self.cfg.max_agent_errors {
                self.end = Some(EndReason::AgentError {
                    message: errors.last().map(|e| e.to_string()).unwrap_or_default(),
                });
            }
        }
        if self.end.is_none() && self.steps >= self.cfg.max_steps {
            self.end = Some(EndReason::MaxSteps);
        }
        self.feedback = lines.join("\n");
        StepResult {
            feedback: self.feedback.clone(),
            done: self.end.is_some(),
            end: self.end.clone(),
            agent_errors: errors,
        }
    }

    /// Records a turn whose text could not be turned into actions (parse error, unknown tool) as
    /// a step with an agent error, so it counts toward `max_agent_errors` and `max_steps`.
    pub fn reject(&mut self, e: AgentError) -> StepResult {
        if let Some(end) = &self.end {
            return StepResult {
                feedback: "the episode is over".into(),
                done: true,
                end: Some(end.clone()),
                agent_errors: vec![],
            };
        }
        self.steps += 1;
        self.agent_errors += 1;
        self.feedback = format!("error: {e}");
        if self.agent_errors >= self.cfg.max_agent_errors {
            self.end = Some(EndReason::AgentError { message: e.to_string() });
        } else if self.steps >= self.cfg.max_steps {
            self.end = Some(EndReason::MaxSteps);
        }
        StepResult {
            feedback: self.feedback.clone(),
            done: self.end.is_some(),
            end: self.end.clone(),
            agent_errors: vec![e],
        }
    }

    /// Ends the episode at once as an agent error (the policy gave up), as a step with `e`.
    pub fn give_up(&mut self, e: AgentError) -> StepResult {
        if self.end.is_none() {
            self.steps += 1;
            self.agent_errors += 1;
            self.feedback = format!("error: {e}");
            self.end = Some(EndReason::AgentError { message: e.to_string() });
        }
        StepResult {
            feedback: self.feedback.clone(),
            done: true,
            end: self.end.clone(),
            agent_errors: vec![e],
        }
    }

    /// Ends the episode at once as the environment's failure (what the agent acts with broke
    /// down: its frozen model's endpoint failed), as a step with the failure's message.
    pub fn break_down(&mut self, b: Breakdown) -> StepResult {
        if self.end.is_none() {
            self.steps += 1;
            self.feedback = format!("error: {}", b.message());
            self.end = Some(b.end());
        }
        StepResult {
            feedback: self.feedback.clone(),
            done: true,
            end: self.end.clone(),
            agent_errors: vec![],
        }
    }
}
