//! Rollouts: a batch of sandbox tasks, each attempted by a group of episodes of the current
//! policy in real Chromium, scored by the recipe's reward, and turned into per-turn RL samples
//! (the trajectory's reward broadcast to each of its turns; environment failures excluded).

pub mod branching;
pub mod generated;
pub mod replay;
pub mod samples;

use std::sync::{Arc, Mutex};

use futures::StreamExt;
use wrl_browser::EpisodeCfg;
use wrl_plan::params::{Branching, FailureClass};
use wrl_sandbox::{Ending, Task, TrajOutcome, Trajectory};
use wrl_trainer::{SampleParams, Trainer};

use crate::agent::api_policy::{ApiPolicy, ApiRun};
use crate::agent::graph::{GraphPolicy, GraphRun};
use crate::agent::hermes::Hermes;
use crate::agent::policy::TrainerPolicy;
use crate::agent::prompt::{History, Window};
use crate::agent::sample::Turn;
use crate::agent::tags::TagCalls;
use crate::env::{Agent, Env};
use crate::reward::classes;
use crate::reward::judges::Judges;
use crate::reward::{
    Components, EpisodeFacts, Exclusion, RewardExpr, RewardValue, Rewards, evaluate,
};
use crate::rundir::records::{Branch, SeqPart};

pub use samples::{informative_groups, samples, uniform_groups};

/// The reference answer of a task whose checker matches an answer (a slot an env server draws
/// has none: the checker refuses a reward that reads it, E0424).
pub fn reference(task: &Task) -> Option<&str> {
    if crate::env::server::is_env_drawn(task) {
        return None;
    }
    match &task.checker {
        wrl_sandbox::Checker::Answer { expected, .. } => Some(expected),
        _ => None,
    }
}

/// One attempted episode.
#[derive(Clone, Debug)]
pub struct Episode {
    /// Index of the task in the batch (the GRPO group).
    pub group: usize,
    pub trajectory: Trajectory,
    pub turns: Vec<Turn>,
    pub reward: RewardValue,
    /// The process reward of each environment step (empty without a process reward); an
    /// excluded step counts 0.
    pub process: Vec<f64>,
    /// PNG screenshots of the page at each step, then of the final page; kept only for the
    /// report's sample episodes (`RolloutCfg::screens_for`).
    pub screens: Vec<Vec<u8>>,
    /// Earlier attempts of this episode dropped for an environment error or timeout.
    pub retried: usize,
    /// Its place in its prompt's tree under `branching`; `None` otherwise.
    pub branch: Option<Branch>,
    /// The components its reward endpoints answered (empty without one, or when none
    /// answered).
    pub components: Components,
    /// A tag-style agent's episode as its one sequence (`agent::tags`); `None` otherwise.
    pub sequence: Option<Vec<SeqPart>>,
}

impl Episode {
    /// An episode of `task` that could not run (no browser, no policy, a crashed task): an
    /// environment error, excluded from the loss.
    pub(crate) fn unrunnable(group: usize, task: &Task, why: &str) -> Episode {
        Episode {
            group,
            trajectory: failed(task, why),
            turns: Vec::new(),
            reward: RewardValue::Excluded(Exclusion::Class(FailureClass::EnvError)),
            process: Vec::new(),
            screens: Vec::new(),
            retried: 0,
            branch: None,
            components: Components::new(),
            sequence: None,
        }
    }

    pub fn success(&self) -> bool {
        self.trajectory.outcome.success
    }

    /// How the episode ended.
    pub fn end_reason(&self) -> Ending {
        self.trajectory.outcome.reason
    }
}

/// Facts a reward can read from a finished episode.
pub fn facts(traj: &Trajectory, reference: Option<&str>) -> EpisodeFacts {
    EpisodeFacts {
        end_reason: traj.outcome.reason,
        answer: traj.outcome.answer.clone(),
        reference: reference.map(str::to_string),
        tool_calls: tool_calls(traj),
        checker: Some(traj.outcome.success),
        env_reward: traj.outcome.reward,
        turns: crate::reward::format::turns(traj),
        url: traj.steps.last().map(|s| s.url.clone()).unwrap_or_default(),
        judges: Vec::new(),
        step: None,
    }
}

