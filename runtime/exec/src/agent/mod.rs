//! Agents: the trainable candle policy acting in a ReAct loop ([`policy`]), module graphs that
//! walk their modules each turn ([`graph`]), and the frozen models graph modules call
//! ([`brains`]); an instruction-tuned policy's episode as a conversation ([`conversation`]); a model's tool calls as browser actions ([`actions`]). [`AgentCfg`] is an agent node's settings as a rollout uses them.

pub mod actions;
pub mod api_policy;
pub mod brains;
pub mod conversation;
pub mod graph;
pub mod graph_vision;
pub mod grounded;
pub mod hermes;
pub mod policy;
pub mod prompt;
pub mod sample;
pub mod tag_demos;
pub mod tags;
pub mod toolcall;
pub mod vision;

use std::sync::Arc;

use wrl_plan::params;

use graph::GraphSpec;
use prompt::{History, Window};

/// An agent's settings for its rollouts.
#[derive(Clone, Debug)]
pub struct AgentCfg {
    pub history: History,
    /// A ReAct agent's past pages and over-long prompts (a graph's: the default).
    pub window: Window,
    pub max_turns: u32,
    /// The longest response of one turn (a graph: its longest module's,
    /// [`GraphSpec::longest_response`]).
    pub max_response: usize,
    /// Malformed turns in a row that end an episode as an agent error.
    pub max_parse_failures: u32,
    /// The module graph of a `graph` agent.
    pub graph: Option<Arc<GraphSpec>>,
    /// The env node the agent acts in.
    pub env: String,
    /// Each role of the graph trains its own weights (`weights = per_role`).
    pub per_role: bool,
    /// The tool set of a ReAct agent's env (a graph: of its trainable acting module), as an
    /// instruction-tuned policy calls it (see `hermes`; set by [`AgentCfg::in_plan`], which
    /// sees the env). A ReAct rollout's policy calls it; a graph's modules hold their own.
    pub hermes: Option<Arc<hermes::Hermes>>,
    /// A ReAct agent's tool set called by tags (`calls = tags()`, `agent::tags`; set by
    /// [`AgentCfg::in_plan`]): its policy's turns continue one sequence.
    pub tags: Option<Arc<tags::TagCalls>>,
}

impl AgentCfg {
    /// The agent acting in `env` (an evaluation's or a validation's `env`) instead of its own:
    /// with that env's settings and, a ReAct agent, its tool set; a graph's modules keep the
    /// tools they declare. `None` (the agent's own env) changes nothing.
    pub fn acting_in(
        mut self,
        env: Option<&params::NodeRef>,
        plan: &params::TypedPlan<'_>,
    ) -> AgentCfg {
        if let Some(other) = env.map(|e| e.id().to_string())
            && other != self.env
        {
            if self.graph.is_none() {
                self.hermes = hermes::Hermes::of_env(&other, plan).map(Arc::new);
            }
            self.env = other;
        }
        self
    }

    /// The agent whose prompts the examples of an SFT stage training `model` (its `model`
    /// input) take: the first the model acts in — a ReAct agent whose policy it is, a graph with
    /// a module of it (OpAgent's grounder: the framework, not the single model) —, else the
    /// plan's first (the executor's examples, the demonstrations' screenshots and the
    /// preflight's checks all read it).
    pub fn for_sft(plan: &params::TypedPlan<'_>, model: &str) -> Option<AgentCfg> {
        let root = |id: &str| crate::executor::hf::base_model(plan, id).map(|(n, _)| &n.id);
        let want = root(model);
        let acts_in = |a: &params::Agent| match a {
            params::Agent::React(r) => root(r.policy.id()) == want,
            params::Agent::Graph(g) => g.modules.values().any(|m| root(m.model().id()) == want),
        };
        let agents = || {
            plan.nodes.iter().filter_map(|(_, p)| match p {
                params::Params::Agent(a) => Some(a),
                _ => None,
            })
        };
        let agent = agents().find(|a| want.is_some() && acts_in(a)).or_else(|| agents().next());
        agent.map(|a| AgentCfg::in_plan(a, plan))
    }

