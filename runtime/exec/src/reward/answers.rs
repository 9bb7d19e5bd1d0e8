//! Comparing an agent's answer with a task's reference: exactly, normalised (case, spaces and
//! punctuation), or by token F1; and the glob patterns `url_match` uses.

use wrl_plan::params::AnswerMode;

/// Normalises an answer: lowercase, punctuation dropped, spaces collapsed.
pub fn normalize(s: &str) -> String {
    let kept: String = s
        .chars()
        .map(|c| if c.is_alphanumeric() || c == '.' { c.to_ascii_lowercase() } else { ' ' })
        .collect();
    kept.split_whitespace().collect::<Vec<_>>().join(" ").trim_end_matches('.').to_string()
}

/// Answer agreement: exact, normalised, or token F1 (`judge` is asked of a judge instead, and
/// reads here as normalised).
pub fn answer_score(mode: AnswerMode, answer: Option<&str>, reference: Option<&str>) -> f64 {
    let (Some(a), Some(r)) = (answer, reference) else { return 0.0 };
    match mode {
        AnswerMode::Exact => f64::from(u8::from(a.trim() == r.trim())),
        AnswerMode::F1 => {
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
        AnswerMode::Normalized | AnswerMode::Judge => {
            f64::from(u8::from(normalize(a) == normalize(r)))
        }
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

    #[test]
    fn answers_and_globs() {
        assert_eq!(answer_score(AnswerMode::Normalized, Some(" Paris. "), Some("paris")), 1.0);
        let f1 = answer_score(AnswerMode::F1, Some("the red mug"), Some("red mug"));
        assert!((f1 - 0.8).abs() < 1e-9, "{f1}");
        assert_eq!(answer_score(AnswerMode::Exact, Some("12.50"), Some("12.5")), 0.0);
        assert_eq!(answer_score(AnswerMode::Exact, None, Some("12.5")), 0.0);
        assert!(glob("http://*/cart*", "http://127.0.0.1:9/cart?x=1"));
        assert!(!glob("http://*/cart", "http://h/checkout"));
        assert!(glob("exact", "exact") && !glob("exact", "exactly"));
    }
}
