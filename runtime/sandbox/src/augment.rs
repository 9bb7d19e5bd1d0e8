//! Value-substitution augmentation of demonstrations: a copy of an expert trajectory in which the
//! task's values (the product, town, post title, user, password and the expected answer) are
//! replaced, consistently in every goal, observation, action, feedback line and URL, by random
//! strings of the same shape. A small policy trained on such copies learns to *copy* a value
//! from the task or the page instead of memorising the values it saw, which is what held-out
//! tasks (whose values never appear in training) need.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::checker::Checker;
use crate::tasks::Task;
use crate::traj::Trajectory;

/// A random string of the same shape as `s`: each lowercase letter becomes a random lowercase
/// letter, uppercase an uppercase one, each digit a digit (a leading non-zero digit stays
/// non-zero); everything else (spaces, dots, dashes) is kept.
pub fn scramble(s: &str, rng: &mut ChaCha8Rng) -> String {
    let mut out = String::with_capacity(s.len());
    let mut prev_digit = false;
    for c in s.chars() {
        let n = if c.is_ascii_lowercase() {
            char::from(b'a' + rng.random_range(0..26u8))
        } else if c.is_ascii_uppercase() {
            char::from(b'A' + rng.random_range(0..26u8))
        } else if c.is_ascii_digit() {
            let lo = if !prev_digit && c != '0' { 1 } else { 0 };
            char::from(b'0' + rng.random_range(lo..10u8))
        } else {
            c
        };
        prev_digit = c.is_ascii_digit();
        out.push(n);
    }
    out
}

/// The forms a value takes in page text and URLs: as written, lowercased (URL slugs), with `+`
/// for spaces (search queries) and with `-` for spaces (slugs).
fn forms(v: &str) -> [String; 4] {
    let lower = v.to_lowercase();
    [v.to_string(), lower.clone(), v.replace(' ', "+"), lower.replace(' ', "-")]
}

/// Replaces whole-word occurrences of `from` (not preceded or followed by a letter or digit)
/// with `to`.
fn replace_word(text: &str, from: &str, to: &str) -> String {
    if from.is_empty() || !text.contains(from) {
        return text.to_string();
    }
    let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut before: Option<char> = None;
    while let Some(at) = rest.find(from) {
        let prev = rest[..at].chars().next_back().or(before);
        let next = rest[at + from.len()..].chars().next();
        out.push_str(&rest[..at]);
        if word(prev) || word(next) {
            out.push_str(from);
        } else {
            out.push_str(to);
        }
        before = from.chars().next_back();
        rest = &rest[at + from.len()..];
    }
    out.push_str(rest);
    out
}

/// The values of a task that a copy rewrites, longest first (so a title is replaced before a
/// word inside it).
fn values(task: &Task) -> Vec<String> {
    let mut vs: Vec<String> = task.params.values().cloned().collect();
    if let Checker::Answer { expected, .. } = &task.checker {
        // An answer that contains a parameter (the cheapest "red mug" for item "mug") changes
        // with it; one that does not (a price, a year, an author) gets its own substitute.
        if !task.params.values().any(|p| expected.contains(p.as_str())) {
            vs.push(expected.clone());
        }
    }
    vs.retain(|v| v.chars().any(|c| c.is_ascii_alphanumeric()));
    vs.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    vs.dedup();
    vs
}

