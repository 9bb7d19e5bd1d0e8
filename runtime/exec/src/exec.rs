//! The executor: walks a plan's nodes in order and runs them on the embedded default — the
//! sandbox web in real Chromium and the candle policy — writing every trajectory and metric to
//! the run directory, committing after each stage and each RL iteration so that a killed run
//! resumes where its last commit left it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::json;
use wrl_browser::{AllowList, BrowserPool, EpisodeCfg, PoolCfg};
use wrl_plan::{Node, NodeKind, PExpr, PVal, Plan};
use wrl_sandbox::{Sandbox, Split, Task, Trajectory};
use wrl_trainer::{
    Mixture, MixtureWeights, OptimConfig, SampleParams, Schedule, ScheduleKind, SftConfig, Trainer,
    TrainerConfig,
};

use crate::brains::{Frozen, binds};
use crate::graph::{GraphRun, GraphSpec};
use crate::judges::Judges;
use crate::policy::{History, sft_examples};
use crate::preflight::{Records, read_jsonl};
use crate::reward::RewardExpr;
use crate::rl_cfg::{refill_batches, rl_config, trained_roles};
use crate::rollout::{
    Backend, Episode, RolloutCfg, Scoring, informative_groups, rollout, samples, uniform_groups,
};
use crate::rundir::RunDir;
use crate::search_env::SearchEnv;

/// A runtime failure, with a code (`E05xx`), what to do about it, and where in the recipe it
/// lies when a declaration is to blame.
#[derive(Debug, Clone, PartialEq)]
pub struct RunError {
    pub code: &'static str,
    pub message: String,
    pub help: Option<String>,
    /// Boxed: most errors have none, and `RunError` travels in every `Result`.
    pub subject: Option<Box<Subject>>,
}

/// The declaration (and parameter) a runtime problem is about. The runtime never sees syntax:
/// the CLI maps this to a span of the recipe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    /// The plan node (`stage:online/phase:1`).
    pub node: String,
    /// The declaration it lowers (`online`).
    pub decl: String,
    /// The parameter to blame, when one is (`lr`).
    pub param: Option<String>,
    /// What to say at that place: why it is blamed.
    pub label: String,
}

impl RunError {
    pub fn new(code: &'static str, message: impl Into<String>) -> RunError {
        RunError { code, message: message.into(), help: None, subject: None }
    }
    pub fn help(mut self, h: impl Into<String>) -> RunError {
        self.help = Some(h.into());
        self
    }
    /// Blames `node`'s declaration, or one of its parameters.
    pub fn at(mut self, node: &Node, param: Option<&str>, label: impl Into<String>) -> RunError {
        self.subject = Some(Box::new(Subject {
            node: node.id.clone(),
            decl: node.decl.clone(),
            param: param.map(str::to_string),
            label: label.into(),
        }));
        self
    }
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)?;
        if let Some(h) = &self.help {
            write!(f, "\n  help: {h}")?;
        }
        Ok(())
    }
}

fn trainer_err(what: &str, e: impl std::fmt::Display) -> RunError {
    RunError::new("E0505", format!("{what}: {e}"))
}

/// Options of one run.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Chromium to use; `None` = `$WRL_CHROMIUM` or `chromium` on `PATH`.
    pub chromium: Option<PathBuf>,
    /// Print progress lines to standard error.
    pub progress: bool,
}

/// One held-out evaluation result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvalResult {
    /// The eval declaration (empty in runs written before it was recorded).
    #[serde(default)]
    pub eval: String,
    pub after: String,
    pub success: f64,
    pub episodes: usize,
}

/// What `summary.json` holds.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Summary {
    pub status: String,
    pub wall_s: f64,
    pub evals: Vec<EvalResult>,
    pub trajectories: u64,
    pub failures: BTreeMap<String, u64>,
}

/// Where the run stands: written with every commit.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Cursor {
    /// Nodes finished, in order.
    pub done: Vec<String>,
    /// The RL phase in progress and its last finished iteration.
    pub phase: Option<(String, u64)>,
    pub evals: Vec<EvalResult>,
    pub failures: BTreeMap<String, u64>,
    /// Which node's trainer the committed checkpoint holds.
    pub checkpoint_of: Option<String>,
    pub wall_s: f64,
}

/// Data a dataset node produced.
#[derive(Clone)]
enum Data {
    Tasks(Vec<Task>),
    Demos(Vec<Trajectory>),
    /// `mixture([a, b, …])` of trajectory datasets, with its weighting.
    Mixture(Vec<(String, Vec<Trajectory>)>, MixtureWeights),
}

/// An agent's configuration.
#[derive(Clone, Debug)]
struct AgentCfg {
    history: History,
    max_turns: u32,
    max_response: usize,
    /// The module graph of a `graph` agent.
    graph: Option<Arc<GraphSpec>>,
    /// The env node the agent acts in.
    env: Option<String>,
    /// Each role of the graph trains its own weights (`weights = per_role`).
    per_role: bool,
}

/// The executor's state while it walks the plan.
pub struct Executor<'a> {
    plan: &'a Plan,
    run: &'a mut RunDir,
    opts: RunOptions,
    started: Instant,
    cursor: Cursor,
    sandbox: Option<Arc<Sandbox>>,
    pool: Option<BrowserPool>,
    data: BTreeMap<String, Data>,
    models: BTreeMap<String, TrainerConfig>,
    trainers: BTreeMap<String, Arc<Mutex<Trainer>>>,
    /// Per node, the weights each role of a `weights = per_role` graph trains (empty when the
    /// roles share the node's trainer).
    roles: BTreeMap<String, Roles>,
    agents: BTreeMap<String, AgentCfg>,
    /// Frozen models of graph modules (local or over HTTP).
    frozen: Frozen,
    rewards: BTreeMap<String, RewardExpr>,
    trajectory_ids: u64,
}

/// A trained policy per graph role.
type Roles = BTreeMap<String, Arc<Mutex<Trainer>>>;

/// Episodes of each evaluation that keep a screenshot per step, for the report.
const SAMPLE_EPISODES: usize = 2;

fn p_num(n: &Node, k: &str, default: f64) -> f64 {
    n.num(k).unwrap_or(default)
}

fn p_str<'n>(n: &'n Node, k: &str, default: &'n str) -> &'n str {
    n.param(k).and_then(PVal::as_str).unwrap_or(default)
}

/// The tasks a sandbox dataset node generates: its `sites` (default all three) and split.
fn generate(sb: &Sandbox, node: &Node, split: Split, count: usize, seed: u64) -> Vec<Task> {
    let sites: Vec<&str> = match node.param("sites") {
        Some(PVal::List { items }) => items.iter().filter_map(PVal::as_str).collect(),
        _ => vec!["shop", "forum", "wiki"],
    };
    wrl_sandbox::generate_on(sb.content(), split, count, seed, &sites)
}