/// The tool of every action of `traj`, in order (`called` and `calls` count them).
pub fn tool_calls(traj: &Trajectory) -> Vec<String> {
    traj.steps.iter().flat_map(|s| &s.actions).filter_map(|a| tool_of(a)).collect()
}

/// The tool an action called: a search environment's turn as its parser reads it (terse, or
/// WebDancer's `<tool_call>` and `<answer>` tags), else the first word of the terse syntax a
/// browser records (`click 7`).
fn tool_of(action: &str) -> Option<String> {
    use crate::env::search::{Call, parse_call};
    match parse_call(action) {
        Ok(Call::Search(_)) => Some("search".into()),
        Ok(Call::Visit { .. }) => Some("visit".into()),
        Ok(Call::Answer(_)) => Some("answer".into()),
        Ok(Call::Tool { name, .. }) => Some(name),
        Err(_) => action.split_whitespace().next().map(String::from),
    }
}

/// How a batch is rolled out.
#[derive(Clone, Debug)]
pub struct RolloutCfg {
    pub group: usize,
    pub concurrency: usize,
    pub sample: SampleParams,
    pub history: History,
    /// The ReAct agent's past pages and over-long prompts.
    pub window: Window,
    /// The ReAct agent's tool set, as an instruction-tuned policy calls it (`agent::hermes`).
    pub hermes: Option<Arc<Hermes>>,
    /// The ReAct agent's tool set called by tags (`agent::tags`): one sequence per episode.
    pub tags: Option<Arc<TagCalls>>,
    /// Failure classes (`env_error`, `infra_timeout`, …) whose samples leave the loss.
    pub exclude: Vec<FailureClass>,
    /// The per-step process reward, added to each turn's outcome reward.
    pub process: Option<RewardExpr>,
    /// Malformed turns in a row that end an episode (the agent's `max_parse_failures`) are
    /// in `episode`.
    /// A module-graph agent and its modules' brains; `None` for a ReAct agent.
    pub graph: Option<GraphRun>,
    /// A ReAct agent's `api(…)` policy, called over HTTP (evaluations only); `None`: the
    /// trainer's.
    pub api: Option<ApiRun>,
    /// The first this many episodes keep a screenshot of every step, for the report.
    pub screens_for: usize,
    /// The env's episode settings (the step budget comes from each task).
    pub episode: EpisodeCfg,
    /// Times an episode that ended in an environment error or timeout is run again (`retries`).
    pub retries: usize,
    /// The batch's sampling seed: episode `i`'s attempt `a` samples from its own stream of it,
    /// so a batch decodes the same whatever order its episodes run in. `None`: forks of the
    /// trainer's RNG, in the order episodes ask.
    pub seed: Option<u64>,
    /// ARPO's entropy-guided branching within each prompt's `group` samples
    /// ([`branching`]); `None`: `group` independent samples.
    pub branching: Option<Branching>,
}

/// How episodes are scored: the reward, the rewards it names, and the judges it asks.
#[derive(Clone, Copy, Debug)]
pub struct Scoring<'a> {
    pub reward: &'a RewardExpr,
    pub rewards: &'a Rewards,
    pub judges: &'a Judges,
}

/// Scores one episode: the reward is evaluated first without judges; only when the branch it
/// takes needs a judge (or a reward endpoint) are the judges asked (a judge is an HTTP call),
/// then it is evaluated again with their verdicts. Also the components the endpoints answered.
pub async fn score(
    scoring: Scoring<'_>,
    trajectory: &Trajectory,
    reference: Option<&str>,
    screenshots: &[Vec<u8>],
) -> (RewardValue, Components) {
    let mut f = facts(trajectory, reference);
    match evaluate(scoring.reward, &f, scoring.rewards) {
        RewardValue::Excluded(_) if !scoring.judges.is_empty() => {
            let asked = scoring.judges.judge(trajectory, reference, screenshots).await;
            f.judges = asked.verdicts;
            (evaluate(scoring.reward, &f, scoring.rewards), asked.components)
        }
        r => (r, Components::new()),
    }
}