/// A copy of `traj` (a demonstration of `task`) with the task's values replaced by random
/// strings of the same shape, in every text field. The copy's task id gets a `~N` suffix.
pub fn augment(traj: &Trajectory, task: &Task, copy: usize, rng: &mut ChaCha8Rng) -> Trajectory {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for v in values(task) {
        let new = scramble(&v, rng);
        for (from, to) in forms(&v).into_iter().zip(forms(&new)) {
            if !pairs.iter().any(|(f, _)| *f == from) {
                pairs.push((from, to));
            }
        }
    }
    let sub = |s: &str| -> String {
        // Two passes through placeholders, so a substitute never gets rewritten by a later pair.
        let mut t = s.to_string();
        for (i, (from, _)) in pairs.iter().enumerate() {
            t = replace_word(&t, from, &format!("\u{1}{i}\u{2}"));
        }
        for (i, (_, to)) in pairs.iter().enumerate() {
            t = t.replace(&format!("\u{1}{i}\u{2}"), to);
        }
        t
    };
    let mut out = traj.clone();
    out.task_id = format!("{}~{copy}", traj.task_id);
    out.goal = sub(&traj.goal);
    for step in &mut out.steps {
        step.observation = sub(&step.observation);
        step.actions = step.actions.iter().map(|a| sub(a)).collect();
        step.feedback = sub(&step.feedback);
        step.url = sub(&step.url);
    }
    out.outcome.answer = traj.outcome.answer.as_deref().map(sub);
    out.outcome.detail = sub(&traj.outcome.detail);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    use crate::content::Content;
    use crate::tasks::{Split, generate};
    use crate::traj::{TrajOutcome, TrajStep};

    fn step(obs: &str, act: &str, url: &str) -> TrajStep {
        TrajStep {
            observation: obs.into(),
            actions: vec![act.into()],
            feedback: String::new(),
            url: url.into(),
            screenshot: None,
            boxes: None,
            said: None,
            malformed: false,
        }
    }

    #[test]
    fn scramble_keeps_the_shape() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let s = scramble("Tips for night 78.42 mal439", &mut rng);
        assert_eq!(s.len(), 27);
        let shape = |s: &str| -> String {
            s.chars()
                .map(|c| match c {
                    'a'..='z' => 'a',
                    'A'..='Z' => 'A',
                    '0'..='9' => '1',
                    c => c,
                })
                .collect()
        };
        assert_eq!(shape(&s), shape("Tips for night 78.42 mal439"));
        assert_ne!(s, "Tips for night 78.42 mal439");
    }

    #[test]
    fn whole_words_only() {
        assert_eq!(replace_word("bob bobcat by bob.", "bob", "X"), "X bobcat by X.");
        assert_eq!(replace_word("q=grey+clock&x", "grey+clock", "a+b"), "q=a+b&x");
    }

    #[test]
    fn a_copy_rewrites_the_value_everywhere_consistently() {
        let c = Content::new(0);
        let task = generate(&c, Split::Train, 2, 0).remove(1);
        let product = task.params["product"].clone();
        let q = product.replace(' ', "+");
        let traj = Trajectory {
            task_id: task.id.clone(),
            template: task.template.clone(),
            goal: task.goal.clone(),
            agent: "expert".into(),
            steps: vec![
                step(
                    &format!("task: {}\n[3] textbox", task.goal),
                    &format!("type 3 {product}"),
                    "/shop/",
                ),
                step(&format!("url: /shop/search?q={q}\n[7] link \"{product}\""), "click 7", "/x"),
            ],
            outcome: TrajOutcome {
                reason: crate::Ending::Completed,
                message: String::new(),
                answer: None,
                success: true,
                detail: String::new(),
                reward: None,
            },
            elapsed_ms: 1,
        };
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let a = augment(&traj, &task, 1, &mut rng);
        let text = serde_json::to_string(&a).unwrap();
        assert!(!text.contains(&product), "{text}");
        let typed = a.steps[0].actions[0].strip_prefix("type 3 ").unwrap().to_string();
        assert!(a.goal.contains(&typed) && a.steps[1].observation.contains(&typed));
        assert!(a.steps[1].observation.contains(&typed.replace(' ', "+")));
        assert_eq!(a.steps[1].actions[0], "click 7");
        assert_eq!(a.task_id, format!("{}~1", task.id));
        // Same seed, same copy.
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        assert_eq!(augment(&traj, &task, 1, &mut rng), a);
    }
}
