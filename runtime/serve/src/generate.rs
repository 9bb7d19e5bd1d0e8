//! Sampling for a request on a blocking thread, reporting every token as it is drawn (with its
//! `top_logprobs` alternatives) over a channel, so one code path serves both the streamed (SSE)
//! and the whole answer. The policy is taken in turns: a request holds it for one prompt's
//! completions at a time and queues again (a fair, first-come lock) for the next, so a request
//! of many prompts does not keep the requests that came after it waiting for all of them.

use std::sync::Arc;

use tokio::sync::OwnedSemaphorePermit;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use wrl_trainer::vision::{Pixels, VisionSide};
use wrl_trainer::{Completion, FinishReason, SampleParams, TokenEvent, Tokenizer, Trainer};

use crate::error::ApiError;
use crate::request::{GenRequest, Input, PromptText};

/// One token of one completion, as drawn.
#[derive(Debug, Clone)]
pub(crate) struct Drawn {
    pub(crate) completion: usize,
    pub(crate) token: u32,
    pub(crate) logprob: f32,
    /// The most likely tokens at this place, most likely first (ties by id); empty unless asked.
    pub(crate) top: Vec<(u32, f32)>,
}

/// What the sampling thread reports.
#[derive(Debug)]
pub(crate) enum Event {
    Token(Drawn),
    Done(Result<Vec<Completion>, ApiError>),
}

/// The prompts of a request in the policy's tokens, checked against its context.
#[derive(Debug)]
pub(crate) struct Prompts {
    pub(crate) tokens: Vec<Vec<u32>>,
    /// The prompt texts (for `echo`).
    pub(crate) texts: Vec<String>,
}

/// Renders (chat) or tokenizes (completions) the request's prompts; a vision-language model's
/// chat prompt has each image placeholder's pad expanded to its image's tokens (`images`, read
/// by the model's processor), as the agent loop expands a turn's (`VisionSide::expand`).
pub(crate) fn prepare(
    req: &GenRequest,
    tok: &Tokenizer,
    context: usize,
    vision: Option<&VisionSide>,
    images: &[Pixels],
) -> Result<Prompts, ApiError> {
    let (tokens, param) = match &req.input {
        Input::Chat(history, _) => {
            let p = wrl_trainer::render_prompt_with(tok, history, &req.tools.schemas)
                .map_err(|e| ApiError::server(format!("cannot render the messages: {e}")))?;
            let p = match vision {
                Some(side) => side.expand(&p, images).map_err(|e| {
                    ApiError::invalid(
                        "invalid_value",
                        "messages",
                        format!(
                            "{e}: an image is sent as an `image_url` part, and a text part must \
                             not write the image placeholder itself"
                        ),
                    )
                })?,
                None => p,
            };
            (vec![p], "messages")
        }
        Input::Text(prompts) => {
            let vocab = tok.vocab_size();
            let mut out = Vec::new();
            for p in prompts {
                let ids = match p {
                    PromptText::Text(t) => tok.encode(t).map_err(|e| {
                        ApiError::server(format!("cannot tokenize the prompt: {e}"))
                    })?,
                    PromptText::Tokens(ids) => {
                        if let Some(bad) = ids.iter().find(|&&i| i as usize >= vocab) {
                            return Err(ApiError::invalid(
                                "invalid_value",
                                "prompt",
                                format!(
                                    "token id {bad} is outside this model's vocabulary of {vocab}"
                                ),
                            ));
                        }
                        ids.clone()
                    }
                };
                if ids.is_empty() {
                    return Err(ApiError::invalid(
                        "invalid_value",
                        "prompt",
                        "`prompt` must not be empty",
                    ));
                }
                out.push(ids);
            }
            (out, "prompt")
        }
    };
    let image_tokens: usize = vision.map_or(0, |side| images.iter().map(|i| side.pads(i)).sum());
    for p in &tokens {
        if p.len() >= context {
            let of_images = if images.is_empty() {
                String::new()
            } else {
                format!(" ({image_tokens} of them for {} image(s))", images.len())
            };
            return Err(ApiError {
                code: "context_length_exceeded",
                ..ApiError::invalid(
                    "invalid_value",
                    param,
                    format!(
                        "the prompt is {} tokens{of_images}; this model's context is {context} \
                         tokens",
                        p.len()
                    ),
                )
            });
        }
    }
    let texts = tokens.iter().map(|p| tok.decode(p).unwrap_or_default()).collect();
    Ok(Prompts { tokens, texts })
}

/// The `k` most likely tokens of a logits row under temperature `t` (1 when greedy), as
/// log-probabilities: the distribution the chosen token's log-prob is taken from.
pub(crate) fn top_k(logits: &[f32], temperature: f32, k: usize) -> Vec<(u32, f32)> {
    if k == 0 {
        return Vec::new();
    }
    let t = if temperature <= 0.0 { 1.0 } else { temperature };
    let scaled: Vec<f32> = logits.iter().map(|&x| x / t).collect();
    let max = scaled.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let lse = scaled.iter().map(|&x| ((x - max) as f64).exp()).sum::<f64>().ln() as f32 + max;
    let mut ids: Vec<usize> = (0..scaled.len()).collect();
    let by = |a: &usize, b: &usize| scaled[*b].total_cmp(&scaled[*a]).then(a.cmp(b));
    if k < ids.len() {
        ids.select_nth_unstable_by(k - 1, by);
        ids.truncate(k);
    }
    ids.sort_by(by);
    ids.into_iter().map(|i| (i as u32, scaled[i] - lse)).collect()
}

