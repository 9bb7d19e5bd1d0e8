//! The trainable policy as an agent: renders the text observation and the actions so far into a
//! prompt (`agent::prompt`; for a policy with a chat template and a full history, the episode's
//! conversation: `agent::conversation`), samples one turn from the candle policy
//! (`agent::sample`), and records the tokens and log-probs of every turn for the RL update. SFT
//! examples are rendered with the same prompt, so what the policy imitates is exactly what it
//! later sees.

use std::sync::{Arc, Mutex};

use wrl_browser::AgentTurn;
use wrl_sandbox::Task;
use wrl_trainer::{Role, SampleParams, Segment, Trainer, Trajectory, render_prompt_with};

use super::actions::TurnError;
use super::conversation::Chat;
use super::hermes::{Hermes, search_turn};
use super::prompt::{History, MAX_PROMPT_BYTES, Window, prompt_cut, prompt_in, split_task};
use super::sample::{Turn, sample_on, sample_tokens};
use super::tags::TagCalls;
use super::vision::{Shot, kept_tokens, marked, read_screen, resolve, sample_seeing, sees};
use crate::env::Agent;
use crate::rundir::records::SeqPart;

/// Per-turn SFT examples from an expert trajectory: the same prompts the policy will see (an
/// over-long one is cut, never dropped: a demonstration is imitated whole). With `hermes` (an
/// instruction-tuned policy), each step is the tool calls the template renders and the example
/// carries the tool set's schemas, as the policy's rollout prompts do; a step the tool set
/// cannot call is an error naming it.
pub fn sft_examples(
    traj: &wrl_sandbox::Trajectory,
    mode: History,
    window: Window,
    hermes: Option<&Hermes>,
) -> Result<Vec<Trajectory>, String> {
    let mut history: Vec<String> = Vec::new();
    let mut past: Vec<String> = Vec::new();
    let mut out = Vec::new();
    let mut chat = match (mode, hermes) {
        (History::Conversation { hide_thinking }, Some(_)) => Some(Chat::new(hide_thinking)),
        _ => None,
    };
    for step in &traj.steps {
        let (assistant, tools) = match hermes {
            Some(h) => (h.demo(&step.actions, step.boxes.as_ref(), &traj.goal)?, h.schemas.clone()),
            None => (Segment::new(Role::Assistant, step.actions.join("\n")), Vec::new()),
        };
        let mut segments = match chat.as_mut() {
            // Earlier turns are context: only this step's calls are trained.
            Some(c) => {
                let mut segs = c.prompt(&step.observation, window);
                for s in segs.iter_mut().filter(|s| s.role == Role::Assistant) {
                    s.train = Some(false);
                }
                c.answered(assistant.clone());
                segs
            }
            None => {
                let user = prompt_cut(&step.observation, &past, &history, mode, window);
                vec![Segment::new(Role::User, user)]
            }
        };
        segments.push(assistant);
        out.push(Trajectory { segments, tools });
        history.extend(step.actions.iter().cloned());
        past.push(split_task(&step.observation).1.to_string());
    }
    Ok(out)
}

/// The candle policy acting in one episode.
pub struct TrainerPolicy {
    trainer: Arc<Mutex<Trainer>>,
    params: SampleParams,
    mode: History,
    window: Window,
    /// The pages this episode has shown so far (without their task lines), oldest first.
    seen: Vec<String>,
    /// The tool set an instruction-tuned policy calls (its prompts show it, its turns are read
    /// as its calls); `None`: the tiny policy's terse turns.
    hermes: Option<Arc<Hermes>>,
    name: String,
    /// The episode's sampling stream (each turn draws from its own sub-stream), or `None` to
    /// fork the trainer's RNG per turn.
    stream: Option<u64>,
    /// Every turn sampled in this episode, in order.
    pub turns: Vec<Turn>,
    /// A parent episode's first turns, which this one (a branch) writes again as they were
    /// before it samples its own (`rollout::branching`).
    replay: Vec<Turn>,
    /// The episode as a conversation, for a policy with a chat template and `history =
    /// full_text` / `hide_thinking`.
    chat: Option<Chat>,
    /// The tool set called by tags (`calls = tags()`): each turn continues one sequence.
    tags: Option<Arc<TagCalls>>,
    /// A tag-style episode's sequence so far.
    sequence: Option<Sequence>,
    /// The screenshots a vision-language policy has been shown, oldest first
    /// (`agent::vision`).
    shots: Vec<Shot>,
}

