//! The judges a reward needs, called once per finished episode before the reward is evaluated:
//! one HTTP client per judge configuration (so its concurrency limit is shared by every rollout
//! worker), the episode rendered as the judge's input, and the verdicts keyed the way
//! `reward::evaluate` looks them up. Failures become "excluded" (or 0 with `on_timeout = zero`).
//! Reward endpoints (`endpoint.rs`) are asked the same way, at the same moment, and add the
//! components they answer.

use std::collections::BTreeMap;

use wrl_plan::params::{self, JudgeModel, JudgePrompt, OnTimeout, Signal};
use wrl_sandbox::Trajectory;

use super::client::{JudgeClient, JudgeConfig, JudgeError, JudgeInput, JudgeStep};
use super::endpoint::EndpointClient;
use super::prompts::{OneCall, Protocol};
use super::{Components, Exclusion, RewardExpr, Rewards, judge_signals};

#[derive(Clone, Debug)]
struct One {
    signal: Signal,
    client: JudgeClient,
    protocol: Protocol,
    timeout_is_zero: bool,
}

/// Every judge of a reward expression, ready to call.
#[derive(Clone, Debug, Default)]
pub struct Judges {
    judges: Vec<One>,
    /// The reward endpoints, each with its client.
    endpoints: Vec<(Signal, EndpointClient)>,
    screenshots: usize,
}

/// What the judges and endpoints said of one episode: each signal's score or why it has none
/// (for `EpisodeFacts::judges`), and the components the endpoints answered.
#[derive(Clone, Debug, Default)]
pub struct Asked {
    pub verdicts: Vec<(Signal, Result<f64, Exclusion>)>,
    pub components: Components,
}

/// The `api(…)` models of a plan by node id: a judge may name one as its model.
pub type ApiModels = BTreeMap<String, params::Api>;

/// A client's configuration for a judge's model: its own endpoint (`base_url`, the key in
/// `api_key_env`), or the `api` model it names.
fn endpoint(
    model: &JudgeModel,
    base_url: &str,
    api_key_env: &str,
    apis: &ApiModels,
) -> Result<JudgeConfig, String> {
    let (model, base_url, api_key_env) = match model {
        JudgeModel::Name(m) => (m.clone(), base_url.to_string(), api_key_env.to_string()),
        JudgeModel::Model(node) => match apis.get(node.id()) {
            Some(a) => (a.model.clone(), a.base_url.clone(), a.api_key_env.clone()),
            None => {
                return Err(format!(
                    "the judge's model `{node}` is not an `api(…)` model, and nothing serves it"
                ));
            }
        },
    };
    Ok(JudgeConfig { base_url, model, api_key_env, ..JudgeConfig::default() })
}

