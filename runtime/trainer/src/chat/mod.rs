//! Conversations as a Hugging Face model was trained on them: rendered by its own chat template
//! (`template.rs`), prompts ending in the template's generation prompt, and training examples
//! whose loss covers exactly the assistant spans the template produced (`spans.rs`).

pub mod pyjson;
pub mod spans;
pub mod template;

pub use spans::{Span, assistant_spans};
pub use template::{CallText, ChatRole, ChatTemplate, Message};

/// A conversation with the tools it may call (JSON texts of OpenAI-style function schemas).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Conversation {
    pub messages: Vec<Message>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
}

/// How a model converses: its template, and whether it thinks before it answers
/// (`enable_thinking`, the recipe's `thinking`).
#[derive(Debug, Clone)]
pub struct Chat {
    pub template: ChatTemplate,
    pub thinking: bool,
}

impl Chat {
    /// The text of the whole conversation.
    pub fn text(&self, c: &Conversation) -> std::result::Result<String, crate::hf::HfError> {
        self.template.render(&c.messages, &c.tools, false, self.thinking)
    }

    /// The text of the conversation followed by the generation prompt.
    pub fn prompt_text(&self, c: &Conversation) -> std::result::Result<String, crate::hf::HfError> {
        self.template.render(&c.messages, &c.tools, true, self.thinking)
    }
}

use crate::data::Example;
use crate::error::{Result, TrainerError};
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
        out.push(Example { tokens, weights });
    }
    Ok(out)
}

/// A trainer trajectory as a conversation with `tools` (JSON texts of function schemas):
/// observations are the user's, tool output the tool's; an assistant segment's tool calls are
/// its message's; a segment is trained as it says.
pub fn conversation_of(segments: &[crate::data::Segment], tools: &[String]) -> Conversation {
    use crate::tokenizer::Role;
    let messages = segments
        .iter()
        .map(|s| {
            let role = match s.role {
                Role::System => ChatRole::System,
                Role::User | Role::Observation => ChatRole::User,
                Role::Assistant => ChatRole::Assistant,
                Role::Tool => ChatRole::Tool,
            };
            Message {
                train: s.trained(),
                tool_calls: s.tool_calls.clone(),
                ..Message::new(role, s.text.clone())
            }
        })
        .collect();
    Conversation { messages, tools: tools.to_vec() }
}
