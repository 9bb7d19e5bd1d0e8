//! Module-graph agents (`agent a = graph { module … ; x -> y when v }`): each environment turn
//! walks the graph from where the last one stopped, calling modules (a planner, a reflector, a
//! summarizer) until one that holds tools (a grounder) writes the turn's actions, or the walk
//! reaches `end`. Trainable modules sample from the stage's candle policy and their turns are
//! recorded for the update; frozen modules (`llm(model)`) run a local policy or call an
//! OpenAI-compatible endpoint (a call that fails ends the episode as the environment's failure). An acting module whose policy has a chat template (an `hf(…)`
//! model) is shown its tool set's schemas and calls them as it was trained to (Hermes
//! `<tool_call>`s, checked against the tools; a malformed turn is a format error), in the room
//! its context leaves; the tiny policy writes terse lines in 900 bytes. A module whose
//! `inputs` list `screenshot` and whose brain is a vision-language policy is shown the episode's
//! screenshots as images (`agent::graph_vision`) when its env shows them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use wrl_browser::{AgentTurn, Breakdown};
use wrl_plan::params::{self, Module, ModuleInput};
use wrl_sandbox::Task;
use wrl_trainer::{SampleParams, Trainer};

use super::graph_vision::{Seen, api_messages, module_message};
use super::hermes::{EnvKind, Hermes};
use super::prompt::{MAX_PROMPT_BYTES, Screens, Window, compose_in, split_task};
use super::sample::{Turn, sample_turn};
use super::vision::{kept_tokens, sample_seeing, sees};
use crate::env::Agent;
use crate::reward::client::{JudgeClient, JudgeError};

/// One module of a graph.
#[derive(Clone, Debug, PartialEq)]
pub struct ModuleSpec {
    pub name: String,
    /// The model node it runs (`model:base`).
    pub model: String,
    /// `llm(…)`: frozen, never trained.
    pub frozen: bool,
    /// `policy_of(…) { trainable }`.
    pub trainable: bool,
    /// Holds tools: its output is the turn's actions.
    pub acts: bool,
    /// Verdicts it may emit (edges branch on them).
    pub emits: Vec<String>,
    /// What its prompt shows.
    pub inputs: Vec<ModuleInput>,
    pub max_response: usize,
    pub prompt: String,
    pub role: String,
    /// An acting module's tool set as a policy with a chat template calls it (graphs run in
    /// browsers); `None` for a module that only writes text.
    pub hermes: Option<Arc<Hermes>>,
}

/// One edge: `from -> to [when v | w]`, taken at most `limit` times per episode.
#[derive(Clone, Debug, PartialEq)]
pub struct EdgeSpec {
    pub from: String,
    pub to: String,
    pub when: Vec<String>,
    pub limit: Option<u32>,
}

/// A graph agent as the plan declares it.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphSpec {
    pub modules: BTreeMap<String, ModuleSpec>,
    pub edges: Vec<EdgeSpec>,
    pub max_parse_failures: u32,
}

impl ModuleSpec {
    /// Whether the module lists `screenshot` among what its prompt shows.
    pub fn lists_screenshot(&self) -> bool {
        self.inputs.contains(&ModuleInput::Screenshot)
    }
}