/// A tag-style episode's one sequence: the first turn's prompt, then every token since (the
/// policy's turns and the env's results), and the same as text in parts.
#[derive(Clone, Debug, Default)]
struct Sequence {
    prompt: Vec<u32>,
    tokens: Vec<u32>,
    parts: Vec<SeqPart>,
}

impl TrainerPolicy {
    pub fn new(
        trainer: Arc<Mutex<Trainer>>,
        params: SampleParams,
        mode: History,
        name: &str,
    ) -> TrainerPolicy {
        TrainerPolicy {
            trainer,
            params: SampleParams { n: 1, ..params },
            mode,
            window: Window::default(),
            seen: Vec::new(),
            hermes: None,
            name: name.to_string(),
            stream: None,
            turns: Vec::new(),
            replay: Vec::new(),
            chat: None,
            tags: None,
            sequence: None,
            shots: Vec::new(),
        }
    }

    /// Keeps past pages and handles over-long prompts as the agent's `window` says, in the
    /// room the policy's context leaves ([`Window::fit`]).
    pub fn with_window(mut self, window: Window) -> TrainerPolicy {
        self.window = window;
        self.fit();
        self
    }

    /// Calls `hermes`'s tools as an instruction-tuned policy does, when the policy has a chat
    /// template (an `hf(…)` model); the tiny policy keeps its terse turns.
    pub fn with_hermes(mut self, hermes: Option<Arc<Hermes>>) -> TrainerPolicy {
        let chat = self.trainer.lock().is_ok_and(|t| t.tokenizer().chat().is_some());
        self.hermes = hermes.filter(|_| chat);
        self.chat = match (self.mode, &self.hermes) {
            (History::Conversation { hide_thinking }, Some(_)) => Some(Chat::new(hide_thinking)),
            _ => None,
        };
        self.fit();
        self
    }

    /// The window's room for this policy: its context less the reply and the template with
    /// the tools it shows.
    fn fit(&mut self) {
        let tools = self.hermes.as_ref().map_or(&[][..], |h| &h.schemas[..]);
        if let Ok(t) = self.trainer.lock() {
            let window = Window { room: MAX_PROMPT_BYTES, ..self.window };
            self.window = window.fit(&t, t.model().context(), self.params.max_tokens, tools);
        }
    }

    /// Writes `turns` (a parent episode's first turns) again, token for token, before sampling
    /// its own: a branch of a branching rollout. The env sees the same calls, so an episode
    /// whose state is its conversation reaches the parent's state at the branch point.
    pub fn with_replay(mut self, turns: Vec<Turn>) -> TrainerPolicy {
        self.replay = turns;
        self
    }

    /// Calls the tool set by tags (`calls = tags()`): the episode is one sequence, each tool
    /// response appended to it in its result tags ([`TagCalls`]).
    pub fn with_tags(mut self, tags: Option<Arc<TagCalls>>) -> TrainerPolicy {
        self.tags = tags;
        self
    }

    /// A tag-style episode's sequence after its prompt, in parts; `None` for other formats.
    pub fn sequence(&self) -> Option<Vec<SeqPart>> {
        self.sequence.as_ref().map(|s| s.parts.clone())
    }

    /// Samples from the episode's own stream: the same turns whatever other episodes run
    /// alongside (see [`sample_turn`]).
    pub fn with_stream(mut self, stream: Option<u64>) -> TrainerPolicy {
        self.stream = stream;
        self
    }
}