/// A sandbox dataset's `split` (train unless `test`).
fn split_of(node: &Node) -> Split {
    if p_str(node, "split", "train") == "test" { Split::Test } else { Split::Train }
}

/// A `std::sandbox::demos` dataset recorded with the search API (`env = search_api`).
pub(crate) fn search_demos(node: &Node) -> bool {
    p_str(node, "env", "browser") == "search_api"
}

/// A sampling stream named by a plan node and a seed (FNV-1a of the id, mixed with the seed).
fn stream_of(id: &str, seed: u64) -> u64 {
    wrl_trainer::rng::mix(wrl_sandbox::tasks::fnv(id), seed)
}

fn p_ref(n: &Node, k: &str) -> Option<String> {
    match n.param(k) {
        Some(PVal::Ref { node }) => Some(node.clone()),
        _ => None,
    }
}

/// The plan's reward expression in the evaluator's form (the JSON shapes agree).
fn reward_expr(e: &PExpr) -> Result<RewardExpr, RunError> {
    let v = serde_json::to_value(e).map_err(|e| RunError::new("E0504", e.to_string()))?;
    let v = plan_to_eval(v);
    serde_json::from_value(v).map_err(|e| RunError::new("E0504", format!("reward expression: {e}")))
}

/// `reward` leaves name a node (`reward:x`); fields are plan values (`{"type", "value"}`).
fn plan_to_eval(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Object(mut m) => {
            if m.get("op").and_then(Value::as_str) == Some("reward")
                && let Some(node) = m.remove("node")
            {
                m.insert("name".into(), node);
            }
            Value::Object(m.into_iter().map(|(k, v)| (k, plan_to_eval(v))).collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(plan_to_eval).collect()),
        other => other,
    }
}

