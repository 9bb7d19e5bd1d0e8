//! Evaluating reward expressions exactly as the recipe typed them: signals from `std::rewards`
//! combined with arithmetic, comparisons, `and`/`or`/`not` and `if`. The expression arrives in
//! the plan as the checker's symbolic form; judge results are fetched first (they are HTTP
//! calls) and passed in, so evaluation itself is pure.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value as Json;

/// A reward expression, as serialised by the checker (`SigExpr`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum RewardExpr {
    Const { value: f64 },
    Bool { value: bool },
    Signal { obj: SignalObj },
    Reward { name: String },
    Unary { neg: bool, arg: Box<RewardExpr> },
    Binary { bin: String, lhs: Box<RewardExpr>, rhs: Box<RewardExpr> },
    If { cond: Box<RewardExpr>, then: Box<RewardExpr>, otherwise: Box<RewardExpr> },
}

/// A stdlib signal: its constructor and fields (checked values, defaults filled).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct SignalObj {
    pub ctor: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub fields: BTreeMap<String, Json>,
}

impl SignalObj {
    /// The plain value of a field: plan values are `{"type": …, "value": …}` (the checker's
    /// own serialisation wraps them once more in `{"v": …}`).
    pub fn field(&self, name: &str) -> Option<&Json> {
        let f = self.fields.get(name)?;
        let inner = f.get("v").unwrap_or(f);
        Some(inner.get("value").unwrap_or(inner))
    }

    pub fn field_str(&self, name: &str) -> Option<&str> {
        self.field(name).and_then(Json::as_str)
    }

    pub fn field_f64(&self, name: &str) -> Option<f64> {
        self.field(name).and_then(Json::as_f64)
    }

    /// The short constructor name (`std::rewards::judge` → `judge`).
    pub fn name(&self) -> &str {
        self.ctor.rsplit("::").next().unwrap_or(&self.ctor)
    }

    /// A key identifying this signal's configuration (for caching judge results).
    pub fn key(&self) -> String {
        format!("{}{}", self.ctor, serde_json::to_string(&self.fields).unwrap_or_default())
    }
}

/// What happened in an episode, as far as rewards can see.
#[derive(Clone, Debug, Default)]
pub struct EpisodeFacts {
    /// `completed`, `format_error`, `max_steps`, `truncated`, `env_error`, `aborted`, `timeout`.
    pub end_reason: String,
    /// The terminal answer.
    pub answer: Option<String>,
    /// The task's reference answer, if it has one.
    pub reference: Option<String>,
    /// The sandbox/WebArena checker's verdict, when the task has a checker.
    pub checker: Option<bool>,
    /// Whether every turn was well formed.
    pub format_ok: bool,
    /// The final URL.
    pub url: String,
    /// Judge results by signal key: `Ok(score)` or `Err(reason)`.
    pub judges: BTreeMap<String, Result<f64, String>>,
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
}

