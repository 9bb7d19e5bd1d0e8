//! SFT nodes: the demonstrations (one dataset, or a mixture with its weighting) rendered with
//! the prompts the policy will see, trained step by step with a progress line every tenth of
//! the stage, every step's metrics logged, and a checkpoint committed every `checkpoint_steps`
//! steps and at the end. A stop asked for (SIGINT, SIGTERM: `RunOptions::stop`) is honoured at
//! the next step, with a checkpoint, and a resumed run goes on from the last one: the trainer
//! holds the data cursor, RNG and optimiser, so the stage ends as it would have.

use std::sync::{Arc, Mutex};

use wrl_plan::Node;
use wrl_plan::params;
use wrl_trainer::vision::Pixels;
use wrl_trainer::{Metrics, Mixture, MixtureWeights, SftConfig, Trainer};

use super::progress::Progress;
use super::{Data, Demos, Executor, settings};
use crate::agent::AgentCfg;
use crate::agent::graph_vision::module_sft_examples;
use crate::agent::hermes::Hermes;
use crate::agent::policy::sft_examples;
use crate::agent::prompt::{History, Screens, Window};
use crate::agent::tag_demos::{TagDemo, tag_demo, tag_examples};
use crate::agent::vision::{Shot, read_screen, sft_examples_seeing};
use crate::error::{Fault, RunError};
use crate::rundir::records::{MetricLine, SftStep};

/// The demonstrations of a stage, each dataset by name.
type Parts = Vec<(String, Demos)>;

/// The examples a stage trains on, each dataset's by name.
type Sets = Vec<(String, Shown)>;

/// A dataset's demonstrations as the policy is shown them.
enum Shown {
    /// One example per step or conversation, each with the images its prompt holds (a
    /// vision-language policy's screenshots, none for text), and whether they are chat
    /// conversations (rendered whole by a chat template, in as many sequences as it takes).
    Turns(Vec<(wrl_trainer::Trajectory, Vec<Pixels>)>, bool),
    /// A tag-style agent's episodes, each its one sequence (`agent::tag_demos`).
    Sequences(Vec<TagDemo>),
}

/// How a stage trains: its steps, `epochs` over the examples.
struct Schedule {
    sft: SftConfig,
    steps: usize,
    epochs: usize,
}

/// A stage's trainer restored from a checkpoint inside the stage, and its steps committed.
type Resumed = (Arc<Mutex<Trainer>>, u64);

/// Why [`Executor::train_until`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pause {
    /// The stage's epochs are done.
    End,
    /// `checkpoint_steps` more steps are done.
    Checkpoint,
    /// A stop was asked for.
    Stop,
}

