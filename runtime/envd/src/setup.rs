//! What `wrlc env serve` serves, read from a decoded plan: for each node that scores episodes
//! (an RL phase or an eval), the environment its agent acts in, the episode settings `wrlc run`
//! would use (timeouts, error limit, retries, what the text observation shows), the tool set the
//! model's turns are checked against, and the reward (with its judges, process reward and
//! excluded classes). The sandbox web and one browser pool (allow-listed to the sandbox, with the
//! env's viewport, remote fleet and blacklist) start here, as `wrlc run` starts them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use wrl_browser::{AllowList, BrowserPool, EpisodeCfg, PoolCfg};
use wrl_exec::agent::AgentCfg;
use wrl_exec::agent::prompt::History;
use wrl_exec::env::{SearchEnv, ServerEnv, settings};
use wrl_exec::reward::judges::{ApiModels, Judges};
use wrl_exec::reward::{RewardExpr, Rewards};
use wrl_plan::params::{self, Model, Observation, Params, RewardRef, Site, Toolset, TypedPlan};
use wrl_sandbox::Sandbox;

use crate::ServiceError;

/// Where one node's episodes run.
#[derive(Clone, Debug)]
pub enum Place {
    /// Real Chromium on the service's pool, on the sandbox web.
    Browser { pool: BrowserPool, sandbox: Arc<Sandbox>, screenshot: bool },
    /// A search API over HTTP.
    Search(SearchEnv),
    /// An environment server's API (`env_server`): one of its instances per episode.
    Server(ServerEnv),
}

/// One node that scores episodes, ready to serve.
#[derive(Clone, Debug)]
pub struct Served {
    pub node: String,
    pub decl: String,
    /// The env node, and its constructor (`browser`, `search_api`).
    pub env: String,
    pub env_kind: &'static str,
    pub place: Place,
    pub episode: EpisodeCfg,
    pub retries: usize,
    pub tools: Toolset,
    pub history: History,
    /// The pages the agent's prompts keep.
    pub window: wrl_exec::agent::prompt::Window,
    /// The step budget: a task's own, capped by the phase's horizon and the agent's turns.
    pub max_steps: u32,
    /// `None`: an eval, whose score is the task's checker (1 solved, 0 not).
    pub reward: Option<RewardExpr>,
    pub process: Option<RewardExpr>,
    pub exclude: Vec<params::FailureClass>,
    pub judges: Judges,
    /// The plan's named rewards (a reward may name another).
    pub rewards: Arc<Rewards>,
}

/// Everything the service serves.
pub struct Environment {
    pub recipe: String,
    pub profile: Option<String>,
    pub digest: String,
    pub nodes: BTreeMap<String, Served>,
    pub rewards: Rewards,
    /// Episodes at once: the largest `concurrency` of the plan's envs.
    pub concurrency: usize,
    /// The browser pool, when an env is a browser (its browsers close when it drops).
    pub pool: Option<BrowserPool>,
    /// The sandbox web, when an env targets it (it stops when the last holder drops: a search
    /// env's client holds only its URL).
    pub sandbox: Option<Arc<Sandbox>>,
    /// `retriever(corpus)` search backends, by env node (each stops when this drops).
    pub retrievers: BTreeMap<String, Arc<wrl_sandbox::retriever::Retriever>>,
}

/// Options the plan does not hold.
#[derive(Clone, Debug, Default)]
pub struct SetupOptions {
    pub chromium: Option<PathBuf>,
    /// Where the blacklist file (and nothing else) is written.
    pub state_dir: PathBuf,
}

fn no_env(why: String) -> ServiceError {
    ServiceError::NoEnvironment(why)
}

/// The nodes of a plan the service builds from: its named rewards, `api(…)` models, agents
/// and envs (each env with its declaration's name).
struct Parts {
    rewards: Rewards,
    apis: ApiModels,
    agents: BTreeMap<String, AgentCfg>,
    envs: BTreeMap<String, (String, params::Env)>,
}

/// A node that scores episodes, read from the plan: its declaration, its agent, its horizon,
/// and its reward, process reward and excluded classes (an eval: none of them).
struct Scorer {
    node: String,
    decl: String,
    agent: String,
    horizon: u32,
    reward: Option<RewardExpr>,
    process: Option<RewardExpr>,
    exclude: Vec<params::FailureClass>,
}

/// What the service runs on: the sandbox web, the browser pool and the retrievers it starts.
struct Services {
    sandbox: Option<Arc<Sandbox>>,
    pool: Option<BrowserPool>,
    retrievers: BTreeMap<String, Arc<wrl_sandbox::retriever::Retriever>>,
}

