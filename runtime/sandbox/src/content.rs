//! Deterministic site content (products, forum posts, users, wiki towns) derived from one seed.

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// Product colours; combined with [`ITEMS`] to name the shop's products.
pub const COLORS: [&str; 12] = [
    "red", "blue", "green", "black", "white", "yellow", "purple", "orange", "grey", "pink",
    "brown", "silver",
];
/// Product nouns and the category each belongs to.
pub const ITEMS: [(&str, &str); 12] = [
    ("mug", "kitchen"),
    ("kettle", "kitchen"),
    ("bottle", "kitchen"),
    ("bowl", "kitchen"),
    ("lamp", "home"),
    ("pillow", "home"),
    ("clock", "home"),
    ("candle", "home"),
    ("chair", "office"),
    ("desk", "office"),
    ("notebook", "office"),
    ("backpack", "office"),
];
/// The shop's categories, in display order.
pub const CATEGORIES: [&str; 3] = ["kitchen", "home", "office"];

const SYLLABLES: [&str; 16] = [
    "bar", "vel", "tor", "min", "ash", "lon", "rei", "kal", "dun", "mor", "sel", "the", "quin",
    "zar", "pol", "wen",
];
const RIVERS: [&str; 8] = ["Avel", "Brin", "Corra", "Dusk", "Elm", "Fenn", "Gale", "Hart"];
const USERS: [&str; 16] = [
    "alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy", "mallory",
    "niaj", "olivia", "peggy", "rupert", "sybil",
];
const TOPICS: [&str; 16] = [
    "brewing tea",
    "fixing a bike",
    "growing tomatoes",
    "learning chess",
    "baking bread",
    "running shoes",
    "night photography",
    "knitting socks",
    "home espresso",
    "cheap flights",
    "houseplant care",
    "board games",
    "bird watching",
    "camping stoves",
    "sourdough starters",
    "rock climbing",
];
const TITLE_FORMS: [&str; 4] =
    ["Tips for {}", "Question about {}", "My guide to {}", "Thoughts on {}"];

/// One product of the shop.
#[derive(Debug, Clone, Serialize)]
pub struct Product {
    /// Stable id used in URLs (`/shop/product/{id}`).
    pub id: usize,
    /// Display name, e.g. "blue mug".
    pub name: String,
    /// Noun part of the name, e.g. "mug".
    pub item: &'static str,
    /// Category (one of [`CATEGORIES`]).
    pub category: &'static str,
    /// Price in cents.
    pub price_cents: u32,
    /// Rating 1–5.
    pub rating: u8,
}

impl Product {
    /// The price formatted as the site shows it, without currency sign: "12.50".
    pub fn price(&self) -> String {
        format!("{}.{:02}", self.price_cents / 100, self.price_cents % 100)
    }
}

/// A forum user and their password.
#[derive(Debug, Clone, Serialize)]
pub struct User {
    /// Login name.
    pub name: &'static str,
    /// Password (the sandbox is a toy; passwords are part of task goals).
    pub password: String,
}

/// A forum post.
#[derive(Debug, Clone, Serialize)]
pub struct Post {
    /// Stable id used in URLs (`/forum/post/{id}`).
    pub id: usize,
    /// Title shown on the front page.
    pub title: String,
    /// Author (a user name).
    pub author: &'static str,
    /// Body text.
    pub body: String,
    /// Initial score before any votes in an episode.
    pub score: i32,
}

/// A wiki article about a fictional town.
#[derive(Debug, Clone, Serialize)]
pub struct Town {
    /// URL slug (`/wiki/article/{slug}`).
    pub slug: String,
    /// Title, e.g. "Barvel".
    pub name: String,
    /// Year founded.
    pub founded: u32,
    /// Population.
    pub population: u32,
    /// River the town lies on.
    pub river: &'static str,
}