impl GraphSpec {
    /// The graph of a `graph` agent.
    pub fn new(g: &params::Graph) -> GraphSpec {
        let params::Graph {
            env: _,
            weights: _,
            max_turns: _,
            max_parse_failures,
            step_response: _,
            modules,
            graph,
        } = g;
        let mut specs = BTreeMap::new();
        for (name, m) in modules {
            let spec = match m {
                Module::Llm(l) => ModuleSpec {
                    name: name.clone(),
                    model: l.model.id().to_string(),
                    frozen: true,
                    trainable: false,
                    acts: false,
                    emits: l.emits.iter().map(|w| w.as_str().to_string()).collect(),
                    inputs: l.inputs.clone(),
                    max_response: (l.max_response.0 as usize).max(1),
                    prompt: l.prompt.clone(),
                    role: name.clone(),
                    hermes: None,
                },
                Module::PolicyOf(p) => ModuleSpec {
                    name: name.clone(),
                    model: p.model.id().to_string(),
                    frozen: false,
                    trainable: p.trainable,
                    // `tools = none`: it only writes text for the next module.
                    acts: p.tools.value().is_some(),
                    emits: p.emits.iter().map(|w| w.as_str().to_string()).collect(),
                    inputs: p.inputs.clone(),
                    max_response: (p.max_response.0 as usize).max(1),
                    prompt: p.prompt.clone(),
                    role: if p.role.is_empty() { name.clone() } else { p.role.clone() },
                    hermes: p
                        .tools
                        .value()
                        .map(|t| Arc::new(Hermes::new(t.clone(), EnvKind::Browser))),
                },
            };
            specs.insert(name.clone(), spec);
        }
        let edges: Vec<EdgeSpec> = graph
            .iter()
            .map(|e| EdgeSpec {
                from: e.from.clone(),
                to: e.to.clone(),
                when: e.when.clone(),
                limit: e.limit,
            })
            .collect();
        // A module that holds tools but hands its words to another tool-holding module (OpAgent's
        // planner, to whom the tools are only described) does not act itself, unless it emits
        // the acting verdicts.
        let holds: Vec<String> =
            specs.values().filter(|m: &&ModuleSpec| m.acts).map(|m| m.name.clone()).collect();
        for m in specs.values_mut() {
            let emits_acting = m.emits.iter().any(|e| e == "acted" || e == "answered");
            let feeds_actor = edges
                .iter()
                .any(|e| e.from == m.name && e.when.is_empty() && holds.contains(&e.to));
            m.acts = m.acts && (emits_acting || !feeds_actor);
            if !m.acts {
                m.hermes = None;
            }
        }
        GraphSpec { modules: specs, edges, max_parse_failures: (*max_parse_failures).max(1) }
    }

    /// The longest response any of its modules writes (each module's `max_response` is at
    /// least one token). Every graph of a plan has a module: lowering writes a graph's
    /// `modules` only when it declares some, and a graph without them does not decode (a
    /// missing field). A graph built with none samples nothing — its walk gives up at the
    /// first turn — so it sets no room aside for a reply: 0.
    pub fn longest_response(&self) -> usize {
        self.modules.values().map(|m| m.max_response).fold(0, usize::max)
    }
}

/// What produces a module's text.
#[derive(Clone)]
pub enum Brain {
    /// A local candle policy (trained or frozen).
    Local(Arc<Mutex<Trainer>>),
    /// A frozen model behind an OpenAI-compatible endpoint, and its context in tokens.
    Api(JudgeClient, usize),
}

impl std::fmt::Debug for Brain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Brain::Local(_) => f.write_str("Local"),
            Brain::Api(c, context) => write!(f, "Api({c:?}, {context} tokens)"),
        }
    }
}

/// A graph and the brain of each of its modules, as one rollout runs them.
pub type GraphRun = (Arc<GraphSpec>, Arc<BTreeMap<String, Brain>>);

/// The graph agent acting in one episode.
pub struct GraphPolicy {
    spec: Arc<GraphSpec>,
    /// Per module name.
    brains: Arc<BTreeMap<String, Brain>>,
    params: SampleParams,
    name: String,
    current: String,
    instruction: String,
    notes: Vec<String>,
    parse_failures: u32,
    taken: BTreeMap<usize, u32>,
    /// Environment steps so far.
    steps: usize,
    /// Every turn a trainable module sampled, in order.
    pub turns: Vec<Turn>,
    /// The episode's sampling stream (see `TrainerPolicy::with_stream`) and the module calls
    /// so far, each of which draws from its own sub-stream.
    stream: Option<u64>,
    calls: u64,
    /// The screenshots the env shows (`screenshot(last: K, older)`, K > 0), to the modules that
    /// list `screenshot` and read images; `None`: none.
    screens: Option<Screens>,
    /// The episode's screenshots so far, and each seeing module's reading of them.
    seen: Seen,
}