impl TrainerPolicy {
    /// One turn on a text observation (`task: …` first, then the page or tool response), with
    /// the turns so far: the policy gives up when the prompt does not fit (`context_overflow`)
    /// or its `trajectory_tokens` are spent; an empty turn when the trainer cannot sample.
    pub fn act_text(&mut self, observation: &str, history: &[String]) -> AgentTurn {
        if let Some(tags) = self.tags.clone() {
            return self.act_tags(&tags, observation, history);
        }
        let segments = match self.chat.as_mut() {
            Some(c) => match c.prompt_in(observation, self.window) {
                Ok(segments) => segments,
                Err(why) => return AgentTurn::GaveUp(why),
            },
            None => {
                let prompt = prompt_in(observation, &self.seen, history, self.mode, self.window);
                self.seen.push(split_task(observation).1.to_string());
                match prompt {
                    Ok(t) => vec![Segment::new(Role::User, t)],
                    Err(why) => return AgentTurn::GaveUp(why),
                }
            }
        };
        let mut params = self.params.clone();
        if let Err(why) = self.budget(&mut params) {
            return AgentTurn::GaveUp(why);
        }
        let step = self.turns.len();
        let (turn, out) = match self.replay.get(step) {
            Some(parent) => (parent.clone(), parent.text.clone()),
            None => {
                let stream = self.stream.map(|s| wrl_trainer::rng::mix(s, step as u64));
                let tools = self.hermes.as_ref().map_or(&[][..], |h| &h.schemas[..]);
                match sample_on(&self.trainer, &segments, &params, stream, tools) {
                    Some(sampled) => sampled,
                    None => return AgentTurn::Text(String::new()),
                }
            }
        };
        self.answered(step, turn, out)
    }

    /// Records the turn sampled at `step` (and, in a conversation, its assistant message) and
    /// hands it to the env: an instruction-tuned policy's calls as the lines it runs, a
    /// malformed turn as written with why (a format error).
    fn answered(&mut self, step: usize, turn: Turn, out: String) -> AgentTurn {
        self.turns.push(Turn { step, ..turn });
        if let Some(c) = self.chat.as_mut() {
            c.answered(Segment::new(Role::Assistant, out.clone()));
        }
        match self.hermes.as_ref().map(|h| h.read(&out)) {
            Some(Ok(lines)) => AgentTurn::Read { lines, said: out },
            Some(Err(error)) => AgentTurn::Malformed { text: out, error },
            None => AgentTurn::Text(out),
        }
    }

    /// Whether this policy is shown screenshots: a vision-language model in a conversation
    /// (`history = full_text` / `hide_thinking` with its tool set) whose env observes them.
    fn sees_screens(&self) -> bool {
        self.window.screens.is_some() && self.chat.is_some() && sees(&self.trainer)
    }

    /// One turn of a vision-language policy: `observation` with its screenshot `png` (none when
    /// the env took none), the conversation fitted to the room the kept screenshots' image
    /// tokens leave, the last K screenshots as images and the older ones as the env says.
    pub fn act_vl(&mut self, observation: &str, png: Option<&[u8]>) -> AgentTurn {
        let Some(screens) = self.window.screens else { return self.act_text(observation, &[]) };
        let text = match png {
            Some(png) => match read_screen(&self.trainer, png) {
                Ok(shot) => {
                    self.shots.push(shot);
                    marked(observation, self.shots.len() - 1)
                }
                Err(why) => return AgentTurn::GaveUp(format!("the screenshot: {why}")),
            },
            None => observation.to_string(),
        };
        let room = self.window.room.saturating_sub(kept_tokens(&self.shots, screens));
        let window = Window { room, ..self.window };
        let Some(chat) = self.chat.as_mut() else { return self.act_text(observation, &[]) };
        let mut segments = match chat.prompt_in(&text, window) {
            Ok(segments) => segments,
            Err(why) => return AgentTurn::GaveUp(why),
        };
        let images = resolve(&mut segments, &self.shots, screens);
        let mut params = self.params.clone();
        if let Err(why) = self.budget(&mut params) {
            return AgentTurn::GaveUp(why);
        }
        let step = self.turns.len();
        let stream = self.stream.map(|s| wrl_trainer::rng::mix(s, step as u64));
        let tools = self.hermes.as_ref().map_or(&[][..], |h| &h.schemas[..]);
        match sample_seeing(&self.trainer, &segments, &images, &params, stream, tools) {
            Ok((turn, out)) => self.answered(step, turn, out),
            Err(why) => AgentTurn::GaveUp(why),
        }
    }
}

