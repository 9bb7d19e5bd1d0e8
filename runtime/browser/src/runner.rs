//! Running sandbox tasks end to end with a text policy (the scripted expert or any function
//! from observation to a terse turn), producing trajectory records; a turn may also call tools
//! beside the page's, which the caller serves (`side`).

use std::sync::Arc;

use futures::StreamExt;
use wrl_sandbox::{Sandbox, StepBoxes, Task, TrajOutcome, TrajStep, Trajectory};

use crate::episode::{EpisodeCfg, EpisodeError, EpisodeSpec, Observation};
use crate::failure::{AgentError, Breakdown, StepResult};
use crate::pool::BrowserPool;
use crate::side::{self, NoSideTools, SideTools};
use crate::snapshot::Item;
use crate::terse;
use crate::{expert, ground};

/// One turn an agent wrote, as the environment takes it: whatever the agent knows about its own
/// turn travels with it, so no caller has to ask afterwards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentTurn {
    /// Text for the environment to read: terse actions (a turn that does not parse is an agent
    /// error), a search call, an environment server's action.
    Text(String),
    /// Calls the agent read from its own reply (an instruction-tuned policy's checked calls, a
    /// tag-style reply's one call): `lines` for the environment to read as it reads `Text`,
    /// `said` the reply as written, which the trajectory keeps for format rewards.
    Read { lines: String, said: String },
    /// Text the agent read itself and found to be no turn of its tool set (an instruction-tuned
    /// policy's calls checked against their schemas): the environment counts it as a malformed
    /// turn with `error`, as it does text that does not parse.
    Malformed { text: String, error: AgentError },
    /// The agent could not write a turn (a prompt past its context, a graph with no way on):
    /// the episode ends as an agent error with this message.
    GaveUp(String),
    /// What the agent writes with broke down (a frozen `api(…)` module's endpoint failed or
    /// timed out): the episode ends as the environment's failure, `env_error` or
    /// `infra_timeout`, never as the agent's.
    Failed(Breakdown),
}

impl AgentTurn {
    /// The text the agent wrote (empty when it wrote none).
    pub fn text(&self) -> &str {
        match self {
            AgentTurn::Text(text) | AgentTurn::Malformed { text, .. } => text,
            AgentTurn::Read { said, .. } => said,
            AgentTurn::GaveUp(_) | AgentTurn::Failed(_) => "",
        }
    }
}

/// A text policy: given the observation and the turns so far, the next turn (terse syntax).
pub trait TextPolicy: Send {
    /// Next turn; text that does not parse is recorded as an agent error.
    fn act(&mut self, task: &Task, obs: &Observation, history: &[String]) -> AgentTurn;
    /// Name written in trajectories.
    fn name(&self) -> &str;
    /// Whether it reads the page's screenshot (a vision-language policy): each observation then
    /// takes one, which [`TextPolicy::act`] finds in `obs.screenshot`.
    fn sees_screens(&self) -> bool {
        false
    }
}

/// The scripted expert as a [`TextPolicy`].
#[derive(Debug, Default, Clone, Copy)]
pub struct Expert;

impl TextPolicy for Expert {
    fn act(&mut self, task: &Task, obs: &Observation, history: &[String]) -> AgentTurn {
        AgentTurn::Text(
            expert::next_action(task, &obs.snapshot, &obs.feedback, history)
                .unwrap_or_else(|| "stuck".into()),
        )
    }
    fn name(&self) -> &str {
        "expert"
    }
}

/// Runs `task` with `policy` in a fresh episode and returns its trajectory.
pub async fn run_task(
    pool: &BrowserPool,
    sandbox: &Arc<Sandbox>,
    task: &Task,
    policy: &mut dyn TextPolicy,
) -> Result<Trajectory, EpisodeError> {
    Ok(run_task_with_screenshots(pool, sandbox, task, policy, 0, &EpisodeCfg::default()).await?.0)
}

/// [`run_task`] with `base`'s timeouts and error limit (the step budget is the task's), also
/// keeping the last `keep` PNG screenshots of the episode (the final page last), for judges
/// that look at them. `keep` 0 takes none (screenshots cost time).
pub async fn run_task_with_screenshots(
    pool: &BrowserPool,
    sandbox: &Arc<Sandbox>,
    task: &Task,
    policy: &mut dyn TextPolicy,
    keep: usize,
    base: &EpisodeCfg,
) -> Result<(Trajectory, Vec<Vec<u8>>), EpisodeError> {
    run_task_with_side_tools(pool, sandbox, task, policy, keep, base, &mut NoSideTools).await
}

