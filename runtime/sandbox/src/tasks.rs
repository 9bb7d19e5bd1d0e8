//! Templated sandbox tasks with a train/test split over values, generated from a seed.
//!
//! Each template draws one value (a product, an item, a town, a post, a user). Values are
//! split once, independent of the seed: about a quarter of each pool (chosen by a fixed hash
//! of the value's name) is test-only, so a test task never names a value seen in training.
//! Training values are drawn at random; held-out ones are dealt, every goal before a repeat.

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::checker::{AnswerMode, Checker};
use crate::content::{Content, ITEMS};

/// Train or test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    /// Values used for training.
    Train,
    /// Held-out values, never in `Train`.
    Test,
}

impl std::str::FromStr for Split {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "train" => Ok(Split::Train),
            "test" => Ok(Split::Test),
            other => Err(format!("unknown split {other:?}: use train or test")),
        }
    }
}

impl std::fmt::Display for Split {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Split::Train => "train",
            Split::Test => "test",
        })
    }
}

/// One task: one line of the task JSONL (see `docs/sandbox.md`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// Unique id, e.g. `train-7-00012` (split, seed, index).
    pub id: String,
    /// Split this task belongs to.
    pub split: Split,
    /// Template name, e.g. `shop_price`.
    pub template: String,
    /// Site the task starts on: `shop`, `forum` or `wiki`.
    pub site: String,
    /// Start path on the sandbox, e.g. `/shop/` (join with the sandbox base URL).
    pub start_path: String,
    /// The instruction shown to the agent.
    pub goal: String,
    /// Template parameters (sorted), used by the scripted expert.
    pub params: BTreeMap<String, String>,
    /// Success test.
    pub checker: Checker,
    /// Step budget.
    pub max_steps: u32,
    /// Seed of the sandbox content this task refers to.
    pub content_seed: u64,
}

impl Task {
    /// `start_path` is a path on the sandbox (`/shop/`), or empty (a task that opens no page):
    /// it is appended to the sandbox's `http://127.0.0.1:PORT`, so anything else changes the
    /// URL's host — `@127.0.0.2:9/x` makes the sandbox's address the user part of a URL to
    /// 127.0.0.2 — and the episode would open on a page the allow-list blocks.
    pub fn check_start_path(&self) -> Result<(), String> {
        let p = &self.start_path;
        if p.is_empty() || p.starts_with('/') {
            return Ok(());
        }
        Err(format!(
            "`{p}` is not a path on the sandbox: it must start with `/` (`/shop/`), or be empty"
        ))
    }
}

/// Template names, in generation order.
pub const TEMPLATES: [&str; 9] = [
    "shop_price",
    "shop_cart",
    "shop_cheapest",
    "wiki_founded",
    "wiki_population",
    "wiki_open",
    "forum_upvote",
    "forum_author",
    "forum_login",
];

/// FNV-1a of a string: a hash that is stable across runs, platforms and Rust versions (the
/// train/test split, and the runtime's sampling streams, are derived from it).
pub fn fnv(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Splits `names` (indices into a pool) into (train, test): the quarter with the smallest hash
/// (rounded up, at least one) is test.
pub fn split_pool(names: &[String]) -> (Vec<usize>, Vec<usize>) {
    let mut order: Vec<usize> = (0..names.len()).collect();
    order.sort_by_key(|&i| (fnv(&names[i]), i));
    let n_test = names.len().div_ceil(4).max(1).min(names.len());
    let mut test: Vec<usize> = order[..n_test].to_vec();
    let mut train: Vec<usize> = order[n_test..].to_vec();
    test.sort_unstable();
    train.sort_unstable();
    (train, test)
}

pub(crate) fn pick(pool: &[String], split: Split, rng: &mut ChaCha8Rng) -> usize {
    let (train, test) = split_pool(pool);
    let side = match split {
        Split::Train => &train,
        Split::Test => &test,
    };
    let side = if side.is_empty() { &train } else { side };
    side[rng.random_range(0..side.len())]
}

/// How a generated task draws its value. Training tasks draw any training value at random; held-out
/// tasks are dealt: each template's test values shuffled, every one dealt before any repeats, so
/// a held-out set holds as many distinct goals as its templates' pools allow (a random draw of
/// 256 from ~105 held-out goals holds ~85; repeats of a goal are not independent tasks).
pub(crate) struct Draw<'r> {
    pub(crate) rng: &'r mut ChaCha8Rng,
    /// Each template's undealt test values (`None`: draw at random, as training does).
    decks: Option<BTreeMap<String, Vec<usize>>>,
}

