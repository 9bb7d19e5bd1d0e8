//! ZeroSearch's simulated search engine (`simulated_search(engine)`): a `search` query is
//! answered by a language model asked, in ZeroSearch's own words, for useful or noisy documents
//! about the task's question and its reference answer, the share of noisy ones rising over an
//! RL stage (Alibaba-NLP/ZeroSearch, llm_agent/generation.py: `search_simulate_sft`,
//! `search_simulate_prompt`, `dynamic_threshold`).

use std::sync::Mutex;

use serde_json::json;
use sha2::Digest;
use wrl_plan::params::{self, SimTemplate, SimulatedSearch};
use wrl_sandbox::Task;

use crate::reward::client::{JudgeClient, JudgeConfig};

/// The engine, its settings, the run's seed and where the stage's rollouts are.
pub struct Simulator {
    spec: SimulatedSearch,
    client: JudgeClient,
    seed: u64,
    /// The stage's iteration (1-based) and its number of iterations while an RL stage rolls out
    /// with this env; `None` outside training.
    at: Mutex<Option<(u64, u64)>>,
}

impl std::fmt::Debug for Simulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simulator").field("spec", &self.spec).finish_non_exhaustive()
    }
}

impl Simulator {
    /// The engine `api` as `spec` asks it, its draws seeded by `seed` (sent to the endpoint too).
    pub fn new(spec: &SimulatedSearch, api: &params::Api, seed: u64) -> Result<Simulator, String> {
        let cfg = JudgeConfig { seed, ..JudgeConfig::for_api(api) };
        let client = JudgeClient::new(cfg).map_err(|e| e.to_string())?;
        Ok(Simulator { spec: spec.clone(), client, seed, at: Mutex::new(None) })
    }

    /// Where the stage's rollouts are: iteration `i` of `n`, or `None` outside training.
    pub fn set_iteration(&self, at: Option<(u64, u64)>) {
        if let Ok(mut g) = self.at.lock() {
            *g = at;
        }
    }

    /// The probability of noisy documents now.
    pub fn noise(&self) -> f64 {
        let at = self.at.lock().map(|g| *g).unwrap_or(None);
        self.spec.noise_at(at)
    }

    /// Whether this query gets noisy documents: ZeroSearch draws `random.random()` per query
    /// and asks for useful ones when it exceeds the threshold; here the draw is seeded by the
    /// run's seed, the task, the episode's turns so far and the query, so a rerun draws the
    /// same.
    pub fn noisy(&self, task: &Task, history: &[String], query: &str) -> bool {
        let mut key = format!("{}\u{1}{}\u{1}{query}", self.seed, task.id);
        for h in history {
            key.push('\u{2}');
            key.push_str(h);
        }
        let h = sha2::Sha256::digest(key.as_bytes());
        let mut b = [0u8; 8];
        b.copy_from_slice(&h[..8]);
        // 53 random bits: a uniform draw in [0, 1).
        let u = (u64::from_le_bytes(b) >> 11) as f64 / (1u64 << 53) as f64;
        u < self.noise()
    }

    /// The documents the engine writes for `query` in an episode of `task`; why not (the
    /// task has no reference answer, or the engine failed after its retries).
    pub async fn search(
        &self,
        task: &Task,
        history: &[String],
        query: &str,
    ) -> Result<String, String> {
        let answer = match &task.checker {
            wrl_sandbox::Checker::Answer { expected, .. } => {
                expected.split(wrl_sandbox::REFERENCE_SEPARATOR).next().unwrap_or("").to_string()
            }
            _ => {
                return Err(format!(
                    "task `{}` has no reference answer for the simulated search engine's prompt",
                    task.id
                ));
            }
        };
        let noisy = self.noisy(task, history, query);
        let user = prompt(self.spec.template, noisy, &task.goal, &answer, query);
        // ZeroSearch's request: an empty system message, then the prompt.
        let messages = vec![
            json!({"role": "system", "content": ""}),
            json!({"role": "user", "content": user}),
        ];
        let reply = self
            .client
            .complete(messages, self.spec.max_tokens.0 as usize)
            .await
            .map_err(|e| format!("the simulated search engine failed: {e}"))?;
        Ok(cut(&reply, self.spec.top_k))
    }
}

/// The engine's reply as ZeroSearch keeps it: blank lines closed up, and cut before
/// `Doc {top_k + 1}`.
pub fn cut(reply: &str, top_k: u32) -> String {
    let text = reply.replace("\n\n", "\n");
    let stop = format!("Doc {}", top_k + 1);
    match text.find(&stop) {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// ZeroSearch's prompt for `query`, asking for useful or noisy documents about `question`,
/// whose answer is `answer`.
pub fn prompt(
    template: SimTemplate,
    noisy: bool,
    question: &str,
    answer: &str,
    query: &str,
) -> String {
    let quality = if noisy { "noisy" } else { "useful" };
    let label = if noisy { "Noisy" } else { "Useful" };
    match template {
        SimTemplate::Sft => format!(
            "You are the Google search engine.\nGiven a query, you need to generate five {quality} \
             documents for the query.\n\nThe user is trying to answer the question: \
             \"{question}\" whose answer is {answer}.\nEach document should contain about 30 \
             words, and these documents should contain {quality} information.\n\nQuery: \
             {query}\n{label} Output:\n"
        ),
        SimTemplate::Prompt if noisy => format!(
            "You are the Google search engine. \nGiven a query, you need to imitate the style of \
             the following demos and generate five related but noisy documents for the query.\
             \n\nHere is an example:\nQuery: George Washington Bridge opening year\nNoisy \
             Output:\n{NOISY_DEMO}\nEach document should contain about 30 words, and these \
             documents should contain related but noisy information.\nYou must directly output \
             the English documents and not output any other texts.\n\nQuery: {query}\nNoisy \
             Output:\n"
        ),
        SimTemplate::Prompt => format!(
            "You are the Google search engine.\nGiven a query, you need to imitate the style of \
             the following demos and generate five useful documents for the query.\n\nHere is \
             an example:\nQuery: George Washington Bridge opening year\nUseful \
             Output:\n{USEFUL_DEMO}\nThe user is trying to answer the question: \"{question}\" \
             whose answer is {answer}.\nYou should generate documents that can help the user \
             find the answer.\nEach document should contain about 30 words.\nYou must directly \
             output the English documents and not output any other texts.\n\nQuery: \
             {query}\nUseful Output:\n"
        ),
    }
}

/// The few-shot example of useful documents in ZeroSearch's `search_simulate_prompt`.
const USEFUL_DEMO: &str = include_str!("simulated/useful_demo.txt");
/// The few-shot example of noisy documents in ZeroSearch's `search_simulate_prompt`.
const NOISY_DEMO: &str = include_str!("simulated/noisy_demo.txt");