/// What a finished episode is worth to the update ([`scored`]).
#[derive(Clone, Debug, PartialEq)]
pub struct EpisodeScore {
    pub reward: RewardValue,
    /// Each step's process reward (empty without a process reward).
    pub process: Vec<f64>,
    /// The components its reward endpoints answered.
    pub components: Components,
}

/// What a finished episode is worth to the update: its reward (the recipe's, with judges asked
/// only when the branch taken needs them; `Excluded` when a judge failed or the episode ended
/// in a class `exclude` names), and the process reward of each step (an unscorable step counts
/// 0). `wrlc run`'s rollouts and `wrlc env serve` score episodes through this one function.
pub async fn scored(
    scoring: Scoring<'_>,
    exclude: &[FailureClass],
    process: Option<&RewardExpr>,
    task: &Task,
    trajectory: &Trajectory,
    shots: &[Vec<u8>],
) -> EpisodeScore {
    let (reward, components) = score(scoring, trajectory, reference(task), shots).await;
    let reward = match (reward, excluded(exclude, trajectory.outcome.reason)) {
        (RewardValue::Value(_), Some(class)) => RewardValue::Excluded(Exclusion::Class(class)),
        (r, _) => r,
    };
    let process = match process {
        Some(expr) => {
            let steps = crate::reward::process::step_facts(trajectory, &task.start_path, shots);
            let facts = facts(trajectory, reference(task));
            crate::reward::process::process_rewards(expr, scoring.rewards, &facts, &steps)
                .into_iter()
                .map(|v| match v {
                    RewardValue::Value(x) => x,
                    RewardValue::Excluded(_) => 0.0,
                })
                .collect()
        }
        None => Vec::new(),
    };
    EpisodeScore { reward, process, components }
}

/// The failure class of an episode that ended as `ending`, when `exclude` names it.
fn excluded(exclude: &[FailureClass], ending: Ending) -> Option<FailureClass> {
    classes::class(ending).filter(|c| exclude.contains(c))
}

/// Runs every task `group` times with the policy and scores each episode (under `branching`, a
/// tree of `group` samples per task: [`branching::rollout_tree`]). Each episode is its own
/// tokio task, so one episode's browser work (page loads, CDP round trips) overlaps with
/// another's sampling instead of waiting behind it, and a long sampling turn cannot starve the
/// other episodes' step timers.
pub async fn rollout(
    env: &Arc<dyn Env>,
    tasks: &[Task],
    trainer: Option<&Arc<Mutex<Trainer>>>,
    cfg: &RolloutCfg,
    scoring: Scoring<'_>,
) -> Vec<Episode> {
    if let Some(b) = &cfg.branching {
        return branching::rollout_tree(env, tasks, trainer, cfg, scoring, b).await;
    }
    let group = cfg.group.max(1);
    let jobs = (0..tasks.len())
        .flat_map(|g| (0..group).map(move |k| Job::full(g, g * group + k)))
        .collect();
    run_jobs(env, tasks, trainer, cfg, scoring, jobs).await
}

/// One episode to run: its task's group, its index among the batch's episodes (its sampling
/// stream), and, for a branch, the turns it replays and its place in the tree.
#[derive(Clone, Debug)]
pub(crate) struct Job {
    pub group: usize,
    pub index: usize,
    pub replay: Vec<Turn>,
    pub branch: Option<Branch>,
}

impl Job {
    /// A full sample, as every sample is without branching.
    pub(crate) fn full(group: usize, index: usize) -> Job {
        Job { group, index, replay: Vec::new(), branch: None }
    }
}