impl GraphPolicy {
    pub fn new(
        spec: Arc<GraphSpec>,
        brains: Arc<BTreeMap<String, Brain>>,
        params: SampleParams,
        name: &str,
    ) -> GraphPolicy {
        GraphPolicy {
            spec,
            brains,
            params: SampleParams { n: 1, ..params },
            name: name.to_string(),
            current: "start".into(),
            instruction: String::new(),
            notes: Vec::new(),
            parse_failures: 0,
            taken: BTreeMap::new(),
            steps: 0,
            turns: Vec::new(),
            stream: None,
            calls: 0,
            screens: None,
            seen: Seen::default(),
        }
    }

    /// Shows the env's screenshots (`screenshot(last: K, older)`, K > 0; the agent's
    /// `Window::screens`) to the modules that list `screenshot` and whose policy reads images.
    pub fn with_screens(mut self, screens: Option<Screens>) -> GraphPolicy {
        self.screens = screens;
        self
    }

    /// The local policy of module `m` when it is shown screenshots: it lists `screenshot`, the
    /// env shows them and the policy reads images.
    fn seeing(&self, m: &ModuleSpec) -> Option<(Arc<Mutex<Trainer>>, Screens)> {
        let screens = self.screens.filter(|_| m.lists_screenshot())?;
        match self.brains.get(&m.name) {
            Some(Brain::Local(t)) if sees(t) => Some((t.clone(), screens)),
            Some(Brain::Local(_) | Brain::Api(..)) | None => None,
        }
    }

    /// Samples from the episode's own stream (see `TrainerPolicy::with_stream`).
    pub fn with_stream(mut self, stream: Option<u64>) -> GraphPolicy {
        self.stream = stream;
        self
    }

    /// The next module after `from` given its verdict: an edge whose `when` names the verdict
    /// wins over an unconditional one; edges past their `limit` are skipped.
    fn next(&mut self, from: &str, verdict: Option<&str>) -> Option<String> {
        let pick = self
            .spec
            .edges
            .iter()
            .enumerate()
            .filter(|(i, e)| {
                e.from == from
                    && e.limit.is_none_or(|l| self.taken.get(i).copied().unwrap_or(0) < l)
            })
            .filter(|(_, e)| {
                e.when.is_empty() || verdict.is_some_and(|v| e.when.iter().any(|w| w == v))
            })
            .min_by_key(|(_, e)| e.when.is_empty())
            .map(|(i, e)| (i, e.to.clone()));
        let (i, to) = pick?;
        *self.taken.entry(i).or_default() += 1;
        Some(to)
    }

    /// The prompt of `m`: the page (when its inputs show it), then notes, instruction, the
    /// actions so far, its role, and the task last, in the room its brain has.
    /// `images`: the tokens of the screenshots shown beside the text, out of its room.
    fn prompt(
        &self,
        m: &ModuleSpec,
        observation: &str,
        history: &[String],
        images: usize,
    ) -> String {
        let (task, page) = split_task(observation);
        let shows = |k: ModuleInput| m.inputs.contains(&k);
        let page = if shows(ModuleInput::Screenshot)
            || shows(ModuleInput::Url)
            || shows(ModuleInput::Feedback)
        {
            page
        } else {
            ""
        };
        let mut tail = String::new();
        if !m.prompt.is_empty() {
            tail.push_str(&m.prompt);
            tail.push('\n');
        }
        if shows(ModuleInput::Notes) && !self.notes.is_empty() {
            tail.push_str(&format!("notes: {}\n", self.notes.join("; ")));
        }
        if shows(ModuleInput::Instruction) && !self.instruction.is_empty() {
            tail.push_str(&format!("instruction: {}\n", self.instruction));
        }
        if shows(ModuleInput::History) && !history.is_empty() {
            tail.push_str(&format!("done: {}\n", history.join("; ")));
        }
        tail.push_str(&format!("role: {}\n", m.role));
        tail.push_str(task);
        compose_in(page, &tail, self.room(m).saturating_sub(images))
    }