/// A reward value, or why the sample leaves the loss.
#[derive(Clone, Debug, PartialEq)]
pub enum RewardValue {
    Value(f64),
    /// Excluded from the loss (a judge timed out, failed, or answered nonsense).
    Excluded(String),
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

/// Evaluates a reward expression. `rewards` resolves `reward` declarations by name.
pub fn evaluate(
    expr: &RewardExpr,
    facts: &EpisodeFacts,
    rewards: &BTreeMap<String, RewardExpr>,
) -> RewardValue {
    match eval(expr, facts, rewards, 0) {
        Ok(x) => RewardValue::Value(x.num()),
        Err(why) => RewardValue::Excluded(why),
    }
}

fn eval(
    e: &RewardExpr,
    f: &EpisodeFacts,
    rewards: &BTreeMap<String, RewardExpr>,
    depth: usize,
) -> Result<X, String> {
    if depth > 64 {
        return Err("reward declarations refer to each other too deeply".into());
    }
    Ok(match e {
        RewardExpr::Const { value } => X::Num(*value),
        RewardExpr::Bool { value } => X::Bool(*value),
        RewardExpr::Reward { name } => match rewards.get(name) {
            Some(r) => eval(r, f, rewards, depth + 1)?,
            None => return Err(format!("unknown reward `{name}`")),
        },
        RewardExpr::Unary { neg: true, arg } => X::Num(-eval(arg, f, rewards, depth + 1)?.num()),
        RewardExpr::Unary { neg: false, arg } => {
            X::Bool(!eval(arg, f, rewards, depth + 1)?.truth())
        }
        RewardExpr::If { cond, then, otherwise } => {
            // Only the branch taken is evaluated: a judge in the other branch is not needed.
            if eval(cond, f, rewards, depth + 1)?.truth() {
                eval(then, f, rewards, depth + 1)?
            } else {
                eval(otherwise, f, rewards, depth + 1)?
            }
        }
        RewardExpr::Binary { bin, lhs, rhs } => {
            let a = eval(lhs, f, rewards, depth + 1)?;
            // `and`/`or` short-circuit, so `format_ok and judge(…)` skips an unneeded judge.
            match bin.as_str() {
                "and" if !a.truth() => return Ok(X::Bool(false)),
                "or" if a.truth() => return Ok(X::Bool(true)),
                "*" if a.num() == 0.0 => return Ok(X::Num(0.0)),
                _ => {}
            }
            let b = eval(rhs, f, rewards, depth + 1)?;
            let (x, y) = (a.num(), b.num());
            match bin.as_str() {
                "+" => X::Num(x + y),
                "-" => X::Num(x - y),
                "*" => X::Num(x * y),
                "/" => X::Num(if y == 0.0 { 0.0 } else { x / y }),
                "==" => X::Bool(x == y),
                "!=" => X::Bool(x != y),
                "<" => X::Bool(x < y),
                "<=" => X::Bool(x <= y),
                ">" => X::Bool(x > y),
                ">=" => X::Bool(x >= y),
                "and" | "or" => X::Bool(b.truth()),
                other => return Err(format!("unknown operator `{other}`")),
            }
        }
        RewardExpr::Signal { obj } => signal(obj, f)?,
    })
}

fn signal(s: &SignalObj, f: &EpisodeFacts) -> Result<X, String> {
    Ok(match s.name() {
        "ended" => X::Bool(s.field_str("reason").is_some_and(|r| r == f.end_reason)),
        "format_ok" => X::Bool(f.format_ok),
        "task_check" => X::Bool(f.checker.unwrap_or(false)),
        "answer_match" => {
            let mode = s.field_str("mode").unwrap_or("normalized");
            match mode {
                "judge" => return judged(s, f),
                _ => X::Num(answer_score(mode, f.answer.as_deref(), f.reference.as_deref())),
            }
        }
        "url_match" => X::Bool(s.field_str("pattern").is_some_and(|p| glob(p, &f.url))),
        "judge" | "webjudge" | "bbox_hit" | "action_match" => return judged(s, f),
        "url_changed" | "action_failed" | "dom_hit" | "screen_changed" => return step(s, f),
        other => return Err(format!("the signal `{other}` is not known to this runtime")),
    })
}

/// A process condition, on the step being scored.
fn step(s: &SignalObj, f: &EpisodeFacts) -> Result<X, String> {
    let Some(st) = &f.step else {
        return Err(format!("the signal `{}` is per step; use it as a process reward", s.name()));
    };
    Ok(X::Bool(match s.name() {
        "url_changed" => st.url_changed,
        "action_failed" => st.action_failed,
        "dom_hit" => st.dom_hit,
        _ => match st.screen_change {
            Some(c) => c > s.field_f64("threshold").unwrap_or(0.02),
            None => return Err("no screenshots to compare for `screen_changed`".into()),
        },
    }))
}

fn judged(s: &SignalObj, f: &EpisodeFacts) -> Result<X, String> {
    match f.judges.get(&s.key()) {
        Some(Ok(v)) => Ok(X::Num(*v)),
        Some(Err(why)) => Err(why.clone()),
        None => Err(format!("no result for `{}`", s.name())),
    }
}

/// Signals in an expression that need an external call (judges), in order, deduplicated.
pub fn judge_signals<'a>(
    e: &'a RewardExpr,
    rewards: &'a BTreeMap<String, RewardExpr>,
    out: &mut Vec<&'a SignalObj>,
) {
    match e {
        RewardExpr::Signal { obj } => {
            let external = matches!(obj.name(), "judge" | "webjudge")
                || (obj.name() == "answer_match" && obj.field_str("mode") == Some("judge"));
            if external && !out.iter().any(|o| o.key() == obj.key()) {
                out.push(obj);
            }
        }
        RewardExpr::Reward { name } => {
            if let Some(r) = rewards.get(name) {
                judge_signals(r, rewards, out);
            }
        }
        RewardExpr::Unary { arg, .. } => judge_signals(arg, rewards, out),
        RewardExpr::Binary { lhs, rhs, .. } => {
            judge_signals(lhs, rewards, out);
            judge_signals(rhs, rewards, out);
        }
        RewardExpr::If { cond, then, otherwise } => {
            judge_signals(cond, rewards, out);
            judge_signals(then, rewards, out);
            judge_signals(otherwise, rewards, out);
        }
        RewardExpr::Const { .. } | RewardExpr::Bool { .. } => {}
    }
}

/// Normalises an answer: lowercase, punctuation dropped, spaces collapsed.
pub fn normalize(s: &str) -> String {
    let kept: String = s
        .chars()
        .map(|c| if c.is_alphanumeric() || c == '.' { c.to_ascii_lowercase() } else { ' ' })
        .collect();
    kept.split_whitespace().collect::<Vec<_>>().join(" ").trim_end_matches('.').to_string()
}

