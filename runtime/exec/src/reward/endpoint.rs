//! A reward served by an endpoint (`std::rewards::endpoint`): the episode as one JSON request of
//! the versioned schema `wrl.reward/1` (docs/reward-endpoint.md), POSTed under a concurrency
//! limit with a timeout and retries, and the answer read as a finite score and exactly the
//! declared components. A call that gives no score is a typed failure whose class the run counts;
//! the episode then leaves the update, never scored 0.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value as Json, json};
use tokio::sync::Semaphore;
use wrl_plan::params;
use wrl_sandbox::Trajectory;

use super::client::{JudgeError, read_capped, without_url};
pub use super::failure::EndpointFailure;

/// The request schema's name and version; a server reads it to know the layout it is sent.
pub const SCHEMA: &str = "wrl.reward/1";

/// What an endpoint answered: the score and its named components.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    pub score: f64,
    pub components: BTreeMap<String, f64>,
}

/// An endpoint's client, shared by every rollout worker (so its concurrency limit is the
/// signal's, whatever the number of workers).
#[derive(Clone)]
pub struct EndpointClient {
    cfg: params::Endpoint,
    http: reqwest::Client,
    limit: Arc<Semaphore>,
}

impl std::fmt::Debug for EndpointClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EndpointClient").field("components", &self.cfg.components).finish()
    }
}

impl EndpointClient {
    pub fn new(cfg: &params::Endpoint) -> Result<EndpointClient, String> {
        let http = reqwest::Client::builder()
            .timeout(cfg.timeout.duration())
            .build()
            .map_err(|e| e.to_string())?;
        let limit = Arc::new(Semaphore::new((cfg.concurrency as usize).max(1)));
        Ok(EndpointClient { cfg: cfg.clone(), http, limit })
    }

    /// The endpoint's score of one episode; `references` are the task's reference answers.
    pub async fn score(
        &self,
        traj: &Trajectory,
        references: &[&str],
    ) -> Result<Answer, EndpointFailure> {
        let body = request(traj, references, &self.cfg);
        let _permit =
            self.limit.acquire().await.map_err(|e| EndpointFailure::Unreachable(e.to_string()))?;
        let mut attempt = 0;
        loop {
            match self.post(&body).await {
                Ok(answer) => return Ok(answer),
                Err(e) if e.retryable() && attempt < self.cfg.retries => {
                    tokio::time::sleep(self.cfg.backoff.before(attempt)).await;
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    async fn post(&self, body: &Json) -> Result<Answer, EndpointFailure> {
        let mut req = self.http.post(&self.cfg.url).json(body);
        if let Ok(key) = std::env::var(&self.cfg.api_key_env)
            && !key.is_empty()
        {
            req = req.bearer_auth(key);
        }
        let resp = req.send().await.map_err(|e| {
            if e.is_timeout() {
                EndpointFailure::Timeout
            } else {
                EndpointFailure::Unreachable(without_url(&e))
            }
        })?;
        let status = resp.status().as_u16();
        match status {
            200..=299 => {}
            400..=499 => return Err(EndpointFailure::Refused(status)),
            _ => return Err(EndpointFailure::Failed(status)),
        }
        let bytes = read_capped(resp).await.map_err(|e| match e {
            JudgeError::Timeout => EndpointFailure::Timeout,
            JudgeError::Http(_) | JudgeError::Malformed(_) | JudgeError::Transport(_) => {
                EndpointFailure::Malformed(e.to_string())
            }
        })?;
        read_answer(&bytes, &self.cfg.components)
    }
}

/// The request of schema `wrl.reward/1` for one episode (docs/reward-endpoint.md).
pub fn request(traj: &Trajectory, references: &[&str], cfg: &params::Endpoint) -> Json {
    let cut = cfg.observation_chars as usize;
    let turns: Vec<Json> = traj
        .steps
        .iter()
        .map(|s| {
            let (observation, truncated) = head(&s.observation, cut);
            json!({
                "observation": observation,
                "observation_truncated": truncated,
                "actions": s.actions,
                "response": s.written(),
                "malformed": s.malformed,
                "feedback": s.feedback,
                "url": s.url,
            })
        })
        .collect();
    json!({
        "schema": SCHEMA,
        "task": {
            "id": traj.task_id,
            "template": traj.template,
            "instruction": traj.goal,
            "references": references,
        },
        "trajectory": {
            "turns": turns,
            "answer": traj.outcome.answer,
            "end_reason": super::classes::ended(traj.outcome.reason).word(),
            "end_message": traj.outcome.message,
        },
        "components": cfg.components,
    })
}

/// The first `n` characters of `s`, and whether anything was cut.
fn head(s: &str, n: usize) -> (&str, bool) {
    match s.char_indices().nth(n) {
        Some((at, _)) => (&s[..at], true),
        None => (s, false),
    }
}

/// Reads an answer: a JSON object with a finite `score` and, as `components`, exactly the
/// declared names, each a finite number (the object may be left out when none are declared).
pub fn read_answer(bytes: &[u8], declared: &[String]) -> Result<Answer, EndpointFailure> {
    let bad = |why: String| EndpointFailure::Malformed(why);
    let v: Json = serde_json::from_slice(bytes).map_err(|e| {
        bad(format!("not JSON ({e}); a score must be a finite number, and NaN is not JSON"))
    })?;
    let score = match v.get("score") {
        Some(Json::Number(n)) => n.as_f64().filter(|x| x.is_finite()),
        Some(_) => None,
        None => return Err(bad("no `score`".into())),
    }
    .ok_or_else(|| bad("`score` is not a finite number".into()))?;
    let given = match v.get("components") {
        Some(Json::Object(m)) => m.clone(),
        None | Some(Json::Null) => serde_json::Map::new(),
        Some(_) => return Err(bad("`components` is not an object".into())),
    };
    let mut components = BTreeMap::new();
    for name in declared {
        match given.get(name) {
            Some(Json::Number(n)) => match n.as_f64().filter(|x| x.is_finite()) {
                Some(x) => {
                    components.insert(name.clone(), x);
                }
                None => return Err(bad(format!("component `{name}` is not a finite number"))),
            },
            Some(_) => return Err(bad(format!("component `{name}` is not a number"))),
            None => return Err(bad(format!("no component `{name}`, which the recipe declares"))),
        }
    }
    if let Some(extra) = given.keys().find(|k| !declared.contains(k)) {
        return Err(bad(format!("component `{extra}` is not declared in the recipe")));
    }
    Ok(Answer { score, components })
}

#[cfg(test)]
#[path = "endpoint_tests.rs"]
mod tests;
