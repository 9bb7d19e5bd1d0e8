//! The services a run shares, started on first use: the sandbox web on loopback, one browser
//! pool for every browser env, and the environment each agent's episodes run in.

use std::sync::Arc;

use wrl_browser::{AllowList, BrowserPool, EpisodeCfg, PoolCfg};
use wrl_plan::params::{self, Blacklist, Params, Site};
use wrl_plan::{Node, NodeKind};
use wrl_sandbox::Sandbox;

use super::Executor;
use crate::agent::AgentCfg;
use crate::env::{BrowserEnv, Env, SearchEnv, ServerEnv, settings};
use crate::error::{Fault, RunError};

/// The shared services, once started.
#[derive(Default)]
pub(super) struct Services {
    sandbox: Option<Arc<Sandbox>>,
    pool: Option<BrowserPool>,
    /// `retriever(corpus)` search backends, by env node: started once, kept for the run.
    retrievers: std::collections::BTreeMap<String, Arc<wrl_sandbox::retriever::Retriever>>,
    /// The MCP servers of a `search_api` or `browser` env's tool set, by env node: connected
    /// once, kept for the run, their calls counted there (`mcp_calls.json`).
    pub(super) mcp: std::collections::BTreeMap<String, Arc<crate::mcp::McpTools>>,
}

impl<'a> Executor<'a> {
    pub(super) async fn sandbox(&mut self) -> Result<Arc<Sandbox>, RunError> {
        if let Some(s) = &self.services.sandbox {
            return Ok(s.clone());
        }
        let sb = Sandbox::start(0, 0).await.map_err(|e| {
            RunError::new(Fault::Service, format!("cannot start the sandbox web: {e}"))
                .help("the sandbox listens on a free port of 127.0.0.1; check that loopback works")
        })?;
        let sb = Arc::new(sb);
        self.services.sandbox = Some(sb.clone());
        Ok(sb)
    }

    /// The run's browser env: the first (one pool serves every browser env of a run).
    fn browser_env(&self) -> Option<(&'a Node, &'a params::Browser)> {
        self.plan.nodes.iter().find_map(|(n, p)| match p {
            Params::Env(params::Env::Browser(b)) => Some((*n, b)),
            _ => None,
        })
    }

