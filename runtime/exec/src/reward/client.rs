//! LLM/VLM judges over any OpenAI-compatible `/v1/chat/completions` endpoint, each call under one
//! protocol of `prompts.rs` (OpenWebRL's, WebVoyager's, AgentTrek's, WebJudge's). Timeouts,
//! retries with a growing backoff, a concurrency limit; failures are typed so the executor can
//! exclude and count them. The API key is read from an environment variable and never written.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value as Json, json};
use tokio::sync::Semaphore;

use super::prompts::Protocol;
pub use super::prompts::{JudgeError, JudgeInput, JudgeStep, parse_binary, parse_status};
use super::webjudge;

/// Where and how to call a judge.
#[derive(Clone, Debug)]
pub struct JudgeConfig {
    pub base_url: String,
    pub model: String,
    /// The environment variable holding the API key (may be unset for local servers).
    pub api_key_env: String,
    pub timeout: Duration,
    pub retries: u32,
    pub concurrency: usize,
    pub seed: u64,
    /// The first retry waits this long, the next `backoff_factor` times as long, and so on.
    pub backoff: Duration,
    pub backoff_factor: f64,
    /// How many of the most recent screenshots to attach.
    pub screenshots: usize,
    /// Sampling temperature of the calls whose protocol sends one (judges are asked at 0).
    pub temperature: f64,
    /// WebJudge's weights of completion, action and efficiency.
    pub axes: (f64, f64, f64),
}

impl Default for JudgeConfig {
    fn default() -> Self {
        JudgeConfig {
            base_url: "http://127.0.0.1:8000/v1".into(),
            model: "judge".into(),
            api_key_env: "OPENAI_API_KEY".into(),
            timeout: Duration::from_secs(30),
            retries: 3,
            concurrency: 8,
            seed: 42,
            backoff: Duration::from_secs(3),
            backoff_factor: 3.0,
            screenshots: 3,
            temperature: 0.0,
            axes: (0.8, 0.1, 0.1),
        }
    }
}

impl JudgeConfig {
    /// The calls of an `api(model)` model (a frozen graph module, a simulated search engine):
    /// its endpoint, key, timeout, retries, concurrency and temperature.
    pub fn for_api(api: &wrl_plan::params::Api) -> JudgeConfig {
        let wrl_plan::params::Api {
            model,
            base_url,
            api_key_env,
            // The prompt room its callers size (graph modules, E0404).
            context: _,
            timeout,
            retries,
            concurrency,
            temperature,
            image_tokens: _,
        } = api;
        JudgeConfig {
            base_url: base_url.clone(),
            model: model.clone(),
            api_key_env: api_key_env.clone(),
            timeout: timeout.duration().max(Duration::from_millis(1)),
            retries: *retries,
            concurrency: (*concurrency).max(1) as usize,
            temperature: *temperature,
            ..JudgeConfig::default()
        }
    }
}

impl JudgeError {
    /// Whether the client tries the call again: timeouts, transport failures, 5xx and 429.
    fn retryable(&self) -> bool {
        match self {
            JudgeError::Timeout | JudgeError::Transport(_) => true,
            JudgeError::Http(code) => *code >= 500 || *code == 429,
            JudgeError::Malformed(_) => false,
        }
    }
}

/// A judge client shared by all rollout workers.
#[derive(Clone)]
pub struct JudgeClient {
    cfg: JudgeConfig,
    http: reqwest::Client,
    limit: Arc<Semaphore>,
}

impl std::fmt::Debug for JudgeClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JudgeClient")
            .field("base_url", &self.cfg.base_url)
            .field("model", &self.cfg.model)
            .finish()
    }
}

impl JudgeClient {
    pub fn new(cfg: JudgeConfig) -> Result<JudgeClient, JudgeError> {
        let http = reqwest::Client::builder()
            .timeout(cfg.timeout)
            .build()
            .map_err(|e| JudgeError::Transport(e.to_string()))?;
        let limit = Arc::new(Semaphore::new(cfg.concurrency.max(1)));
        Ok(JudgeClient { cfg, http, limit })
    }