/// Reads the plan and starts what it needs: the sandbox when an env targets it, the pool when
/// an env is a browser.
pub async fn environment(
    typed: &TypedPlan<'_>,
    opts: &SetupOptions,
) -> Result<Environment, ServiceError> {
    let parts = parts(typed);
    let scorers = scorers(typed, &parts.rewards)?;
    let concurrency = settings::concurrency(parts.envs.values().map(|(_, e)| e)).max(1);
    let mut services = start(&parts.envs, concurrency, opts).await?;
    let shared = Arc::new(parts.rewards.clone());
    let mut nodes = BTreeMap::new();
    let mut tokenizers = Tokenizers::new();
    for s in scorers {
        let decl = s.decl.clone();
        let a = parts
            .agents
            .get(&s.agent)
            .ok_or_else(|| no_env(format!("`{decl}`: no agent `{}` in the plan", s.agent)))?;
        let (env_decl, env) = parts
            .envs
            .get(&a.env)
            .ok_or_else(|| no_env(format!("`{decl}`: its agent acts in no env")))?;
        let judges = match &s.reward {
            Some(r) => Judges::for_reward(r, &parts.rewards, &parts.apis)
                .map_err(|e| ServiceError::Start(format!("`{decl}`: cannot set up judges: {e}")))?,
            None => Judges::default(),
        };
        if a.window.end_on_overflow {
            return Err(no_env(format!(
                "`{decl}`: its agent ends episodes whose prompt does not fit \
                 (`overflow = end_episode`), but this service hands prompts to its client, which \
                 decides; serve a profile with `overflow = truncate_left`"
            )));
        }
        if let Some(Params::Agent(params::Agent::React(r))) = typed.get(&s.agent)
            && r.calls.tags().is_some()
        {
            return Err(no_env(format!(
                "`{decl}`: its agent calls tools by tags (`calls = tags()`), its results \
                 appended inside the one generated sequence, but this service answers each turn \
                 as a message of its own; serve a profile with `calls = hermes`"
            )));
        }
        let (place, tools, env_kind) = place(env_decl, env, &mut services).await?;
        let window = served_window(typed, &s.agent, a, &tools, &mut tokenizers);
        let served = Served {
            node: s.node.clone(),
            decl,
            env: env_decl.clone(),
            env_kind,
            place,
            retries: settings::retries(Some(env)),
            episode: settings::episode_cfg(Some(env), Some(a.max_parse_failures)),
            tools,
            history: a.history,
            window,
            max_steps: wrl_plan::turns_cap(s.horizon, a.max_turns),
            reward: s.reward,
            process: s.process,
            exclude: s.exclude,
            judges,
            rewards: shared.clone(),
        };
        nodes.insert(s.node, served);
    }
    Ok(Environment {
        recipe: display_recipe(&typed.plan.recipe),
        profile: typed.plan.profile.clone(),
        digest: wrl_plan::Identity::of(typed.plan).plan,
        nodes,
        rewards: parts.rewards,
        concurrency,
        pool: services.pool,
        sandbox: services.sandbox,
        retrievers: services.retrievers,
    })
}

/// The plan's rewards, API models, agents and envs.
fn parts(typed: &TypedPlan<'_>) -> Parts {
    let mut out = Parts {
        rewards: Rewards::new(),
        apis: ApiModels::new(),
        agents: BTreeMap::new(),
        envs: BTreeMap::new(),
    };
    for (n, p) in &typed.nodes {
        match p {
            Params::Reward(r) => {
                out.rewards.insert(n.id.clone(), r.expr.clone());
            }
            Params::Model(Model::Api(a)) => {
                out.apis.insert(n.id.clone(), a.clone());
            }
            Params::Agent(a) => {
                out.agents.insert(n.id.clone(), AgentCfg::new(a));
            }
            Params::Env(e) => {
                out.envs.insert(n.id.clone(), (n.decl.clone(), e.clone()));
            }
            Params::Model(_)
            | Params::Dataset(_)
            | Params::Sft(_)
            | Params::RlPhase(_)
            | Params::Checkpoint(_)
            | Params::Eval(_) => {}
        }
    }
    out
}

/// Every node that scores episodes: RL phases (with their rewards, as `wrlc run` scores them)
/// and evals.
fn scorers(typed: &TypedPlan<'_>, rewards: &Rewards) -> Result<Vec<Scorer>, ServiceError> {
    let reward_of = |r: &RewardRef| -> Result<RewardExpr, ServiceError> {
        match r {
            RewardRef::Inline(e) => Ok(e.clone()),
            RewardRef::Node(n) => rewards
                .get(n.id())
                .cloned()
                .ok_or_else(|| no_env(format!("no reward `{n}` in the plan"))),
        }
    };
    let mut out = Vec::new();
    for (n, p) in &typed.nodes {
        match p {
            Params::RlPhase(phase) => out.push(Scorer {
                node: n.id.clone(),
                decl: n.decl.clone(),
                agent: phase.run.agent.id().to_string(),
                horizon: phase.run.horizon.0.max(1),
                reward: Some(reward_of(&phase.rollout.reward)?),
                process: phase.algo.process_reward().map(reward_of).transpose()?,
                exclude: phase.rollout.exclude.clone(),
            }),
            Params::Eval(e) => out.push(Scorer {
                node: n.id.clone(),
                decl: n.decl.clone(),
                agent: e.agent.id().to_string(),
                horizon: e.max_steps.0,
                reward: None,
                process: None,
                exclude: Vec::new(),
            }),
            _ => {}
        }
    }
    if out.is_empty() {
        return Err(no_env(
            "the plan has no RL phase and no eval, so no episodes to serve".to_string(),
        ));
    }
    Ok(out)
}

