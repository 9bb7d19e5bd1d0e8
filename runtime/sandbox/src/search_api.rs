//! The sandbox's search API (`std::sandbox::search`): the plain-text `search` and `visit`
//! endpoints a search agent such as WebDancer calls instead of driving a browser, the QA pairs
//! over the wiki that such an agent answers, and the scripted search expert that answers them.
//!
//! The protocol (docs/sandbox.md, "The search API") is the one `wrlc run` speaks to any
//! `search_api(base_url)`: `GET {base}/search?q=…` and `GET {base}/visit?url=…&goal=…`, both
//! answering `text/plain`.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;

use crate::checker::{AnswerMode, Checker};
use crate::content::Content;
use crate::hops::{HOP_TEMPLATES, Question, hop_action, hop_pair, hop_template};
pub(crate) use crate::ranking::words;
pub use crate::ranking::{Hit, MAX_HITS, render_hits, search};
use crate::site::Site;
use crate::tasks::{Draw, Split, Task};

/// Templates of the one-hop QA pairs ([`Question::Lookup`]), in generation order.
pub const QA_TEMPLATES: [&str; 3] = ["qa_founded", "qa_population", "qa_river"];

/// The path of `url`: `http://host:port/a/b?c` and `/a/b?c` both give `/a/b`.
fn path_of(url: &str) -> &str {
    let rest = match url.find("://") {
        Some(i) => {
            let after = &url[i + 3..];
            after.find('/').map_or("/", |j| &after[j..])
        }
        None => url,
    };
    rest.split(['?', '#']).next().unwrap_or(rest)
}

/// Words a goal shares with every page, which say nothing about what it asks.
pub(crate) const STOP: [&str; 12] =
    ["the", "what", "which", "does", "was", "how", "many", "and", "for", "with", "from", "that"];

/// A page read for a goal, as a reader service would: the page's sentences, those sharing the
/// most words with `goal` first (ties keep page order). `None` for a page that does not exist.
pub fn visit(content: &Content, url: &str, goal: &str) -> Option<String> {
    let path = path_of(url.trim());
    if path == "/wiki/" || path == "/wiki" {
        return Some("Wiki. Search for a town.".into());
    }
    let slug = path.strip_prefix("/wiki/article/")?.trim_end_matches('/');
    let t = content.towns.iter().find(|t| t.slug == slug)?;
    let sentences = [
        format!("{} is a town on the river {}.", t.name, t.river),
        format!("{} was founded in {}.", t.name, t.founded),
        format!("{} has a population of {}.", t.name, t.population),
    ];
    let g: Vec<String> =
        words(goal).into_iter().filter(|w| w.len() >= 3 && !STOP.contains(&w.as_str())).collect();
    let mut ranked: Vec<(usize, usize, &String)> = sentences
        .iter()
        .enumerate()
        .map(|(i, s)| (words(s).iter().filter(|w| g.contains(w)).count(), i, s))
        .collect();
    ranked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    Some(ranked.iter().map(|(_, _, s)| s.as_str()).collect::<Vec<_>>().join(" "))
}

/// Generates `count` one-hop QA pairs of `split` over the wiki, cycling through
/// [`QA_TEMPLATES`]; the towns of the test split never appear in train. Same arguments, same
/// pairs: [`generate_qa_of`] asking only [`Question::Lookup`].
pub fn generate_qa(content: &Content, split: Split, count: usize, seed: u64) -> Vec<Task> {
    generate_qa_of(content, split, count, seed, &[Question::Lookup])
}

/// Generates `count` QA pairs of `split`, pair `i` of the kind `questions[i % len]` (a
/// lookup cycling through [`QA_TEMPLATES`] on its own count, so `[Lookup]` gives
/// [`generate_qa`]'s pairs); the towns a pair asks about are of `split` (a chain's distractors,
/// listed by its search, may be of either). An empty `questions` asks lookups. Same arguments,
/// same pairs.
pub fn generate_qa_of(
    content: &Content,
    split: Split,
    count: usize,
    seed: u64,
    questions: &[Question],
) -> Vec<Task> {
    let questions = if questions.is_empty() { &[Question::Lookup][..] } else { questions };
    let mut rng =
        ChaCha8Rng::seed_from_u64(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ (split as u64 + 7));
    let mut lookups = 0;
    let mut draw = Draw::dealt(&mut rng);
    (0..count)
        .map(|index| {
            let template = hop_template(questions[index % questions.len()]).unwrap_or_else(|| {
                lookups += 1;
                QA_TEMPLATES[(lookups - 1) % QA_TEMPLATES.len()]
            });
            let id = format!("qa-{split}-{seed}-{index:05}");
            qa_task(content, template, split, &mut draw, id)
        })
        .collect()
}

