//! Evaluations as verl's validation: an eval after an RL stage runs at the end of the stage's
//! last run (`trainer.test_freq` at its final step), an eval after the SFT stage the RL stage
//! starts from runs before its first run (`trainer.val_before_train`); each eval's tasks are a
//! validation file whose `data_source` is the eval's name, so verl reports it apart. Evals after
//! other stages, or on the declared models, are not part of the job.

use serde_json::{Value as Json, json};
use wrl_plan::Node;
use wrl_plan::params::{self, Evaluate, Metric, Params, RewardRef};

use crate::ctx::{Ctx, E_UNMAPPED, Run, set};
use crate::layout::Stage;
use crate::rows;
use crate::tasks::task_rows;

/// The eval nodes that run after stage `after`, in plan order.
fn after<'p>(c: &Ctx<'p>, stage: &str) -> Vec<(&'p Node, Evaluate)> {
    c.d.nodes
        .iter()
        .filter_map(|(n, p)| match p {
            Ok(Params::Eval(e)) if e.after.as_deref() == Some(stage) => Some((*n, e.clone())),
            _ => None,
        })
        .collect()
}

/// The stage a stage's first phase starts from, when it starts from a checkpoint.
fn init_stage(s: &Stage<'_>) -> Option<String> {
    s.phases.first()?.1.run.init.id().strip_prefix("checkpoint:").map(str::to_string)
}

/// Validation of run `i` of stage `s`: files, sampling and when it runs.
pub(crate) fn phase_evals(
    c: &mut Ctx<'_>,
    s: &Stage<'_>,
    i: usize,
    cfg: &mut Json,
    run: &Run,
    base: &Json,
) {
    let first = i == 0;
    let last = i + 1 == s.phases.len();
    let before: Vec<_> = match (first, init_stage(s)) {
        (true, Some(st)) => after(c, &st),
        _ => Vec::new(),
    };
    let end: Vec<_> = if last { after(c, &s.decl) } else { Vec::new() };
    let mut files = Vec::new();
    let mut seen = Vec::new();
    for (n, e) in before.iter().chain(end.iter()) {
        if seen.contains(&n.decl) {
            continue;
        }
        seen.push(n.decl.clone());
        if let Some(f) = eval_file(c, n, e, base) {
            files.push(f);
        }
    }
    for (n, e) in before.iter().chain(end.iter()) {
        c.used.insert(n.id.clone());
        c.used.insert(e.tasks.id().to_string());
        if let Some(RewardRef::Node(r)) = &e.judge {
            c.used.insert(r.id().to_string());
        }
        let at_end = !before.iter().any(|(b, _)| b.id == n.id);
        account(c, n, e, at_end, run.last_step);
    }
    if let Some((_, e)) = before.iter().chain(end.iter()).next() {
        let k = match e.metric {
            Metric::PassAtK | Metric::ConsAtK => e.k.max(1),
            Metric::Success | Metric::MeanReward => 1,
        };
        let top_k = if e.top_k == 0 { -1 } else { i64::from(e.top_k) };
        let vk = "actor_rollout_ref.rollout.val_kwargs";
        for (key, v) in [
            ("temperature", json!(e.temperature)),
            ("top_p", json!(e.top_p)),
            ("top_k", json!(top_k)),
            ("n", json!(k)),
            ("do_sample", json!(e.temperature > 0.0)),
        ] {
            set(cfg, &format!("{vk}.{key}"), v);
        }
    }
    if files.is_empty() {
        // verl opens a validation file even when it never validates: the training rows.
        set(cfg, "data.val_files", json!([run.train_file]));
        return;
    }
    set(cfg, "data.val_files", json!(files));
    set(cfg, "trainer.val_before_train", json!(!before.is_empty()));
    if !end.is_empty() {
        let every = cfg.pointer("/trainer/test_freq").and_then(Json::as_i64).unwrap_or(-1);
        if every <= 0 {
            set(cfg, "trainer.test_freq", json!(run.last_step));
        }
    }
}

