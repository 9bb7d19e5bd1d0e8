//! The judges a reward needs, called once per finished episode before the reward is evaluated:
//! one HTTP client per judge configuration (so its concurrency limit is shared by every rollout
//! worker), the episode rendered as the judge's input, and the verdicts keyed the way
//! `reward::evaluate` looks them up. Failures become "excluded" (or 0 with `on_timeout = zero`).

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value as Json;
use wrl_sandbox::Trajectory;

use crate::judge::{JudgeClient, JudgeConfig, JudgeError, JudgeInput};
use crate::reward::{RewardExpr, SignalObj, judge_signals};

/// How one judge signal turns an answer into a score.
#[derive(Clone, Debug, PartialEq)]
enum Verdict {
    /// SUCCESS / NOT SUCCESS → 1 / 0.
    Binary,
    /// WebJudge's three axes, aggregated with these weights.
    Axes((f64, f64, f64)),
}

#[derive(Clone, Debug)]
struct One {
    key: String,
    client: JudgeClient,
    verdict: Verdict,
    timeout_is_zero: bool,
}

/// Every judge of a reward expression, ready to call.
#[derive(Clone, Debug, Default)]
pub struct Judges {
    judges: Vec<One>,
    screenshots: usize,
}

/// A plan value's plain number (`{"type": "num", "value": 3}` or a bare number).
fn num(v: &Json) -> Option<f64> {
    v.as_f64().or_else(|| v.get("value").and_then(Json::as_f64))
}

/// A duration field in seconds (`{"type": "qty", "value": 30, "unit": "s"}`).
fn seconds(s: &SignalObj, name: &str) -> Option<f64> {
    let f = s.fields.get(name)?;
    let f = f.get("v").unwrap_or(f);
    let v = num(f)?;
    let scale = match f.get("unit").and_then(Json::as_str).unwrap_or("s") {
        "ms" => 0.001,
        "min" => 60.0,
        "h" => 3600.0,
        _ => 1.0,
    };
    Some(v * scale)
}

impl Judges {
    /// The judges `reward` (and the rewards it names) will ask, in order of appearance.
    pub fn for_reward(
        reward: &RewardExpr,
        rewards: &BTreeMap<String, RewardExpr>,
    ) -> Result<Judges, String> {
        let mut signals = Vec::new();
        judge_signals(reward, rewards, &mut signals);
        let mut out = Judges::default();
        for s in signals {
            let model = match s.field("model").or_else(|| s.field("judge_model")) {
                Some(Json::String(m)) => m.clone(),
                Some(other) => other
                    .get("name")
                    .or_else(|| other.get("ref"))
                    .and_then(Json::as_str)
                    .unwrap_or("judge")
                    .to_string(),
                None => "judge".to_string(),
            };
            let d = JudgeConfig::default();
            let screenshots = s.field_f64("screenshots").map_or(d.screenshots, |n| n as usize);
            let cfg = JudgeConfig {
                base_url: s.field_str("base_url").unwrap_or(&d.base_url).to_string(),
                model,
                api_key_env: s.field_str("api_key_env").unwrap_or(&d.api_key_env).to_string(),
                timeout: seconds(s, "timeout").map_or(d.timeout, Duration::from_secs_f64),
                retries: s.field_f64("retries").map_or(d.retries, |n| n as u32),
                concurrency: s.field_f64("concurrency").map_or(d.concurrency, |n| n as usize),
                seed: s.field_f64("seed").map_or(d.seed, |n| n as u64),
                screenshots,
                ..d
            };
            let verdict = if s.name() == "webjudge" || s.field_str("prompt") == Some("webjudge") {
                let w = s.field("weights");
                let get = |k: &str, dflt: f64| {
                    w.and_then(|w| w.get("fields").unwrap_or(w).get(k))
                        .and_then(num)
                        .unwrap_or(dflt)
                };
                Verdict::Axes((get("completion", 0.8), get("action", 0.1), get("efficiency", 0.1)))
            } else {
                Verdict::Binary
            };
            let client = JudgeClient::new(cfg).map_err(|e| e.to_string())?;
            out.screenshots = out.screenshots.max(screenshots);
            out.judges.push(One {
                key: s.key(),
                client,
                verdict,
                timeout_is_zero: s.field_str("on_timeout") == Some("zero"),
            });
        }
        Ok(out)
    }

    /// Whether no judge is needed.
    pub fn is_empty(&self) -> bool {
        self.judges.is_empty()
    }

    /// How many of an episode's last screenshots the judges look at (0: take none).
    pub fn screenshots(&self) -> usize {
        self.screenshots
    }