/// Starts the sandbox web when an env targets it and the browser pool when one is a browser.
async fn start(
    envs: &BTreeMap<String, (String, params::Env)>,
    concurrency: usize,
    opts: &SetupOptions,
) -> Result<Services, ServiceError> {
    let needs_sandbox = envs.values().any(|(_, e)| match e {
        params::Env::Browser(_) => true,
        params::Env::SearchApi(s) => matches!(s.target, Site::SandboxSearch),
        params::Env::EnvServer(_) => false,
    });
    let sandbox = match needs_sandbox {
        true => Some(Arc::new(
            Sandbox::start(0, 0)
                .await
                .map_err(|e| ServiceError::Start(format!("cannot start the sandbox web: {e}")))?,
        )),
        false => None,
    };
    let browser = envs.values().find_map(|(_, e)| match e {
        params::Env::Browser(b) => Some(b.clone()),
        params::Env::SearchApi(_) | params::Env::EnvServer(_) => None,
    });
    let pool = match (&browser, &sandbox) {
        (Some(b), Some(sb)) => Some(launch_pool(b, sb, concurrency, opts).await?),
        _ => None,
    };
    Ok(Services { sandbox, pool, retrievers: BTreeMap::new() })
}

/// Where env `env_decl`'s episodes run, its tool set and its kind; a retriever starts once per
/// env, however many nodes serve it.
async fn place(
    env_decl: &str,
    env: &params::Env,
    services: &mut Services,
) -> Result<(Place, Toolset, &'static str), ServiceError> {
    Ok(match env {
        params::Env::Browser(b) => {
            if !b.target.is_sandbox() {
                return Err(no_env(format!(
                    "env `{env_decl}` targets a site this service cannot reach offline; serve a \
                     profile whose env targets `std::sandbox::web`"
                )));
            }
            let (Some(pool), Some(sb)) = (&services.pool, &services.sandbox) else {
                return Err(no_env(format!("env `{env_decl}`: no browser pool")));
            };
            // As for a search API below: `wrlc run`'s episodes call MCP tools, not the service's.
            if !b.tools.mcp.is_empty() {
                return Err(ServiceError::Start(format!(
                    "env `{env_decl}`: its tool set's MCP servers (`mcp`) are called by `wrlc run` only, not by `wrlc env serve`"
                )));
            }
            let screenshot = b.observe.iter().any(|o| matches!(o, Observation::Screenshot { .. }));
            let place = Place::Browser { pool: pool.clone(), sandbox: sb.clone(), screenshot };
            (place, b.tools.clone(), "browser")
        }
        params::Env::SearchApi(s) => {
            if let Site::Simulated(_) = s.target {
                return Err(ServiceError::Start(format!(
                    "env `{env_decl}`: a simulated search engine runs in `wrlc run` only: its \
                     noisy-document curriculum follows the trainer's iterations, which the \
                     service does not see"
                )));
            }
            let base = match (&s.target, &services.sandbox) {
                (Site::SandboxSearch, Some(sb)) => {
                    format!("{}/api", sb.base_url().trim_end_matches('/'))
                }
                (Site::Retriever { corpus, top_k, max_chars }, _) => {
                    match services.retrievers.get(env_decl) {
                        Some(r) => r.base_url(),
                        None => {
                            let r = wrl_sandbox::retriever::Retriever::serve_file(
                                corpus,
                                *top_k as usize,
                                *max_chars as usize,
                            )
                            .await
                            .map_err(|why| {
                                ServiceError::Start(format!("env `{env_decl}`: {why}"))
                            })?;
                            let base = r.base_url();
                            services.retrievers.insert(env_decl.to_string(), Arc::new(r));
                            base
                        }
                    }
                }
                _ => s.base_url.clone(),
            };
            // Its episodes are stepped from outside, a turn per request: MCP tools (docs/mcp.md)
            // are called by `wrlc run`'s episodes only, so the service refuses them rather than
            // answering every such call as an unknown tool.
            if !s.tools.mcp.is_empty() {
                return Err(ServiceError::Start(format!(
                    "env `{env_decl}`: its tool set's MCP servers (`mcp`) are called by `wrlc run` only, not by `wrlc env serve`"
                )));
            }
            let step_text = (s.step_text.0 as usize).max(1);
            let env = SearchEnv::new(&base, step_text, s.timeout.step.duration())
                .map_err(|e| ServiceError::Start(format!("env `{env_decl}`: {e}")))?;
            (Place::Search(env), s.tools.clone(), "search_api")
        }
        params::Env::EnvServer(s) => {
            let env = ServerEnv::of(s)
                .map_err(|e| ServiceError::Start(format!("env `{env_decl}`: {e}")))?;
            // No tool set: the server reads the turn as the model wrote it.
            let tools = s.tools.value().cloned().unwrap_or_else(|| Toolset {
                coordinates: params::Coordinates::ElementIds,
                calls_per_turn: params::CallsPerTurn::One,
                answer_tag: String::new(),
                mcp: Vec::new(),
                tools: Vec::new(),
            });
            (Place::Server(env), tools, "env_server")
        }
    })
}