/// The validation file of one eval declaration (and its agent-loop entry).
fn eval_file(c: &mut Ctx<'_>, n: &Node, e: &Evaluate, base: &Json) -> Option<String> {
    let name = format!("wrl_eval_{}", n.decl);
    let file = format!("data/eval-{}.parquet", n.decl);
    if c.files.contains_key(&file) {
        return Some(file);
    }
    let max_turns = match c.d.get(e.agent.id()) {
        _ if c.d.is_unknown(e.agent.id(), "max_turns") => e.max_steps.0,
        Some(Params::Agent(params::Agent::React(r))) => r.max_turns.0,
        Some(Params::Agent(params::Agent::Graph(g))) => g.max_turns.0,
        _ => e.max_steps.0,
    };
    let mut rows = task_rows(c, e.tasks.id(), &name, &n.id, e.agent.id(), "test").ok()?;
    if let Some(k) = e.count {
        rows.truncate(k as usize);
    }
    for r in &mut rows {
        r.data_source = n.decl.clone();
    }
    let bytes = rows::parquet(&rows).ok()?;
    c.files.insert(file.clone(), bytes);
    // The eval's episodes: the training run's agent settings, its own step limit, and one row
    // per episode so verl's validation metrics are per task.
    let mut al = base.clone();
    set(&mut al, "name", json!(name));
    set(&mut al, "node", json!(n.id));
    set(&mut al, "max_steps", json!(e.max_steps.0.min(max_turns)));
    set(&mut al, "eval", json!(true));
    c.agent_loops.insert(name, al);
    Some(file)
}

/// Every field of an eval node the job runs.
fn account(c: &mut Ctx<'_>, n: &Node, e: &Evaluate, at_end: bool, last_step: u64) {
    if c.has(n, "agent") {
        return;
    }
    let Evaluate {
        agent: _,
        tasks: _,
        metric,
        k,
        temperature,
        top_p,
        top_k,
        max_steps,
        judge,
        count,
        by,
        denominator,
        after,
        checkpoint: _,
        binds: _,
        // The environment and the budgets: budgets().
        max_response: _,
        trajectory_tokens: _,
        repetition_penalty: _,
        env: _,
        published: _,
    } = e;
    c.implied(
        n,
        "published",
        "the paper's figures, printed beside the result; nothing runs by them",
    );
    budgets(c, n, e);
    let mut cfg = json!({});
    let vk = "actor_rollout_ref.rollout.val_kwargs";
    let file = format!("data/eval-{}.parquet", n.decl);
    c.wrl(n, "agent", &[("agent_loops.yaml", json!(format!("wrl_eval_{}", n.decl)))]);
    c.map(&mut cfg, n, "tasks", &[("data.val_files", json!([file]))])
        .note("data_source is the eval's name: verl reports its metrics apart (val-core/<eval>/…)");
    match metric {
        Metric::Success => c.implied(n, "metric", "the success rate is the mean reward of the episodes (1 when the task's checker or judge accepts)"),
        Metric::PassAtK => c.map(&mut cfg, n, "metric", &[(&format!("{vk}.n"), json!(k))]).note("verl reports best@k of the n samples per task"),
        Metric::ConsAtK => c.not_mapped(n, "metric", "verl's validation reports best@k and the mean; its maj@k needs each sample's answer as the reward's `pred`, which the env service does not return", "the run samples k answers per task (`k`) and reports best@k, not cons@k").refuse(E_UNMAPPED),
        Metric::MeanReward => c.implied(n, "metric", "verl reports the mean reward"),
    };
    c.map(&mut cfg, n, "k", &[(&format!("{vk}.n"), json!(k))]);
    c.map(
        &mut cfg,
        n,
        "temperature",
        &[
            (&format!("{vk}.temperature"), json!(temperature)),
            (&format!("{vk}.do_sample"), json!(*temperature > 0.0)),
        ],
    )
    .note("one val_kwargs per run: the first evaluation of a run sets them for all");
    c.map(&mut cfg, n, "top_p", &[(&format!("{vk}.top_p"), json!(top_p))]);
    let tk = if *top_k == 0 { -1 } else { i64::from(*top_k) };
    c.map(&mut cfg, n, "top_k", &[(&format!("{vk}.top_k"), json!(tk))]);
    let turns = match c.d.get(e.agent.id()) {
        _ if c.d.is_unknown(e.agent.id(), "max_turns") => max_steps.0,
        Some(Params::Agent(params::Agent::React(r))) => max_steps.0.min(r.max_turns.0),
        Some(Params::Agent(params::Agent::Graph(g))) => max_steps.0.min(g.max_turns.0),
        _ => max_steps.0,
    };
    c.wrl(
        n,
        "max_steps",
        &[("agent_loops.yaml: max_steps", json!(turns)), ("env service", json!(turns))],
    )
    .note("capped by the agent's `max_turns`, as `wrlc run` caps it");
    match judge {
        Some(RewardRef::Node(r)) => {
            c.wrl(n, "judge", &[("env service", json!(r.id()))])
                .note("the env service scores the episode with this reward");
        }
        Some(RewardRef::Inline(_)) => {
            c.wrl(n, "judge", &[("env service", json!("inline"))]);
        }
        None => {
            c.implied(n, "judge", "the task's checker scores it (env service)");
        }
    }
    c.wrl(
        n,
        "count",
        &[("data", json!(count.map_or("every task".to_string(), |k| format!("first {k} tasks"))))],
    );
    match by {
        params::OrNone::Nothing => {
            c.implied(n, "by", "one result for the whole evaluation");
        }
        params::OrNone::Value(_) => {
            c.not_mapped(
                n,
                "by",
                "verl's validation reports per `data_source`, which this lowering sets to the \
                 evaluation's name so each evaluation is reported apart; the rows do not carry \
                 the file's subset column",
                "one result for the whole evaluation",
            )
            .refuse(E_UNMAPPED);
        }
    }
    match denominator {
        params::Denominator::All => c.implied(n, "denominator", "verl averages over every episode"),
        params::Denominator::NonAborted => c
            .not_mapped(
                n,
                "denominator",
                "verl averages validation rewards over every episode",
                "aborted episodes count as 0",
            )
            .refuse(E_UNMAPPED),
    };
    let (key, v, note) = if at_end {
        ("trainer.test_freq", json!(last_step), "at the last step of the stage's last run")
    } else {
        (
            "trainer.val_before_train",
            json!(true),
            "before the stage's first run, whose starting weights are this stage's",
        )
    };
    c.map(&mut cfg, n, "after", &[(key, v)])
        .note(format!("after `{}`: {note}", after.as_deref().unwrap_or("")));
    c.implied(n, "checkpoint", "the weights of the run it validates");
    c.implied(n, "binds", "the agent's policy is the model verl trains");
}

