//! An RL stage's settings, read from its plan node. Every field that `grpo`, `dapo` and `ppo`
//! declare in the stdlib is either mapped to the trainer's `RlConfig` here, used by the
//! executor ([`USED_BY_EXECUTOR`]), or refused by the preflight when set to something this
//! runtime cannot do ([`refusals`]) — never silently ignored. A test holds the stdlib to it.

use wrl_plan::{Node, PVal};
use wrl_trainer::{
    KlConfig, KlEstimator, LossAggregation, OverlongShaping, PolicyLoss, RlConfig, SampleLevel,
};

use crate::exec::RunError;

/// Fields [`rl_config`] maps to the trainer's update.
pub const MAPPED: &[&str] = &[
    "clip",
    "dual_clip",
    "kl",
    "kl_estimator",
    "entropy",
    "ppo_epochs",
    "mini_batch",
    "temperature",
    "drop",
    "dynamic_sampling",
    "std_normalize",
    "loss_agg",
    "policy_loss",
    "kl_cov_ratio",
    "level",
    "overlong",
];

/// Fields the executor reads itself: the batch, rewards, sampling, failure handling, the
/// optimiser and its schedule, phases, the trained roles of a graph and checkpointing (the
/// executor saves a resumable checkpoint after every iteration, more often than any
/// `checkpoint_every` asks).
pub const USED_BY_EXECUTOR: &[&str] = &[
    "prompts",
    "group",
    "reward",
    "process_reward",
    "top_p",
    "exclude",
    "lr",
    "schedule",
    "optimizer",
    "phases",
    "trainable",
    "checkpoint_every",
    "seed",
];

/// Fields this runtime cannot honour yet; the preflight refuses a value other than the default.
pub const REFUSED_UNLESS_DEFAULT: &[&str] = &["async", "eval_every"];

/// The trainer's RL settings for an RL phase node; `max_response` is the agent's completion
/// limit (DAPO's overlong shaping counts back from it).
pub fn rl_config(node: &Node, max_response: usize) -> RlConfig {
    let num = |k: &str, d: f64| node.num(k).unwrap_or(d);
    let word = |k: &str, d: &'static str| -> String {
        node.param(k).and_then(PVal::as_str).unwrap_or(d).to_string()
    };
    let (clip_low, clip_high) = match node.param("clip") {
        Some(PVal::Range { lo, hi }) => (lo.num().unwrap_or(0.2), hi.num().unwrap_or(0.2)),
        _ => (0.2, 0.2),
    };
    let estimator = match word("kl_estimator", "k3").as_str() {
        "k1" => KlEstimator::K1,
        "k2" => KlEstimator::K2,
        _ => KlEstimator::K3,
    };
    let kl = Some(num("kl", 0.0)).filter(|c| *c > 0.0).map(|coef| KlConfig { coef, estimator });
    let aggregation = match word("loss_agg", "token_mean").as_str() {
        "seq_mean_token_mean" => LossAggregation::SeqMeanTokenMean,
        "seq_mean_token_sum" => LossAggregation::SeqMeanTokenSum,
        _ => LossAggregation::TokenMean,
    };
    let policy_loss = match word("policy_loss", "clip").as_str() {
        "kl_cov" => PolicyLoss::KlCov { ratio: num("kl_cov_ratio", 0.0002), coef: 1.0 },
        _ => PolicyLoss::Clip,
    };
    let level = match word("level", "turn").as_str() {
        "trajectory" => SampleLevel::Trajectory,
        _ => SampleLevel::Turn,
    };
    let overlong = node.param("overlong").and_then(|o| {
        let buffer = o.field("buffer").and_then(PVal::num).unwrap_or(0.0) as usize;
        let penalty = o.field("penalty").and_then(PVal::num).unwrap_or(1.0);
        (buffer > 0).then_some(OverlongShaping {
            max_len: max_response,
            cache_len: buffer,
            penalty,
        })
    });
    RlConfig {
        clip_low,
        clip_high,
        dual_clip: node.num("dual_clip"),
        kl,
        entropy_coef: num("entropy", 0.0),
        ppo_epochs: num("ppo_epochs", 1.0).max(1.0) as usize,
        mini_batch: num("mini_batch", 0.0).max(0.0) as usize,
        temperature: num("temperature", 1.0) as f32,
        dynamic_sampling: word("drop", "none") == "uniform_groups"
            || node.param("dynamic_sampling").is_some(),
        normalize_std: node.param("std_normalize").and_then(PVal::as_bool).unwrap_or(true),
        aggregation,
        policy_loss,
        level,
        overlong,
        ..RlConfig::default()
    }
}