/// Whether `template` is one of the sandbox's QA templates, one-hop or multi-hop.
pub fn is_qa_template(template: &str) -> bool {
    QA_TEMPLATES.contains(&template) || HOP_TEMPLATES.contains(&template)
}

/// One QA pair of `template` (a town of `split` drawn, or dealt where `draw` deals held-out
/// values), with id `id`.
pub(crate) fn qa_task(
    content: &Content,
    template: &str,
    split: Split,
    draw: &mut Draw<'_>,
    id: String,
) -> Task {
    let (goal, params, checker) = match hop_pair(content, template, split, draw) {
        Some(pair) => pair,
        None => {
            let towns: Vec<String> = content.towns.iter().map(|t| t.name.clone()).collect();
            let t = &content.towns[draw.pick(template, &towns, split)];
            let (goal, expected, mode) = match template {
                "qa_founded" => (
                    format!("In what year was {} founded?", t.name),
                    t.founded.to_string(),
                    AnswerMode::Number,
                ),
                "qa_population" => (
                    format!("What is the population of {}?", t.name),
                    t.population.to_string(),
                    AnswerMode::Number,
                ),
                _ => (
                    format!("On which river does {} lie?", t.name),
                    t.river.to_string(),
                    AnswerMode::Text,
                ),
            };
            let params = [("town".to_string(), t.name.clone())].into_iter().collect();
            (goal, params, Checker::Answer { expected, mode })
        }
    };
    Task {
        id,
        split,
        template: template.to_string(),
        site: "wiki".into(),
        start_path: "/wiki/".into(),
        goal,
        params,
        checker,
        max_steps: 4,
        content_seed: content.seed,
    }
}

/// The scripted search expert's next call for `task`, given the calls so far (terse:
/// `search Q`, `visit URL`, `answer A`) and the last tool response: search the town, visit its
/// article, answer from what the page says. `None` when the response does not hold what it
/// needs (the expert is stuck). A multi-hop pair's way is [`hop_action`]'s.
pub fn expert_action(task: &Task, history: &[String], last_response: &str) -> Option<String> {
    if HOP_TEMPLATES.contains(&task.template.as_str()) {
        return hop_action(task, history, last_response);
    }
    let town = task.params.get("town")?;
    let last = history.last().map(String::as_str).unwrap_or("");
    if last.is_empty() {
        return Some(format!("search {town}"));
    }
    if last.starts_with("search ") {
        let line = last_response.lines().find(|l| l.contains(&format!("] {town} ")))?;
        let url = line.split_whitespace().find(|w| w.starts_with("/wiki/article/"))?;
        return Some(format!("visit {}", url.trim_end_matches(':')));
    }
    let after = |marker: &str| {
        let i = last_response.find(marker)? + marker.len();
        let rest = &last_response[i..];
        let end = rest.find('.').unwrap_or(rest.len());
        Some(rest[..end].trim().to_string())
    };
    let answer = match task.template.as_str() {
        "qa_founded" => after(&format!("{town} was founded in ")),
        "qa_population" => after(&format!("{town} has a population of ")),
        _ => after(&format!("{town} is a town on the river ")),
    }?;
    Some(format!("answer {answer}"))
}

/// Query of `GET /api/search`.
#[derive(Debug, Deserialize, Default)]
pub struct SearchParams {
    #[serde(default)]
    pub(crate) q: String,
}

/// Query of `GET /api/visit`.
#[derive(Debug, Deserialize, Default)]
pub struct VisitParams {
    #[serde(default)]
    pub(crate) url: String,
    #[serde(default)]
    pub(crate) goal: String,
}

pub(crate) fn text(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body).into_response()
}

/// `GET /api/search?q=`: the hits as text.
pub async fn api_search(State(site): State<Arc<Site>>, Query(p): Query<SearchParams>) -> Response {
    text(StatusCode::OK, render_hits(&search(&site.content, &p.q)))
}

