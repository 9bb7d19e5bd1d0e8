//! The executor: walks a plan's nodes in order and runs them on the embedded default — the
//! sandbox web in real Chromium and the candle policy — writing every trajectory and metric to
//! the run directory, committing after each stage and each RL iteration so that a killed run
//! resumes where its last commit left it. Each kind of node has its own file: models and data,
//! SFT, RL phases, evaluations; the services they share (the sandbox, the browser pool) start
//! on first use.

mod data;
mod draw;
mod eval;
pub(crate) mod faults;
mod generate;
pub(crate) mod hf;
mod models;
mod progress;
mod rl;
mod rl_log;
mod roles;
mod screens;
mod services;
pub mod settings;
mod sft;
mod sft_chat;
mod subsets;
mod tally;
mod validate;

pub use crate::preflight::footprint::tiny_config;
pub use data::check_cached_inputs;
pub(crate) use subsets::result as subset_result;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use wrl_plan::params::{Params, TypedPlan};
use wrl_plan::{Node, NodeKind};
use wrl_sandbox::{Task, Trajectory};
use wrl_trainer::{MixtureWeights, Trainer, TrainerConfig};

use crate::agent::AgentCfg;
use crate::agent::brains::Frozen;
use crate::error::{Fault, RunError};
use crate::reward::Rewards;
use crate::reward::judges::ApiModels;
use crate::rundir::RunDir;
use crate::rundir::records::{Cursor, Summary};

/// Options of one run.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Chromium to use; `None` = `$WRL_CHROMIUM`, else the headless shell or `chromium`.
    pub chromium: Option<PathBuf>,
    /// Print progress lines to standard error.
    pub progress: bool,
    /// Print them as `{"type":"log","version":1,"message":…}` objects, one a line, and never a
    /// bar (`wrlc --error-format json`: docs/diagnostics-json.md).
    pub json_lines: bool,
    /// Set (by a signal handler) to stop the run: a stage that cannot be left at an `await`
    /// (SFT's steps) commits at its next step and [`Executor::run`] returns `None`.
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// The run's seed offset (`wrlc run --seeds N`): mixed into every seed the run draws from
    /// (models, datasets, stages, evaluations); 0 leaves every seed as the recipe states it.
    pub seed_offset: u64,
}

/// Data a dataset node produced.
#[derive(Clone)]
enum Data {
    Tasks(Vec<Task>),
    Demos(Vec<Trajectory>),
    /// Chat conversations (`kind = chat`), checked by the preflight.
    Chats(Vec<wrl_trainer::Trajectory>),
    /// `mixture([a, b, …])` of trajectory or conversation datasets, with its weighting.
    Mixture(Vec<(String, Demos)>, MixtureWeights),
}

/// An SFT dataset's demonstrations: episodes (rendered as the run's agent would prompt) or
/// chat conversations (rendered as they are).
#[derive(Clone)]
enum Demos {
    Episodes(Vec<Trajectory>),
    Chats(Vec<wrl_trainer::Trajectory>),
}

impl Demos {
    /// The demonstrations (episodes or conversations).
    fn len(&self) -> usize {
        match self {
            Demos::Episodes(d) => d.len(),
            Demos::Chats(c) => c.len(),
        }
    }

    /// The examples SFT trains on: one per episode step (the turn, prompted as the agent
    /// would), one per conversation (all its assistant turns).
    fn examples(&self) -> usize {
        match self {
            Demos::Episodes(d) => d.iter().map(|t| t.steps.len()).sum(),
            Demos::Chats(c) => c.len(),
        }
    }
}

/// A trained policy per graph role.
type Roles = BTreeMap<String, Arc<Mutex<Trainer>>>;

/// What the nodes run so far have built, by node id.
#[derive(Default)]
struct Built {
    data: BTreeMap<String, Data>,
    /// The configuration of each local model, built on first use.
    models: BTreeMap<String, TrainerConfig>,
    /// The `api(…)` models (frozen modules and judges call them).
    apis: ApiModels,
    /// The trained policy each training node (and checkpoint node) holds.
    trainers: BTreeMap<String, Arc<Mutex<Trainer>>>,
    /// Per node, the weights each role of a `weights = per_role` graph trains (empty when the
    /// roles share the node's trainer).
    roles: BTreeMap<String, Roles>,
    agents: BTreeMap<String, AgentCfg>,
    /// Frozen models of graph modules (local or over HTTP).
    frozen: Frozen,
    rewards: Rewards,
}

/// The executor's state while it walks the plan.
pub struct Executor<'a> {
    plan: &'a TypedPlan<'a>,
    run: &'a mut RunDir,
    opts: RunOptions,
    started: Instant,
    cursor: Cursor,
    services: services::Services,
    built: Built,
    trajectory_ids: u64,
}