impl TrainerPolicy {
    /// A reply is cut to what is left of the episode's `trajectory_tokens`; `Err` when nothing
    /// is.
    fn budget(&self, params: &mut SampleParams) -> Result<(), String> {
        if let Some(budget) = self.window.reply_budget {
            let spent: usize = self.turns.iter().map(|t| t.completion_tokens.len()).sum();
            let left = budget.saturating_sub(spent);
            if left == 0 {
                return Err(format!(
                    "trajectory_tokens: the policy has written {spent} tokens, the episode's \
                     whole budget of {budget}"
                ));
            }
            params.max_tokens = params.max_tokens.min(left);
        }
        Ok(())
    }

    /// One tag-style turn: the first renders the task's prompt; each later one appends the
    /// env's response (the observation's `result: …`) in the result tags to the sequence and
    /// continues it. Decoding stops at a closing call or answer tag; the segment is read as
    /// its first tag's call, handed to the env as the terse line it runs.
    fn act_tags(&mut self, tags: &TagCalls, observation: &str, history: &[String]) -> AgentTurn {
        let Ok(trainer) = self.trainer.lock() else { return AgentTurn::Text(String::new()) };
        let (prompt, lead_text) = match &self.sequence {
            None => {
                let tok = trainer.tokenizer();
                let text = match prompt_in(observation, &self.seen, history, self.mode, self.window)
                {
                    Ok(t) if tok.chat().is_some() => format!("{}\n\n{t}", tags.instructions()),
                    Ok(t) => t,
                    Err(why) => return AgentTurn::GaveUp(why),
                };
                match render_prompt_with(tok, &[Segment::new(Role::User, text)], &[]) {
                    Ok(p) => (p, None),
                    Err(_) => return AgentTurn::Text(String::new()),
                }
            }
            Some(seq) => {
                let response = split_task(observation).1;
                let response = response.strip_prefix("result: ").unwrap_or(response);
                let mut prefix = seq.prompt.clone();
                prefix.extend_from_slice(&seq.tokens);
                (prefix, Some(tags.result_block(response)))
            }
        };
        let lead = match &lead_text {
            Some(t) => match trainer.tokenizer().encode(t) {
                Ok(ids) => ids,
                Err(_) => return AgentTurn::Text(String::new()),
            },
            None => Vec::new(),
        };
        let context = trainer.model().context();
        drop(trainer);
        let mut params = SampleParams { stop: tags.stops(), ..self.params.clone() };
        if let Err(why) = self.budget(&mut params) {
            return AgentTurn::GaveUp(why);
        }
        let mut whole = prompt;
        whole.extend_from_slice(&lead);
        let room = context.saturating_sub(whole.len());
        if room == 0 {
            return AgentTurn::GaveUp(format!(
                "context_overflow: the tag-style sequence holds {} tokens, the policy's whole \
                 context of {context}",
                whole.len()
            ));
        }
        params.max_tokens = params.max_tokens.min(room);
        let step = self.turns.len();
        let (turn, out) = match self.replay.get(step) {
            Some(parent) => (parent.clone(), parent.text.clone()),
            None => {
                let stream = self.stream.map(|s| wrl_trainer::rng::mix(s, step as u64));
                match sample_tokens(&self.trainer, whole.clone(), &params, stream) {
                    Some(sampled) => sampled,
                    None => return AgentTurn::Text(String::new()),
                }
            }
        };
        // What the policy wrote, as its tokens read back (what the loss trains).
        let written = self
            .trainer
            .lock()
            .ok()
            .and_then(|t| t.tokenizer().decode(&turn.completion_tokens).ok())
            .unwrap_or_else(|| out.clone());
        let seq = self
            .sequence
            .get_or_insert_with(|| Sequence { prompt: whole.clone(), ..Sequence::default() });
        if let Some(text) = lead_text {
            seq.parts.push(SeqPart { text, loss: false });
        }
        seq.tokens.extend_from_slice(&lead);
        seq.tokens.extend_from_slice(&turn.completion_tokens);
        seq.parts.push(SeqPart { text: written, loss: true });
        let continues = step > 0;
        self.turns.push(Turn { step, continues, lead, prompt_tokens: whole, ..turn });
        match tags.parse(&out) {
            Ok(t) => match search_turn(&t) {
                Ok(line) => AgentTurn::Read { lines: line, said: out },
                Err(error) => AgentTurn::Malformed { text: out, error },
            },
            Err(e) => AgentTurn::Malformed { text: out, error: TurnError::from(e).agent_error() },
        }
    }
}