impl<'a> Executor<'a> {
    /// Runs SFT node `node`; true when it stopped (on request) before its end, its progress
    /// committed.
    pub(super) fn sft(&mut self, node: &Node, s: &params::Sft) -> Result<bool, RunError> {
        let params::Sft {
            model,
            data,
            epochs,
            lr,
            batch,
            micro_batch,
            schedule,
            // The text policy's examples are one turn each, the user's observation masked and
            // the assistant's action trained (`agent::policy::sft_examples`): every turn carries
            // loss, in its own example. A text policy has no images. The preflight refuses a
            // `mask` that would train on observations. Chat conversations train all their
            // assistant turns in one example, or with `current_turn` each in its own.
            loss_on,
            images: _,
            mask: _,
            max_length,
            frozen,
            lora,
            optimizer,
            // The executor commits a checkpoint every `checkpoint_steps` and at the end of the
            // stage; epochs are not checkpoint boundaries of their own.
            checkpoint_every: _,
            checkpoint_steps,
            seed,
            stage: _,
        } = s;
        let (parts, weights) = self.demonstrations(node, data.id())?;
        // The prompts carry the history and pages the stage's agent keeps, and an
        // instruction-tuned policy's examples its env's tool set (`agent::hermes`).
        let agent = AgentCfg::for_sft(self.plan, model.id());
        // One example per demonstrated step, whatever the policy; one per conversation.
        let n_examples: usize = parts.iter().map(|(_, d)| d.examples()).sum();
        let n_demos: usize = parts.iter().map(|(_, d)| d.len()).sum();
        let epochs = epochs.0.max(1) as usize;
        let batch = (*batch).max(1) as usize;
        let micro = ((*micro_batch).max(1) as usize).min(batch);
        let sft = SftConfig {
            micro_batch: micro,
            grad_accum: batch.div_ceil(micro),
            epochs,
            // The stage's own data order, else the model's (`seed = 0`).
            seed: (*seed != 0).then_some(*seed),
        };
        let steps = sft.steps_per_epoch(n_examples) * epochs;
        let (trainer, done) = match self.resumed_sft(node)? {
            Some(resumed) => resumed,
            None => {
                let optim = settings::optim(*lr, optimizer, schedule, steps as u64);
                (self.trainer_from(model.id(), optim)?, 0)
            }
        };
        // The stage's adapters, unless a resume brought them back with the trainer.
        if done == 0 {
            let (spec, start) = settings::lora(lora.value().map(params::LoraObj::get));
            trainer
                .lock()
                .map_err(|_| RunError::poisoned())?
                .set_lora(spec.as_ref(), &start, *seed)
                .map_err(|e| RunError::model(&format!("stage `{}`: `lora`", node.decl), e))?;
        }
        // The stage's `frozen` parts get no gradient and no optimiser state; others thaw.
        trainer
            .lock()
            .map_err(|_| RunError::poisoned())?
            .set_frozen(&settings::frozen_parts(frozen))
            .map_err(|e| {
                RunError::model(&format!("stage `{}`: cannot freeze `frozen`", node.decl), e)
            })?;
        let per_turn = match loss_on {
            params::LossOn::CurrentTurn => true,
            params::LossOn::AllTurns => false,
        };
        let length = max_length.0 as usize;
        let sets = examples(node, &parts, &trainer, agent, (length, per_turn))?;
        let mixture = render(&trainer, (&sets, weights), (length, per_turn))?;
        // A chat template may train a conversation in several sequences (Qwen3's drops the
        // thinking of earlier turns): the steps are counted from the rendered examples.
        let n_examples: usize = mixture.datasets.iter().map(|d| d.examples.len()).sum();
        let steps = sft.steps_per_epoch(n_examples) * epochs;
        trainer
            .lock()
            .map_err(|_| RunError::poisoned())?
            .set_schedule(settings::schedule_over(schedule, steps as u64));
        let resumed = if done > 0 { format!(", resumed after step {done}") } else { String::new() };
        self.say(&format!(
            "stage {}: SFT on {} examples ({} demos), {epochs} epochs, {steps} steps{resumed}",
            node.decl, n_examples, n_demos
        ));
        let plan = Schedule { sft, steps, epochs };
        let label = format!("stage {}", node.decl);
        let progress =
            Progress::new(self.opts.progress, !self.opts.json_lines, &label, steps as u64, "steps");
        progress.advance(done, "");
        let (mut done, mut last) = (done, None);
        let name = node.id.replace([':', '/'], "-");
        loop {
            let every = u64::from(*checkpoint_steps);
            let (metrics, pause) =
                self.train_until(node, &trainer, &mixture, &plan, (done, every), &progress)?;
            done += metrics.len() as u64;
            last = metrics.last().map(|m| m.loss).or(last);
            self.run.log_metrics(metric_lines(node, &metrics))?;
            if pause == Pause::End {
                break;
            }
            self.built.trainers.insert(node.id.clone(), trainer.clone());
            self.save_and_commit(&node.id, &format!("{name}-step-{done}"))?;
            if pause == Pause::Stop {
                progress.finish();
                self.say(&format!("stage {}: stopped after step {done}, committed", node.decl));
                return Ok(true);
            }
        }
        progress.finish();
        if let Some(loss) = last {
            self.say(&format!("stage {}: final loss {loss:.4}", node.decl));
        }
        self.built.trainers.insert(node.id.clone(), trainer);
        self.mark_done(&node.id);
        self.save_and_commit(&node.id, &name)?;
        Ok(false)
    }

    /// The trainer of SFT node `node` a resumed run restored from a checkpoint inside the stage,
    /// and how many of its steps were committed; `None` when it starts afresh.
    fn resumed_sft(&self, node: &Node) -> Result<Option<Resumed>, RunError> {
        if self.cursor.checkpoint_of.as_deref() != Some(node.id.as_str()) {
            return Ok(None);
        }
        let Some(t) = self.built.trainers.get(&node.id).cloned() else { return Ok(None) };
        let done = self
            .run
            .read_metrics()?
            .iter()
            .filter(|m| matches!(m, MetricLine::Sft(s) if s.node == node.id))
            .count() as u64;
        Ok(Some((t, done)))
    }