    /// The screenshots the agent's SFT examples show (its env's `screenshot(last: K, older)`,
    /// K > 0): a ReAct agent's; a graph's when its trainable acting module (the one its
    /// examples train) lists `screenshot`. Whether the policy reads them is the policy's to say.
    pub fn shown_screens(&self) -> Option<prompt::Screens> {
        match &self.graph {
            None => self.window.screens,
            Some(g) => {
                let acting = g.modules.values().find(|m| m.trainable && m.acts)?;
                self.window.screens.filter(|_| acting.lists_screenshot())
            }
        }
    }

    /// The settings of an agent node of `plan`, its env's tool set included (a graph's: its
    /// trainable acting module's, which SFT's examples call as that module does).
    pub fn in_plan(agent: &params::Agent, plan: &params::TypedPlan<'_>) -> AgentCfg {
        let cfg = AgentCfg::new(agent);
        let hermes = match &cfg.graph {
            Some(g) => {
                g.modules.values().find(|m| m.trainable && m.acts).and_then(|m| m.hermes.clone())
            }
            None => hermes::Hermes::of_agent(agent, plan).map(Arc::new),
        };
        let tags = match agent {
            params::Agent::React(r) => r.calls.tags().and_then(|t| {
                let h = hermes::Hermes::of_agent(agent, plan)?;
                let keep = r.tool_response_chars.value().map(|c| *c as usize);
                Some(Arc::new(tags::TagCalls::new(h.tools, t).keeping(keep)))
            }),
            params::Agent::Graph(_) => None,
        };
        let window = prompt::Window { screens: screens_in(plan, &cfg.env), ..cfg.window };
        AgentCfg { hermes, tags, window, ..cfg }
    }

    /// The settings of an agent node. A ReAct agent's `prompt` is refused by the preflight
    /// when set (the tiny policy's prompt is fixed); `step_response` is the checker's (E0404);
    /// its `policy` is bound by the stage or eval that runs it.
    pub fn new(agent: &params::Agent) -> AgentCfg {
        match agent {
            params::Agent::React(r) => {
                let params::React {
                    policy: _,
                    env,
                    history,
                    max_parse_failures,
                    max_turns,
                    max_response,
                    prompt: _,
                    step_response: _,
                    // Read by `Window::of` (`trajectory_tokens` too).
                    pages: _,
                    older_pages: _,
                    actions: _,
                    overflow: _,
                    // The checker's context budget (E0404).
                    task_text: _,
                    trajectory_tokens: _,
                    // Refused by the preflight unless `unlimited` and `off` (limits.rs); a
                    // tag-style agent's cut is read by `in_plan`.
                    tool_response_chars: _,
                    call_timeout: _,
                    // Read by `in_plan`, which sees the env's tool set.
                    calls: _,
                } = r;
                AgentCfg {
                    history: History::from(*history),
                    window: Window::of(r),
                    max_turns: max_turns.0,
                    max_response: max_response.0 as usize,
                    max_parse_failures: *max_parse_failures,
                    graph: None,
                    env: env.id().to_string(),
                    per_role: false,
                    hermes: None,
                    tags: None,
                }
            }
            params::Agent::Graph(g) => {
                let spec = GraphSpec::new(g);
                AgentCfg {
                    // A graph's modules keep their own notes; the actions so far reach those
                    // whose `inputs` list `history`.
                    history: History::ActionOnly,
                    window: Window::default(),
                    max_turns: g.max_turns.0,
                    max_response: spec.longest_response(),
                    max_parse_failures: g.max_parse_failures,
                    graph: Some(Arc::new(spec)),
                    env: g.env.id().to_string(),
                    per_role: match g.weights {
                        params::Weights::Shared => false,
                        params::Weights::PerRole => true,
                    },
                    hermes: None,
                    tags: None,
                }
            }
        }
    }
}

/// The screenshots a turn's prompt keeps in env `env` (`screenshot(last: K, older)`, K > 0);
/// the preflight shows them to vision-language policies only.
fn screens_in(plan: &params::TypedPlan<'_>, env: &str) -> Option<prompt::Screens> {
    let Some(params::Params::Env(params::Env::Browser(b))) = plan.get(env) else { return None };
    b.observe.iter().find_map(|o| match o {
        params::Observation::Screenshot { last, older } if *last > 0 => Some(prompt::Screens {
            last: *last as usize,
            placeholder: *older == params::OlderPages::Placeholder,
        }),
        _ => None,
    })
}
