//! Rewards, evaluated exactly as the recipe typed them: the plan's expression (`Expr<Signal>`,
//! its signals decoded once) over what an episode did. Judges are HTTP calls, so they are asked
//! first ([`judges`]) and their verdicts passed in: evaluation itself is pure. Process rewards
//! score each step ([`process`]).

pub mod answers;
pub mod classes;
pub mod client;
pub mod endpoint;
mod failure;
pub mod format;
pub mod judges;
pub mod process;
pub mod prompts;
pub mod qa;
pub mod webjudge;

use std::collections::BTreeMap;

use wrl_plan::params::{AnswerMode, Signal};
use wrl_plan::{BinOp, Expr};
use wrl_sandbox::Ending;

pub use answers::{answer_score, glob, normalize};
pub use classes::Exclusion;

/// A reward expression with typed signals.
pub type RewardExpr = Expr<Signal>;

/// Reward nodes by id, for expressions that name other rewards.
pub type Rewards = BTreeMap<String, RewardExpr>;

/// The named components reward endpoints answered for one episode, by name (logged beside its
/// reward; empty without an endpoint).
pub type Components = BTreeMap<String, f64>;

/// What happened in an episode, as far as rewards can see.
#[derive(Clone, Debug)]
pub struct EpisodeFacts {
    /// How the episode ended (`ended(…)` names it through [`classes::ended`]).
    pub end_reason: Ending,
    /// The terminal answer.
    pub answer: Option<String>,
    /// The task's reference answer, if it has one.
    pub reference: Option<String>,
    /// The tool of every action the episode ran, in order (`search`, `visit`, `click`).
    pub tool_calls: Vec<String>,
    /// The sandbox/WebArena checker's verdict, when the task has a checker.
    pub checker: Option<bool>,
    /// The environment server's reward (`env_server`), summed over the episode's steps.
    pub env_reward: Option<f64>,
    /// The turns the agent wrote, as `format_ok` reads them.
    pub turns: Vec<format::TurnForm>,
    /// The final URL.
    pub url: String,
    /// The verdict of each judge signal (and reward endpoint) asked: a score, or why the call
    /// gave none (a judge's failure class, an endpoint's).
    pub judges: Vec<(Signal, Result<f64, Exclusion>)>,
    /// The step a process reward is evaluated on (`None` for an outcome reward).
    pub step: Option<StepFacts>,
}

/// What one step did, as process conditions see it (`process.rs` reads them off an episode).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepFacts {
    pub url_changed: bool,
    pub action_failed: bool,
    /// A click landed on an interactive element.
    pub dom_hit: bool,
    /// 1 − similarity of the screenshots before and after; `None` without screenshots.
    pub screen_change: Option<f64>,
    /// The screenshot after is pixel for pixel the one before (SSIM = 1); `None` without
    /// screenshots.
    pub screen_same: Option<bool>,
}