    pub(super) async fn pool(&mut self) -> Result<BrowserPool, RunError> {
        if let Some(p) = &self.services.pool {
            return Ok(p.clone());
        }
        let sb = self.sandbox().await?;
        let concurrency = self.concurrency();
        let defaults = PoolCfg::default();
        // One pool serves every env of the run: the first env's viewport, scale and fleet.
        let (viewport, scale, remote, blacklist_file) = match self.browser_env() {
            Some((_, b)) => (
                (b.viewport.width as u32, b.viewport.height as u32),
                b.device_scale,
                b.remote.clone(),
                // Hosts that fail to load are written to the blacklist file, in the run
                // directory.
                match b.blacklist {
                    Blacklist::Off => None,
                    Blacklist::OnNavigationError => Some(self.run.root().join(&b.blacklist_file)),
                },
            ),
            None => (defaults.viewport, defaults.scale, Vec::new(), None),
        };
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
            RunError::new(Fault::NoChromium, format!("cannot start Chromium: {e}"))
                .help(crate::error::INSTALL_CHROMIUM)
        })?;
        self.services.pool = Some(pool.clone());
        Ok(pool)
    }

    /// The env node `agent` acts in, and its parameters.
    fn env_of(&self, agent: &AgentCfg) -> Result<(&'a Node, &'a params::Env), RunError> {
        match self.plan.node(&agent.env) {
            Some((n, Params::Env(e))) => Ok((n, e)),
            _ => Err(RunError::plan(format!("`{}` is not an environment node", agent.env))),
        }
    }

    /// Where `agent`'s episodes run, and their settings.
    pub(super) async fn env_for(
        &mut self,
        agent: &AgentCfg,
    ) -> Result<(Arc<dyn Env>, EpisodeCfg, usize), RunError> {
        let (node, env) = self.env_of(agent)?;
        let episode = settings::episode_cfg(Some(env), Some(agent.max_parse_failures));
        let retries = settings::retries(Some(env));
        let e: Arc<dyn Env> = match env {
            params::Env::SearchApi(s) => Arc::new(self.search_env(Some((node, s))).await?),
            params::Env::EnvServer(s) => Arc::new(ServerEnv::of(s).map_err(|e| {
                RunError::new(
                    Fault::Service,
                    format!("env `{}`: cannot set up its HTTP client: {e}", node.decl),
                )
            })?),
            params::Env::Browser(b) => {
                let pool = self.pool().await?;
                let native = crate::mcp::browser_native(&b.tools);
                let mcp = self.mcp_tools(node, &b.tools, &native).await?;
                Arc::new(BrowserEnv::new(pool, self.sandbox().await?).with_mcp(mcp))
            }
        };
        Ok((e, episode, retries))
    }

    /// The client of a `search_api` env: the sandbox's own API when it targets
    /// `std::sandbox::search` (or when there is no env: the scripted expert's demonstrations),
    /// else the service at its `base_url`.
    pub(super) async fn search_env(
        &mut self,
        env: Option<(&Node, &params::SearchApi)>,
    ) -> Result<SearchEnv, RunError> {
        let base = match env {
            Some((n, s)) => match &s.target {
                Site::SandboxSearch => self.sandbox_api().await?,
                Site::Retriever { corpus, top_k, max_chars } => {
                    self.retriever(n, corpus, *top_k, *max_chars).await?
                }
                _ => s.base_url.clone(),
            },
            None => self.sandbox_api().await?,
        };
        let step_text = env.map_or(1500, |(_, s)| s.step_text.0 as usize).max(1);
        let step_timeout =
            env.map_or(EpisodeCfg::default().step_timeout, |(_, s)| s.timeout.step.duration());
        let search = SearchEnv::new(&base, step_text, step_timeout).map_err(|e| {
            let which = env.map_or("the sandbox's search API".to_string(), |(n, _)| {
                format!("env `{}`", n.decl)
            });
            RunError::new(Fault::Service, format!("{which}: cannot set up its HTTP client: {e}"))
        })?;
        let mcp = match env {
            Some((n, s)) => self.mcp_tools(n, &s.tools, crate::mcp::SEARCH_NATIVE).await?,
            None => None,
        };
        let search = search.with_mcp(mcp);
        Ok(match env {
            Some((n, s)) => match &s.target {
                Site::Simulated(sim) => search.with_simulator(self.simulator(n, sim)?),
                _ => search,
            },
            None => search,
        })
    }

    /// The simulated search engine of env `node` (ZeroSearch), asking its `api(…)` engine; its
    /// draws follow the env's own stream of the run's seed.
    fn simulator(
        &self,
        node: &Node,
        sim: &params::SimulatedSearch,
    ) -> Result<Arc<crate::env::simulated::Simulator>, RunError> {
        let Some(api) = self.built.apis.get(sim.engine.id()) else {
            return Err(RunError::plan(format!(
                "env `{}`: its engine `{}` is no `api(…)` model loaded before it",
                node.decl, sim.engine
            )));
        };
        let seed = self.stream(&node.id, 0);
        crate::env::simulated::Simulator::new(sim, api, seed).map(Arc::new).map_err(|e| {
            RunError::new(
                Fault::Service,
                format!("env `{}`: cannot set up its simulated search engine: {e}", node.decl),
            )
        })
    }

    /// The MCP servers of env `node`'s tool set, serving the tools not in `native` (those the
    /// env runs itself), connected on first use (the preflight checked them; one that has gone
    /// since is a service the run needs, E0507).
    async fn mcp_tools(
        &mut self,
        node: &Node,
        tools: &params::Toolset,
        native: &[&str],
    ) -> Result<Option<Arc<crate::mcp::McpTools>>, RunError> {
        if let Some(m) = self.services.mcp.get(&node.id) {
            return Ok(Some(m.clone()));
        }
        let m = crate::mcp::McpTools::connect(tools, native).await.map_err(|why| {
            RunError::new(Fault::Service, format!("env `{}`: {why}", node.decl)).at(
                node,
                Some("tools"),
                "this tool set's MCP servers",
            )
        })?;
        if let Some(m) = &m {
            self.services.mcp.insert(node.id.clone(), m.clone());
        }
        Ok(m)
    }

    /// The sandbox's search API: `http://127.0.0.1:PORT/api`.
    async fn sandbox_api(&mut self) -> Result<String, RunError> {
        Ok(format!("{}/api", self.sandbox().await?.base_url().trim_end_matches('/')))
    }

    /// The base URL of env `node`'s retriever over `corpus`, started on first use.
    async fn retriever(
        &mut self,
        node: &Node,
        corpus: &str,
        top_k: u32,
        max_chars: u32,
    ) -> Result<String, RunError> {
        if let Some(r) = self.services.retrievers.get(&node.id) {
            return Ok(r.base_url());
        }
        let c = wrl_sandbox::retriever::Corpus::from_file(corpus).map_err(|why| {
            RunError::new(Fault::Data, format!("env `{}`: {why}", node.decl))
                .help("a corpus is JSONL, one {\"url\", \"title\", \"text\"} document per line (docs/sandbox.md)")
                .at(node, Some("target"), "this retriever's corpus")
        })?;
        let r = wrl_sandbox::retriever::Retriever::start(
            Arc::new(c),
            top_k as usize,
            max_chars as usize,
        )
        .await
        .map_err(|e| {
            RunError::new(
                Fault::Service,
                format!("env `{}`: cannot start its retriever: {e}", node.decl),
            )
            .help("the retriever listens on a free port of 127.0.0.1; check that loopback works")
        })?;
        let base = r.base_url();
        self.services.retrievers.insert(node.id.clone(), Arc::new(r));
        Ok(base)
    }

    /// The run's search env, if it has one (the expert's search demonstrations are cut as it
    /// cuts responses).
    pub(super) fn search_env_node(&self) -> Option<(&'a Node, &'a params::SearchApi)> {
        self.plan.nodes.iter().find_map(|(n, p)| match p {
            Params::Env(params::Env::SearchApi(s)) => Some((*n, s)),
            _ => None,
        })
    }

    /// The episode settings of the run's browser env (the scripted expert sees what the policy
    /// will: the env's `observe`).
    pub(super) fn browser_episode_cfg(&self) -> EpisodeCfg {
        let env = self.browser_env().map(|(_, b)| params::Env::Browser(b.clone()));
        settings::episode_cfg(env.as_ref(), None)
    }

    /// How many episodes run at once: the largest `concurrency` of the run's envs.
    pub(super) fn concurrency(&self) -> usize {
        settings::concurrency(self.plan.nodes.iter().filter_map(|(n, p)| match p {
            Params::Env(e) if n.kind == NodeKind::Env => Some(e),
            _ => None,
        }))
    }

    /// An env node: a browser env must target the sandbox (the only web this runtime reaches
    /// offline); a search API is any HTTP service speaking the protocol (docs/sandbox.md).
    pub(super) fn env(&mut self, node: &Node, env: &params::Env) -> Result<(), RunError> {
        match env {
            params::Env::SearchApi(_) | params::Env::EnvServer(_) => Ok(()),
            params::Env::Browser(b) if b.target.is_sandbox() => Ok(()),
            params::Env::Browser(_) => Err(RunError::new(
                Fault::Unsupported,
                format!("env `{}` targets a site this runtime cannot reach offline", node.decl),
            )
            .help("run with a profile whose env targets `std::sandbox::web`")),
        }
    }
}