impl Judges {
    /// The judges `reward` (and the rewards it names) will ask, in order of appearance.
    pub fn for_reward(
        reward: &RewardExpr,
        rewards: &Rewards,
        apis: &ApiModels,
    ) -> Result<Judges, String> {
        let mut signals = Vec::new();
        judge_signals(reward, rewards, &mut signals);
        let mut out = Judges::default();
        let d = JudgeConfig::default();
        for s in signals {
            if let Signal::Endpoint(e) = s {
                out.endpoints.push((s.clone(), EndpointClient::new(e)?));
                continue;
            }
            let (cfg, protocol, timeout_is_zero) = match s {
                Signal::Judge(j) => {
                    let params::Judge {
                        model,
                        screenshots,
                        // The preflight refuses `score`; both prompts ask for SUCCESS / NOT
                        // SUCCESS, `webjudge` on the three axes.
                        verdict: _,
                        prompt,
                        base_url,
                        api_key_env,
                        timeout,
                        retries,
                        backoff,
                        concurrency,
                        seed,
                        on_timeout,
                        // Read only by `wrlc estimate`.
                        tokens_per_call: _,
                    } = j;
                    let cfg = JudgeConfig {
                        timeout: timeout.duration(),
                        retries: *retries,
                        backoff: backoff.first.duration(),
                        backoff_factor: backoff.factor,
                        concurrency: (*concurrency).max(1) as usize,
                        seed: *seed,
                        screenshots: *screenshots as usize,
                        ..endpoint(model, base_url, api_key_env, apis)?
                    };
                    let protocol = match prompt {
                        JudgePrompt::Webjudge => {
                            return Err("`judge(prompt = webjudge)` is not run by this runtime \
                                        (the preflight refuses it, E0502): `webjudge(…)` is \
                                        OpAgent's WebJudge"
                                .into());
                        }
                        JudgePrompt::Agenttrek => Protocol::One(OneCall::AgentTrek),
                        JudgePrompt::Webvoyager => Protocol::One(OneCall::WebVoyager),
                        JudgePrompt::ActionHistory => Protocol::One(OneCall::ActionHistory),
                        JudgePrompt::Deepshop => {
                            return Err("the `deepshop` judge protocol is not run by this \
                                        runtime (the preflight refuses it, E0502)"
                                .into());
                        }
                    };
                    (cfg, protocol, *on_timeout == OnTimeout::Zero)
                }
                Signal::Webjudge(w) => {
                    let params::Webjudge {
                        model,
                        screenshots,
                        history,
                        max_side,
                        weights,
                        base_url,
                        api_key_env,
                        timeout,
                        retries,
                        backoff,
                        concurrency,
                        seed,
                        // Read only by `wrlc estimate`.
                        tokens_per_call: _,
                    } = w;
                    let cfg = JudgeConfig {
                        timeout: timeout.duration(),
                        retries: *retries,
                        backoff: backoff.first.duration(),
                        backoff_factor: backoff.factor,
                        seed: *seed,
                        concurrency: (*concurrency).max(1) as usize,
                        screenshots: *screenshots as usize,
                        ..endpoint(model, base_url, api_key_env, apis)?
                    };
                    let cfg = JudgeConfig {
                        axes: (weights.completion, weights.action, weights.efficiency),
                        ..cfg
                    };
                    let protocol =
                        Protocol::WebJudge { history: *history as usize, max_side: max_side.0 };
                    (cfg, protocol, false)
                }
                Signal::AnswerMatch { judge_model, .. } => {
                    let model = judge_model
                        .clone()
                        .ok_or("`answer_match(mode: judge)` needs a `judge_model`")?;
                    (
                        endpoint(&model, &d.base_url, &d.api_key_env, apis)?,
                        Protocol::One(OneCall::Plain),
                        false,
                    )
                }
                other => return Err(format!("`{}` is not a judge", other.name())),
            };
            let client = JudgeClient::new(cfg.clone()).map_err(|e| e.to_string())?;
            out.screenshots = out.screenshots.max(cfg.screenshots);
            out.judges.push(One { signal: s.clone(), client, protocol, timeout_is_zero });
        }
        Ok(out)
    }

    /// Whether no judge (nor endpoint) is needed.
    pub fn is_empty(&self) -> bool {
        self.judges.is_empty() && self.endpoints.is_empty()
    }

    /// How many of an episode's last screenshots the judges look at (0: take none).
    pub fn screenshots(&self) -> usize {
        self.screenshots
    }