    /// The tool schemas `m`'s prompt shows: its tool set's, when its brain is a local policy
    /// with a chat template; none for the tiny policy, text modules and API models.
    fn tools<'s>(&'s self, m: &'s ModuleSpec) -> &'s [String] {
        match (self.brains.get(&m.name), &m.hermes) {
            (Some(Brain::Local(t)), Some(h)) if chat(t) => &h.schemas,
            _ => &[],
        }
    }

    /// The bytes `m`'s user text may take: what a local chat policy's context leaves
    /// ([`Window::fit`]), or an API model's ([`api_room`]); [`MAX_PROMPT_BYTES`] otherwise.
    fn room(&self, m: &ModuleSpec) -> usize {
        // The tools first: finding them takes the trainer's lock too.
        let tools = self.tools(m);
        match self.brains.get(&m.name) {
            Some(Brain::Local(t)) => t.lock().map_or(MAX_PROMPT_BYTES, |t| {
                Window::default().fit(&t, t.model().context(), m.max_response, tools).room
            }),
            Some(Brain::Api(_, context)) => api_room(*context, m.max_response, &m.prompt),
            None => MAX_PROMPT_BYTES,
        }
    }

    /// The text module `m` writes for `prompt`: a local policy's sample (empty when the
    /// trainer cannot sample, which the env reads as a malformed turn; with `seeing`, its
    /// policy shown the episode's screenshots, a turn that cannot be sampled — a prompt past
    /// its context — ends the episode as the agent's), or an API model's reply; a call that
    /// fails is a breakdown, never an empty reply. `Err`: the turn that ends the walk.
    fn generate(
        &mut self,
        m: &ModuleSpec,
        prompt: String,
        seeing: Option<(Arc<Mutex<Trainer>>, Screens)>,
    ) -> Result<String, AgentTurn> {
        let params = SampleParams { max_tokens: m.max_response, ..self.params.clone() };
        self.calls += 1;
        let stream = self.stream.map(|s| wrl_trainer::rng::mix(s, self.calls));
        if let Some((t, screens)) = seeing {
            let gave_up = |why: String| AgentTurn::GaveUp(format!("module `{}`: {why}", m.name));
            let shots = self.seen.shots_for(&m.name, &t).map_err(gave_up)?;
            let (segments, images) = module_message(&prompt, shots, screens);
            let (turn, text) =
                sample_seeing(&t, &segments, &images, &params, stream, self.tools(m))
                    .map_err(gave_up)?;
            if m.trainable {
                self.turns.push(Turn { step: self.steps, role: m.role.clone(), ..turn });
            }
            return Ok(text);
        }
        let failed = |b: Breakdown| AgentTurn::Failed(b);
        match self.brains.get(&m.name) {
            Some(Brain::Local(t)) => match sample_turn(t, prompt, &params, stream, self.tools(m)) {
                Some((turn, text)) => {
                    if m.trainable {
                        self.turns.push(Turn { step: self.steps, role: m.role.clone(), ..turn });
                    }
                    Ok(text)
                }
                None => Ok(String::new()),
            },
            Some(Brain::Api(client, _)) => {
                let client = client.clone();
                let seen = self.screens.filter(|_| m.lists_screenshot()).map(|s| (&self.seen, s));
                let call = client.complete(api_messages(&m.prompt, &prompt, seen), m.max_response);
                // A frozen module over HTTP: wait for it without holding up other episodes.
                match tokio::runtime::Handle::try_current() {
                    Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                        tokio::task::block_in_place(|| h.block_on(call))
                            .map_err(|e| failed(api_breakdown(&m.name, e)))
                    }
                    _ => Err(failed(Breakdown::Env(format!(
                        "module `{}` calls its model over HTTP, which needs a multi-threaded \
                         runtime to wait in",
                        m.name
                    )))),
                }
            }
            None => {
                Err(failed(Breakdown::Env(format!("module `{}` has nothing to run it", m.name))))
            }
        }
    }

    /// The turn that ends the episode when the walk reaches `end` without a terminal action:
    /// the last module's words as the answer.
    fn finish(&self) -> String {
        let last = self.notes.last().map(String::as_str).unwrap_or("");
        let words = last.split_once(": ").map(|(_, t)| t).unwrap_or(last).trim();
        if words.is_empty() {
            "done".into()
        } else {
            format!("answer {}", words.replace('\n', " "))
        }
    }
}