impl<'r> Draw<'r> {
    /// Every value at random from its split.
    pub(crate) fn random(rng: &'r mut ChaCha8Rng) -> Self {
        Draw { rng, decks: None }
    }

    /// Held-out values dealt per template; training values at random.
    pub(crate) fn dealt(rng: &'r mut ChaCha8Rng) -> Self {
        Draw { rng, decks: Some(BTreeMap::new()) }
    }

    /// One value of `pool` for a task of `template`.
    pub(crate) fn pick(&mut self, template: &str, pool: &[String], split: Split) -> usize {
        let side = || {
            let (train, test) = split_pool(pool);
            if test.is_empty() { train } else { test }
        };
        match self.deal(template, split, side) {
            Some(v) => v,
            None => pick(pool, split, self.rng),
        }
    }

    /// The next of `key`'s held-out values when held-out values are dealt: `side()` (values, as
    /// indices) shuffled, every one dealt before any repeats; `None` for a training draw or a
    /// random one, which the caller makes as it always has (so training draws never change).
    pub(crate) fn deal(
        &mut self,
        key: &str,
        split: Split,
        side: impl FnOnce() -> Vec<usize>,
    ) -> Option<usize> {
        let decks = self.decks.as_mut().filter(|_| split == Split::Test)?;
        let deck = decks.entry(key.to_string()).or_default();
        if deck.is_empty() {
            *deck = side();
            rand::seq::SliceRandom::shuffle(deck.as_mut_slice(), self.rng);
        }
        deck.pop()
    }
}