impl<'a> Executor<'a> {
    pub fn new(plan: &'a Plan, run: &'a mut RunDir, opts: RunOptions) -> Executor<'a> {
        let cursor: Cursor =
            serde_json::from_value(run.committed().cursor.clone()).unwrap_or_default();
        Executor {
            plan,
            run,
            opts,
            started: Instant::now(),
            cursor,
            sandbox: None,
            pool: None,
            data: BTreeMap::new(),
            models: BTreeMap::new(),
            trainers: BTreeMap::new(),
            roles: BTreeMap::new(),
            agents: BTreeMap::new(),
            frozen: Frozen::default(),
            rewards: BTreeMap::new(),
            trajectory_ids: 0,
        }
    }

    fn say(&self, line: &str) {
        if self.opts.progress {
            eprintln!("[{:>6.1}s] {line}", self.wall());
        }
    }

    fn wall(&self) -> f64 {
        self.cursor.wall_s + self.started.elapsed().as_secs_f64()
    }

    /// Runs every node not yet done; returns the summary (also written to `summary.json`).
    pub async fn run(mut self) -> Result<Summary, RunError> {
        self.trajectory_ids = self.run.committed().trajectories;
        // A resumed run restores the trainer its last checkpoint holds.
        if let (Some(ckpt), Some(of)) =
            (self.run.committed().checkpoint.clone(), self.cursor.checkpoint_of.clone())
        {
            let dir = self.run.root().join("checkpoints").join(&ckpt);
            let t = Trainer::load(&dir)
                .map_err(|e| trainer_err("cannot load the last checkpoint", e))?;
            let mut roles = Roles::new();
            if let Ok(entries) = std::fs::read_dir(dir.join("roles")) {
                for e in entries.flatten() {
                    let role = e.file_name().to_string_lossy().into_owned();
                    let t = Trainer::load(&e.path())
                        .map_err(|e| trainer_err("cannot load the last checkpoint", e))?;
                    roles.insert(role, Arc::new(Mutex::new(t)));
                }
            }
            if !roles.is_empty() {
                self.roles.insert(of.clone(), roles);
            }
            self.trainers.insert(of, Arc::new(Mutex::new(t)));
            self.say(&format!("resumed from checkpoint {ckpt}"));
        }
        for node in &self.plan.nodes {
            let done = self.cursor.done.contains(&node.id);
            // Cheap nodes are rebuilt on resume; finished training and evals are skipped.
            match node.kind {
                NodeKind::LoadModel => self.load_model(node)?,
                NodeKind::LoadDataset => self.load_dataset(node).await?,
                NodeKind::Env => self.env(node).await?,
                NodeKind::Agent => self.agent(node)?,
                NodeKind::Reward => self.reward(node)?,
                NodeKind::Sft if !done => self.sft(node)?,
                NodeKind::RlPhase if !done => self.rl_phase(node).await?,
                NodeKind::Checkpoint => self.checkpoint(node)?,
                NodeKind::Eval if !done => self.eval(node).await?,
                NodeKind::Sft | NodeKind::RlPhase | NodeKind::Eval => self.restore_output(node),
            }
        }
        let summary = Summary {
            status: "finished".into(),
            wall_s: self.wall(),
            evals: self.cursor.evals.clone(),
            trajectories: self.run.committed().trajectories,
            failures: self.cursor.failures.clone(),
        };
        self.cursor.wall_s = self.wall();
        self.commit(None, true)?;
        let bytes = serde_json::to_vec_pretty(&summary)
            .map_err(|e| RunError::new("E0504", e.to_string()))?;
        self.run
            .write_file("summary.json", &bytes)
            .map_err(|e| RunError::new("E0504", e.to_string()))?;
        Ok(summary)
    }

    fn commit(&mut self, checkpoint: Option<&str>, finished: bool) -> Result<(), RunError> {
        let cursor = serde_json::to_value(&self.cursor)
            .map_err(|e| RunError::new("E0504", e.to_string()))?;
        self.run
            .commit(checkpoint, cursor, finished)
            .map_err(|e| RunError::new("E0504", e.to_string()))
    }

    fn mark_done(&mut self, id: &str) {
        if !self.cursor.done.iter().any(|d| d == id) {
            self.cursor.done.push(id.to_string());
        }
    }

    /// After a resume, a finished training node's output is the restored trainer.
    fn restore_output(&mut self, node: &Node) {
        if node.kind == NodeKind::Eval {
            return;
        }
        let input = p_ref(node, "init").or_else(|| p_ref(node, "model"));
        if !self.roles.contains_key(&node.id)
            && let Some(r) = self.cursor.checkpoint_of.as_ref().and_then(|of| self.roles.get(of))
        {
            self.roles.insert(node.id.clone(), r.clone());
        }
        if !self.trainers.contains_key(&node.id)
            && let Some(t) = self
                .cursor
                .checkpoint_of
                .as_ref()
                .and_then(|of| self.trainers.get(of))
                .cloned()
                .or_else(|| input.and_then(|i| self.trainers.get(&i).cloned()))
        {
            self.trainers.insert(node.id.clone(), t);
        }
    }

    fn load_model(&mut self, node: &Node) -> Result<(), RunError> {
        if node.ctor == "api" {
            self.frozen.add_api(node);
            return Ok(());
        }
        let cfg: TrainerConfig = serde_json::from_value(json!({
            "policy": {
                "family": "tiny",
                "layers": p_num(node, "layers", 2.0) as usize,
                "d_model": p_num(node, "d_model", 128.0) as usize,
                "heads": p_num(node, "heads", 4.0) as usize,
                "context": p_num(node, "context", 1024.0) as usize,
                "positions": p_str(node, "positions", "learned"),
                "copy": node.param("copy").and_then(PVal::as_bool).unwrap_or(false),
            },
            "seed": p_num(node, "seed", 0.0) as u64,
        }))
        .map_err(|e| trainer_err(&format!("model `{}`", node.decl), e))?;
        self.models.insert(node.id.clone(), cfg);
        Ok(())
    }

    async fn sandbox(&mut self) -> Result<Arc<Sandbox>, RunError> {
        if let Some(s) = &self.sandbox {
            return Ok(s.clone());
        }
        let sb = Sandbox::start(0, 0)
            .await
            .map_err(|e| RunError::new("E0504", format!("cannot start the sandbox web: {e}")))?;
        let sb = Arc::new(sb);
        self.sandbox = Some(sb.clone());
        Ok(sb)
    }

    async fn pool(&mut self, concurrency: usize) -> Result<&BrowserPool, RunError> {
        if self.pool.is_none() {
            let sb = self.sandbox().await?;
            // One pool serves every env of the run: the first env's viewport and scale.
            let env = self.env_node();
            let defaults = PoolCfg::default();
            let viewport = match env.and_then(|n| n.param("viewport")) {
                Some(PVal::Dims { width, height }) => (*width as u32, *height as u32),
                _ => defaults.viewport,
            };
            let scale = env.and_then(|n| n.num("device_scale")).unwrap_or(defaults.scale);
            let remote = match env.and_then(|n| n.param("remote")) {
                Some(PVal::List { items }) => {
                    items.iter().filter_map(PVal::as_str).map(str::to_string).collect()
                }
                _ => Vec::new(),
            };
            // Hosts that fail to load are written to the blacklist file, in the run directory.
            let blacklist_file = env
                .filter(|n| p_str(n, "blacklist", "off") == "on_navigation_error")
                .map(|n| self.run.root().join(p_str(n, "blacklist_file", "blacklist.txt")));
            let cfg = PoolCfg {
                chromium: self.opts.chromium.clone(),
                max_concurrent: concurrency.max(1),
                allow: AllowList::only([format!("127.0.0.1:{}", sb.addr().port())]),
                viewport,
                scale,
                remote,
                blacklist_file,
                ..defaults
            };
            let pool = BrowserPool::launch(cfg).await.map_err(|e| {
                RunError::new("E0501", format!("cannot start Chromium: {e}"))
                    .help(crate::preflight::INSTALL_CHROMIUM)
            })?;
            self.pool = Some(pool);
        }
        self.pool.as_ref().ok_or_else(|| RunError::new("E0501", "no browser pool"))
    }

    /// The run's browser env: the first (one pool serves every browser env of a run).
    fn env_node(&self) -> Option<&'a Node> {
        self.plan.nodes.iter().find(|n| n.kind == NodeKind::Env && n.ctor != "search_api")
    }

    /// The env node `agent` acts in.
    fn env_of(&self, agent: &AgentCfg) -> Option<&'a Node> {
        let id = agent.env.as_deref()?;
        self.plan.nodes.iter().find(|n| n.id == id)
    }

    /// Where `agent`'s episodes run: the browser pool, or its search API.
    async fn backend(&mut self, agent: &AgentCfg) -> Result<Backend, RunError> {
        match self.env_of(agent) {
            Some(env) if env.ctor == "search_api" => {
                Ok(Backend::Search(self.search_env(Some(env)).await?))
            }
            _ => {
                let conc = self.concurrency();
                Ok(Backend::Browser(self.pool(conc).await?.clone()))
            }
        }
    }

    /// The client of a `search_api` env: the sandbox's own API when it targets
    /// `std::sandbox::search` (or when there is no env: the scripted expert's demonstrations),
    /// else the service at its `base_url`.
    async fn search_env(&mut self, env: Option<&Node>) -> Result<SearchEnv, RunError> {
        let sandbox_target = env.is_none_or(
            |e| matches!(e.param("target"), Some(PVal::Obj(o)) if o.ctor == "std::sandbox::search"),
        );
        let base = match env {
            Some(e) if !sandbox_target => p_str(e, "base_url", "").to_string(),
            _ => format!("{}/api", self.sandbox().await?.base_url().trim_end_matches('/')),
        };
        let step_text = env.map_or(1500.0, |e| p_num(e, "step_text", 1500.0)).max(1.0) as usize;
        let episode = env.map_or(EpisodeCfg::default(), |e| self.episode_cfg(Some(e)));
        SearchEnv::new(&base, step_text, episode.step_timeout).map_err(|e| {
            let which =
                env.map_or("the sandbox's search API".to_string(), |n| format!("env `{}`", n.decl));
            RunError::new("E0504", format!("{which}: cannot set up its HTTP client: {e}"))
        })
    }

    /// An env's episode settings (the run's browser env by default): timeouts, actions per
    /// turn and what the text observation shows.
    fn episode_cfg(&self, env: Option<&Node>) -> EpisodeCfg {
        crate::env_cfg::episode_cfg(env.or(self.env_node()))
    }

    fn concurrency(&self) -> usize {
        self.plan
            .nodes
            .iter()
            .filter(|n| n.kind == NodeKind::Env)
            .map(|n| p_num(n, "concurrency", 4.0) as usize)
            .max()
            .unwrap_or(4)
    }

    async fn load_dataset(&mut self, node: &Node) -> Result<(), RunError> {
        let count = p_num(node, "count", 0.0) as usize;
        let seed = p_num(node, "seed", 0.0) as u64;
        let data = match node.ctor.as_str() {
            "std::sandbox::tasks" => {
                let sb = self.sandbox().await?;
                Data::Tasks(generate(&sb, node, split_of(node), count, seed))
            }
            "std::sandbox::qa" => {
                let sb = self.sandbox().await?;
                Data::Tasks(wrl_sandbox::generate_qa(sb.content(), split_of(node), count, seed))
            }
            "std::sandbox::demos" => {
                let demos = self.expert_demos(node, count, seed).await?;
                let copies = p_num(node, "augment", 0.0) as usize;
                if copies == 0 {
                    Data::Demos(demos)
                } else {
                    let tasks = self.demo_tasks(node, count, seed).await?;
                    let demos = augmented(demos, &tasks, copies, seed);
                    self.say(&format!(
                        "dataset {}: {} demonstrations with {copies} rewritten copies of each",
                        node.decl,
                        demos.len()
                    ));
                    Data::Demos(demos)
                }
            }
            "mixture" => {
                let mut parts = Vec::new();
                if let Some(PVal::List { items }) = node.param("parts") {
                    for item in items {
                        let PVal::Ref { node: id } = item else { continue };
                        match self.data.get(id) {
                            Some(Data::Demos(d)) => parts.push((id.clone(), d.clone())),
                            _ => {
                                return Err(RunError::new(
                                    "E0503",
                                    format!(
                                        "mixture `{}`: `{id}` is not a dataset of trajectories",
                                        node.decl
                                    ),
                                ));
                            }
                        }
                    }
                }
                let weights = match node.param("weights") {
                    Some(PVal::Obj(o)) if o.ctor == "effective_samples" => {
                        MixtureWeights::EffectiveNumber {
                            beta: o.fields.get("beta").and_then(PVal::num).unwrap_or(0.0),
                        }
                    }
                    Some(PVal::List { items }) => {
                        MixtureWeights::Fixed(items.iter().filter_map(PVal::num).collect())
                    }
                    _ => MixtureWeights::Uniform,
                };
                Data::Mixture(parts, weights)
            }
            "jsonl" => {
                let path = p_str(node, "path", "");
                match read_jsonl(path, p_str(node, "kind", "trajectories")) {
                    Ok(Records::Tasks(t)) => Data::Tasks(t),
                    Ok(Records::Trajectories(t)) => Data::Demos(t),
                    Err((message, _)) => {
                        return Err(RunError::new("E0503", message).help(
                            "docs/sandbox.md describes the task and trajectory JSONL formats",
                        ));
                    }
                }
            }
            other => {
                return Err(RunError::new(
                    "E0502",
                    format!("dataset constructor `{other}` is not supported by this runtime"),
                ));
            }
        };
        self.data.insert(node.id.clone(), data);
        Ok(())
    }

    /// The scripted expert's successful demonstrations of `count` training tasks, solved in
    /// Chromium once and cached in the run directory (a resumed run reads them back).
    async fn expert_demos(
        &mut self,
        node: &Node,
        count: usize,
        seed: u64,
    ) -> Result<Vec<Trajectory>, RunError> {
        let cached = format!("data/{}.jsonl", node.decl);
        if let Ok(text) = std::fs::read_to_string(self.run.root().join(&cached)) {
            return Ok(text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect());
        }
        let sb = self.sandbox().await?;
        let tasks = self.demo_tasks(node, count, seed).await?;
        let conc = self.concurrency();
        let results: Vec<Trajectory> = if search_demos(node) {
            self.say(&format!(
                "dataset {}: the scripted expert answers {count} questions with search and visit",
                node.decl
            ));
            // The responses the expert reads are cut as the run's search env cuts them.
            let env = self.plan.nodes.iter().find(|n| n.ctor == "search_api");
            let env = self.search_env(env).await?;
            let episode = EpisodeCfg::default();
            futures::stream::iter(tasks.iter().map(|task| {
                let (env, episode) = (env.clone(), episode.clone());
                async move {
                    env.run_task(task, "expert", &episode, |_, response, history| {
                        wrl_sandbox::search_api::expert_action(task, history, response)
                            .unwrap_or_else(|| "stuck".into())
                    })
                    .await
                }
            }))
            .buffered(conc.max(1))
            .collect()
            .await
        } else {
            self.say(&format!(
                "dataset {}: the scripted expert solves {count} tasks in Chromium",
                node.decl
            ));
            // The expert sees what the policy will: the env's `observe`.
            let episode = self.episode_cfg(None);
            let pool = self.pool(conc).await?;
            let results =
                wrl_browser::runner::run_expert_with(pool, &sb, &tasks, conc, &episode).await;
            results.into_iter().filter_map(Result::ok).collect()
        };
        let demos: Vec<Trajectory> = results.into_iter().filter(|t| t.outcome.success).collect();
        let lines: String =
            demos.iter().filter_map(|t| serde_json::to_string(t).ok()).map(|l| l + "\n").collect();
        // A cache: a run that cannot write it records the demonstrations again on resume.
        let _ = self.run.write_file(&cached, lines.as_bytes());
        self.say(&format!("dataset {}: {} demonstrations", node.decl, demos.len()));
        Ok(demos)
    }

    /// The tasks a demonstration dataset solves: sandbox tasks, or QA pairs for search demos.
    async fn demo_tasks(
        &mut self,
        node: &Node,
        count: usize,
        seed: u64,
    ) -> Result<Vec<Task>, RunError> {
        let sb = self.sandbox().await?;
        Ok(if search_demos(node) {
            wrl_sandbox::generate_qa(sb.content(), Split::Train, count, seed)
        } else {
            generate(&sb, node, Split::Train, count, seed)
        })
    }

    async fn env(&mut self, node: &Node) -> Result<(), RunError> {
        // A search API is any HTTP service speaking the protocol (docs/sandbox.md).
        if node.ctor == "search_api" {
            return Ok(());
        }
        let target = node.param("target");
        let sandbox_target =
            matches!(target, Some(PVal::Obj(o)) if o.ctor.starts_with("std::sandbox::"));
        if !sandbox_target {
            return Err(RunError::new(
                "E0502",
                format!("env `{}` targets a site this runtime cannot reach offline", node.decl),
            )
            .help("run with a profile whose env targets `std::sandbox::web`"));
        }
        Ok(())
    }

    fn agent(&mut self, node: &Node) -> Result<(), RunError> {
        let graph = if node.ctor == "graph" {
            let spec = GraphSpec::from_node(node).map_err(|e| RunError::new("E0504", e))?;
            Some(Arc::new(spec))
        } else {
            None
        };
        let max_response = match &graph {
            Some(g) => g.modules.values().map(|m| m.max_response).max().unwrap_or(48),
            None => p_num(node, "max_response", 48.0) as usize,
        };
        let cfg = AgentCfg {
            history: History::from_name(p_str(node, "history", "action_only")),
            max_turns: p_num(node, "max_turns", 6.0) as u32,
            max_response,
            graph,
            env: p_ref(node, "env"),
            per_role: p_str(node, "weights", "shared") == "per_role",
        };
        self.agents.insert(node.id.clone(), cfg);
        Ok(())
    }

    fn reward(&mut self, node: &Node) -> Result<(), RunError> {
        if let Some(PVal::Reward { expr }) = node.param("expr") {
            self.rewards.insert(node.id.clone(), reward_expr(expr)?);
        }
        Ok(())
    }

    /// The trainer a node starts from: a checkpoint's, or a fresh one from a model node.
    fn trainer_from(
        &mut self,
        input: &str,
        optim: OptimConfig,
    ) -> Result<Arc<Mutex<Trainer>>, RunError> {
        if let Some(t) = self.trainers.get(input) {
            if let Ok(mut g) = t.lock() {
                g.set_optim(optim);
            }
            return Ok(t.clone());
        }
        let Some(mut cfg) = self.models.get(input).cloned() else {
            return Err(RunError::new("E0504", format!("nothing produced `{input}`")));
        };
        cfg.optim = optim;
        let t = Trainer::new(cfg).map_err(|e| trainer_err("cannot build the policy", e))?;
        Ok(Arc::new(Mutex::new(t)))
    }

    fn sft(&mut self, node: &Node) -> Result<(), RunError> {
        let input = p_ref(node, "model").unwrap_or_default();
        let data_id = p_ref(node, "data").unwrap_or_default();
        let (parts, weights) = match self.data.get(&data_id).cloned() {
            Some(Data::Demos(d)) => (vec![(data_id.clone(), d)], MixtureWeights::Uniform),
            Some(Data::Mixture(parts, w)) => (parts, w),
            _ => {
                return Err(RunError::new(
                    "E0503",
                    format!("stage `{}` needs trajectories", node.decl),
                ));
            }
        };
        let history = self
            .plan
            .nodes
            .iter()
            .filter(|n| n.kind == NodeKind::Agent)
            .map(|n| History::from_name(p_str(n, "history", "action_only")))
            .next()
            .unwrap_or(History::ActionOnly);
        let sets: Vec<(String, Vec<wrl_trainer::Trajectory>)> = parts
            .iter()
            .map(|(name, d)| {
                (name.clone(), d.iter().flat_map(|t| sft_examples(t, history)).collect())
            })
            .collect();
        let n_examples: usize = sets.iter().map(|(_, e)| e.len()).sum();
        let n_demos: usize = parts.iter().map(|(_, d)| d.len()).sum();
        let epochs = p_num(node, "epochs", 1.0).max(1.0) as usize;
        let batch = p_num(node, "batch", 16.0).max(1.0) as usize;
        let micro = p_num(node, "micro_batch", 1.0).max(1.0) as usize;
        let micro = micro.min(batch);
        let sft = SftConfig { micro_batch: micro, grad_accum: batch.div_ceil(micro), epochs };
        let steps = sft.steps_per_epoch(n_examples) * epochs;
        let optim = optim_from(node, steps as u64);
        let trainer = self.trainer_from(&input, optim)?;
        self.say(&format!(
            "stage {}: SFT on {} examples ({} demos), {epochs} epochs, {steps} steps",
            node.decl, n_examples, n_demos
        ));
        let metrics = {
            let mut t =
                trainer.lock().map_err(|_| RunError::new("E0505", "trainer lock poisoned"))?;
            let max_len = t.model().context();
            let mut datasets = Vec::new();
            for (name, examples) in &sets {
                let rendered = examples
                    .iter()
                    .map(|ex| wrl_trainer::render(t.tokenizer(), ex, max_len))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| trainer_err("cannot tokenise the demonstrations", e))?;
                datasets.push(wrl_trainer::Dataset { name: name.clone(), examples: rendered });
            }
            let mixture = Mixture { datasets, weights };
            // Step by step, with a progress line every tenth of the stage.
            let every = (steps / 10).max(1);
            let mut out = Vec::with_capacity(steps);
            while t.cursor().epoch < epochs as u64 {
                let m = t.sft_step(&mixture, &sft).map_err(|e| trainer_err("SFT failed", e))?;
                if out.len() % every == every - 1 {
                    self.say(&format!(
                        "stage {}: step {}/{steps}, epoch {}, loss {:.4}",
                        node.decl,
                        out.len() + 1,
                        m.epoch.unwrap_or(0) + 1,
                        m.loss
                    ));
                }
                out.push(m);
            }
            out
        };
        let lines: Vec<serde_json::Value> = metrics
            .iter()
            .map(|m| json!({"stage": node.decl, "node": node.id, "kind": "sft", "step": m.step, "loss": m.loss, "lr": m.lr, "grad_norm": m.grad_norm, "epoch": m.epoch}))
            .collect();
        if let Some(last) = metrics.last() {
            self.say(&format!("stage {}: final loss {:.4}", node.decl, last.loss));
        }
        self.run.append_metrics(&lines).map_err(|e| RunError::new("E0504", e.to_string()))?;
        self.trainers.insert(node.id.clone(), trainer);
        self.mark_done(&node.id);
        self.save_and_commit(&node.id, &node.id.replace([':', '/'], "-"))
    }

    fn save_and_commit(&mut self, of: &str, name: &str) -> Result<(), RunError> {
        let Some(t) = self.trainers.get(of).cloned() else { return self.commit(None, false) };
        let dir = self.run.checkpoint_dir(name);
        let roles = self.roles.get(of).cloned().unwrap_or_default();
        let each = std::iter::once((dir.clone(), t))
            .chain(roles.into_iter().map(|(r, t)| (dir.join("roles").join(r), t)));
        for (dir, t) in each {
            let g = t.lock().map_err(|_| RunError::new("E0505", "trainer lock poisoned"))?;
            g.save(&dir).map_err(|e| trainer_err("cannot save a checkpoint", e))?;
        }
        self.cursor.checkpoint_of = Some(of.to_string());
        self.cursor.wall_s = self.wall();
        self.started = Instant::now();
        self.commit(Some(name), false)
    }

    async fn rl_phase(&mut self, node: &Node) -> Result<(), RunError> {
        let init = p_ref(node, "init").unwrap_or_default();
        let tasks_id = p_ref(node, "tasks").unwrap_or_default();
        let agent_id = p_ref(node, "agent").unwrap_or_default();
        let reward_id = p_ref(node, "reward").unwrap_or_default();
        let Some(Data::Tasks(all_tasks)) = self.data.get(&tasks_id).cloned() else {
            return Err(RunError::new("E0503", format!("stage `{}` needs tasks", node.decl)));
        };
        if all_tasks.is_empty() {
            return Err(RunError::new(
                "E0503",
                format!("stage `{}`: its task dataset `{tasks_id}` is empty", node.decl),
            )
            .help(
                "give the dataset at least one task (for the sandbox, at least one of its sites)",
            ));
        }
        let agent = self
            .agents
            .get(&agent_id)
            .cloned()
            .ok_or_else(|| RunError::new("E0504", format!("no agent `{agent_id}`")))?;
        let reward = self
            .rewards
            .get(&reward_id)
            .cloned()
            .ok_or_else(|| RunError::new("E0504", format!("no reward `{reward_id}`")))?;
        let iters = p_num(node, "iters", 1.0).max(1.0) as u64;
        let horizon = p_num(node, "horizon", f64::from(agent.max_turns)).max(1.0) as u32;
        let prompts = p_num(node, "prompts", 8.0).max(1.0) as usize;
        let group = p_num(node, "group", 4.0).max(1.0) as usize;
        let resume_from = match &self.cursor.phase {
            Some((id, it)) if *id == node.id => *it,
            _ => 0,
        };
        let start =
            if resume_from > 0 && self.cursor.checkpoint_of.as_deref() == Some(node.id.as_str()) {
                resume_from
            } else {
                0
            };
        let optim = optim_from(node, 0);
        let trainer = match self.trainers.get(&node.id).cloned() {
            Some(t) if start > 0 => t,
            _ => self.trainer_from(&init, optim)?,
        };
        let roles = match self.roles.get(&node.id).cloned() {
            Some(r) if start > 0 => r,
            _ => self.fork_roles(&agent, node, &trainer)?,
        };
        let rl = rl_config(node, agent.max_response);
        let refills = if rl.dynamic_sampling { refill_batches(node) } else { 0 };
        let exclude: Vec<String> = match node.param("exclude") {
            Some(PVal::List { items }) => {
                items.iter().filter_map(PVal::as_str).map(str::to_string).collect()
            }
            _ => vec!["env_error".into(), "infra_timeout".into()],
        };
        let mut cfg = RolloutCfg {
            group,
            concurrency: self.concurrency(),
            sample: SampleParams {
                temperature: rl.temperature,
                top_p: p_num(node, "top_p", 1.0) as f32,
                max_tokens: agent.max_response,
                ..SampleParams::default()
            },
            history: agent.history,
            exclude,
            process: p_ref(node, "process_reward").and_then(|id| self.rewards.get(&id).cloned()),
            graph: self.graph_of(&agent, node, Some(&trainer), &roles)?,
            screens_for: 0,
            episode: self.episode_cfg(self.env_of(&agent)),
            retries: crate::env_cfg::retries(self.env_of(&agent)),
            seed: None,
        };
        // Every batch samples from its own streams of the stage's seed, so a run's rollouts do
        // not depend on the order its concurrent episodes happen to run in.
        let stage_seed = stream_of(&node.id, p_num(node, "seed", 0.0) as u64);
        let rewards = self.rewards.clone();
        let judges = Judges::for_reward(&reward, &rewards)
            .map_err(|e| RunError::new("E0504", format!("cannot set up the judges: {e}")))?;
        let sb = self.sandbox().await?;
        // `prompts` tasks from `offset` on (cycling), with this phase's step budget.
        let tasks_from = |offset: usize| -> Vec<Task> {
            (0..prompts)
                .map(|i| {
                    let mut t = all_tasks[(offset + i) % all_tasks.len()].clone();
                    t.max_steps = t.max_steps.min(horizon).min(agent.max_turns);
                    t
                })
                .collect()
        };
        for iter in (start + 1)..=iters {
            let batch = tasks_from((iter as usize - 1) * prompts);
            let backend = self.backend(&agent).await?;
            let scoring = Scoring { reward: &reward, rewards: &rewards, judges: &judges };
            cfg.seed = Some(wrl_trainer::rng::mix(stage_seed, iter << 8));
            let t0 = Instant::now();
            let mut episodes = rollout(&backend, &sb, &batch, Some(&trainer), &cfg, scoring).await;
            // DAPO's dynamic sampling: replace groups whose rewards were all equal with groups
            // of further tasks (taken from past the last iteration's), up to `max_batches`.
            let mut refill = 0;
            while refill < refills && informative_groups(&episodes) < prompts {
                refill += 1;
                let more =
                    tasks_from((iters as usize * prompts) * refill + (iter as usize - 1) * prompts);
                let scoring = Scoring { reward: &reward, rewards: &rewards, judges: &judges };
                cfg.seed = Some(wrl_trainer::rng::mix(stage_seed, (iter << 8) + refill as u64));
                let extra = rollout(&backend, &sb, &more, Some(&trainer), &cfg, scoring).await;
                episodes.extend(extra.into_iter().map(|mut e| {
                    e.group += refill * prompts;
                    e
                }));
            }
            let rollout_s = t0.elapsed().as_secs_f64();
            let t1 = Instant::now();
            // One update of the shared policy, or one per role on the turns that role sampled.
            let updates: Vec<(String, &Arc<Mutex<Trainer>>)> = if roles.is_empty() {
                vec![(String::new(), &trainer)]
            } else {
                roles.iter().map(|(r, t)| (r.clone(), t)).collect()
            };
            let mut per_role = Vec::new();
            for (role, t) in updates {
                let only = (!role.is_empty()).then_some(role.as_str());
                let samples = samples(&episodes, self.trajectory_ids, only);
                let mut t =
                    t.lock().map_err(|_| RunError::new("E0505", "trainer lock poisoned"))?;
                let m =
                    t.rl_update(&samples, &rl).map_err(|e| trainer_err("RL update failed", e))?;
                per_role.push((role, samples.len(), m));
            }
            let metrics = mean_metrics(&per_role);
            let n_samples: usize = per_role.iter().map(|(_, n, _)| n).sum();
            let update_s = t1.elapsed().as_secs_f64();
            let (mean, success) = reward_stats(&episodes);
            self.say(&format!(
                "stage {} iter {iter}/{iters}: reward {mean:.3}, success {:.1}%, {} uniform groups, loss {:.4} (rollouts {rollout_s:.0} s, update {update_s:.0} s)",
                node.id,
                success * 100.0,
                uniform_groups(&episodes),
                metrics.loss
            ));
            self.log_episodes(node, iter, &episodes)?;
            let mut line = json!({
                "stage": node.decl, "node": node.id, "kind": "rl", "iter": iter, "reward": mean, "success": success,
                "uniform_groups": uniform_groups(&episodes), "loss": metrics.loss, "lr": metrics.lr,
                "grad_norm": metrics.grad_norm, "clip_frac": metrics.clip_frac, "samples": n_samples,
                "rollout_s": rollout_s, "update_s": update_s,
                "retried": episodes.iter().map(|e| e.retried).sum::<usize>(),
            });
            if !roles.is_empty() {
                line["roles"] = per_role
                    .iter()
                    .map(|(r, n, m)| {
                        (r.clone(), json!({"samples": n, "loss": m.loss, "grad_norm": m.grad_norm}))
                    })
                    .collect::<serde_json::Map<_, _>>()
                    .into();
            }
            self.run.append_metrics(&[line]).map_err(|e| RunError::new("E0504", e.to_string()))?;
            self.trainers.insert(node.id.clone(), trainer.clone());
            if !roles.is_empty() {
                self.roles.insert(node.id.clone(), roles.clone());
            }
            self.cursor.phase = Some((node.id.clone(), iter));
            let name = format!("{}-iter-{iter}", node.id.replace([':', '/'], "-"));
            self.save_and_commit(&node.id, &name)?;
        }
        self.trainers.insert(node.id.clone(), trainer);
        self.cursor.phase = None;
        self.mark_done(&node.id);
        self.commit(None, false)
    }

    fn log_episodes(
        &mut self,
        node: &Node,
        iter: u64,
        episodes: &[Episode],
    ) -> Result<(), RunError> {
        let mut lines = Vec::new();
        for ep in episodes {
            if node.kind == NodeKind::RlPhase {
                *self.cursor.failures.entry(ep.end_reason().to_string()).or_default() += 1;
            }
            let reward = match &ep.reward {
                crate::reward::RewardValue::Value(v) => json!(v),
                crate::reward::RewardValue::Excluded(why) => json!({"excluded": why}),
            };
            let mut line = json!({"id": self.trajectory_ids, "node": node.id, "iter": iter, "group": ep.group, "reward": reward, "trajectory": ep.trajectory});
            if !ep.screens.is_empty() {
                let mut paths = Vec::new();
                for (i, png) in ep.screens.iter().enumerate() {
                    let path = format!("screens/{}-{i}.png", self.trajectory_ids);
                    self.run
                        .write_file(&path, png)
                        .map_err(|e| RunError::new("E0504", e.to_string()))?;
                    paths.push(path);
                }
                line["screenshots"] = json!(paths);
            }
            lines.push(line);
            self.trajectory_ids += 1;
        }
        self.run.append_trajectories(&lines).map_err(|e| RunError::new("E0504", e.to_string()))
    }

    fn checkpoint(&mut self, node: &Node) -> Result<(), RunError> {
        // `checkpoint:NAME` is the last trained state of stage NAME: its last node's trainer.
        let stage = p_str(node, "stage", "");
        let last = self
            .plan
            .nodes
            .iter()
            .filter(|n| n.decl == stage && matches!(n.kind, NodeKind::Sft | NodeKind::RlPhase))
            .map(|n| n.id.clone())
            .next_back();
        if let Some(r) = last.as_ref().and_then(|l| self.roles.get(l).cloned()) {
            self.roles.insert(node.id.clone(), r);
        }
        if let Some(t) = last.and_then(|l| self.trainers.get(&l).cloned()) {
            self.trainers.insert(node.id.clone(), t);
        }
        Ok(())
    }

    /// For a graph with `weights = per_role`, a copy of `trainer` for each role of the trainable
    /// modules `node` binds (narrowed by its `trainable`), all starting from its weights; empty
    /// when the roles share `trainer`.
    fn fork_roles(
        &mut self,
        agent: &AgentCfg,
        node: &Node,
        trainer: &Arc<Mutex<Trainer>>,
    ) -> Result<Roles, RunError> {
        let Some(spec) = agent.graph.as_ref().filter(|_| agent.per_role) else {
            return Ok(Roles::new());
        };
        let (only, bound) = (trained_roles(node), binds(node));
        let roles: std::collections::BTreeSet<String> = spec
            .modules
            .values()
            .filter(|m| m.trainable && (only.is_empty() || only.contains(&m.name)))
            .filter(|m| bound.iter().any(|b| *b == format!("modules.{}.model", m.name)))
            .map(|m| m.role.clone())
            .collect();
        let g = trainer.lock().map_err(|_| RunError::new("E0505", "trainer lock poisoned"))?;
        let mut out = Roles::new();
        for role in roles {
            let mut t =
                g.duplicate().map_err(|e| trainer_err("cannot copy the policy for a role", e))?;
            t.set_optim(optim_from(node, 0));
            out.insert(role, Arc::new(Mutex::new(t)));
        }
        if !out.is_empty() {
            let names: Vec<&str> = out.keys().map(String::as_str).collect();
            self.say(&format!(
                "stage {}: roles {} train separate weights",
                node.decl,
                names.join(", ")
            ));
        }
        Ok(out)
    }

    /// The graph and its modules' brains when `agent` is a graph: the modules `node` binds run
    /// `trained`, the others their own frozen model.
    fn graph_of(
        &mut self,
        agent: &AgentCfg,
        node: &Node,
        trained: Option<&Arc<Mutex<Trainer>>>,
        role_weights: &Roles,
    ) -> Result<Option<GraphRun>, RunError> {
        let Some(spec) = &agent.graph else { return Ok(None) };
        let mut spec = (**spec).clone();
        // A stage's `trainable = [...]` narrows which trainable modules it trains.
        let roles = trained_roles(node);
        if let Some(missing) =
            roles.iter().find(|r| !spec.modules.get(*r).is_some_and(|m| m.trainable))
        {
            return Err(RunError::new(
                "E0504",
                format!(
                    "stage `{}` trains `{missing}`, which is not a trainable module of its agent",
                    node.decl
                ),
            )
            .help("list only modules declared with `trainable`")
            .at(node, Some("trainable"), "named here"));
        }
        if !roles.is_empty() {
            for (name, m) in &mut spec.modules {
                m.trainable &= roles.contains(name);
            }
        }
        let brains = self
            .frozen
            .brains(&spec, &binds(node), trained, role_weights, &self.models)
            .map_err(|e| RunError::new("E0505", format!("`{}`: {e}", node.decl)))?;
        Ok(Some((Arc::new(spec), brains)))
    }

    async fn eval(&mut self, node: &Node) -> Result<(), RunError> {
        let agent_id = p_ref(node, "agent").unwrap_or_default();
        let tasks_id = p_ref(node, "tasks").unwrap_or_default();
        let ckpt = p_ref(node, "checkpoint").unwrap_or_default();
        let agent = self
            .agents
            .get(&agent_id)
            .cloned()
            .ok_or_else(|| RunError::new("E0504", format!("no agent `{agent_id}`")))?;
        let Some(Data::Tasks(tasks)) = self.data.get(&tasks_id).cloned() else {
            return Err(RunError::new("E0503", format!("eval `{}` needs tasks", node.decl)));
        };
        let trainer = self.trainers.get(&ckpt).cloned();
        let roles = self.roles.get(&ckpt).cloned().unwrap_or_default();
        if trainer.is_none() && agent.graph.is_none() {
            return Err(RunError::new(
                "E0504",
                format!("eval `{}`: nothing produced `{ckpt}`", node.decl),
            ));
        }
        // pass@k: every task k times (sampled), solved when any attempt succeeds.
        let k = if p_str(node, "metric", "success") == "pass_at_k" {
            p_num(node, "k", 1.0).max(1.0) as usize
        } else {
            1
        };
        let max_steps = p_num(node, "max_steps", 30.0) as u32;
        let count = node.num("count").map(|c| c as usize).unwrap_or(tasks.len()).min(tasks.len());
        let tasks: Vec<Task> = tasks[..count]
            .iter()
            .map(|t| {
                let mut t = t.clone();
                t.max_steps = t.max_steps.min(max_steps).min(agent.max_turns);
                t
            })
            .collect();
        let cfg = RolloutCfg {
            group: k,
            concurrency: self.concurrency(),
            sample: SampleParams {
                temperature: p_num(node, "temperature", 0.0) as f32,
                top_p: p_num(node, "top_p", 1.0) as f32,
                max_tokens: agent.max_response,
                ..SampleParams::default()
            },
            history: agent.history,
            exclude: Vec::new(),
            process: None,
            graph: self.graph_of(&agent, node, trainer.as_ref(), &roles)?,
            // The report shows the first episodes of each evaluation with their pages.
            screens_for: SAMPLE_EPISODES,
            episode: self.episode_cfg(self.env_of(&agent)),
            retries: crate::env_cfg::retries(self.env_of(&agent)),
            seed: Some(stream_of(&node.id, 0)),
        };
        let sb = self.sandbox().await?;
        let backend = self.backend(&agent).await?;
        let none = BTreeMap::new();
        let zero = RewardExpr::Const { value: 0.0 };
        let judges = Judges::default();
        let scoring = Scoring { reward: &zero, rewards: &none, judges: &judges };
        let episodes = rollout(&backend, &sb, &tasks, trainer.as_ref(), &cfg, scoring).await;
        self.log_episodes(node, 0, &episodes)?;
        let solved = (0..tasks.len())
            .filter(|&g| episodes.iter().any(|e| e.group == g && e.success()))
            .count();
        let rate = if tasks.is_empty() { 0.0 } else { solved as f64 / tasks.len() as f64 };
        let after = p_str(node, "after", &node.decl).to_string();
        self.say(&format!(
            "eval {} after {after}: {solved}/{} solved ({:.1}%)",
            node.decl,
            tasks.len(),
            rate * 100.0
        ));
        let line = json!({"stage": node.decl, "node": node.id, "kind": "eval", "after": after, "success": rate, "episodes": episodes.len()});
        self.run.append_metrics(&[line]).map_err(|e| RunError::new("E0504", e.to_string()))?;
        self.cursor.evals.push(EvalResult {
            eval: node.decl.clone(),
            after,
            success: rate,
            episodes: episodes.len(),
        });
        self.mark_done(&node.id);
        self.commit(None, false)
    }
}