/// [`run_task_with_screenshots`] for a policy whose turns may also call `side`'s tools (one
/// `side` per episode: it may count the episode's calls), each written as its
/// `<tool_call>{…}</tool_call>` line among the page actions; what a call answers is its line's
/// feedback, which the next observation shows.
pub async fn run_task_with_side_tools(
    pool: &BrowserPool,
    sandbox: &Arc<Sandbox>,
    task: &Task,
    policy: &mut dyn TextPolicy,
    keep: usize,
    base: &EpisodeCfg,
    side: &mut dyn SideTools,
) -> Result<(Trajectory, Vec<Vec<u8>>), EpisodeError> {
    let (trajectory, last, _) =
        run_episode(pool, sandbox, task, policy, (keep, false), base, side).await?;
    Ok((trajectory, last))
}

/// What [`run_episode`] returns: the trajectory, its last screenshots, and each step's.
type Shown = (Trajectory, Vec<Vec<u8>>, Vec<Option<Vec<u8>>>);

/// One episode of `task`: its trajectory, the last `keep` screenshots (the final page last) and,
/// with `each`, the screenshot of every step's observation in step order (`None` where the
/// env took none). Turns may call `side`'s tools.
async fn run_episode(
    pool: &BrowserPool,
    sandbox: &Arc<Sandbox>,
    task: &Task,
    policy: &mut dyn TextPolicy,
    (keep, each): (usize, bool),
    base: &EpisodeCfg,
    side: &mut dyn SideTools,
) -> Result<Shown, EpisodeError> {
    let cfg = EpisodeCfg { max_steps: task.max_steps, ..base.clone() };
    let mut ep = pool.episode(EpisodeSpec::sandbox_task(sandbox, task), cfg).await?;
    let mut steps = Vec::new();
    let mut history: Vec<String> = Vec::new();
    let mut shots: std::collections::VecDeque<Vec<u8>> = std::collections::VecDeque::new();
    let mut keep_shot = |shot: Option<Vec<u8>>| {
        if let Some(png) = shot.filter(|_| keep > 0) {
            if shots.len() == keep {
                shots.pop_front();
            }
            shots.push_back(png);
        }
    };
    let mut each_step = Vec::new();
    let sees = policy.sees_screens();
    while ep.ended().is_none() {
        let mut obs = match ep.observe(keep > 0 || sees || each).await {
            Ok(o) => o,
            Err(_) => break,
        };
        let turn = policy.act(task, &obs, &history);
        let shot = obs.screenshot.take();
        if each {
            each_step.push(shot.clone());
        }
        keep_shot(shot);
        // The text the env reads, the reply as written where that was other text, and whether
        // the turn was no turn of the tool set.
        let (turn, said, malformed, result) = match turn {
            AgentTurn::Text(text) => {
                let (result, malformed) = read_and_act(&mut ep, &text, side).await;
                (text, None, malformed, result)
            }
            AgentTurn::Read { lines, said } => {
                let (result, malformed) = read_and_act(&mut ep, &lines, side).await;
                (lines, Some(said), malformed, result)
            }
            AgentTurn::Malformed { text, error } => (text, None, true, ep.reject(error)),
            AgentTurn::GaveUp(why) => {
                (String::new(), None, false, ep.give_up(AgentError::GaveUp(why)))
            }
            AgentTurn::Failed(b) => (String::new(), None, false, ep.break_down(b)),
        };
        steps.push(TrajStep {
            observation: obs.text(),
            actions: turn.lines().map(str::to_string).filter(|l| !l.trim().is_empty()).collect(),
            feedback: obs.without_local_origin(&result.feedback),
            url: obs.without_local_origin(&ep_url(&result, &obs)),
            screenshot: None,
            boxes: each.then(|| boxes_of(&obs, &turn)),
            said,
            malformed,
        });
        history.extend(turn.lines().map(str::to_string));
    }
    if keep > 0
        && let Ok(mut obs) = ep.observe(true).await
    {
        keep_shot(obs.screenshot.take());
    }
    let out = ep.finish().await;
    let verdict = out.verdict.clone();
    let trajectory = Trajectory {
        task_id: task.id.clone(),
        template: task.template.clone(),
        goal: task.goal.clone(),
        agent: policy.name().to_string(),
        steps,
        outcome: TrajOutcome {
            reason: out.reason.ending(),
            message: out.reason.message(),
            answer: out.answer.clone(),
            success: verdict.as_ref().is_some_and(|v| v.success),
            detail: verdict.map(|v| v.detail).unwrap_or_default(),
            reward: None,
        },
        elapsed_ms: out.elapsed_ms,
    };
    Ok((trajectory, shots.into(), each_step))
}

/// Reads `text` as terse actions and calls of `side`'s tools and runs them: the step's result,
/// and whether the text was no turn (a format error the episode counts).
async fn read_and_act(
    ep: &mut crate::Episode,
    text: &str,
    side: &mut dyn SideTools,
) -> (StepResult, bool) {
    match side::parse_turn(text, &*side) {
        Ok(turn) => (ep.act_turn(&turn, side).await, false),
        Err(e) => (ep.reject(e), true),
    }
}