    /// SFT steps from stage step `done` until the stage's epochs are done, `every` more steps
    /// are (when not 0), or a stop is asked for; the steps' metrics, and why it returned.
    fn train_until(
        &self,
        node: &Node,
        trainer: &Arc<Mutex<Trainer>>,
        mixture: &Mixture,
        plan: &Schedule,
        (done, every): (u64, u64),
        progress: &Progress,
    ) -> Result<(Vec<Metrics>, Pause), RunError> {
        let (steps, epochs) = (plan.steps, plan.epochs as u64);
        let label = format!("stage {}", node.decl);
        let mut t = trainer.lock().map_err(|_| RunError::poisoned())?;
        let mut out = Vec::new();
        while t.cursor().epoch < epochs {
            let m = t.sft_step(mixture, &plan.sft).map_err(|e| RunError::model("SFT failed", e))?;
            let pos = done + out.len() as u64 + 1;
            let epoch = m.epoch.unwrap_or(0) + 1;
            progress.step(
                pos,
                &format!("loss {:.4}, epoch {epoch}/{epochs}", m.loss),
                || {
                    format!(
                        "{label}: step {pos}/{steps}, epoch {epoch}/{epochs}, loss {:.4}",
                        m.loss
                    )
                },
                |l| self.say(l),
            );
            out.push(m);
            if t.cursor().epoch >= epochs {
                break;
            }
            if self.stop_requested() {
                return Ok((out, Pause::Stop));
            }
            if every > 0 && pos.is_multiple_of(every) {
                return Ok((out, Pause::Checkpoint));
            }
        }
        Ok((out, Pause::End))
    }
    /// The stage's demonstrations: one dataset of trajectories, or a mixture's parts with its
    /// weighting.
    fn demonstrations(&self, node: &Node, data: &str) -> Result<(Parts, MixtureWeights), RunError> {
        match self.built.data.get(data).cloned() {
            Some(Data::Demos(d)) => {
                Ok((vec![(data.to_string(), Demos::Episodes(d))], MixtureWeights::Uniform))
            }
            Some(Data::Chats(c)) => {
                Ok((vec![(data.to_string(), Demos::Chats(c))], MixtureWeights::Uniform))
            }
            Some(Data::Mixture(parts, w)) => Ok((parts, w)),
            Some(Data::Tasks(_)) | None => Err(RunError::new(
                Fault::Data,
                format!("stage `{}` needs trajectories or chat conversations", node.decl),
            )),
        }
    }
}

/// The examples of each dataset in the policy's tokens, cut to the stage's length: the mixture
/// the steps draw from. A conversation rendered by a chat template trains every assistant turn
/// in as many sequences as the template needs (`wrl_trainer::chat::examples`); a tag-style
/// episode trains as its one sequence, or one per call with `per_turn`.
fn render(
    trainer: &Arc<Mutex<Trainer>>,
    (sets, weights): (&Sets, MixtureWeights),
    (max_length, per_turn): (usize, bool),
) -> Result<Mixture, RunError> {
    let t = trainer.lock().map_err(|_| RunError::poisoned())?;
    let max_len = t.model().context().min(max_length);
    let tok = t.tokenizer();
    let mut datasets = Vec::new();
    for (name, shown) in sets {
        let mut rendered = Vec::new();
        let (examples, chats) = match shown {
            Shown::Turns(examples, chats) => (examples, chats),
            Shown::Sequences(demos) => {
                for d in demos {
                    let fail = |e: String| {
                        RunError::new(
                            Fault::Data,
                            format!("dataset `{name}`: demonstration `{}`: {e}", d.task),
                        )
                        .help(
                            "raise the stage's `max_length` (and the model's `context`), or \
                               keep less of each result (`tool_response_chars`, `step_text`)",
                        )
                    };
                    rendered.extend(tag_examples(tok, d, max_len, per_turn).map_err(fail)?);
                }
                datasets.push(wrl_trainer::Dataset { name: name.clone(), examples: rendered });
                continue;
            }
        };
        for (i, (ex, images)) in examples.iter().enumerate() {
            let what = if *chats { "conversation" } else { "example" };
            let fail = |e| RunError::model(&format!("dataset `{name}`: {what} {}", i + 1), e);
            if *chats && tok.chat().is_some() {
                let conv = wrl_trainer::data::conversation_of(&ex.segments, &ex.tools);
                rendered.extend(wrl_trainer::chat::examples(tok, &conv, max_len).map_err(fail)?);
            } else if images.is_empty() {
                rendered.push(wrl_trainer::render(tok, ex, max_len).map_err(fail)?);
            } else {
                // Images come only from a policy that reads them (`shots_of`).
                let side = t.model().vision().ok_or_else(|| {
                    let why = format!("dataset `{name}`: example {} holds screenshots", i + 1);
                    RunError::new(Fault::Model, format!("{why}, and the policy reads text only"))
                })?;
                // Rendered whole, then cut once its image pads are expanded (never inside one).
                let whole = wrl_trainer::render(tok, ex, usize::MAX).map_err(fail)?;
                rendered.push(side.expand_example(&whole, images, max_len).map_err(fail)?);
            }
        }
        datasets.push(wrl_trainer::Dataset { name: name.clone(), examples: rendered });
    }
    Ok(Mixture { datasets, weights })
}

