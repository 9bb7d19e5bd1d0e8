//! A tag-style agent's demonstrations as SFT examples: each expert episode written as the one
//! sequence a rollout of `calls = tags()` writes (`TrainerPolicy::act_tags`) — the first turn's
//! prompt, each call between its tags, each response inline between the result tags — and
//! encoded piece by piece as the rollout encodes it, the calls trained and the prompt and the
//! results masked, so that what the policy imitates is token for token what it later writes.

use wrl_trainer::{Example, Role, Segment, Tokenizer, render_prompt_with};

use super::hermes::search_turn;
use super::prompt::{History, Window, prompt_cut, split_task};
use super::tags::TagCalls;
use crate::env::search::{Call, parse_call};
use crate::rundir::records::SeqPart;

/// One demonstration as a tag-style episode: the first turn's user text and the sequence after
/// it, in parts (the policy's calls with `loss`, the env's results without).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TagDemo {
    /// The demonstration's task id, which errors name.
    pub task: String,
    /// The first turn's user text (after the tags' instructions, for a policy with a chat
    /// template), rendered as the rollout renders it.
    pub prompt: String,
    pub parts: Vec<SeqPart>,
}

/// Demonstration `traj` as the sequence a tag-style rollout writes: its first observation as
/// the first turn's prompt (cut to `window` as SFT cuts every prompt, never dropped), then each
/// step's one call in its tags and, before every step but the first, the response it read in
/// the result tags (cut as the agent's `tool_response_chars` cuts it). A step a tag cannot
/// write (two calls, two queries, a tool the set lacks) is an error naming it.
pub fn tag_demo(
    traj: &wrl_sandbox::Trajectory,
    tags: &TagCalls,
    (mode, window): (History, Window),
    chat: bool,
) -> Result<TagDemo, String> {
    let Some(first) = traj.steps.first() else {
        return Err("it has no step".into());
    };
    // The rollout's first turn: no page seen and no action taken before it.
    let text = prompt_cut(&first.observation, &[], &[], mode, window);
    let prompt = if chat { format!("{}\n\n{text}", tags.instructions()) } else { text };
    let mut parts = Vec::new();
    for (i, step) in traj.steps.iter().enumerate() {
        if i > 0 {
            let response = split_task(&step.observation).1;
            let response = response.strip_prefix("result: ").unwrap_or(response);
            parts.push(SeqPart { text: tags.result_block(response), loss: false });
        }
        let lines: Vec<&String> = step.actions.iter().filter(|l| !l.trim().is_empty()).collect();
        let call = match lines.as_slice() {
            [line] => demo_call(tags, line),
            _ => Err(format!(
                "it makes {} calls, and a tag-style segment makes one (decoding stops at the \
                 first closing tag)",
                lines.len()
            )),
        }
        .map_err(|e| format!("step {}: {e}", i + 1))?;
        parts.push(SeqPart { text: call, loss: true });
    }
    Ok(TagDemo { task: traj.task_id.clone(), prompt, parts })
}

/// A demonstration's terse line (`search Osk`, `visit URL`, `answer 1204`) as the tags the
/// policy would write for it, checked by reading it back as a rollout reads a segment: the
/// tag must make the very call the expert made, or the example would teach another.
pub fn demo_call(tags: &TagCalls, line: &str) -> Result<String, String> {
    let call = parse_call(line).map_err(|e| format!("`{line}`: {e}"))?;
    let body = match &call {
        Call::Search(qs) if qs.len() > 1 => {
            return Err(format!(
                "`{line}` searches {} queries in one call, and a tag holds one",
                qs.len()
            ));
        }
        Call::Visit { urls, .. } if urls.len() > 1 => {
            return Err(format!(
                "`{line}` visits {} pages in one call, and a tag holds one",
                urls.len()
            ));
        }
        Call::Search(qs) => qs.join(""),
        Call::Visit { urls, .. } => urls.join(""),
        Call::Answer(a) => a.clone(),
        Call::Tool { arguments, .. } => match arguments.values().collect::<Vec<_>>().as_slice() {
            [serde_json::Value::String(s)] => s.clone(),
            _ => return Err(format!("`{line}` does not call its tool with one text")),
        },
    };
    let tag = match (&call, tags.answer_tag()) {
        (Call::Answer(_), Some(answer)) => answer,
        _ => tags.tag_of(call.tool()).ok_or_else(|| {
            format!("`{line}` calls `{}`, which the agent's tool set has no tag for", call.tool())
        })?,
    };
    let text = format!("<{tag}>{body}</{tag}>");
    let turn = tags.parse(&text).map_err(|e| format!("`{text}`: {e}"))?;
    let back = search_turn(&turn).map_err(|e| format!("`{text}`: {e}"))?;
    if parse_call(&back).as_ref() != Ok(&call) {
        return Err(format!(
            "`{line}` written as `{text}` makes another call, `{back}`: a tag holds the tool's \
             one argument, the others take their defaults"
        ));
    }
    Ok(text)
}

/// `demo` in the policy's tokens, as a rollout builds the sequence: the prompt rendered for
/// generation, then each part encoded on its own. With `per_turn` (`loss_on = current_turn`),
/// one example per call (the sequence up to it, only it trained); else one example with every
/// call trained. A call that `max_len` tokens would cut off is an error: SFT never drops what it
/// was given to imitate.
pub fn tag_examples(
    tok: &Tokenizer,
    demo: &TagDemo,
    max_len: usize,
    per_turn: bool,
) -> Result<Vec<Example>, String> {
    let user = [Segment::new(Role::User, demo.prompt.clone())];
    let mut tokens = render_prompt_with(tok, &user, &[]).map_err(|e| e.to_string())?;
    let mut weights = vec![0.0f32; tokens.len()];
    let mut ends = Vec::new();
    for part in &demo.parts {
        let ids = tok.encode(&part.text).map_err(|e| e.to_string())?;
        let start = tokens.len();
        weights.extend(std::iter::repeat_n(if part.loss { 1.0 } else { 0.0 }, ids.len()));
        tokens.extend(ids);
        if part.loss {
            ends.push((start, tokens.len()));
        }
    }
    if tokens.len() > max_len {
        return Err(format!(
            "its sequence takes {} tokens, more than the {max_len} an example holds (the stage's \
             `max_length`, within the policy's context): its later calls would not be trained",
            tokens.len()
        ));
    }
    if let Some(w) = weights.first_mut() {
        *w = 0.0;
    }
    if !per_turn {
        return Ok(vec![Example::new(tokens, weights)]);
    }
    Ok(ends
        .into_iter()
        .map(|(start, end)| {
            let w = (0..end).map(|j| if j >= start { weights[j] } else { 0.0 }).collect();
            Example::new(tokens[..end].to_vec(), w)
        })
        .collect())
}
