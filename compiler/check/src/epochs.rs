//! Training length in epochs over the task set: an RL phase's `iters = 2 epochs` is
//! ⌈2 × tasks / prompts⌉ iterations, one batch of `prompts` tasks each. The size of the task set
//! is what the recipe says — a sandbox constructor's `count` (times `augment` + 1), a file's
//! declared `count`, a mixture's parts summed. The checker refuses epochs it cannot count (E0441)
//! and the planner writes the iterations, so every consumer of the plan sees iterations.

use crate::model::Recipe;
use crate::value::{V, Val};

/// Why epochs cannot be turned into iterations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Uncounted {
    /// The task set's size is not in the recipe (a file without `count`): its name, if any.
    Tasks(Option<String>),
    /// `prompts` is `unknown` (or not a whole number).
    Prompts,
}

/// The records of a dataset value (a reference to a declaration or a constructor in place).
pub fn dataset_size(recipe: &Recipe, v: &Val) -> Option<u64> {
    size(recipe, v, 0)
}

fn size(recipe: &Recipe, v: &Val, depth: usize) -> Option<u64> {
    if depth > 16 {
        return None;
    }
    let o = match &v.v {
        V::Ref { decl, member: None, .. } => match &recipe.decl(decl)?.value.v {
            V::Obj(o) => o.clone(),
            _ => return None,
        },
        V::Obj(o) => o.clone(),
        _ => return None,
    };
    if let Some(V::List { items }) = o.fields.get("parts").map(|p| &p.v) {
        let mut sum = 0u64;
        for part in items {
            sum = sum.checked_add(size(recipe, part, depth + 1)?)?;
        }
        return Some(sum);
    }
    let count = whole(o.fields.get("count")?)?;
    let copies = o.fields.get("augment").map_or(Some(0), whole)?;
    count.checked_mul(copies.checked_add(1)?)
}

fn whole(v: &Val) -> Option<u64> {
    let x = v.as_f64()?;
    (x >= 0.0 && x.fract() == 0.0 && x < 1e15).then_some(x as u64)
}

/// The iterations `epochs` passes over the stage's `tasks` take, `prompts` tasks each.
pub fn epoch_iters(
    recipe: &Recipe,
    stage: &crate::value::Obj,
    epochs: f64,
) -> Result<u64, Uncounted> {
    let tasks = stage.fields.get("tasks");
    let name = tasks.and_then(|t| match &t.v {
        V::Ref { decl, .. } => Some(decl.as_str().to_string()),
        _ => None,
    });
    let n = tasks.and_then(|t| dataset_size(recipe, t)).ok_or(Uncounted::Tasks(name))?;
    let prompts = stage.fields.get("prompts").and_then(whole).filter(|p| *p > 0);
    let prompts = prompts.ok_or(Uncounted::Prompts)?;
    Ok(iters_for(epochs as u64, n, prompts))
}

/// ⌈epochs × tasks / prompts⌉ iterations, at least one: the one formula the planner writes
/// and `wrlc run` checks the tasks it read against.
pub fn iters_for(epochs: u64, tasks: u64, prompts: u64) -> u64 {
    epochs.saturating_mul(tasks).div_ceil(prompts.max(1)).max(1)
}