impl Agent for TrainerPolicy {
    fn act(&mut self, _task: &Task, observation: &str, history: &[String]) -> AgentTurn {
        self.act_text(observation, history)
    }

    fn sees_screens(&self) -> bool {
        TrainerPolicy::sees_screens(self)
    }

    fn act_seeing(
        &mut self,
        _task: &Task,
        observation: &str,
        history: &[String],
        screenshot: Option<&[u8]>,
    ) -> AgentTurn {
        if TrainerPolicy::sees_screens(self) {
            self.act_vl(observation, screenshot)
        } else {
            self.act_text(observation, history)
        }
    }

    fn name(&self) -> &str {
        &self.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sft_prompts_carry_the_actions_so_far() {
        let traj = wrl_sandbox::Trajectory {
            task_id: "t".into(),
            template: "x".into(),
            goal: "g".into(),
            agent: "expert".into(),
            steps: vec![
                wrl_sandbox::TrajStep {
                    observation: "task: g\n[1] link".into(),
                    actions: vec!["click 1".into()],
                    feedback: "ok".into(),
                    url: "/".into(),
                    screenshot: None,
                    boxes: None,
                    said: None,
                    malformed: false,
                },
                wrl_sandbox::TrajStep {
                    observation: "task: g\n[2] button".into(),
                    actions: vec!["type 2 x".into()],
                    feedback: String::new(),
                    url: "/a".into(),
                    screenshot: None,
                    boxes: None,
                    said: None,
                    malformed: false,
                },
                wrl_sandbox::TrajStep {
                    observation: "task: g\n[3] text".into(),
                    actions: vec!["answer 3".into()],
                    feedback: String::new(),
                    url: "/b".into(),
                    screenshot: None,
                    boxes: None,
                    said: None,
                    malformed: false,
                },
            ],
            outcome: wrl_sandbox::TrajOutcome {
                reason: wrl_sandbox::Ending::Completed,
                message: String::new(),
                answer: Some("3".into()),
                success: true,
                detail: String::new(),
                reward: None,
            },
            elapsed_ms: 1,
        };
        let ex = sft_examples(&traj, History::ActionOnly, Window::default(), None).unwrap();
        assert_eq!(ex.len(), 3);
        assert_eq!(ex[1].segments[0].text, "[2] button\ndone: click 1\ntask: g");
        assert_eq!(ex[2].segments[0].text, "[3] text\ndone: click 1; type 2 x\ntask: g");
        assert_eq!(ex[2].segments[1].text, "answer 3");
        // The agent's action window (`actions = 1`): the examples list what its rollouts do.
        let window = Window { actions: Some(1), ..Window::default() };
        let ex = sft_examples(&traj, History::ActionOnly, window, None).unwrap();
        assert_eq!(ex[1].segments[0].text, "[2] button\ndone: 1. click 1\ntask: g");
        assert_eq!(
            ex[2].segments[0].text,
            "[3] text\ndone: [1 earlier action omitted] 2. type 2 x\ntask: g"
        );
    }
}