/// How many extra batches DAPO's dynamic sampling may roll out to replace groups whose
/// rewards were all equal (0 = drop them without refilling).
pub fn refill_batches(node: &Node) -> usize {
    node.param("dynamic_sampling")
        .and_then(|d| d.field("max_batches"))
        .and_then(PVal::num)
        .unwrap_or(0.0)
        .max(0.0) as usize
}

/// The graph roles the stage trains (`trainable = [...]`); empty = every module marked
/// `trainable`.
pub fn trained_roles(node: &Node) -> Vec<String> {
    match node.param("trainable") {
        Some(PVal::List { items }) => {
            items.iter().filter_map(PVal::as_str).map(str::to_string).collect()
        }
        _ => Vec::new(),
    }
}

/// What an RL phase node asks for that this runtime cannot do, each located at its field.
pub fn refusals(node: &Node) -> Vec<RunError> {
    let mut errs = Vec::new();
    let mut refuse = |field: &str, what: String, help: &str| {
        errs.push(
            RunError::new("E0502", format!("stage `{}`: {what}", node.decl))
                .help(help.to_string())
                .at(node, Some(field), "this runtime cannot do this yet"),
        );
    };
    if let Some(a) = node.param("async") {
        let staleness = a.field("staleness").and_then(PVal::num).unwrap_or(0.0);
        let every = a.field("sync_every").and_then(PVal::num).unwrap_or(1.0);
        if staleness != 0.0 || every != 1.0 {
            refuse(
                "async",
                "asynchronous rollouts (`async`) are not implemented: this runtime updates \
                 after every batch, on-policy"
                    .into(),
                "set `async = { staleness = 0%, sync_every = 1 }` (a profile can)",
            );
        }
    }
    if node.num("eval_every").is_some_and(|v| v != 0.0) {
        refuse(
            "eval_every",
            "evaluation inside a stage (`eval_every`) is not implemented".into(),
            "set `eval_every = 0 iters` and declare an `evaluate(…) { after = [stage] }`",
        );
    }
    if let Some(d) = node.param("dynamic_sampling") {
        let metric = d.field("metric").and_then(PVal::as_str).unwrap_or("reward");
        if metric != "reward" {
            refuse(
                "dynamic_sampling",
                format!(
                    "dynamic sampling on the metric `{metric}` is not implemented; groups are \
                     compared on their reward"
                ),
                "set `dynamic_sampling = { metric = \"reward\", … }`",
            );
        }
    }
    errs
}

/// The configuration fields of the prelude's `builtin NAME(…)` that none of `lists` names: what
/// the runtime's field contracts (here and in `env_cfg`) must keep empty. Panics when the prelude
/// has no such builtin, or one without fields.
#[cfg(test)]
pub(crate) fn unaccounted_fields(name: &str, lists: &[&[&str]]) -> Vec<String> {
    let (path, file, text) = wrl_check::STDLIB_MODULES
        .iter()
        .find(|(path, _, _)| *path == "std::prelude")
        .expect("the stdlib has a prelude");
    let mut sources = wrl_diagnostics::SourceMap::new();
    let parsed = wrl_syntax::parse(sources.add(*file, *text), text);
    let builtin = parsed
        .file
        .items
        .iter()
        .find_map(|item| match &item.kind {
            wrl_syntax::ast::ItemKind::Builtin(b) if b.name.name == name => Some(b),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no `builtin {name}` in {path}"));
    assert!(!builtin.fields.is_empty(), "`{name}` declares no fields");
    builtin
        .fields
        .iter()
        .map(|f| f.name.name.to_string())
        .filter(|f| !lists.iter().any(|list| list.contains(&f.as_str())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_declared_rl_field_is_mapped_used_or_refused() {
        for stage in ["grpo", "dapo", "ppo"] {
            let missing =
                unaccounted_fields(stage, &[MAPPED, USED_BY_EXECUTOR, REFUSED_UNLESS_DEFAULT]);
            assert!(
                missing.is_empty(),
                "`{stage}` declares {missing:?} in the stdlib, but the runtime neither maps, uses nor refuses them"
            );
        }
    }
}