    /// Asks every judge about one episode. Returns verdicts keyed for `EpisodeFacts::judges`;
    /// a failed call is `Err(its failure class)`.
    pub async fn judge(
        &self,
        traj: &Trajectory,
        screenshots: &[Vec<u8>],
    ) -> BTreeMap<String, Result<f64, String>> {
        let input = JudgeInput {
            task: traj.goal.clone(),
            actions: traj
                .steps
                .iter()
                .map(|s| format!("{} → {}", s.actions.join("; "), s.feedback.replace('\n', "; ")))
                .collect(),
            answer: traj.outcome.answer.clone(),
            screenshots: screenshots.to_vec(),
        };
        let mut out = BTreeMap::new();
        for j in &self.judges {
            let r = match j.verdict {
                Verdict::Binary => j.client.binary(&input).await,
                Verdict::Axes(w) => j.client.webjudge(&input, w).await,
            };
            let r = match r {
                Ok(v) => Ok(v),
                Err(JudgeError::Timeout) if j.timeout_is_zero => Ok(0.0),
                Err(e) => Err(e.class().to_string()),
            };
            out.insert(j.key.clone(), r);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judge_expr(fields: Json) -> RewardExpr {
        serde_json::from_value(serde_json::json!({
            "op": "signal",
            "obj": {"ctor": "std::rewards::judge", "kind": "signal", "fields": fields}
        }))
        .unwrap()
    }

    #[test]
    fn configuration_is_read_from_the_signal() {
        let e = judge_expr(serde_json::json!({
            "model": {"type": "str", "value": "gpt-4.1"},
            "screenshots": {"type": "num", "value": 5.0},
            "timeout": {"type": "qty", "value": 2.0, "unit": "min"},
            "on_timeout": {"type": "enum", "value": "zero"},
        }));
        let j = Judges::for_reward(&e, &BTreeMap::new()).unwrap();
        assert_eq!(j.screenshots(), 5);
        assert_eq!(j.judges.len(), 1);
        assert!(j.judges[0].timeout_is_zero);
        assert_eq!(j.judges[0].verdict, Verdict::Binary);
        let none = Judges::for_reward(&RewardExpr::Const { value: 1.0 }, &BTreeMap::new()).unwrap();
        assert!(none.is_empty() && none.screenshots() == 0);
    }

    /// A loopback judge that says SUCCESS when the answer is "42", counting its calls.
    async fn judge_server(calls: std::sync::Arc<std::sync::atomic::AtomicUsize>) -> String {
        use axum::routing::post;
        let app = axum::Router::new().route(
            "/v1/chat/completions",
            post(move |body: axum::Json<Json>| {
                let calls = calls.clone();
                async move {
                    calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let text = body.0.to_string();
                    let verdict =
                        if text.contains("Final response: 42") { "SUCCESS" } else { "NOT SUCCESS" };
                    axum::Json(serde_json::json!({"choices": [{"message": {"content": verdict}}]}))
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        format!("http://{addr}/v1")
    }

    fn episode(reason: &str, answer: &str) -> Trajectory {
        serde_json::from_value(serde_json::json!({
            "task_id": "t", "template": "x", "goal": "What is six times seven?", "agent": "policy",
            "steps": [{"observation": "task: …", "actions": [format!("answer {answer}")],
                       "feedback": "", "url": "/"}],
            "outcome": {"reason": reason, "message": "", "answer": answer, "success": false,
                        "detail": ""},
            "elapsed_ms": 1
        }))
        .unwrap()
    }

    #[tokio::test]
    async fn rollouts_ask_the_judge_only_on_the_branch_that_needs_it() {
        use crate::reward::RewardValue;
        use crate::rollout::{Scoring, score};
        let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let base_url = judge_server(calls.clone()).await;
        // if ended(completed) then judge(…) else -1
        let reward: RewardExpr = serde_json::from_value(serde_json::json!({
            "op": "if",
            "cond": {"op": "signal", "obj": {"ctor": "std::rewards::ended", "fields":
                {"reason": {"type": "enum", "value": "completed"}}}},
            "then": {"op": "signal", "obj": {"ctor": "std::rewards::judge", "fields": {
                "model": {"type": "str", "value": "local"},
                "base_url": {"type": "str", "value": base_url},
                "api_key_env": {"type": "str", "value": "WRL_TEST_NO_SUCH_KEY"},
                "screenshots": {"type": "num", "value": 0.0},
                "retries": {"type": "num", "value": 0.0}}}},
            "otherwise": {"op": "const", "value": -1.0}
        }))
        .unwrap();
        let rewards = BTreeMap::new();
        let judges = Judges::for_reward(&reward, &rewards).unwrap();
        let scoring = Scoring { reward: &reward, rewards: &rewards, judges: &judges };
        let count = || calls.load(std::sync::atomic::Ordering::SeqCst);
        assert_eq!(
            score(scoring, &episode("completed", "42"), None, &[]).await,
            RewardValue::Value(1.0)
        );
        assert_eq!(count(), 1);
        assert_eq!(
            score(scoring, &episode("completed", "41"), None, &[]).await,
            RewardValue::Value(0.0)
        );
        assert_eq!(count(), 2);
        assert_eq!(
            score(scoring, &episode("max_steps", "42"), None, &[]).await,
            RewardValue::Value(-1.0)
        );
        assert_eq!(count(), 2, "no judge call when the branch does not need one");
        // An unreachable judge leaves the sample out of the loss, with its failure class.
        let dead: RewardExpr = serde_json::from_value(serde_json::json!({
            "op": "signal", "obj": {"ctor": "std::rewards::judge", "fields": {
                "base_url": {"type": "str", "value": "http://127.0.0.1:9/v1"},
                "retries": {"type": "num", "value": 0.0}}}
        }))
        .unwrap();
        let judges = Judges::for_reward(&dead, &rewards).unwrap();
        let scoring = Scoring { reward: &dead, rewards: &rewards, judges: &judges };
        assert_eq!(
            score(scoring, &episode("completed", "42"), None, &[]).await,
            RewardValue::Excluded("judge_error".into())
        );
    }
}