/// The first verdict of `emits` that `text` names as a whole word.
pub fn verdict_in(text: &str, emits: &[String]) -> Option<String> {
    let words: Vec<&str> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    words.iter().find_map(|w| emits.iter().find(|e| e.as_str() == *w).cloned())
}

impl Agent for GraphPolicy {
    fn act(&mut self, _task: &Task, observation: &str, history: &[String]) -> AgentTurn {
        let turn = self.walk(observation, history);
        self.steps += 1;
        turn.unwrap_or_else(AgentTurn::GaveUp)
    }

    /// Whether a module is shown screenshots (`seeing`): the browser then takes one each step.
    fn sees_screens(&self) -> bool {
        let served = |m: &ModuleSpec| matches!(self.brains.get(&m.name), Some(Brain::Api(..)));
        let listed = |m: &ModuleSpec| self.screens.is_some() && m.lists_screenshot();
        (self.spec.modules.values()).any(|m| self.seeing(m).is_some() || (listed(m) && served(m)))
    }

    fn act_seeing(
        &mut self,
        task: &Task,
        observation: &str,
        history: &[String],
        screenshot: Option<&[u8]>,
    ) -> AgentTurn {
        if let Some(png) = screenshot.filter(|_| self.screens.is_some()) {
            self.seen.took(png);
        }
        self.act(task, observation, history)
    }

    fn name(&self) -> &str {
        &self.name
    }
}

/// How a frozen module's failed call ends the episode: as a failure of what the agent runs on,
/// not of the agent, so it is retried (`retries`) and left out of the loss (`exclude`) like any
/// environment's. A timeout is `infra_timeout`, any other failure `env_error`. (A judge's
/// failure is `judge_timeout` or `judge_error` instead: it leaves the reward without a
/// verdict, while the episode itself went as it went.)
fn api_breakdown(module: &str, e: JudgeError) -> Breakdown {
    match e {
        JudgeError::Timeout => {
            Breakdown::Timeout(format!("module `{module}`: its model did not answer in time"))
        }
        JudgeError::Http(code) => {
            Breakdown::Env(format!("module `{module}`: its model answered HTTP {code}"))
        }
        JudgeError::Malformed(why) => Breakdown::Env(format!(
            "module `{module}`: its model's answer could not be read: {why}"
        )),
        JudgeError::Transport(why) => {
            Breakdown::Env(format!("module `{module}`: its model is unreachable: {why}"))
        }
    }
}

/// Whether a local policy renders prompts with a chat template (an `hf(…)` model).
fn chat(t: &Mutex<Trainer>) -> bool {
    t.lock().is_ok_and(|t| t.tokenizer().chat().is_some())
}