/// The demonstrations followed by `copies` rewritten copies of each (its task's values replaced
/// by random strings of the same shape, see `wrl_sandbox::augment`), seeded by the dataset's
/// seed. Demonstrations whose task is not among `tasks` are kept as they are.
fn augmented(demos: Vec<Trajectory>, tasks: &[Task], copies: usize, seed: u64) -> Vec<Trajectory> {
    use rand::SeedableRng;
    let by_id: BTreeMap<&str, &Task> = tasks.iter().map(|t| (t.id.as_str(), t)).collect();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0xa5a5_5a5a);
    let mut out = demos.clone();
    for copy in 1..=copies {
        for d in &demos {
            if let Some(task) = by_id.get(d.task_id.as_str()) {
                out.push(wrl_sandbox::augment(d, task, copy, &mut rng));
            }
        }
    }
    out
}

/// The metrics of one RL iteration's updates (one per role, or one): loss, gradient norm and
/// clip fraction averaged with each update's sample count as its weight.
fn mean_metrics(updates: &[(String, usize, wrl_trainer::Metrics)]) -> wrl_trainer::Metrics {
    let total: usize = updates.iter().map(|(_, n, _)| n).sum();
    let w = |n: usize| {
        if total == 0 { 1.0 / updates.len().max(1) as f64 } else { n as f64 / total as f64 }
    };
    let mut out = updates.first().map(|(_, _, m)| m.clone()).unwrap_or_default();
    if updates.len() > 1 {
        out.loss = updates.iter().map(|(_, n, m)| w(*n) * m.loss).sum();
        out.grad_norm = updates.iter().map(|(_, n, m)| w(*n) * m.grad_norm).sum();
        out.clip_frac =
            Some(updates.iter().map(|(_, n, m)| w(*n) * m.clip_frac.unwrap_or(0.0)).sum());
    }
    out
}