/// Runs `jobs` (tasks by their group's index in `tasks`), at most `cfg.concurrency` at once;
/// their episodes in the jobs' order.
pub(crate) async fn run_jobs(
    env: &Arc<dyn Env>,
    tasks: &[Task],
    trainer: Option<&Arc<Mutex<Trainer>>>,
    cfg: &RolloutCfg,
    scoring: Scoring<'_>,
    jobs: Vec<Job>,
) -> Vec<Episode> {
    let owned = Arc::new((scoring.reward.clone(), scoring.rewards.clone(), scoring.judges.clone()));
    futures::stream::iter(jobs.into_iter().map(|job| {
        let (group, task, branch) = (job.group, tasks[job.group].clone(), job.branch);
        let (trainer, env, cfg, owned) =
            (trainer.cloned(), env.clone(), cfg.clone(), owned.clone());
        let run = tokio::spawn(async move {
            let scoring = Scoring { reward: &owned.0, rewards: &owned.1, judges: &owned.2 };
            let screens = job.index < cfg.screens_for;
            let ep = episode(env.as_ref(), &task, &job, trainer, &cfg, scoring, screens).await;
            Episode { branch: job.branch, ..ep }
        });
        async move {
            match run.await {
                Ok(e) => e,
                Err(e) => Episode {
                    branch,
                    ..Episode::unrunnable(
                        group,
                        &tasks[group],
                        &format!("episode task failed: {e}"),
                    )
                },
            }
        }
    }))
    .buffered(cfg.concurrency.max(1))
    .collect()
    .await
}

/// One episode of `task` by the policy, run again up to `cfg.retries` times while it ends in an
/// environment error or an infrastructure timeout (a crashed page, a host that did not answer).
async fn episode(
    env: &dyn Env,
    task: &Task,
    at: &Job,
    trainer: Option<Arc<Mutex<Trainer>>>,
    cfg: &RolloutCfg,
    scoring: Scoring<'_>,
    screens: bool,
) -> Episode {
    let mut retried = 0;
    loop {
        let stream = cfg.seed.map(|s| {
            let episode = wrl_trainer::rng::mix(s, at.index as u64);
            wrl_trainer::rng::mix(episode, retried as u64)
        });
        let ep = attempt(env, task, at, trainer.clone(), cfg, scoring, screens, stream).await;
        let infra = ep.end_reason().is_infrastructure();
        if !infra || retried >= cfg.retries {
            return Episode { retried, ..ep };
        }
        retried += 1;
    }
}

/// One attempt of `task` by the policy, scored; with `screens`, a screenshot of every step
/// kept; sampling from `stream` when given.
#[allow(clippy::too_many_arguments)]
async fn attempt(
    env: &dyn Env,
    task: &Task,
    job: &Job,
    trainer: Option<Arc<Mutex<Trainer>>>,
    cfg: &RolloutCfg,
    scoring: Scoring<'_>,
    screens: bool,
    stream: Option<u64>,
) -> Episode {
    // Screenshots: the judges' last few, or one per step when the process reward compares them
    // or the report shows the episode.
    let every_step = task.max_steps as usize + 1;
    let keep = match &cfg.process {
        Some(p) if crate::reward::process::reads_screens(p, scoring.rewards) => {
            scoring.judges.screenshots().max(every_step)
        }
        _ if screens => scoring.judges.screenshots().max(every_step),
        _ => scoring.judges.screenshots(),
    };
    let group = job.group;
    // The one agent of the episode: the module graph, or the trained policy in a ReAct loop
    // (a branch replaying its parent's first turns; the checker keeps branching off graphs).
    let mut agent: Box<dyn AgentWithTurns> = match &cfg.graph {
        Some((spec, brains)) => Box::new(
            GraphPolicy::new(spec.clone(), brains.clone(), cfg.sample.clone(), "policy")
                .with_stream(stream)
                .with_screens(cfg.window.screens),
        ),
        None => match trainer {
            Some(t) => Box::new(
                TrainerPolicy::new(t, cfg.sample.clone(), cfg.history, "policy")
                    .with_window(cfg.window)
                    .with_hermes(cfg.hermes.clone())
                    .with_tags(cfg.tags.clone())
                    .with_stream(stream)
                    .with_replay(job.replay.clone()),
            ),
            None => match (&cfg.api, &cfg.hermes) {
                (Some(run), Some(hermes)) => Box::new(ApiPolicy::new(
                    run.clone(),
                    cfg.sample.clone(),
                    (cfg.history, cfg.window),
                    hermes.clone(),
                    stream,
                )),
                _ => return Episode::unrunnable(group, task, "no policy to run this agent"),
            },
        },
    };
    let result = env.run(task, agent.as_agent(), keep, &cfg.episode).await;
    let turns = agent.take_turns();
    let sequence = agent.take_sequence();
    let (trajectory, shots) = match result {
        Ok(run) => (run.trajectory, run.screenshots),
        Err(e) => (failed(task, &e), Vec::new()),
    };
    let EpisodeScore { reward, process, components } =
        scored(scoring, &cfg.exclude, cfg.process.as_ref(), task, &trajectory, &shots).await;
    let screens = if screens { shots } else { Vec::new() };
    Episode {
        group,
        trajectory,
        turns,
        reward,
        process,
        screens,
        retried: 0,
        branch: None,
        components,
        sequence,
    }
}

