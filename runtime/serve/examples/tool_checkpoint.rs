//! Saves a tiny random Qwen3 in Hugging Face layout, taught by a few hundred SFT steps to
//! answer "Open the cart." with a Hermes call of the `click` tool it is offered, as a
//! checkpoint directory: a policy whose reply `wrlc serve` returns as OpenAI `tool_calls`
//! (`tests/scripts/openai-client.sh`, `tests/all/serve.rs`). Usage: `tool_checkpoint DIR`.

use std::path::Path;
use std::process::ExitCode;

use wrl_trainer::chat::{self, CallText, ChatRole, Conversation, Message};
use wrl_trainer::hf::tiny::{TinySpec, TokenizerSource};
use wrl_trainer::{
    DeviceChoice, OptimConfig, PolicyConfig, PretrainedSource, SampleParams, Trainer, TrainerConfig,
};

/// The tool the policy learns to call, as a client offers it.
pub const CLICK: &str = r#"{"type": "function", "function": {"name": "click", "description": "Click an element.", "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}}}"#;

/// The conversation it learns: the user's request, then the call.
pub fn lesson() -> Conversation {
    let call = CallText { name: "click".into(), arguments: r#"{"id": 7}"#.into() };
    Conversation {
        messages: vec![
            Message::new(ChatRole::User, "Open the cart."),
            Message {
                tool_calls: vec![call],
                train: true,
                ..Message::new(ChatRole::Assistant, "")
            },
        ],
        tools: vec![CLICK.to_string()],
    }
}

/// The reply the taught policy gives, greedily.
pub const REPLY: &str =
    "<tool_call>\n{\"name\": \"click\", \"arguments\": {\"id\": 7}}\n</tool_call>";

/// Writes the model under `work`, then trains it until greedy decoding gives [`REPLY`].
pub fn taught(work: &Path) -> Result<Trainer, String> {
    let corpus = vec!["Open the cart.".to_string(), REPLY.to_string(), CLICK.to_string()];
    let spec = TinySpec::narrow();
    let src = work.join("tiny-qwen3");
    wrl_trainer::hf::tiny::write(&src, &spec, &TokenizerSource::Generated { corpus, merges: 120 })
        .map_err(|e| e.to_string())?;
    let mut t = Trainer::new(TrainerConfig {
        policy: PolicyConfig::Qwen3(PretrainedSource::new(&src)),
        optim: OptimConfig { lr: 1e-2, ..OptimConfig::default() },
        seed: 7,
        device: DeviceChoice::Cpu,
    })
    .map_err(|e| e.to_string())?;
    let c = lesson();
    let ex = chat::examples(t.tokenizer(), &c, 4096).map_err(|e| e.to_string())?;
    let prompt = chat::prompt(
        t.tokenizer(),
        &Conversation { messages: c.messages[..1].to_vec(), tools: c.tools.clone() },
    )
    .map_err(|e| e.to_string())?;
    let greedy = SampleParams { temperature: 0.0, max_tokens: 40, ..SampleParams::default() };
    for step in 1..=400 {
        t.sft_step_on(&[(&ex[0], 1.0)], 1).map_err(|e| e.to_string())?;
        if step % 20 == 0 {
            let out =
                t.sample(std::slice::from_ref(&prompt), &greedy).map_err(|e| e.to_string())?;
            if out.first().is_some_and(|o| o.text.trim() == REPLY) {
                return Ok(t);
            }
        }
    }
    Err("the tiny policy did not learn its call in 400 steps".into())
}

#[allow(dead_code)] // the tests include this file for `taught`
fn main() -> ExitCode {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: tool_checkpoint DIR");
        return ExitCode::from(2);
    };
    let dir = Path::new(&dir);
    let work = dir.with_extension("src");
    let result = taught(&work).and_then(|t| t.save(dir).map_err(|e| e.to_string()));
    let _ = std::fs::remove_dir_all(&work);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