/// The boxes, as `obs`'s snapshot recorded them, of the elements the terse lines of `turn`
/// address: where a coordinate tool set's demonstration clicks them in the screenshot.
fn boxes_of(obs: &Observation, turn: &str) -> StepBoxes {
    let elements = turn
        .lines()
        .filter_map(|l| match terse::parse(l) {
            Ok(crate::Action::Elem(e)) => ground::target(&e),
            _ => None,
        })
        .filter_map(|id| match obs.snapshot.element(id) {
            Some(Item::Element { rect: Some(r), .. }) => Some((id, *r)),
            _ => None,
        })
        .collect();
    StepBoxes { viewport: [obs.viewport.0, obs.viewport.1], elements }
}

fn ep_url(result: &crate::failure::StepResult, obs: &Observation) -> String {
    // The URL after the step is in the feedback when it changed; otherwise it is unchanged.
    result
        .feedback
        .split("navigated to ")
        .nth(1)
        .and_then(|r| r.split([';', '\n']).next())
        .map_or_else(|| obs.url.clone(), |u| u.trim().to_string())
}

/// The scripted expert as it acts on what a screenshot shows: before acting on an element whose
/// centre is outside the viewport, it scrolls toward it (half a viewport a step, at most
/// [`SCROLLS`] in a row), so each recorded step's element stands in its screenshot.
#[derive(Debug, Default, Clone, Copy)]
pub struct SeeingExpert {
    scrolls: usize,
}

/// The most scrolls [`SeeingExpert`] makes in a row before it acts anyway.
pub const SCROLLS: usize = 4;

impl TextPolicy for SeeingExpert {
    fn act(&mut self, task: &Task, obs: &Observation, history: &[String]) -> AgentTurn {
        let line = expert::next_action(task, &obs.snapshot, &obs.feedback, history)
            .unwrap_or_else(|| "stuck".into());
        let rect = match terse::parse(&line) {
            Ok(crate::Action::Elem(e)) => {
                match ground::target(&e).map(|id| obs.snapshot.element(id)) {
                    Some(Some(Item::Element { rect, .. })) => *rect,
                    _ => None,
                }
            }
            _ => None,
        };
        match ground::scroll_to(rect, obs.viewport).filter(|_| self.scrolls < SCROLLS) {
            Some(direction) => {
                self.scrolls += 1;
                let scroll = crate::Action::Elem(crate::Elem::Scroll { direction });
                AgentTurn::Text(terse::render(&scroll).unwrap_or_default())
            }
            None => {
                self.scrolls = 0;
                AgentTurn::Text(line)
            }
        }
    }
    fn name(&self) -> &str {
        "expert"
    }
}

/// [`run_expert_with`] keeping the screenshot of each step's observation, in step order, and
/// the boxes of the elements each step acts on ([`SeeingExpert`] scrolls them into view):
/// demonstrations a vision-language policy is trained on as it will see the pages.
pub async fn run_expert_seeing(
    pool: &BrowserPool,
    sandbox: &Arc<Sandbox>,
    tasks: &[Task],
    concurrency: usize,
    cfg: &EpisodeCfg,
) -> Vec<Result<(Trajectory, Vec<Option<Vec<u8>>>), EpisodeError>> {
    futures::stream::iter(tasks.iter().map(|t| async move {
        let mut e = SeeingExpert::default();
        let (traj, _, each) =
            run_episode(pool, sandbox, t, &mut e, (0, true), cfg, &mut NoSideTools).await?;
        Ok((traj, each))
    }))
    .buffered(concurrency.max(1))
    .collect()
    .await
}

/// Runs every task with the expert, `concurrency` at a time, in task order.
pub async fn run_expert(
    pool: &BrowserPool,
    sandbox: &Arc<Sandbox>,
    tasks: &[Task],
    concurrency: usize,
) -> Vec<Result<Trajectory, EpisodeError>> {
    run_expert_with(pool, sandbox, tasks, concurrency, &EpisodeCfg::default()).await
}

/// [`run_expert`] with `cfg`'s timeouts and view, so that its demonstrations record the
/// observations a policy in the same env will see.
pub async fn run_expert_with(
    pool: &BrowserPool,
    sandbox: &Arc<Sandbox>,
    tasks: &[Task],
    concurrency: usize,
    cfg: &EpisodeCfg,
) -> Vec<Result<Trajectory, EpisodeError>> {
    futures::stream::iter(tasks.iter().map(|t| async move {
        let mut e = Expert;
        run_task_with_screenshots(pool, sandbox, t, &mut e, 0, cfg).await.map(|(t, _)| t)
    }))
    .buffered(concurrency.max(1))
    .collect()
    .await
}