/// A reward value, or why the sample leaves the loss.
#[derive(Clone, Debug, PartialEq)]
pub enum RewardValue {
    Value(f64),
    /// Excluded from the loss (a judge timed out, failed, or answered nonsense; an excluded
    /// ending; a reward that could not be computed).
    Excluded(Exclusion),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum X {
    Num(f64),
    Bool(bool),
}

impl X {
    fn num(self) -> f64 {
        match self {
            X::Num(v) => v,
            X::Bool(b) => f64::from(u8::from(b)),
        }
    }
    fn truth(self) -> bool {
        match self {
            X::Num(v) => v != 0.0,
            X::Bool(b) => b,
        }
    }
}

/// Evaluates a reward expression; `rewards` resolves the reward nodes it names.
pub fn evaluate(expr: &RewardExpr, facts: &EpisodeFacts, rewards: &Rewards) -> RewardValue {
    match eval(expr, facts, rewards, 0) {
        Ok(x) => RewardValue::Value(x.num()),
        Err(why) => RewardValue::Excluded(why),
    }
}

fn eval(e: &RewardExpr, f: &EpisodeFacts, rewards: &Rewards, depth: usize) -> Result<X, Exclusion> {
    if depth > 64 {
        return Err(unscorable("reward declarations refer to each other too deeply"));
    }
    Ok(match e {
        Expr::Const { value } => X::Num(*value),
        Expr::Bool { value } => X::Bool(*value),
        Expr::Reward { node } => match rewards.get(node) {
            Some(r) => eval(r, f, rewards, depth + 1)?,
            None => return Err(unscorable(format!("unknown reward `{node}`"))),
        },
        Expr::Unary { neg: true, arg } => X::Num(-eval(arg, f, rewards, depth + 1)?.num()),
        Expr::Unary { neg: false, arg } => X::Bool(!eval(arg, f, rewards, depth + 1)?.truth()),
        Expr::If { cond, then, otherwise } => {
            // Only the branch taken is evaluated: a judge in the other branch is not needed.
            if eval(cond, f, rewards, depth + 1)?.truth() {
                eval(then, f, rewards, depth + 1)?
            } else {
                eval(otherwise, f, rewards, depth + 1)?
            }
        }
        Expr::Binary { bin, lhs, rhs } => {
            let a = eval(lhs, f, rewards, depth + 1)?;
            // `and`/`or` short-circuit, so `format_ok and judge(…)` skips an unneeded judge.
            match bin {
                BinOp::And if !a.truth() => return Ok(X::Bool(false)),
                BinOp::Or if a.truth() => return Ok(X::Bool(true)),
                BinOp::Mul if a.num() == 0.0 => return Ok(X::Num(0.0)),
                _ => {}
            }
            let b = eval(rhs, f, rewards, depth + 1)?;
            let (x, y) = (a.num(), b.num());
            match bin {
                BinOp::Add => X::Num(x + y),
                BinOp::Sub => X::Num(x - y),
                BinOp::Mul => X::Num(x * y),
                BinOp::Div => X::Num(if y == 0.0 { 0.0 } else { x / y }),
                BinOp::Eq => X::Bool(x == y),
                BinOp::Ne => X::Bool(x != y),
                BinOp::Lt => X::Bool(x < y),
                BinOp::Le => X::Bool(x <= y),
                BinOp::Gt => X::Bool(x > y),
                BinOp::Ge => X::Bool(x >= y),
                BinOp::And | BinOp::Or => X::Bool(b.truth()),
            }
        }
        Expr::Signal { obj } => signal(obj, f)?,
    })
}

/// A reward that cannot be computed, and why.
fn unscorable(why: impl Into<String>) -> Exclusion {
    Exclusion::Unscorable(why.into())
}

fn signal(s: &Signal, f: &EpisodeFacts) -> Result<X, Exclusion> {
    Ok(match s {
        Signal::Ended { reason } => X::Bool(classes::ended(f.end_reason) == *reason),
        Signal::FormatOk { mode } => X::Bool(format::ok(*mode, &f.turns)),
        Signal::TagsOk(rule) => X::Bool(format::tags_ok(rule, &f.turns)),
        Signal::TaskCheck => X::Bool(f.checker.unwrap_or(false)),
        Signal::EnvReward => X::Num(f.env_reward.unwrap_or(0.0)),
        Signal::AnswerMatch { mode: AnswerMode::Judge, .. } => return judged(s, f),
        Signal::AnswerMatch { mode, .. } => {
            X::Num(answer_score(*mode, f.answer.as_deref(), f.reference.as_deref()))
        }
        Signal::QaMatch(q) => X::Num(qa::score(q, f.answer.as_deref(), f.reference.as_deref())),
        Signal::Called { tool } => X::Bool(f.tool_calls.iter().any(|t| t == tool)),
        Signal::Calls { tool } => X::Num(f.tool_calls.iter().filter(|t| *t == tool).count() as f64),
        Signal::UrlMatch { pattern } => X::Bool(glob(pattern, &f.url)),
        Signal::Judge(_)
        | Signal::Webjudge(_)
        | Signal::Endpoint(_)
        | Signal::BboxHit
        | Signal::ActionMatch { .. }
        | Signal::EvalTypes(_) => {
            return judged(s, f);
        }
        Signal::UrlChanged
        | Signal::ActionFailed
        | Signal::DomHit
        | Signal::ScreenChanged { .. }
        | Signal::ScreenUnchanged
        | Signal::VlmProgress(_) => return step(s, f),
    })
}

/// A process condition, on the step being scored.
fn step(s: &Signal, f: &EpisodeFacts) -> Result<X, Exclusion> {
    let Some(st) = &f.step else {
        return Err(unscorable(format!(
            "the signal `{}` is per step; use it as a process reward",
            s.name()
        )));
    };
    Ok(X::Bool(match s {
        Signal::UrlChanged => st.url_changed,
        Signal::ActionFailed => st.action_failed,
        Signal::DomHit => st.dom_hit,
        Signal::ScreenChanged { threshold } => match st.screen_change {
            Some(c) => c > *threshold,
            None => return Err(unscorable("no screenshots to compare for `screen_changed`")),
        },
        Signal::ScreenUnchanged => match st.screen_same {
            Some(same) => same,
            None => return Err(unscorable("no screenshots to compare for `screen_unchanged`")),
        },
        other => {
            return Err(unscorable(format!("the signal `{}` is not per step", other.name())));
        }
    }))
}

fn judged(s: &Signal, f: &EpisodeFacts) -> Result<X, Exclusion> {
    match f.judges.iter().find(|(j, _)| j == s) {
        Some((_, Ok(v))) => Ok(X::Num(*v)),
        Some((_, Err(why))) => Err(why.clone()),
        None => Err(unscorable(format!("no result for `{}`", s.name()))),
    }
}

/// The signals of an expression (and the rewards it names) that need a judge call (or a reward
/// endpoint's), in order of appearance, each once.
pub fn judge_signals<'a>(e: &'a RewardExpr, rewards: &'a Rewards, out: &mut Vec<&'a Signal>) {
    match e {
        Expr::Signal { obj } => {
            let external = match obj {
                Signal::Judge(_) | Signal::Webjudge(_) | Signal::Endpoint(_) => true,
                Signal::AnswerMatch { mode, .. } => *mode == AnswerMode::Judge,
                _ => false,
            };
            if external && !out.contains(&obj) {
                out.push(obj);
            }
        }
        Expr::Reward { node } => {
            if let Some(r) = rewards.get(node) {
                judge_signals(r, rewards, out);
            }
        }
        Expr::Unary { arg, .. } => judge_signals(arg, rewards, out),
        Expr::Binary { lhs, rhs, .. } => {
            judge_signals(lhs, rewards, out);
            judge_signals(rhs, rewards, out);
        }
        Expr::If { cond, then, otherwise } => {
            judge_signals(cond, rewards, out);
            judge_signals(then, rewards, out);
            judge_signals(otherwise, rewards, out);
        }
        Expr::Const { .. } | Expr::Bool { .. } => {}
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use wrl_plan::params::{EndedReason, FailureClass, FormatMode, Judge, JudgeModel};
    use wrl_plan::params::{JudgePrompt, OnTimeout};
    use wrl_plan::params::{Seconds, Verdict};

    use super::*;

    pub(crate) fn sig(s: Signal) -> RewardExpr {
        Expr::Signal { obj: s }
    }

    /// The facts of an episode that ended as `end_reason` and did nothing else a reward reads.
    pub(crate) fn facts(end_reason: Ending) -> EpisodeFacts {
        EpisodeFacts {
            end_reason,
            answer: None,
            reference: None,
            tool_calls: Vec::new(),
            checker: None,
            env_reward: None,
            turns: Vec::new(),
            url: String::new(),
            judges: Vec::new(),
            step: None,
        }
    }

    fn bin(bin: BinOp, lhs: RewardExpr, rhs: RewardExpr) -> RewardExpr {
        Expr::Binary { bin, lhs: Box::new(lhs), rhs: Box::new(rhs) }
    }

    pub(crate) fn judge(base_url: &str) -> Judge {
        Judge {
            model: JudgeModel::Name("local".into()),
            screenshots: 3,
            verdict: Verdict::Binary,
            prompt: JudgePrompt::ActionHistory,
            base_url: base_url.into(),
            api_key_env: "WRL_TEST_NO_SUCH_KEY".into(),
            timeout: Seconds(30.0),
            retries: 0,
            backoff: wrl_plan::params::Backoff { first: Seconds(0.01), factor: 3.0 },
            concurrency: 8,
            seed: 42,
            on_timeout: OnTimeout::Exclude,
            tokens_per_call: None,
        }
    }

    /// OpenWebRL: −1 on format abort, else format gate × binary judge.
    #[test]
    fn openwebrl_reward_is_evaluated_as_written() {
        let j = Signal::Judge(judge("http://127.0.0.1:9/v1"));
        let e = Expr::If {
            cond: Box::new(sig(Signal::Ended { reason: EndedReason::FormatError })),
            then: Box::new(Expr::Const { value: -1.0 }),
            otherwise: Box::new(bin(
                BinOp::Mul,
                sig(Signal::FormatOk { mode: FormatMode::BrowserEnv }),
                sig(j.clone()),
            )),
        };
        let none = Rewards::new();
        let mut judges = Vec::new();
        judge_signals(&e, &none, &mut judges);
        assert_eq!(judges, vec![&j]);
        let mut f = facts(Ending::AgentError);
        assert_eq!(evaluate(&e, &f, &none), RewardValue::Value(-1.0));
        f.end_reason = Ending::Completed;
        f.turns = vec![format::TurnForm {
            text: "<tool_call>{}</tool_call>".into(),
            ..Default::default()
        }];
        assert_eq!(
            evaluate(&e, &f, &none),
            RewardValue::Value(0.0),
            "the judge is not needed when format fails"
        );
        f.turns[0].text = "</think><tool_call>{}</tool_call>".into();
        f.judges.push((j.clone(), Ok(1.0)));
        assert_eq!(evaluate(&e, &f, &none), RewardValue::Value(1.0));
        f.judges = vec![(j, Err(Exclusion::Class(FailureClass::JudgeTimeout)))];
        let timed_out = Exclusion::Class(FailureClass::JudgeTimeout);
        assert_eq!(evaluate(&e, &f, &none), RewardValue::Excluded(timed_out));
    }

    #[test]
    fn rewards_name_other_rewards_and_sum_weighted_signals() {
        let mut rewards = Rewards::new();
        rewards.insert("reward:solved".into(), sig(Signal::TaskCheck));
        let e = bin(
            BinOp::Add,
            bin(
                BinOp::Mul,
                Expr::Const { value: 0.1 },
                sig(Signal::FormatOk { mode: FormatMode::BrowserEnv }),
            ),
            bin(
                BinOp::Mul,
                Expr::Const { value: 0.9 },
                sig(Signal::AnswerMatch { mode: AnswerMode::Normalized, judge_model: None }),
            ),
        );
        let thought = "<think>x</think><tool_call>{}</tool_call>";
        let f = EpisodeFacts {
            turns: vec![format::TurnForm { text: thought.into(), malformed: false }],
            answer: Some(" Paris. ".into()),
            reference: Some("paris".into()),
            checker: Some(true),
            ..facts(Ending::Completed)
        };
        match evaluate(&e, &f, &rewards) {
            RewardValue::Value(v) => assert!((v - 1.0).abs() < 1e-12, "{v}"),
            other => panic!("{other:?}"),
        }
        let named = Expr::Reward { node: "reward:solved".into() };
        assert_eq!(evaluate(&named, &f, &rewards), RewardValue::Value(1.0));
        let missing = Expr::Reward { node: "reward:gone".into() };
        let unscorable = |v| matches!(v, RewardValue::Excluded(Exclusion::Unscorable(_)));
        assert!(unscorable(evaluate(&missing, &f, &rewards)));
        let per_step = sig(Signal::UrlChanged);
        assert!(unscorable(evaluate(&per_step, &f, &rewards)));
    }

    #[test]
    fn tool_use_is_counted_over_the_episode() {
        let f = EpisodeFacts {
            tool_calls: vec!["search".into(), "visit".into(), "search".into()],
            ..facts(Ending::Completed)
        };
        let rewards = Rewards::new();
        let called = |t: &str| sig(Signal::Called { tool: t.into() });
        let calls = |t: &str| sig(Signal::Calls { tool: t.into() });
        assert_eq!(evaluate(&calls("search"), &f, &rewards), RewardValue::Value(2.0));
        assert_eq!(evaluate(&calls("answer"), &f, &rewards), RewardValue::Value(0.0));
        assert_eq!(evaluate(&called("visit"), &f, &rewards), RewardValue::Value(1.0));
        assert_eq!(evaluate(&called("click"), &f, &rewards), RewardValue::Value(0.0));
    }
}