/// Answer agreement: exact, normalised, or token F1.
pub fn answer_score(mode: &str, answer: Option<&str>, reference: Option<&str>) -> f64 {
    let (Some(a), Some(r)) = (answer, reference) else { return 0.0 };
    match mode {
        "exact" => f64::from(u8::from(a.trim() == r.trim())),
        "f1" => {
            let at: Vec<String> = normalize(a).split(' ').map(String::from).collect();
            let rt: Vec<String> = normalize(r).split(' ').map(String::from).collect();
            let mut pool = rt.clone();
            let common = at
                .iter()
                .filter(|t| {
                    pool.iter().position(|p| p == *t).map(|i| pool.swap_remove(i)).is_some()
                })
                .count();
            if common == 0 {
                return 0.0;
            }
            let p = common as f64 / at.len() as f64;
            let rc = common as f64 / rt.len() as f64;
            2.0 * p * rc / (p + rc)
        }
        _ => f64::from(u8::from(normalize(a) == normalize(r))),
    }
}

/// `*` matches any run of characters; everything else matches itself.
pub fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let mut rest = text;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            match rest.strip_prefix(part) {
                Some(r) => rest = r,
                None => return false,
            }
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(j: &str) -> RewardExpr {
        serde_json::from_str(j).unwrap()
    }

    /// OpenWebRL: −1 on format abort, else format gate × binary judge.
    const OPENWEBRL: &str = r#"{"op":"if",
        "cond":{"op":"signal","obj":{"ctor":"std::rewards::ended","kind":"condition","fields":{"reason":{"v":{"type":"enum","value":"format_error"}}}}},
        "then":{"op":"const","value":-1.0},
        "otherwise":{"op":"binary","bin":"*",
            "lhs":{"op":"signal","obj":{"ctor":"std::rewards::format_ok","kind":"signal","fields":{}}},
            "rhs":{"op":"signal","obj":{"ctor":"std::rewards::judge","kind":"signal","fields":{"screenshots":{"v":{"type":"num","value":3.0}}}}}}}"#;

    #[test]
    fn openwebrl_reward_is_evaluated_as_written() {
        let e = parse(OPENWEBRL);
        let none = BTreeMap::new();
        let mut judges = Vec::new();
        judge_signals(&e, &none, &mut judges);
        assert_eq!(judges.len(), 1);
        let key = judges[0].key();
        let mut f = EpisodeFacts { end_reason: "format_error".into(), ..Default::default() };
        assert_eq!(evaluate(&e, &f, &none), RewardValue::Value(-1.0));
        f.end_reason = "completed".into();
        f.format_ok = false;
        assert_eq!(
            evaluate(&e, &f, &none),
            RewardValue::Value(0.0),
            "the judge is not needed when format fails"
        );
        f.format_ok = true;
        f.judges.insert(key.clone(), Ok(1.0));
        assert_eq!(evaluate(&e, &f, &none), RewardValue::Value(1.0));
        f.judges.insert(key, Err("judge timed out".into()));
        assert_eq!(evaluate(&e, &f, &none), RewardValue::Excluded("judge timed out".into()));
    }

    #[test]
    fn plan_values_are_read_too() {
        let e = parse(
            r#"{"op":"if","cond":{"op":"signal","obj":{"ctor":"std::rewards::ended","kind":"condition",
            "fields":{"reason":{"type":"enum","value":"format_error"}}}},
            "then":{"op":"const","value":-1.0},"otherwise":{"op":"signal","obj":{"ctor":"std::rewards::task_check","fields":{}}}}"#,
        );
        let mut f = EpisodeFacts { end_reason: "format_error".into(), ..Default::default() };
        assert_eq!(evaluate(&e, &f, &BTreeMap::new()), RewardValue::Value(-1.0));
        f.end_reason = "completed".into();
        f.checker = Some(true);
        assert_eq!(evaluate(&e, &f, &BTreeMap::new()), RewardValue::Value(1.0));
    }

    #[test]
    fn weighted_sum_and_answers() {
        let e = parse(
            r#"{"op":"binary","bin":"+",
            "lhs":{"op":"binary","bin":"*","lhs":{"op":"const","value":0.1},"rhs":{"op":"signal","obj":{"ctor":"format_ok","fields":{}}}},
            "rhs":{"op":"binary","bin":"*","lhs":{"op":"const","value":0.9},"rhs":{"op":"signal","obj":{"ctor":"answer_match","fields":{"mode":{"v":{"type":"enum","value":"normalized"}}}}}}}"#,
        );
        let f = EpisodeFacts {
            format_ok: true,
            answer: Some(" Paris. ".into()),
            reference: Some("paris".into()),
            ..Default::default()
        };
        match evaluate(&e, &f, &BTreeMap::new()) {
            RewardValue::Value(v) => assert!((v - 1.0).abs() < 1e-12, "{v}"),
            other => panic!("{other:?}"),
        }
        assert!((answer_score("f1", Some("the red mug"), Some("red mug")) - 0.8).abs() < 1e-9);
        assert_eq!(answer_score("exact", Some("12.50"), Some("12.5")), 0.0);
        assert!(glob("http://*/cart*", "http://127.0.0.1:9/cart?x=1"));
        assert!(!glob("http://*/cart", "http://h/checkout"));
    }
}