/// The policy, shared by the requests: a fair lock (first come, first served), taken for one
/// prompt's completions at a time.
pub(crate) type Policy = Arc<tokio::sync::Mutex<Trainer>>;

/// Starts sampling on a blocking thread, one prompt's `n` completions per turn of the policy
/// (a chat prompt with `images` through the whole vision-language model, as an agent's turn on
/// screenshots); the permit is held until sampling ends, even if the client has gone.
pub(crate) fn start(
    trainer: Policy,
    prompts: Vec<Vec<u32>>,
    images: Vec<Pixels>,
    params: SampleParams,
    seed: Option<u64>,
    top: usize,
    permit: OwnedSemaphorePermit,
) -> UnboundedReceiver<Event> {
    let (tx, rx) = unbounded_channel();
    tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let temperature = params.temperature;
        let mut rng = seed.map(wrl_trainer::rng::rng_from_seed);
        let mut all = Vec::new();
        for (i, prompt) in prompts.iter().enumerate() {
            let first = i * params.n;
            let mut on_token = |e: TokenEvent<'_>| {
                // A client that left closes the channel; sampling still finishes its turn.
                let _ = tx.send(Event::Token(Drawn {
                    completion: first + e.completion,
                    token: e.token,
                    logprob: e.logprob,
                    top: top_k(e.logits, temperature, top),
                }));
            };
            // Queued behind the requests already waiting: a fair turn, then it is given back.
            let mut t = trainer.blocking_lock();
            let one = std::slice::from_ref(prompt);
            // A request's seed draws from its own stream; either way on the weights the
            // trainer's decoder already read (never copied per request).
            let out = match (rng.as_mut(), images.is_empty()) {
                (Some(rng), false) => {
                    t.sample_images_observed_with(prompt, &images, &params, rng, &mut on_token)
                }
                (None, false) => t.sample_images_observed(prompt, &images, &params, &mut on_token),
                (Some(rng), true) => t.sample_observed_with(one, &params, rng, &mut on_token),
                (None, true) => t.sample_observed(one, &params, &mut on_token),
            };
            drop(t);
            match out {
                Ok(done) => {
                    all.extend(done.into_iter().map(|c| Completion { prompt_index: i, ..c }))
                }
                Err(e) => {
                    let _ = tx
                        .send(Event::Done(Err(ApiError::server(format!("sampling failed: {e}")))));
                    return;
                }
            }
        }
        let _ = tx.send(Event::Done(Ok(all)));
    });
    rx
}

/// The content a client sees: OpenAI leaves a matched stop sequence out.
pub(crate) fn visible_text(c: &Completion, stops: &[String]) -> String {
    match c.finish {
        FinishReason::Stop(_) => {
            let cut = stops.iter().filter_map(|s| c.text.find(s.as_str())).min();
            match cut {
                Some(at) => c.text[..at].to_string(),
                None => c.text.clone(),
            }
        }
        FinishReason::Eos | FinishReason::Length => c.text.clone(),
    }
}

/// OpenAI's `finish_reason`.
pub(crate) fn finish_reason(f: &FinishReason) -> &'static str {
    match f {
        FinishReason::Eos | FinishReason::Stop(_) => "stop",
        FinishReason::Length => "length",
    }
}

/// How much of a completion's text so far can be shown: not a trailing incomplete character
/// (decoded as U+FFFD), not the start of a stop sequence that may still complete, and nothing
/// from a stop sequence on.
pub(crate) fn settled_len(text: &str, stops: &[String]) -> usize {
    let mut end = text.len();
    if let Some(at) = stops.iter().filter_map(|s| text.find(s.as_str())).min() {
        end = at;
    }
    let mut t = &text[..end];
    while let Some(rest) = t.strip_suffix('\u{FFFD}') {
        t = rest;
    }
    let mut end = t.len();
    for s in stops {
        // The longest proper prefix of `s` that `t` ends with.
        for (i, _) in s.char_indices().skip(1) {
            if t.ends_with(&s[..i]) {
                end = end.min(t.len() - i);
            }
        }
    }
    end
}

/// The text of one token and its bytes (a byte token's own byte).
pub(crate) fn token_piece(tok: &Tokenizer, id: u32) -> (String, Vec<u8>) {
    if matches!(tok, Tokenizer::Bytes)
        && let Ok(b) = u8::try_from(id)
    {
        return (String::from_utf8_lossy(&[b]).into_owned(), vec![b]);
    }
    let text = tok.decode(&[id]).unwrap_or_default();
    let bytes = text.as_bytes().to_vec();
    (text, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settled_text_holds_back_what_may_change() {
        let stops = vec!["\nEND".to_string()];
        assert_eq!(settled_len("abc", &stops), 3);
        assert_eq!(settled_len("abc\n", &stops), 3);
        assert_eq!(settled_len("abc\nEN", &stops), 3);
        assert_eq!(settled_len("abc\nEND and more", &stops), 3);
        assert_eq!(settled_len("ab\u{FFFD}", &[]), 2);
        assert_eq!(settled_len("a\nx", &stops), 3);
    }

    #[test]
    fn top_k_is_a_sorted_distribution() {
        let top = top_k(&[0.0, 2.0, 1.0, 2.0], 1.0, 3);
        assert_eq!(top.iter().map(|t| t.0).collect::<Vec<_>>(), vec![1, 3, 2]);
        let all: f32 = top_k(&[0.0, 2.0, 1.0, 2.0], 1.0, 4).iter().map(|t| t.1.exp()).sum();
        assert!((all - 1.0).abs() < 1e-5);
        assert!(top_k(&[1.0], 1.0, 0).is_empty());
    }
}
