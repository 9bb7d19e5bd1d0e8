//! New tasks like a given one: the same sandbox template with other values, and the checker
//! those values call for. An RL stage's `generate = from_failures(…)` makes them from the tasks
//! it fails (WebRL's curriculum, with the sandbox's generators in the LLM's place).

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::content::Content;
use crate::search_api::{is_qa_template, qa_task};
use crate::tasks::{Draw, TEMPLATES, Task, fnv, task_of};

/// Whether the sandbox can make tasks like `task` (its template is one of the sandbox's).
pub fn can_vary(task: &Task) -> bool {
    TEMPLATES.contains(&task.template.as_str()) || is_qa_template(&task.template)
}

/// Up to `n` tasks of `of`'s template and split over `content`, each asking something `of`
/// does not (and none asking what another does), drawn from a stream of `seed` and `of`'s
/// id; task `k` has id `{prefix}-{k}`. Fewer when the template's values run out; none when
/// the template is not the sandbox's. Same arguments, same tasks.
pub fn variants(content: &Content, of: &Task, n: usize, seed: u64, prefix: &str) -> Vec<Task> {
    if !can_vary(of) {
        return Vec::new();
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ fnv(&of.id).rotate_left(17));
    let mut out: Vec<Task> = Vec::with_capacity(n);
    // A few draws per task: values repeat in small pools.
    for _ in 0..n.saturating_mul(8) {
        if out.len() == n {
            break;
        }
        let id = format!("{prefix}-{}", out.len());
        let t = if is_qa_template(&of.template) {
            Some(qa_task(content, &of.template, of.split, &mut Draw::random(&mut rng), id))
        } else {
            task_of(content, &of.template, of.split, &mut rng, id)
        };
        if let Some(t) = t
            && t.goal != of.goal
            && out.iter().all(|o| o.goal != t.goal)
        {
            out.push(t);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::{Split, generate};

    #[test]
    fn variants_keep_the_template_and_split_and_change_the_question() {
        let c = Content::new(0);
        let tasks = generate(&c, Split::Train, 9, 3);
        let mut qa = crate::generate_qa(&c, Split::Test, 3, 1);
        let hops = [crate::Question::Compare, crate::Question::Chain, crate::Question::Difference];
        qa.extend(crate::generate_qa_of(&c, Split::Test, 3, 1, &hops));
        for of in tasks.iter().chain(&qa) {
            let v = variants(&c, of, 3, 7, &format!("{}~g1", of.id));
            assert_eq!(v.len(), 3, "{}", of.template);
            for (k, t) in v.iter().enumerate() {
                assert_eq!((t.template.as_str(), t.split), (of.template.as_str(), of.split));
                assert_eq!(t.id, format!("{}~g1-{k}", of.id));
                assert_ne!(t.goal, of.goal);
                assert_ne!(t.params, of.params, "other values");
            }
            assert_eq!(v, variants(&c, of, 3, 7, &format!("{}~g1", of.id)), "deterministic");
            assert_ne!(v, variants(&c, of, 3, 8, &format!("{}~g1", of.id)), "seeded");
        }
        let mut foreign = tasks[0].clone();
        foreign.template = "my_own".into();
        assert!(!can_vary(&foreign));
        assert!(variants(&c, &foreign, 3, 7, "x").is_empty());
    }
}