/// An eval's environment and budgets: verl has one env service and one response length per run.
fn budgets(c: &mut Ctx<'_>, n: &Node, e: &Evaluate) {
    let Evaluate { env, max_response, trajectory_tokens, repetition_penalty, .. } = e;
    match env {
        params::OrAgent::Agent => {
            c.implied(n, "env", "the agent's own environment (the env service)")
        }
        params::OrAgent::Value(_) => c
            .not_mapped(
                n,
                "env",
                "one env service per job: an evaluation cannot have an environment of its own",
                "the evaluation runs in the agent's environment",
            )
            .refuse(E_UNMAPPED),
    };
    match max_response {
        params::OrAgent::Agent => {
            c.implied(n, "max_response", "the agent's response budget (data.max_response_length)")
        }
        params::OrAgent::Value(_) => c.not_mapped(
            n,
            "max_response",
            "verl 0.9.1 has one response length per run for training and validation",
            "evaluation replies get the rollout's response length",
        ),
    };
    match trajectory_tokens {
        params::OrAgent::Agent => {
            c.implied(n, "trajectory_tokens", "the agent's episode budget, as in training")
        }
        params::OrAgent::Value(_) => c.not_mapped(
            n,
            "trajectory_tokens",
            "verl 0.9.1's multi-turn response budget (data.max_response_length) is one per run, \
             for training and validation, and counts tool responses too",
            "evaluation episodes get the rollout's response budget",
        ),
    };
    if *repetition_penalty == 1.0 {
        c.implied(n, "repetition_penalty", "1: no penalty");
    } else {
        c.not_mapped(
            n,
            "repetition_penalty",
            "verl 0.9.1's val_kwargs have no repetition penalty",
            "no repetition penalty in evaluation",
        );
    }
}

/// Evals the job does not run: every field not mapped.
pub(crate) fn outside(c: &mut Ctx<'_>) {
    let nodes: Vec<(&Node, Option<String>)> =
        c.d.nodes
            .iter()
            .filter_map(|(n, p)| match p {
                Ok(Params::Eval(e)) => Some((*n, e.after.clone())),
                Err(_) if n.kind == wrl_plan::NodeKind::Eval => Some((*n, None)),
                _ => None,
            })
            .collect();
    for (n, after) in nodes {
        if c.has(n, "agent") {
            continue;
        }
        let why = match &after {
            Some(s) => format!(
                "it runs after `{s}`, which is neither an RL stage of this job nor the stage one starts from"
            ),
            None => "it evaluates the declared models, not weights this job trains".into(),
        };
        for leaf in crate::report::leaves(n) {
            c.not_mapped(n, &leaf, why.clone(), "run it with `wrlc run` on the weights it names");
        }
    }
}