    /// Asks every judge and endpoint about one episode (`reference`: the task's reference
    /// answers, as one string): each signal's verdict, for `EpisodeFacts::judges` (a failed
    /// call is `Err(why)`), and the endpoints' components.
    pub async fn judge(
        &self,
        traj: &Trajectory,
        reference: Option<&str>,
        screenshots: &[Vec<u8>],
    ) -> Asked {
        let input = JudgeInput {
            task: traj.goal.clone(),
            steps: traj
                .steps
                .iter()
                .map(|s| JudgeStep { actions: s.actions.clone(), feedback: s.feedback.clone() })
                .collect(),
            answer: traj.outcome.answer.clone(),
            screenshots: screenshots.to_vec(),
        };
        let mut out = Asked::default();
        for j in &self.judges {
            let r = match j.client.verdict(&input, j.protocol).await {
                Ok(v) => Ok(v),
                Err(JudgeError::Timeout) if j.timeout_is_zero => Ok(0.0),
                Err(e) => Err(Exclusion::Class(e.class())),
            };
            out.verdicts.push((j.signal.clone(), r));
        }
        let references = reference.map(|r| super::qa::references(r, "")).unwrap_or_default();
        for (signal, client) in &self.endpoints {
            let r = match client.score(traj, &references).await {
                Ok(a) => {
                    out.components.extend(a.components);
                    Ok(a.score)
                }
                Err(e) => Err(Exclusion::Endpoint(e)),
            };
            out.verdicts.push((signal.clone(), r));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value as Json;
    use wrl_plan::Expr;
    use wrl_plan::params::{EndedReason, JudgeModel, NodeRef, Seconds, Tokens};

    use super::*;
    use crate::reward::tests::{judge, sig};

    #[test]
    fn configuration_is_read_from_the_signal() {
        let mut j = judge("http://127.0.0.1:9/v1");
        j.screenshots = 5;
        j.on_timeout = OnTimeout::Zero;
        let e = sig(Signal::Judge(j.clone()));
        let js = Judges::for_reward(&e, &Rewards::new(), &ApiModels::new()).unwrap();
        assert_eq!(js.screenshots(), 5);
        assert_eq!(js.judges.len(), 1);
        assert!(js.judges[0].timeout_is_zero);
        assert_eq!(js.judges[0].protocol, Protocol::One(OneCall::ActionHistory));
        let none =
            Judges::for_reward(&Expr::Const { value: 1.0 }, &Rewards::new(), &ApiModels::new())
                .unwrap();
        assert!(none.is_empty() && none.screenshots() == 0);
        // A judge may name an `api` model; one that names anything else has no endpoint.
        j.model = JudgeModel::Model(NodeRef("model:frontier".into()));
        let e = sig(Signal::Judge(j));
        assert!(Judges::for_reward(&e, &Rewards::new(), &ApiModels::new()).is_err());
        let mut apis = ApiModels::new();
        let api = params::Api {
            model: "gemini".into(),
            base_url: "http://127.0.0.1:9/v1".into(),
            api_key_env: "K".into(),
            context: Tokens(1000),
            timeout: Seconds(1.0),
            retries: 0,
            concurrency: 1,
            temperature: 0.0,
            image_tokens: Tokens(0),
        };
        apis.insert("model:frontier".into(), api);
        let js = Judges::for_reward(&e, &Rewards::new(), &apis).unwrap();
        assert_eq!(js.judges.len(), 1);
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
                    let verdict = if text.contains("Result Response: 42") {
                        "SUCCESS"
                    } else {
                        "NOT SUCCESS"
                    };
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
        use crate::reward::{Exclusion, RewardValue};
        use crate::rollout::{Scoring, score};
        let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let base_url = judge_server(calls.clone()).await;
        // if ended(completed) then judge(…) else -1
        let mut j = judge(&base_url);
        j.screenshots = 0;
        let reward = Expr::If {
            cond: Box::new(sig(Signal::Ended { reason: EndedReason::Completed })),
            then: Box::new(sig(Signal::Judge(j))),
            otherwise: Box::new(Expr::Const { value: -1.0 }),
        };
        let rewards = Rewards::new();
        let judges = Judges::for_reward(&reward, &rewards, &ApiModels::new()).unwrap();
        let scoring = Scoring { reward: &reward, rewards: &rewards, judges: &judges };
        let count = || calls.load(std::sync::atomic::Ordering::SeqCst);
        assert_eq!(
            score(scoring, &episode("completed", "42"), None, &[]).await.0,
            RewardValue::Value(1.0)
        );
        assert_eq!(count(), 1);
        assert_eq!(
            score(scoring, &episode("completed", "41"), None, &[]).await.0,
            RewardValue::Value(0.0)
        );
        assert_eq!(count(), 2);
        assert_eq!(
            score(scoring, &episode("max_steps", "42"), None, &[]).await.0,
            RewardValue::Value(-1.0)
        );
        assert_eq!(count(), 2, "no judge call when the branch does not need one");
        // An unreachable judge leaves the sample out of the loss, with its failure class.
        let dead = sig(Signal::Judge(judge("http://127.0.0.1:9/v1")));
        let judges = Judges::for_reward(&dead, &rewards, &ApiModels::new()).unwrap();
        let scoring = Scoring { reward: &dead, rewards: &rewards, judges: &judges };
        assert_eq!(
            score(scoring, &episode("completed", "42"), None, &[]).await.0,
            RewardValue::Excluded(Exclusion::Class(params::FailureClass::JudgeError))
        );
    }
}