fn reward_stats(episodes: &[Episode]) -> (f64, f64) {
    let vals: Vec<f64> = episodes
        .iter()
        .filter_map(|e| match e.reward {
            crate::reward::RewardValue::Value(v) => Some(v),
            crate::reward::RewardValue::Excluded(_) => None,
        })
        .collect();
    let mean = if vals.is_empty() { 0.0 } else { vals.iter().sum::<f64>() / vals.len() as f64 };
    let success = if episodes.is_empty() {
        0.0
    } else {
        episodes.iter().filter(|e| e.success()).count() as f64 / episodes.len() as f64
    };
    (mean, success)
}

/// The optimiser a training node asks for: its `lr`, `optimizer` record and `schedule`.
fn optim_from(node: &Node, total_steps: u64) -> OptimConfig {
    let opt = node.param("optimizer");
    let f = |k: &str, d: f64| opt.and_then(|o| o.field(k)).and_then(PVal::num).unwrap_or(d);
    let schedule = match node.param("schedule") {
        Some(PVal::Obj(o)) => Schedule {
            kind: if o.ctor == "cosine" { ScheduleKind::Cosine } else { ScheduleKind::Constant },
            warmup_steps: None,
            warmup_ratio: o
                .fields
                .get("warmup")
                .and_then(PVal::num)
                .filter(|w| *w > 0.0 && total_steps > 0),
            total_steps: (total_steps > 0).then_some(total_steps),
            min_lr_ratio: o.fields.get("floor").and_then(PVal::num).unwrap_or(0.0),
        },
        _ => Schedule::default(),
    };
    let schedule = if schedule.kind == ScheduleKind::Cosine && schedule.total_steps.is_none() {
        Schedule::default()
    } else {
        schedule
    };
    OptimConfig {
        lr: p_num(node, "lr", 1e-4),
        betas: (f("beta1", 0.9), f("beta2", 0.999)),
        weight_decay: f("weight_decay", 0.0),
        grad_clip: Some(f("grad_clip", 1.0)).filter(|c| *c > 0.0),
        schedule,
        ..OptimConfig::default()
    }
}