/// A sampling stream named by a plan node and a seed (FNV-1a of the id, mixed with the seed).
fn stream_of(id: &str, seed: u64) -> u64 {
    wrl_trainer::rng::mix(wrl_sandbox::tasks::fnv(id), seed)
}

/// A recipe's seed under a run's seed offset: itself at offset 0 (a plain run), else the two
/// mixed, so that seeded copies of a run share no stream.
pub fn offset_seed(seed: u64, offset: u64) -> u64 {
    if offset == 0 { seed } else { wrl_trainer::rng::mix(seed, offset) }
}

impl<'a> Executor<'a> {
    pub fn new(plan: &'a TypedPlan<'a>, run: &'a mut RunDir, opts: RunOptions) -> Executor<'a> {
        let cursor = run.committed().cursor.clone();
        Executor {
            plan,
            run,
            opts,
            started: Instant::now(),
            cursor,
            services: services::Services::default(),
            built: Built::default(),
            trajectory_ids: 0,
        }
    }

    fn say(&self, line: &str) {
        if !self.opts.progress {
            return;
        }
        let line = format!("[{:>6.1}s] {line}", self.wall());
        if self.opts.json_lines {
            // serde_json's map is sorted: the keys come out in a fixed order.
            let v = serde_json::json!({"type": "log", "version": 1, "message": line});
            eprintln!("{v}");
        } else {
            eprintln!("{line}");
        }
    }

    /// A recipe's seed under this run's offset ([`offset_seed`]).
    fn seed(&self, seed: u64) -> u64 {
        offset_seed(seed, self.opts.seed_offset)
    }

    /// [`stream_of`] under this run's offset.
    fn stream(&self, id: &str, seed: u64) -> u64 {
        self.seed(stream_of(id, seed))
    }

    fn wall(&self) -> f64 {
        self.cursor.wall_s + self.started.elapsed().as_secs_f64()
    }

    /// Whether a stop was asked for ([`RunOptions::stop`]).
    fn stop_requested(&self) -> bool {
        self.opts.stop.as_ref().is_some_and(|s| s.load(std::sync::atomic::Ordering::SeqCst))
    }

    /// Runs every node not yet done; returns the summary (also written to `summary.json`,
    /// with `report.html`), or `None` when a stop asked for ended it, its progress committed.
    pub async fn run(mut self) -> Result<Option<Summary>, RunError> {
        self.trajectory_ids = self.run.committed().trajectories;
        self.restore_checkpoint()?;
        let plan = self.plan;
        for (node, params) in &plan.nodes {
            let done = self.cursor.done.contains(&node.id);
            // Cheap nodes are rebuilt on resume; finished training and evals are skipped.
            match params {
                Params::Model(m) => self.load_model(node, m)?,
                Params::Dataset(d) => self.load_dataset(node, d).await?,
                Params::Env(e) => self.env(node, e)?,
                Params::Agent(a) => {
                    self.built.agents.insert(node.id.clone(), AgentCfg::in_plan(a, self.plan));
                }
                Params::Reward(r) => {
                    self.built.rewards.insert(node.id.clone(), r.expr.clone());
                }
                Params::Sft(s) if !done => {
                    if self.sft(node, s)? {
                        return Ok(None);
                    }
                }
                Params::RlPhase(p) if !done => self.rl_phase(node, p).await?,
                Params::Checkpoint(c) => self.checkpoint(node, c),
                Params::Eval(e) if !done => self.eval(node, e).await?,
                Params::Sft(s) => self.restore_output(node, s.model.id()),
                Params::RlPhase(p) => self.restore_output(node, p.run.init.id()),
                Params::Eval(_) => {}
            }
        }
        let mut summary = Summary {
            status: "finished".into(),
            identity: Some(wrl_plan::Identity::of(self.plan.plan)),
            wall_s: self.wall(),
            evals: self.cursor.evals.clone(),
            trajectories: self.run.committed().trajectories,
            failures: self.cursor.failures.clone(),
            excluded: self.cursor.excluded.clone(),
            warnings: self.cursor.warnings.clone(),
            claims: Vec::new(),
        };
        summary.claims = crate::study::claims::decide(self.plan, std::slice::from_ref(&summary));
        self.cursor.wall_s = self.wall();
        self.commit(None, true)?;
        let bytes = serde_json::to_vec_pretty(&summary).map_err(RunError::run_dir)?;
        self.run.write_file("summary.json", &bytes)?;
        // Each MCP tool's calls and failures, by env node then tool (docs/mcp.md, "Counts").
        if !self.services.mcp.is_empty() {
            let counts: std::collections::BTreeMap<&String, _> =
                self.services.mcp.iter().map(|(node, m)| (node, m.counts())).collect();
            let bytes = serde_json::to_vec_pretty(&counts).map_err(RunError::run_dir)?;
            self.run.write_file("mcp_calls.json", &bytes)?;
        }
        crate::report::write(self.run.root())?;
        Ok(Some(summary))
    }

    /// A resumed run restores the trainer (and each role's) its last checkpoint holds.
    fn restore_checkpoint(&mut self) -> Result<(), RunError> {
        let (Some(ckpt), Some(of)) =
            (self.run.committed().checkpoint.clone(), self.cursor.checkpoint_of.clone())
        else {
            return Ok(());
        };
        let dir = self.run.root().join("checkpoints").join(&ckpt);
        let cannot = format!("cannot load the last checkpoint `{}`", dir.display());
        let t = Trainer::load(&dir).map_err(|e| RunError::model(&cannot, e))?;
        let mut roles = Roles::new();
        if let Ok(entries) = std::fs::read_dir(dir.join("roles")) {
            for e in entries.flatten() {
                let role = e.file_name().to_string_lossy().into_owned();
                let t = Trainer::load(&e.path()).map_err(|e| RunError::model(&cannot, e))?;
                roles.insert(role, Arc::new(Mutex::new(t)));
            }
        }
        if !roles.is_empty() {
            self.built.roles.insert(of.clone(), roles);
        }
        self.built.trainers.insert(of, Arc::new(Mutex::new(t)));
        self.say(&format!("resumed from checkpoint {ckpt}"));
        Ok(())
    }

    fn commit(&mut self, checkpoint: Option<&str>, finished: bool) -> Result<(), RunError> {
        Ok(self.run.commit(checkpoint, &self.cursor, finished)?)
    }

    fn mark_done(&mut self, id: &str) {
        if !self.cursor.done.iter().any(|d| d == id) {
            self.cursor.done.push(id.to_string());
        }
    }

    /// After a resume, a finished training node's output is the restored trainer (or its
    /// input's, when the checkpoint holds a later node).
    fn restore_output(&mut self, node: &Node, input: &str) {
        let b = &mut self.built;
        if !b.roles.contains_key(&node.id)
            && let Some(r) = self.cursor.checkpoint_of.as_ref().and_then(|of| b.roles.get(of))
        {
            b.roles.insert(node.id.clone(), r.clone());
        }
        if !b.trainers.contains_key(&node.id)
            && let Some(t) = self
                .cursor
                .checkpoint_of
                .as_ref()
                .and_then(|of| b.trainers.get(of))
                .or_else(|| b.trainers.get(input))
                .cloned()
        {
            b.trainers.insert(node.id.clone(), t);
        }
    }

    /// `checkpoint:NAME` is the last trained state of stage NAME: its last node's trainer.
    fn checkpoint(&mut self, node: &Node, c: &wrl_plan::params::Checkpoint) {
        let last = self
            .plan
            .nodes
            .iter()
            .filter(|(n, _)| {
                n.decl == c.stage && matches!(n.kind, NodeKind::Sft | NodeKind::RlPhase)
            })
            .map(|(n, _)| n.id.clone())
            .next_back();
        let b = &mut self.built;
        if let Some(r) = last.as_ref().and_then(|l| b.roles.get(l).cloned()) {
            b.roles.insert(node.id.clone(), r);
        }
        if let Some(t) = last.and_then(|l| b.trainers.get(&l).cloned()) {
            b.trainers.insert(node.id.clone(), t);
        }
    }

    /// Saves the trainer of `of` (and its roles') as checkpoint `name`, then commits.
    fn save_and_commit(&mut self, of: &str, name: &str) -> Result<(), RunError> {
        let Some(t) = self.built.trainers.get(of).cloned() else {
            return self.commit(None, false);
        };
        let dir = self.run.checkpoint_dir(name);
        let roles = self.built.roles.get(of).cloned().unwrap_or_default();
        let id = wrl_plan::Identity::of(self.plan.plan);
        let recipe = wrl_trainer::checkpoint::RecipeIdentity { plan: id.plan, wrlc: id.wrlc };
        let each = std::iter::once((dir.clone(), t))
            .chain(roles.into_iter().map(|(r, t)| (dir.join("roles").join(r), t)));
        for (dir, t) in each {
            let g = t.lock().map_err(|_| RunError::poisoned())?;
            g.save_by(&dir, Some(&recipe))
                .map_err(|e| RunError::model("cannot save a checkpoint", e))?;
        }
        self.cursor.checkpoint_of = Some(of.to_string());
        self.cursor.wall_s = self.wall();
        self.started = Instant::now();
        self.commit(Some(name), false)
    }

    /// The agent node `id`, as built.
    fn agent_cfg(&self, id: &str) -> Result<AgentCfg, RunError> {
        self.built
            .agents
            .get(id)
            .cloned()
            .ok_or_else(|| RunError::plan(format!("no agent `{id}` comes before its use")))
    }
}

/// The error of a node whose input is not what it needs.
fn needs(node: &Node, what: &str) -> RunError {
    RunError::new(Fault::Data, format!("`{}` needs {what}", node.decl))
}
