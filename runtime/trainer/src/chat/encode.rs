//! Conversations as token ids: the whole text and prompts as `apply_chat_template(…,
//! tokenize=True)` gives them, and training examples whose loss covers exactly the assistant
//! spans the template produced (`spans.rs`).

use super::conversation::{Chat, Conversation};
use super::spans::assistant_spans;
use crate::error::{Result, TrainerError};
use crate::example::Example;
use crate::tokenizer::Tokenizer;

fn chat_of(tok: &Tokenizer) -> Result<&Chat> {
    tok.chat().ok_or_else(|| TrainerError::Tokenizer("this policy has no chat template".into()))
}

/// The token ids of the conversation's text, as `apply_chat_template(…, tokenize=True)` gives
/// them (the whole text encoded at once, no special tokens added).
pub fn render_ids(
    tok: &Tokenizer,
    c: &Conversation,
    add_generation_prompt: bool,
) -> Result<Vec<u32>> {
    let chat = chat_of(tok)?;
    let text = if add_generation_prompt { chat.prompt_text(c)? } else { chat.text(c)? };
    tok.encode(&text)
}

/// The prompt of the conversation's next assistant turn.
pub fn prompt(tok: &Tokenizer, c: &Conversation) -> Result<Vec<u32>> {
    render_ids(tok, c, true)
}

/// The examples that train the conversation's trained assistant turns (see `spans.rs`), each
/// piece encoded on its own so that a turn's tokens are those the model generates after its
/// prompt; cut to `max_len` tokens at the end.
pub fn examples(tok: &Tokenizer, c: &Conversation, max_len: usize) -> Result<Vec<Example>> {
    let chat = chat_of(tok)?;
    let mut out = Vec::new();
    for seq in assistant_spans(chat, c, &tok.stop_texts())? {
        let mut tokens = Vec::new();
        let mut weights = Vec::new();
        for s in seq {
            let ids = tok.encode(&s.text)?;
            weights.extend(std::iter::repeat_n(if s.trained { 1.0 } else { 0.0 }, ids.len()));
            tokens.extend(ids);
        }
        tokens.truncate(max_len);
        weights.truncate(max_len);
        if let Some(w) = weights.first_mut() {
            *w = 0.0;
        }
        out.push(Example::new(tokens, weights));
    }
    Ok(out)
}