fn params(kv: &[(&str, String)]) -> BTreeMap<String, String> {
    kv.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

/// The template-specific part of a task.
struct Draft {
    site: String,
    start: String,
    goal: String,
    params: BTreeMap<String, String>,
    checker: Checker,
    max_steps: u32,
}

/// Builds one task of `template` for a split.
fn build(content: &Content, template: &str, split: Split, draw: &mut Draw<'_>) -> Option<Draft> {
    let products: Vec<String> = content.products.iter().map(|p| p.name.clone()).collect();
    let towns: Vec<String> = content.towns.iter().map(|t| t.name.clone()).collect();
    let posts: Vec<String> = content.posts.iter().map(|p| p.title.clone()).collect();
    let users: Vec<String> = content.users.iter().map(|u| u.name.to_string()).collect();
    let items: Vec<String> = ITEMS.iter().map(|(i, _)| i.to_string()).collect();
    let t = match template {
        "shop_price" => {
            let p = &content.products[draw.pick(template, &products, split)];
            (
                "shop",
                "/shop/",
                format!("What is the price of the {}?", p.name),
                params(&[("product", p.name.clone())]),
                Checker::Answer { expected: p.price(), mode: AnswerMode::Number },
                6,
            )
        }
        "shop_cart" => {
            let p = &content.products[draw.pick(template, &products, split)];
            (
                "shop",
                "/shop/",
                format!("Add the {} to the cart.", p.name),
                params(&[("product", p.name.clone())]),
                Checker::CartContains { product_id: p.id },
                8,
            )
        }
        "shop_cheapest" => {
            let item = &items[draw.pick(template, &items, split)];
            let cheapest = content
                .products
                .iter()
                .filter(|p| p.item == item.as_str())
                .min_by_key(|p| (p.price_cents, p.id))?;
            (
                "shop",
                "/shop/",
                format!("What is the cheapest {item}? Answer with its name."),
                params(&[("item", item.clone())]),
                Checker::Answer { expected: cheapest.name.clone(), mode: AnswerMode::Text },
                6,
            )
        }
        "wiki_founded" | "wiki_population" | "wiki_open" => {
            let town = &content.towns[draw.pick(template, &towns, split)];
            let (goal, checker) = match template {
                "wiki_founded" => (
                    format!("In what year was {} founded?", town.name),
                    Checker::Answer {
                        expected: town.founded.to_string(),
                        mode: AnswerMode::Number,
                    },
                ),
                "wiki_population" => (
                    format!("What is the population of {}?", town.name),
                    Checker::Answer {
                        expected: town.population.to_string(),
                        mode: AnswerMode::Number,
                    },
                ),
                _ => (
                    format!("Open the wiki article about {}.", town.name),
                    Checker::Url { path: format!("/wiki/article/{}", town.slug) },
                ),
            };
            ("wiki", "/wiki/", goal, params(&[("town", town.name.clone())]), checker, 6)
        }
        "forum_upvote" => {
            let p = &content.posts[draw.pick(template, &posts, split)];
            (
                "forum",
                "/forum/",
                format!("Upvote the forum post \"{}\".", p.title),
                params(&[("title", p.title.clone())]),
                Checker::Voted { post_id: p.id },
                6,
            )
        }
        "forum_author" => {
            let p = &content.posts[draw.pick(template, &posts, split)];
            (
                "forum",
                "/forum/",
                format!("Who wrote the forum post \"{}\"?", p.title),
                params(&[("title", p.title.clone())]),
                Checker::Answer { expected: p.author.to_string(), mode: AnswerMode::Text },
                6,
            )
        }
        "forum_login" => {
            let u = &content.users[draw.pick(template, &users, split)];
            (
                "forum",
                "/forum/login",
                format!("Log in to the forum as {} with password {}.", u.name, u.password),
                params(&[("user", u.name.to_string()), ("password", u.password.clone())]),
                Checker::LoggedIn { user: u.name.to_string() },
                6,
            )
        }
        _ => return None,
    };
    Some(Draft {
        site: t.0.to_string(),
        start: t.1.to_string(),
        goal: t.2,
        params: t.3,
        checker: t.4,
        max_steps: t.5,
    })
}

/// Generates `count` tasks of `split` over `content`, cycling through [`TEMPLATES`] in order
/// (so every template is covered), drawing values with a generator seeded by `seed`.
/// Same arguments, same tasks.
pub fn generate(content: &Content, split: Split, count: usize, seed: u64) -> Vec<Task> {
    generate_on(content, split, count, seed, &["shop", "forum", "wiki"])
}

/// The site a template's tasks start on (the part of its name before `_`).
pub fn template_site(template: &str) -> &str {
    template.split('_').next().unwrap_or(template)
}

/// Like [`generate`], over the templates of `sites` only (`shop`, `forum`, `wiki`); no tasks
/// when none of them is a sandbox site.
pub fn generate_on(
    content: &Content,
    split: Split,
    count: usize,
    seed: u64,
    sites: &[&str],
) -> Vec<Task> {
    let templates: Vec<&str> =
        TEMPLATES.iter().copied().filter(|t| sites.contains(&template_site(t))).collect();
    if templates.is_empty() {
        return Vec::new();
    }
    let mut rng =
        ChaCha8Rng::seed_from_u64(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (split as u64 + 1));
    let mut draw = Draw::dealt(&mut rng);
    (0..count)
        .filter_map(|index| {
            let template = templates[index % templates.len()];
            task_drawn(content, template, split, &mut draw, format!("{split}-{seed}-{index:05}"))
        })
        .collect()
}

/// One task of `template` over `content` (its values of `split` drawn with `rng`), with id
/// `id`; `None` for a template the sandbox does not have, or one these values cannot make.
pub(crate) fn task_of(
    content: &Content,
    template: &str,
    split: Split,
    rng: &mut ChaCha8Rng,
    id: String,
) -> Option<Task> {
    task_drawn(content, template, split, &mut Draw::random(rng), id)
}

/// [`task_of`] with its value drawn by `draw`.
fn task_drawn(
    content: &Content,
    template: &str,
    split: Split,
    draw: &mut Draw<'_>,
    id: String,
) -> Option<Task> {
    let Draft { site, start, goal, params, checker, max_steps } =
        build(content, template, split, draw)?;
    Some(Task {
        id,
        split,
        template: template.to_string(),
        site,
        start_path: start,
        goal,
        params,
        checker,
        max_steps,
        content_seed: content.seed,
    })
}

/// Reads task JSONL (one task per non-empty line); errors name the line.
pub fn parse_jsonl(text: &str) -> Result<Vec<Task>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| serde_json::from_str(l).map_err(|e| format!("line {}: {e}", i + 1)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_is_deterministic_and_covers_templates() {
        let c = Content::new(3);
        let a = generate(&c, Split::Train, 27, 5);
        let b = generate(&c, Split::Train, 27, 5);
        assert_eq!(a, b);
        assert_eq!(a.len(), 27);
        for t in TEMPLATES {
            assert_eq!(a.iter().filter(|x| x.template == t).count(), 3, "{t}");
        }
        let line = serde_json::to_string(&a[0]).unwrap();
        assert_eq!(parse_jsonl(&line).unwrap()[0], a[0]);
    }

    #[test]
    fn test_split_values_never_appear_in_train() {
        let c = Content::new(11);
        let train = generate(&c, Split::Train, 900, 1);
        let test = generate(&c, Split::Test, 900, 2);
        let vals = |ts: &[Task]| -> std::collections::BTreeSet<(String, String)> {
            ts.iter()
                .flat_map(|t| t.params.iter().map(|(k, v)| (k.clone(), v.clone())))
                .filter(|(k, _)| k != "password")
                .collect()
        };
        let (tr, te) = (vals(&train), vals(&test));
        assert!(!te.is_empty());
        assert!(tr.is_disjoint(&te), "overlap: {:?}", tr.intersection(&te).next());
    }

    #[test]
    fn held_out_tasks_deal_every_goal_before_repeating_one() {
        use std::collections::BTreeSet;
        let c = Content::new(7);
        let sites = ["shop", "wiki"];
        // Each template's held-out goals, from a draw far larger than its pool.
        let pool = generate_on(&c, Split::Test, 5000, 1, &sites);
        let goals = |ts: &[Task], t: &str| -> BTreeSet<String> {
            ts.iter().filter(|x| x.template == t).map(|x| x.goal.clone()).collect()
        };
        for count in [64, 256] {
            let test = generate_on(&c, Split::Test, count, 100, &sites);
            assert_eq!(test.len(), count);
            for t in TEMPLATES.iter().filter(|t| sites.contains(&template_site(t))) {
                let dealt = test.iter().filter(|x| x.template == *t).count();
                let all = goals(&pool, t);
                assert!(goals(&test, t).is_subset(&all), "{t}");
                // Every goal once before any twice.
                assert_eq!(goals(&test, t).len(), dealt.min(all.len()), "{t}: {count}");
            }
        }
        // Another seed deals another order.
        let a = generate_on(&c, Split::Test, 64, 100, &sites);
        assert_ne!(a, generate_on(&c, Split::Test, 64, 101, &sites));
    }

    #[test]
    fn sites_choose_the_templates() {
        let c = Content::new(3);
        let a = generate_on(&c, Split::Train, 10, 5, &["wiki", "shop"]);
        assert_eq!(a.len(), 10);
        assert!(a.iter().all(|t| t.site == "wiki" || t.site == "shop"));
        assert!(a.iter().any(|t| t.site == "wiki") && a.iter().any(|t| t.site == "shop"));
        assert!(generate_on(&c, Split::Train, 10, 5, &["news"]).is_empty());
        for t in TEMPLATES {
            let task = generate_on(&c, Split::Test, 9, 1, &["shop", "forum", "wiki"])
                .into_iter()
                .find(|x| x.template == t)
                .unwrap();
            assert_eq!(template_site(t), task.site);
        }
    }

    #[test]
    fn bad_jsonl_names_the_line() {
        let err = parse_jsonl("\n{\"id\":1}").unwrap_err();
        assert!(err.starts_with("line 2:"), "{err}");
    }
}