/// An agent whose sampled turns the update trains on.
trait AgentWithTurns: Send {
    fn as_agent(&mut self) -> &mut dyn Agent;
    fn take_turns(&mut self) -> Vec<Turn>;
    /// A tag-style episode's sequence ([`Episode::sequence`]).
    fn take_sequence(&mut self) -> Option<Vec<SeqPart>>;
}

impl AgentWithTurns for TrainerPolicy {
    fn as_agent(&mut self) -> &mut dyn Agent {
        self
    }
    fn take_turns(&mut self) -> Vec<Turn> {
        std::mem::take(&mut self.turns)
    }
    fn take_sequence(&mut self) -> Option<Vec<SeqPart>> {
        self.sequence()
    }
}

impl AgentWithTurns for ApiPolicy {
    fn as_agent(&mut self) -> &mut dyn Agent {
        self
    }
    // Nothing of an `api(…)` policy's turns is trained.
    fn take_turns(&mut self) -> Vec<Turn> {
        Vec::new()
    }
    fn take_sequence(&mut self) -> Option<Vec<SeqPart>> {
        None
    }
}

impl AgentWithTurns for GraphPolicy {
    fn as_agent(&mut self) -> &mut dyn Agent {
        self
    }
    fn take_turns(&mut self) -> Vec<Turn> {
        std::mem::take(&mut self.turns)
    }
    fn take_sequence(&mut self) -> Option<Vec<SeqPart>> {
        None
    }
}

/// A trajectory for an episode that could not start (the browser failed).
fn failed(task: &Task, message: &str) -> Trajectory {
    Trajectory {
        task_id: task.id.clone(),
        template: task.template.clone(),
        goal: task.goal.clone(),
        agent: "policy".into(),
        steps: Vec::new(),
        outcome: TrajOutcome {
            reason: Ending::EnvError,
            message: message.to_string(),
            answer: None,
            success: false,
            detail: String::new(),
            reward: None,
        },
        elapsed_ms: 0,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_tool_of_each_action() {
        let of = |a: &str| super::tool_of(a);
        assert_eq!(of("search Barvel | Osk").as_deref(), Some("search"));
        let visit = r#"<think>x</think><tool_call>{"name":"visit","arguments":{"url":"/wiki/article/x","goal":"g"}}</tool_call>"#;
        assert_eq!(of(visit).as_deref(), Some("visit"));
        assert_eq!(of("<answer>1543</answer>").as_deref(), Some("answer"));
        assert_eq!(of("click 7").as_deref(), Some("click"));
        assert_eq!(of("").as_deref(), None);
    }
}