/// Every demonstration as the policy's examples: the prompts the run's agent would show (its
/// history and page window, fitted to the room `max_length` leaves after its reply; without an
/// agent, action-only history), with its env's tool set for an instruction-tuned policy.
fn examples(
    node: &Node,
    parts: &Parts,
    trainer: &Arc<Mutex<Trainer>>,
    agent: Option<AgentCfg>,
    (max_length, per_turn): (usize, bool),
) -> Result<Sets, RunError> {
    let (history, window) =
        agent.as_ref().map_or((History::ActionOnly, Window::default()), |a| (a.history, a.window));
    // A graph's acting module that lists `screenshot` is shown them, as one message a step.
    let graph_screens =
        agent.as_ref().filter(|a| a.graph.is_some()).and_then(|a| a.shown_screens());
    let chat = trainer.lock().map_err(|_| RunError::poisoned())?.tokenizer().chat().is_some();
    let reply = agent.as_ref().map_or(0, |a| a.max_response);
    // A tag-style agent's prompt shows no tool schemas: its calls are tags, not Hermes calls.
    let tags = agent.as_ref().and_then(|a| a.tags.clone());
    // Which tools the env runs itself: a conversation's call of another (an MCP server's) is
    // written for the tiny policy as the call line the env reads back.
    let set = agent.as_ref().and_then(|a| a.hermes.clone());
    let runs_itself = |name: &str| set.as_ref().is_none_or(|h| h.runs_itself(name));
    let hermes: Option<Arc<Hermes>> =
        agent.and_then(|a| a.hermes).filter(|_| chat && tags.is_none());
    // The prompts get the room the example's length leaves after the reply, as the
    // rollouts' do (the tiny policy's stays `MAX_PROMPT_BYTES`).
    let window = {
        let t = trainer.lock().map_err(|_| RunError::poisoned())?;
        let length = t.model().context().min(max_length);
        let tools = hermes.as_ref().map_or(&[][..], |h| &h.schemas[..]);
        let fitted = window.fit(&t, length, reply, tools);
        // Only a trajectory's pages are fitted to the room (a conversation is rendered whole).
        let pages = parts.iter().any(|(_, d)| matches!(d, Demos::Episodes(_)));
        if chat && pages && fitted.room == 0 {
            let overhead = length.saturating_sub(reply);
            // The preflight's `sft_room` refuses this before the run (E0515) where it can read
            // the model's tokenizer; this is the same rule on the loaded one.
            return Err(RunError::new(
                Fault::HfSetting,
                format!(
                    "stage `{}`: an example of {length} tokens leaves no room for a page: the \
                     reply's {reply} tokens and the chat template's own (its tool schemas) take \
                     {} or more",
                    node.decl,
                    overhead.max(1)
                ),
            )
            .help("raise the stage's `max_length` (and the model's `context`)"));
        }
        fitted
    };
    let mut sets: Sets = Vec::new();
    for (name, d) in parts {
        let d = match d {
            Demos::Episodes(d) => d,
            Demos::Chats(c) => {
                let examples =
                    super::sft_chat::examples(c, chat, per_turn, &runs_itself).map_err(|e| {
                        RunError::new(
                            Fault::ChatData,
                            format!("stage `{}`: dataset `{name}`: {e}", node.decl),
                        )
                    })?;
                let examples = examples.into_iter().map(|e| (e, Vec::new())).collect();
                sets.push((name.clone(), Shown::Turns(examples, true)));
                continue;
            }
        };
        let fail = |e: String| {
            RunError::new(Fault::Data, format!("stage `{}`: dataset `{name}`: {e}", node.decl))
        };
        if let Some(tags) = tags.as_deref() {
            let demos = d
                .iter()
                .map(|t| {
                    tag_demo(t, tags, (history, window), chat).map_err(|e| {
                        fail(format!("demonstration `{}`: {e}", t.task_id)).help(
                            "a tag-style agent imitates one call of one argument a step (the \
                             sandbox's expert does on `questions = [lookup]`)",
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            sets.push((name.clone(), Shown::Sequences(demos)));
            continue;
        }
        let view = match graph_screens.filter(|_| crate::agent::vision::sees(trainer)) {
            Some(screens) => Some(View::Module(window, screens)),
            None => seeing(trainer, history, window).map(View::Chat),
        };
        let mut examples = Vec::new();
        for t in d {
            match (view, hermes.as_deref()) {
                (Some(View::Chat(view)), Some(h)) => {
                    let shots = shots_of(trainer, t).map_err(fail)?;
                    examples.extend(sft_examples_seeing(t, view, h, shots).map_err(fail)?);
                }
                (Some(View::Module(window, screens)), Some(h)) => {
                    let shots = shots_of(trainer, t).map_err(fail)?;
                    let ex = module_sft_examples(t, (window, screens), h, shots).map_err(fail)?;
                    examples.extend(ex);
                }
                (Some(View::Chat(_) | View::Module(..)) | None, _) => {
                    let ex = sft_examples(t, history, window, hermes.as_deref()).map_err(fail)?;
                    examples.extend(ex.into_iter().map(|e| (e, Vec::new())));
                }
            }
        }
        if view.is_some() && d.iter().all(|t| t.steps.iter().all(|s| s.screenshot.is_none())) {
            return Err(fail(
                "its demonstrations hold no screenshot, and the vision-language policy is shown \
                 one every step: it would imitate prompts it never sees"
                    .into(),
            )
            .help(
                "give each step its `screenshot` (a PNG path relative to the JSONL file, \
                 docs/sandbox.md), or record the demonstrations with `std::sandbox::demos`",
            ));
        }
        sets.push((name.clone(), Shown::Turns(examples, false)));
    }
    Ok(sets)
}

/// How a vision-language policy's examples show screenshots.
#[derive(Clone, Copy, Debug)]
enum View {
    /// A ReAct agent's conversation ([`seeing`]).
    Chat((bool, Window, Screens)),
    /// A graph's acting module: one message a step, the screenshots at its head
    /// (`agent::graph_vision`).
    Module(Window, Screens),
}

/// How a vision-language policy's examples show screenshots (`hide_thinking`, the window, the
/// env's `screenshot(last, older)`), when the policy reads images, the agent keeps the episode as
/// a conversation and its env shows screenshots; `None` for text examples.
fn seeing(
    trainer: &Arc<Mutex<Trainer>>,
    history: History,
    window: Window,
) -> Option<(bool, Window, Screens)> {
    let History::Conversation { hide_thinking } = history else { return None };
    let screens = window.screens?;
    crate::agent::vision::sees(trainer).then_some((hide_thinking, window, screens))
}

/// Each step's screenshot of demonstration `t` read as the policy's processor reads an image
/// (`None` for a step without one); `Err` names a file that cannot be read or is no image.
fn shots_of(
    trainer: &Mutex<Trainer>,
    t: &wrl_sandbox::Trajectory,
) -> Result<Vec<Option<Shot>>, String> {
    let pngs = super::screens::read(t)?;
    let paths = t.steps.iter().map(|s| s.screenshot.as_deref().unwrap_or(""));
    pngs.into_iter()
        .zip(paths)
        .map(|(png, path)| match png {
            None => Ok(None),
            Some(png) => read_screen(trainer, &png)
                .map(Some)
                .map_err(|why| format!("the screenshot `{path}`: {why}")),
        })
        .collect()
}

/// Every step's metrics as the run's metric lines.
fn metric_lines(node: &Node, metrics: &[Metrics]) -> Vec<MetricLine> {
    metrics
        .iter()
        .map(|m| {
            MetricLine::Sft(SftStep {
                stage: node.decl.clone(),
                node: node.id.clone(),
                step: m.step,
                loss: m.loss,
                lr: m.lr,
                grad_norm: m.grad_norm,
                epoch: m.epoch,
                global_step: 0,
                phase: None,
                time: 0.0,
                memory: m.memory,
            })
        })
        .collect()
}