impl GraphPolicy {
    /// One environment turn's walk through the graph: the acting module's turn, or why the
    /// graph has no way on.
    fn walk(&mut self, observation: &str, history: &[String]) -> Result<AgentTurn, String> {
        // A walk that calls more modules than this in one turn is looping without acting.
        let budget = 4 * self.spec.modules.len() + 4;
        for _ in 0..budget {
            if self.current == "start" {
                match self.next("start", None) {
                    Some(n) => self.current = n,
                    None => return Err("its graph has no edge leaving `start`".into()),
                }
            }
            if self.current == "end" {
                return Ok(AgentTurn::Text(self.finish()));
            }
            let Some(m) = self.spec.modules.get(&self.current).cloned() else {
                return Err(format!("its graph has no module `{}`", self.current));
            };
            // A module shown screenshots: its text gets the room their image tokens leave.
            let seeing = self.seeing(&m);
            let images = match &seeing {
                Some((t, screens)) => match self.seen.shots_for(&m.name, t) {
                    Ok(shots) => kept_tokens(shots, *screens),
                    Err(why) => {
                        return Ok(AgentTurn::GaveUp(format!("module `{}`: {why}", m.name)));
                    }
                },
                None => 0,
            };
            let prompt = self.prompt(&m, observation, history, images);
            let mut text = match self.generate(&m, prompt, seeing) {
                Ok(text) => text,
                Err(turn) => return Ok(turn),
            };
            if m.acts {
                // A chat policy's calls become the lines the browser runs; a turn that is no
                // call of the tool set is a format error the env counts.
                let mut said = None;
                if !self.tools(&m).is_empty()
                    && let Some(h) = &m.hermes
                {
                    match h.read(&text) {
                        Ok(lines) => said = Some(std::mem::replace(&mut text, lines)),
                        Err(error) => return Ok(AgentTurn::Malformed { text, error }),
                    }
                }
                let verdict = match wrl_browser::terse::parse_turn(&text) {
                    Ok(actions) if actions.last().is_some_and(|a| a.is_terminal()) => "answered",
                    Ok(_) => "acted",
                    // Unparsable actions are an agent error the runner records.
                    Err(_) => return Ok(AgentTurn::Text(text)),
                };
                let verdict = if m.emits.is_empty() { None } else { Some(verdict) };
                self.current = self.next(&m.name, verdict).unwrap_or_else(|| "end".into());
                return Ok(match said {
                    Some(said) => AgentTurn::Read { lines: text, said },
                    None => AgentTurn::Text(text),
                });
            }
            let verdict = if m.emits.is_empty() {
                None
            } else {
                match verdict_in(&text, &m.emits) {
                    Some(v) => Some(v),
                    None => {
                        self.parse_failures += 1;
                        if self.parse_failures >= self.spec.max_parse_failures {
                            return Err(format!(
                                "`{}` named none of its verdicts ({}) {} times",
                                m.name,
                                m.emits.join(", "),
                                self.parse_failures
                            ));
                        }
                        continue;
                    }
                }
            };
            self.instruction = text.replace('\n', " ");
            self.notes.push(format!("{}: {}", m.name, self.instruction));
            if self.notes.len() > 3 {
                self.notes.remove(0);
            }
            match self.next(&m.name, verdict.as_deref()) {
                Some(n) => self.current = n,
                None => {
                    return Err(format!(
                        "its graph has no edge leaving `{}` for the verdict {}",
                        m.name,
                        verdict.as_deref().unwrap_or("(none)")
                    ));
                }
            }
        }
        Err(format!("more than {budget} module calls in one turn without an action"))
    }
}

/// Tokens a chat request spends around its messages (role markers, separators): more than
/// any chat template in use takes for a system and a user message.
const CHAT_OVERHEAD: usize = 64;

/// The bytes of user text an API model with `context` tokens takes beside a reply of `reply`
/// tokens and the system prompt `system`. Its tokenizer is not ours to count with, but a token
/// covers at least one byte, so that many bytes always fit; never below [`MAX_PROMPT_BYTES`]
/// (the checker's E0404 holds a context that small to the module's own arithmetic).
pub fn api_room(context: usize, reply: usize, system: &str) -> usize {
    context.saturating_sub(reply + system.len() + CHAT_OVERHEAD).max(MAX_PROMPT_BYTES)
}

#[cfg(test)]
#[path = "graph_tests.rs"]
mod tests;
