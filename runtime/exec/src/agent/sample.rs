//! One sampled turn of the candle policy: the prompt rendered (a user message, or a whole
//! conversation, with the tools a chat template shows), a sampler forked from the trainer, and
//! the turn's tokens and log-probs for the RL update, run so that other episodes go on.

use std::sync::Mutex;

use wrl_trainer::{Role, SampleParams, Segment, Trainer, render_prompt_with};

/// One sampled turn.
#[derive(Clone, Debug, Default)]
pub struct Turn {
    pub prompt_tokens: Vec<u32>,
    pub completion_tokens: Vec<u32>,
    pub logprobs: Vec<f32>,
    /// Generation hit its length limit.
    pub truncated: bool,
    /// The environment step (0-based) this turn was sampled in.
    pub step: usize,
    /// The graph role whose weights sampled it (empty for a ReAct agent).
    pub role: String,
    /// The turn's text as the agent read it (trimmed), which a branch replays.
    pub text: String,
    /// The mean entropy of its first `SampleParams::entropy_tokens` tokens
    /// (`wrl_trainer::top_entropy`); `None` when none were measured.
    pub entropy: Option<f32>,
    /// A tag-style turn after the first (`agent::tags`): it continues the previous turn's
    /// sequence, its prompt that turn's prompt and completion and then `lead`, the env's
    /// response in its result tags; its episode trains as one sample whose loss mask leaves
    /// every `lead` out (`rollout::samples`).
    pub continues: bool,
    /// The tokens appended to the sequence before this turn's completion: the env's text, not
    /// the policy's (empty unless `continues`).
    pub lead: Vec<u32>,
    /// A vision-language policy's images in the prompt, in order (`agent::vision`): its sample
    /// carries them to the update, whose forward reads them as the rollout did.
    pub images: Vec<std::sync::Arc<wrl_trainer::vision::Pixels>>,
}

/// One sampled turn of the candle policy on a user prompt (with `tools`, JSON function schemas
/// a chat template shows; none for the tiny policy): the turn's tokens and log-probs, and its
/// text trimmed. `None` when the trainer is unusable (poisoned lock, a prompt it cannot
/// tokenise or that does not fit): the caller's episode then ends as an agent error. With a
/// `stream`, the draw is that stream of the model's seed (reproducible whatever else runs);
/// without, a fork of the trainer's RNG.
pub fn sample_turn(
    trainer: &Mutex<Trainer>,
    text: String,
    params: &SampleParams,
    stream: Option<u64>,
    tools: &[String],
) -> Option<(Turn, String)> {
    sample_on(trainer, &[Segment::new(Role::User, text)], params, stream, tools)
}

/// [`sample_turn`] on a conversation (`agent::conversation`) instead of one user message.
pub fn sample_on(
    trainer: &Mutex<Trainer>,
    segments: &[Segment],
    params: &SampleParams,
    stream: Option<u64>,
    tools: &[String],
) -> Option<(Turn, String)> {
    // The lock is held only to fork a sampler, so concurrent episodes decode in parallel; it is
    // taken inside `blocking` since waiting for it (during an update) is blocking too.
    blocking(|| {
        let mut sampler = {
            let mut t = trainer.lock().ok()?;
            match stream {
                Some(s) => t.sampler_for(s),
                None => t.sampler(),
            }
        };
        let prompt = render_prompt_with(sampler.tokenizer(), segments, tools).ok()?;
        draw(&mut sampler, prompt, params)
    })
}

/// One turn of the candle policy continuing `prompt` (tokens already rendered: a tag-style
/// sequence so far), as [`sample_on`] samples one.
pub fn sample_tokens(
    trainer: &Mutex<Trainer>,
    prompt: Vec<u32>,
    params: &SampleParams,
    stream: Option<u64>,
) -> Option<(Turn, String)> {
    blocking(|| {
        let mut sampler = {
            let mut t = trainer.lock().ok()?;
            match stream {
                Some(s) => t.sampler_for(s),
                None => t.sampler(),
            }
        };
        draw(&mut sampler, prompt, params)
    })
}

/// One completion of `prompt` by `sampler`, as a turn and its trimmed text.
fn draw(
    sampler: &mut wrl_trainer::Sampler,
    prompt: Vec<u32>,
    params: &SampleParams,
) -> Option<(Turn, String)> {
    let mut outs = sampler.sample(std::slice::from_ref(&prompt), params).ok()?;
    if outs.is_empty() {
        return None;
    }
    Some(turn_of(prompt, outs.swap_remove(0)))
}

/// A completion of `prompt` as a turn and its trimmed text.
pub(crate) fn turn_of(prompt: Vec<u32>, c: wrl_trainer::Completion) -> (Turn, String) {
    let truncated = matches!(c.finish, wrl_trainer::FinishReason::Length);
    let text = c.text.trim().to_string();
    let entropy =
        (!c.entropy.is_empty()).then(|| c.entropy.iter().sum::<f32>() / c.entropy.len() as f32);
    let turn = Turn {
        prompt_tokens: prompt,
        completion_tokens: c.tokens,
        logprobs: c.logprobs,
        truncated,
        step: 0,
        role: String::new(),
        text: text.clone(),
        entropy,
        continues: false,
        lead: Vec::new(),
        images: Vec::new(),
    };
    (turn, text)
}

/// Runs CPU-bound `f` (a sampling turn) so that the other tasks of a multi-threaded tokio
/// runtime move to another worker meanwhile; on any other runtime, or none, it just runs `f`.
pub fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}