/// `GET /api/visit?url=&goal=`: the page read for the goal, or 404 with a reason.
pub async fn api_visit(State(site): State<Arc<Site>>, Query(p): Query<VisitParams>) -> Response {
    match visit(&site.content, &p.url, &p.goal) {
        Some(page) => text(StatusCode::OK, page),
        None => text(StatusCode::NOT_FOUND, format!("no such page: {}", p.url)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_finds_a_town_by_name_or_river() {
        let c = Content::new(0);
        let t = &c.towns[5];
        let hits = search(&c, &t.name);
        assert_eq!(hits[0].title, t.name);
        assert_eq!(hits[0].url, format!("/wiki/article/{}", t.slug));
        let by_river = search(&c, &format!("towns on the river {}", t.river));
        assert!(!by_river.is_empty() && by_river.len() <= MAX_HITS);
        assert!(search(&c, "zzzz").is_empty());
        assert_eq!(render_hits(&[]), "no results");
    }

    #[test]
    fn visit_puts_the_sentences_the_goal_asks_for_first() {
        let c = Content::new(0);
        let t = &c.towns[2];
        let url = format!("http://127.0.0.1:9/wiki/article/{}?x=1", t.slug);
        let page = visit(&c, &url, "What is the population of it?").unwrap();
        assert!(page.starts_with(&format!("{} has a population of {}.", t.name, t.population)));
        let page = visit(&c, &format!("/wiki/article/{}", t.slug), "").unwrap();
        assert!(page.starts_with(&format!("{} is a town on the river", t.name)));
        assert!(visit(&c, "/wiki/article/nowhere", "").is_none());
        assert!(visit(&c, "/shop/", "").is_none());
    }

    #[test]
    fn qa_pairs_are_deterministic_and_split_by_town() {
        let c = Content::new(0);
        let a = generate_qa(&c, Split::Train, 12, 3);
        assert_eq!(a, generate_qa(&c, Split::Train, 12, 3));
        assert_eq!(a.iter().filter(|t| t.template == "qa_river").count(), 4);
        let test = generate_qa(&c, Split::Test, 30, 3);
        let train = generate_qa(&c, Split::Train, 60, 3);
        let train_towns: Vec<&String> = train.iter().map(|t| &t.params["town"]).collect();
        assert!(test.iter().all(|t| !train_towns.contains(&&t.params["town"])));
    }

    #[test]
    fn the_expert_answers_every_pair_through_the_api() {
        let c = Content::new(0);
        let all = [Question::Lookup, Question::Compare, Question::Chain, Question::Difference];
        let mut tasks = generate_qa(&c, Split::Train, 9, 0);
        for seed in 0..3 {
            tasks.extend(generate_qa_of(&Content::new(seed), Split::Train, 24, seed, &all));
            tasks.extend(generate_qa_of(&Content::new(seed), Split::Test, 24, seed, &all));
        }
        for task in tasks {
            let c = Content::new(task.content_seed);
            let mut history: Vec<String> = Vec::new();
            let mut response = String::new();
            let answer = loop {
                let call = expert_action(&task, &history, &response).expect("expert stuck");
                if let Some(a) = call.strip_prefix("answer ") {
                    break a.to_string();
                }
                // As the `search_api` env calls the API: one request per query (each under
                // its query when several) and per URL, joined by lines.
                response = match call.split_once(' ') {
                    Some(("search", q)) => {
                        let qs: Vec<&str> = q.split(" | ").collect();
                        let one = |q: &str| render_hits(&search(&c, q));
                        if qs.len() == 1 {
                            one(q)
                        } else {
                            qs.iter()
                                .map(|q| format!("{q}:\n{}", one(q)))
                                .collect::<Vec<_>>()
                                .join("\n")
                        }
                    }
                    Some(("visit", u)) => u
                        .split_whitespace()
                        .map(|u| visit(&c, u, &task.goal).unwrap())
                        .collect::<Vec<_>>()
                        .join("\n"),
                    _ => panic!("{call}"),
                };
                history.push(call);
                assert!(history.len() < 3);
            };
            let Checker::Answer { expected, .. } = &task.checker else { panic!() };
            assert_eq!(&answer, expected, "{}", task.goal);
        }
    }
}