/// All content of the sandbox web, fully determined by the seed.
#[derive(Debug, Clone)]
pub struct Content {
    /// The seed everything was derived from.
    pub seed: u64,
    /// Every product, by id.
    pub products: Vec<Product>,
    /// Forum users.
    pub users: Vec<User>,
    /// Forum posts, by id.
    pub posts: Vec<Post>,
    /// Wiki towns, sorted by name.
    pub towns: Vec<Town>,
}

impl Content {
    /// Builds the content for `seed`. Same seed, same content, byte for byte.
    pub fn new(seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_c0de);
        let mut products = Vec::new();
        for (ii, (item, category)) in ITEMS.iter().enumerate() {
            for (ci, color) in COLORS.iter().enumerate() {
                products.push(Product {
                    id: ii * COLORS.len() + ci,
                    name: format!("{color} {item}"),
                    item,
                    category,
                    price_cents: rng.random_range(300..10_000),
                    rating: rng.random_range(1..=5),
                });
            }
        }
        let users = USERS
            .iter()
            .map(|name| User {
                name,
                password: format!("{}{}", &name[..3], rng.random_range(100..1000)),
            })
            .collect::<Vec<_>>();
        let mut topics = TOPICS.to_vec();
        topics.shuffle(&mut rng);
        let posts = topics
            .iter()
            .enumerate()
            .map(|(id, topic)| {
                let form = TITLE_FORMS[rng.random_range(0..TITLE_FORMS.len())];
                Post {
                    id,
                    title: form.replace("{}", topic),
                    author: USERS[rng.random_range(0..USERS.len())],
                    body: format!("Let's talk about {topic}. What has worked for you?"),
                    score: rng.random_range(0..40),
                }
            })
            .collect();
        let mut towns = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        while towns.len() < 40 {
            let a = SYLLABLES[rng.random_range(0..SYLLABLES.len())];
            let b = SYLLABLES[rng.random_range(0..SYLLABLES.len())];
            if a == b || !seen.insert((a, b)) {
                continue;
            }
            let mut name = format!("{a}{b}");
            if let Some(first) = name.get_mut(0..1) {
                first.make_ascii_uppercase();
            }
            towns.push(Town {
                slug: name.to_ascii_lowercase(),
                name,
                founded: rng.random_range(1100..1950),
                population: rng.random_range(800..90_000),
                river: RIVERS[rng.random_range(0..RIVERS.len())],
            });
        }
        towns.sort_by(|a, b| a.name.cmp(&b.name));
        Content { seed, products, users, posts, towns }
    }

    /// The product with this exact name.
    pub fn product_by_name(&self, name: &str) -> Option<&Product> {
        self.products.iter().find(|p| p.name == name)
    }

    /// Products whose name contains every word of `query` (case-insensitive), in id order.
    pub fn search_products(&self, query: &str) -> Vec<&Product> {
        let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
        self.products
            .iter()
            .filter(|p| words.iter().all(|w| p.name.contains(w.as_str()) || p.category == w))
            .collect()
    }

    /// Towns whose name starts with or contains `query` (case-insensitive).
    pub fn search_towns(&self, query: &str) -> Vec<&Town> {
        let q = query.trim().to_lowercase();
        if q.is_empty() {
            return Vec::new();
        }
        self.towns.iter().filter(|t| t.slug.contains(&q)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_is_deterministic_and_seed_dependent() {
        let a = Content::new(7);
        let b = Content::new(7);
        let c = Content::new(8);
        assert_eq!(a.products[5].price_cents, b.products[5].price_cents);
        assert_eq!(a.towns[3].name, b.towns[3].name);
        assert!(
            a.products.iter().zip(&c.products).any(|(x, y)| x.price_cents != y.price_cents),
            "different seeds must give different prices"
        );
        assert_eq!(a.products.len(), 144);
        assert_eq!(a.towns.len(), 40);
    }

    #[test]
    fn search_matches_all_words() {
        let c = Content::new(1);
        let hits = c.search_products("Blue mug");
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].name, "blue mug");
        assert_eq!(c.search_products("mug").len(), 12);
    }
}