    /// One judge call under `protocol`: its verdict, 0 without a call for an episode the
    /// protocol scores so (see [`Protocol::without_asking`]).
    pub async fn verdict(&self, input: &JudgeInput, protocol: Protocol) -> Result<f64, JudgeError> {
        if let Some(v) = protocol.without_asking(input) {
            return Ok(v);
        }
        match protocol {
            Protocol::WebJudge { history, max_side } => {
                // Two calls under one concurrency permit each: the key points, then the scores.
                let kp =
                    self.send(&self.body(webjudge::key_points_messages(&input.task), true)).await?;
                let kp = webjudge::read_key_points(&kp);
                let m = webjudge::messages(input, &kp, self.cfg.screenshots, history, max_side);
                let text = self.send(&self.body(m, true)).await?;
                let (c, a, t) = webjudge::read_scores(&text)?;
                Ok(webjudge_reward(c, a, t, self.cfg.axes))
            }
            Protocol::One(call) => {
                let m = call.messages(input, self.cfg.screenshots);
                let text = self.send(&self.body(m, call.sends_temperature())).await?;
                call.read(&text)
            }
        }
    }

    /// POSTs `body` under the concurrency limit, retrying timeouts, transport errors, 429 and
    /// 5xx with a backoff that grows by `backoff_factor`.
    async fn send(&self, body: &Json) -> Result<String, JudgeError> {
        let message = self.exchange(body).await?;
        message
            .get("content")
            .and_then(Json::as_str)
            .map(str::to_string)
            .ok_or_else(|| JudgeError::Malformed("no choices[0].message.content".into()))
    }

    /// POSTs `body` as [`JudgeClient::send`] does and answers the whole response (its
    /// `choices[0].message` read by the caller: a policy's tool calls and `usage`).
    pub async fn exchange_whole(&self, body: &Json) -> Result<Json, JudgeError> {
        let _permit =
            self.limit.acquire().await.map_err(|e| JudgeError::Transport(e.to_string()))?;
        let mut attempt = 0;
        loop {
            match self.post(body).await {
                Ok(v) => return Ok(v),
                Err(e) if e.retryable() && attempt < self.cfg.retries => {
                    let factor = self.cfg.backoff_factor.max(1.0).powi(attempt.min(30) as i32);
                    let wait = self.cfg.backoff.mul_f64(factor.min(1e6));
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn body(&self, messages: Vec<Json>, temperature: bool) -> Json {
        let mut body = json!({
            "model": self.cfg.model,
            "seed": self.cfg.seed,
            "messages": messages,
        });
        if temperature {
            body["temperature"] = json!(self.cfg.temperature);
        }
        body
    }

    /// A plain chat completion (a frozen agent module): `system` (may be empty), then `user`,
    /// at most `max_tokens`, with the client's timeout, retries and concurrency limit.
    pub async fn chat(
        &self,
        system: &str,
        user: &str,
        max_tokens: usize,
    ) -> Result<String, JudgeError> {
        let mut messages = Vec::new();
        if !system.is_empty() {
            messages.push(json!({"role": "system", "content": system}));
        }
        messages.push(json!({"role": "user", "content": user}));
        self.complete(messages, max_tokens).await
    }

    /// A chat completion of `messages` as they are (an empty system message is sent: a chat
    /// template renders it instead of its default one), at most `max_tokens`.
    pub async fn complete(
        &self,
        messages: Vec<Json>,
        max_tokens: usize,
    ) -> Result<String, JudgeError> {
        let body = json!({
            "model": self.cfg.model,
            "temperature": self.cfg.temperature,
            "seed": self.cfg.seed,
            "max_tokens": max_tokens,
            "messages": messages,
        });
        self.send(&body).await
    }

    /// `choices[0].message` of the answer to `body`.
    async fn exchange(&self, body: &Json) -> Result<Json, JudgeError> {
        let mut v = self.exchange_whole(body).await?;
        v.pointer_mut("/choices/0/message")
            .map(Json::take)
            .ok_or_else(|| JudgeError::Malformed("no choices[0].message".into()))
    }

    /// The model this client asks and the seed it sends.
    pub fn model(&self) -> &str {
        &self.cfg.model
    }

    async fn post(&self, body: &Json) -> Result<Json, JudgeError> {
        let url = completions_url(&self.cfg.base_url);
        let mut req = self.http.post(url).json(body);
        if let Ok(key) = std::env::var(&self.cfg.api_key_env)
            && !key.is_empty()
        {
            req = req.bearer_auth(key);
        }
        let resp = req.send().await.map_err(|e| {
            if e.is_timeout() {
                JudgeError::Timeout
            } else {
                JudgeError::Transport(without_url(&e))
            }
        })?;
        let status = resp.status();
        if !status.is_success() {
            return Err(JudgeError::Http(status.as_u16()));
        }
        serde_json::from_slice(&read_capped(resp).await?)
            .map_err(|e| JudgeError::Malformed(e.to_string()))
    }
}

/// `BASE/chat/completions`, with a `?query` of the base URL kept after the path (not spliced
/// into it).
pub(crate) fn completions_url(base: &str) -> String {
    let (path, query) = match base.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (base, None),
    };
    let mut url = format!("{}/chat/completions", path.trim_end_matches('/'));
    if let Some(q) = query {
        url.push('?');
        url.push_str(q);
    }
    url
}

/// The most of a judge's answer that is read: a chat completion is a few KiB; a bigger answer
/// is a broken or hostile server, and its sample is excluded as `judge_error`.
pub const MAX_ANSWER: usize = 4 << 20;

/// The body of `resp`, refused past [`MAX_ANSWER`] bytes without reading the rest.
pub(super) async fn read_capped(mut resp: reqwest::Response) -> Result<Vec<u8>, JudgeError> {
    let too_big = || JudgeError::Malformed(format!("the answer is over {MAX_ANSWER} bytes"));
    if resp.content_length().is_some_and(|n| n > MAX_ANSWER as u64) {
        return Err(too_big());
    }
    let mut body = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(c)) => {
                if body.len() + c.len() > MAX_ANSWER {
                    return Err(too_big());
                }
                body.extend_from_slice(&c);
            }
            Ok(None) => return Ok(body),
            Err(e) if e.is_timeout() => return Err(JudgeError::Timeout),
            Err(e) => return Err(JudgeError::Malformed(without_url(&e))),
        }
    }
}