/// The recipe's file name (never an absolute path: it is printed and sent to clients).
fn display_recipe(recipe: &str) -> String {
    Path::new(recipe).file_name().map_or(recipe.to_string(), |f| f.to_string_lossy().into_owned())
}

async fn launch_pool(
    b: &params::Browser,
    sb: &Sandbox,
    concurrency: usize,
    opts: &SetupOptions,
) -> Result<BrowserPool, ServiceError> {
    let cfg = PoolCfg {
        chromium: opts.chromium.clone(),
        max_concurrent: concurrency,
        // The allow-list: the sandbox web only, as in `wrlc run`.
        allow: AllowList::only([format!("127.0.0.1:{}", sb.addr().port())]),
        viewport: (b.viewport.width as u32, b.viewport.height as u32),
        scale: b.device_scale,
        remote: b.remote.clone(),
        blacklist_file: match b.blacklist {
            params::Blacklist::Off => None,
            params::Blacklist::OnNavigationError => Some(opts.state_dir.join(&b.blacklist_file)),
        },
        ..PoolCfg::default()
    };
    let remote = !cfg.remote.is_empty();
    BrowserPool::launch(cfg).await.map_err(|e| {
        // A remote browser is not installed here: what to do is in its error (how to start
        // it, or that it cannot be reached), never to install Chromium on this machine.
        ServiceError::Start(match (remote, &e) {
            (true, _) | (false, wrl_browser::PoolError::Unsafe { .. }) => {
                format!("cannot use the remote browser: {e}")
            }
            (false, _) => {
                format!("cannot start Chromium: {e} ({})", wrl_exec::preflight::INSTALL_CHROMIUM)
            }
        })
    })
}

/// The tokenizers of the `hf(…)` policies served, by model id and thinking mode (`None`: its
/// files are not on this machine).
type Tokenizers = BTreeMap<(String, bool), Option<wrl_trainer::Tokenizer>>;

/// The window of the prompts the service hands out: a ReAct agent whose policy is an `hf(…)`
/// model gets the room its context leaves after the reply and the chat template with the tool
/// schemas ([`Window::fit_with`], the rule `wrlc run` uses), measured with the model's own
/// tokenizer. A model whose files are not on this machine (the service runs beside verl's
/// rollout workers, which have it) is sized without them: its context less the reply, the
/// schemas' bytes and 1,024 tokens for the template's framing (a token covers at least a byte,
/// so that fits too). The tiny policy keeps its 900 bytes. Each model's tokenizer is read once,
/// however many phases and evals serve it.
fn served_window(
    typed: &TypedPlan<'_>,
    agent: &str,
    a: &AgentCfg,
    tools: &Toolset,
    tokenizers: &mut Tokenizers,
) -> wrl_exec::agent::prompt::Window {
    let Some(Params::Agent(params::Agent::React(r))) = typed.get(agent) else { return a.window };
    let Some(Params::Model(Model::Hf(h))) = typed.get(r.policy.id()) else { return a.window };
    let schemas = tools.function_schema_texts();
    let context = h.context.0 as usize;
    let tok = tokenizers.entry((h.id.clone(), h.thinking)).or_insert_with(|| {
        let files = wrl_trainer::hf::resolve(&h.id, wrl_trainer::hf::RepoKind::Model)
            .and_then(|dir| wrl_trainer::hf::inspect(&dir));
        files.ok().and_then(|f| wrl_trainer::Tokenizer::from_model(&f, h.thinking).ok())
    });
    match tok {
        Some(tok) => a.window.fit_with(tok, context, a.max_response, &schemas),
        None => {
            let framing = 1024 + schemas.iter().map(String::len).sum::<usize>();
            let room = context.saturating_sub(a.max_response.saturating_add(framing));
            wrl_exec::agent::prompt::Window { room, ..a.window }
        }
    }
}