/// A transport error's text without the URL (which may carry credentials in its query).
pub(super) fn without_url(e: &reqwest::Error) -> String {
    let mut s = e.to_string();
    if let Some(u) = e.url() {
        s = s.replace(u.as_str(), "<judge>");
    }
    s
}

/// WebJudge aggregation: −1 if blocked (C < 0); score = 5 if C = 5 else w·(C, A, T);
/// reward = max(score − 1, 0) / 4.
pub fn webjudge_reward(c: f64, a: f64, t: f64, (wc, wa, wt): (f64, f64, f64)) -> f64 {
    if c < 0.0 {
        return -1.0;
    }
    let score = if c >= 5.0 { 5.0 } else { wc * c + wa * a + wt * t };
    (score - 1.0).max(0.0) / 4.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reward::prompts::OneCall;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use axum::Router;
    use axum::http::StatusCode;
    use axum::routing::post;

    /// A judge server on loopback whose behaviour depends on the task text.
    async fn judge_server(calls: Arc<AtomicUsize>) -> String {
        let app = Router::new().route(
            "/v1/chat/completions",
            post(move |body: axum::Json<Json>| {
                let calls = calls.clone();
                async move {
                    let n = calls.fetch_add(1, Ordering::SeqCst);
                    let text = body
                        .0
                        .pointer("/messages/1/content/0/text")
                        .and_then(Json::as_str)
                        .unwrap_or("")
                        .to_string();
                    let reply = |s: &str| {
                        (
                            StatusCode::OK,
                            axum::Json(json!({"choices": [{"message": {"content": s}}]})),
                        )
                    };
                    if text.contains("flaky") && n == 0 {
                        return (StatusCode::INTERNAL_SERVER_ERROR, axum::Json(json!({})));
                    }
                    if text.contains("broken") {
                        return (StatusCode::INTERNAL_SERVER_ERROR, axum::Json(json!({})));
                    }
                    if text.contains("slow") {
                        tokio::time::sleep(Duration::from_millis(800)).await;
                    }
                    if text.contains("nonsense") {
                        return reply("I cannot tell.");
                    }
                    if text.contains("huge") {
                        return reply(&"SUCCESS ".repeat(MAX_ANSWER / 8 + 1));
                    }
                    if text.contains("axes") {
                        return reply(
                            "<Thoughts>…<Thoughts> {\"Completion Score\": 4, \"Action Score\": 5, \"Trajectory Score\": 3}",
                        );
                    }
                    reply("The cart shows the mug. Verdict: SUCCESS")
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        format!("http://{addr}/v1")
    }

    fn input(task: &str) -> JudgeInput {
        JudgeInput {
            task: task.into(),
            steps: vec![JudgeStep { actions: vec!["click 3".into()], feedback: "ok".into() }],
            answer: Some("done".into()),
            screenshots: vec![vec![137, 80, 78, 71]],
        }
    }

    #[tokio::test]
    async fn verdicts_retries_timeouts_and_malformed_answers() {
        let calls = Arc::new(AtomicUsize::new(0));
        let base_url = judge_server(calls.clone()).await;
        let cfg = JudgeConfig {
            base_url,
            timeout: Duration::from_millis(300),
            retries: 1,
            backoff: Duration::from_millis(10),
            api_key_env: "WRL_TEST_NO_SUCH_KEY".into(),
            ..JudgeConfig::default()
        };
        let judge = JudgeClient::new(cfg).unwrap();
        assert_eq!(
            judge.verdict(&input("buy a mug"), Protocol::One(OneCall::Plain)).await,
            Ok(1.0)
        );
        assert_eq!(
            judge.verdict(&input("flaky: buy a mug"), Protocol::One(OneCall::Plain)).await,
            Ok(1.0),
            "a 500 is retried"
        );
        assert_eq!(
            judge.verdict(&input("broken"), Protocol::One(OneCall::Plain)).await,
            Err(JudgeError::Http(500))
        );
        assert_eq!(
            judge.verdict(&input("slow"), Protocol::One(OneCall::Plain)).await,
            Err(JudgeError::Timeout)
        );
        assert!(matches!(
            judge.verdict(&input("nonsense"), Protocol::One(OneCall::Plain)).await,
            Err(JudgeError::Malformed(_))
        ));
        // An answer past the cap is refused unread, not parsed (it would say SUCCESS).
        let e = judge.verdict(&input("huge"), Protocol::One(OneCall::Plain)).await.unwrap_err();
        assert!(e.to_string().contains(&format!("over {MAX_ANSWER} bytes")), "{e}");
        let webjudge = Protocol::WebJudge { history: 14, max_side: 1024 };
        let before = calls.load(Ordering::SeqCst);
        let r = judge.verdict(&input("axes"), webjudge).await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst) - before, 2, "key points, then the scores");
        assert!((r - (0.8 * 4.0 + 0.5 + 0.3 - 1.0) / 4.0).abs() < 1e-9, "{r}");
        assert_eq!(JudgeError::Timeout.class(), wrl_plan::params::FailureClass::JudgeTimeout);
    }

    #[test]
    fn a_query_in_the_base_url_stays_after_the_path() {
        assert_eq!(
            completions_url("http://127.0.0.1:9/v1/?api-version=2"),
            "http://127.0.0.1:9/v1/chat/completions?api-version=2"
        );
        assert_eq!(completions_url("http://h/v1"), "http://h/v1/chat/completions");
    }

    #[test]
    fn parsing_rules() {
        assert_eq!(parse_binary("SUCCESS... actually NOT SUCCESS"), Ok(0.0));
        assert_eq!(parse_status("Thoughts: done.\nStatus: \"success\""), Ok(1.0));
        assert_eq!(parse_status("Status: failure (not success)"), Ok(1.0), "AgentTrek's rule");
        assert_eq!(parse_status("STATUS: \"failure\""), Ok(0.0));
        assert!(parse_status("success").is_err());
        assert_eq!(webjudge_reward(5.0, 1.0, 1.0, (0.8, 0.1, 0.1)), 1.0);
        assert_eq!(webjudge_reward(-1.0, 5.0, 5.0, (0.8, 0.1, 0.1)), -1.0);
        assert_eq!(webjudge_reward(1.0, 1.0, 1.0, (0.8, 0.1, 0.1)), 0.0);
    }
}
