//! RL stages as verl runs: each phase of each `grpo`/`dapo`/`ppo` stage is one run with its own
//! config (`config/<stage>-<k>.yaml`), agent-loop entry and training rows; phase k > 1 resumes
//! from phase k − 1's last checkpoint. Here the runs are laid out (names, absolute step counts,
//! where each starts), the settings every run shares are written, and each phase's own fields,
//! its policy's, agent's and env's, its evaluations and its rows are put in.

use serde_json::{Value as Json, json};
use wrl_plan::Node;
use wrl_plan::params::{Agent, Model, NodeRef, Params, RlPhase};
use wrl_sandbox::Task;

use crate::ctx::{Ctx, Run};
use crate::phase::{Ph, map_phase};
use crate::rows::{self, Row};
use crate::{evals, policy, yaml};

/// One RL stage: its phases in order.
pub(crate) struct Stage<'p> {
    pub decl: String,
    pub phases: Vec<(&'p Node, RlPhase)>,
}

/// The fields every phase shares, by variant.
pub(crate) fn phase_refs(p: &RlPhase) -> (&NodeRef, &NodeRef, &NodeRef, u64, u32) {
    match p {
        RlPhase::Grpo(g) => (&g.init, &g.tasks, &g.agent, g.iters.0, g.phase),
        RlPhase::Dapo(d) => (&d.init, &d.tasks, &d.agent, d.iters.0, d.phase),
        RlPhase::Ppo(p) => (&p.init, &p.tasks, &p.agent, p.iters.0, p.phase),
    }
}

/// The RL stages of the plan, in plan order, each with its phases by number.
pub(crate) fn rl_stages<'p>(c: &Ctx<'p>) -> Vec<Stage<'p>> {
    let mut out: Vec<Stage<'p>> = Vec::new();
    for (n, p) in &c.d.nodes {
        let Ok(Params::RlPhase(r)) = p else { continue };
        let stage = match r {
            RlPhase::Grpo(g) => g.stage.clone(),
            RlPhase::Dapo(d) => d.stage.clone(),
            RlPhase::Ppo(p) => p.stage.clone(),
        };
        match out.iter_mut().find(|s| s.decl == stage) {
            Some(s) => s.phases.push((*n, r.clone())),
            None => out.push(Stage { decl: stage, phases: vec![(*n, r.clone())] }),
        }
    }
    for s in &mut out {
        s.phases.sort_by_key(|(_, p)| phase_refs(p).4);
    }
    out
}

/// The model node an agent's episodes are sampled from (a ReAct agent's policy).
pub(crate) fn policy_of(c: &Ctx<'_>, agent: &str) -> Option<String> {
    match c.d.get(agent) {
        Some(Params::Agent(Agent::React(r))) => Some(r.policy.id().to_string()),
        _ => None,
    }
}

/// The env node an agent acts in.
pub(crate) fn env_of(c: &Ctx<'_>, agent: &str) -> Option<String> {
    match c.d.get(agent) {
        Some(Params::Agent(Agent::React(r))) => Some(r.env.id().to_string()),
        Some(Params::Agent(Agent::Graph(g))) => Some(g.env.id().to_string()),
        _ => None,
    }
}

/// Lays out the runs, marks what the job reads, and lowers every phase.
pub(crate) fn lower_stages(c: &mut Ctx<'_>) {
    let stages = rl_stages(c);
    for s in &stages {
        mark_used(c, s);
    }
    for s in &stages {
        let mut step = 0;
        for (i, (n, p)) in s.phases.iter().enumerate() {
            let (init, _, agent, iters, phase) = phase_refs(p);
            let name = format!("{}-{phase}", s.decl);
            let resumes = (i > 0).then(|| (format!("{}-{}", s.decl, phase - 1), step));
            step += iters.max(1);
            let (needs_model, model_path) = match &resumes {
                Some(_) => c.runs.last().map_or((None, yaml::MISSING.to_string()), |r| {
                    (r.needs_model.clone(), r.model_path.clone())
                }),
                None => start_model(c, init.id(), agent.id()),
            };
            c.runs.push(Run {
                name: name.clone(),
                node: n.id.clone(),
                stage: s.decl.clone(),
                phase,
                last_step: step,
                resumes,
                needs_model,
                model_path,
                train_file: format!("data/{name}.train.parquet"),
                val_files: Vec::new(),
            });
        }
    }
    for s in &stages {
        for i in 0..s.phases.len() {
            lower_phase(c, s, i);
        }
    }
}

/// Where a stage's first run starts: `(why MODEL must be given, the default model path)`.
fn start_model(c: &Ctx<'_>, init: &str, agent: &str) -> (Option<String>, String) {
    let policy = policy_of(c, agent);
    let hf_id = policy.as_deref().and_then(|m| match c.d.get(m) {
        Some(Params::Model(Model::Hf(h))) if !c.d.is_unknown(m, "id") => Some(h.id.clone()),
        _ => None,
    });
    let init_node = c.d.node(init);
    match (init_node.map(|n| n.kind), hf_id) {
        (Some(wrl_plan::NodeKind::LoadModel), Some(id)) => (None, id),
        (Some(wrl_plan::NodeKind::Checkpoint), _) => {
            let stage = init.strip_prefix("checkpoint:").unwrap_or(init);
            (
                Some(format!(
                    "the stage starts from `{stage}`'s weights, which this job does not produce"
                )),
                yaml::MISSING.into(),
            )
        }
        _ => (
            Some("the stage's policy is not a Hugging Face model verl can load".into()),
            yaml::MISSING.into(),
        ),
    }
}

/// Marks the nodes a stage's runs read, so their `unknown` values are refused.
fn mark_used(c: &mut Ctx<'_>, s: &Stage<'_>) {
    for (n, p) in &s.phases {
        let (_, tasks, agent, _, _) = phase_refs(p);
        c.used.insert(n.id.clone());
        c.used.insert(tasks.id().to_string());
        c.used.insert(agent.id().to_string());
        if let Some(m) = policy_of(c, agent.id()) {
            c.used.insert(m);
        }
        if let Some(e) = env_of(c, agent.id()) {
            c.used.insert(e);
        }
        let reward = match p {
            RlPhase::Grpo(g) => Some(&g.reward),
            RlPhase::Dapo(d) => Some(&d.reward),
            RlPhase::Ppo(p) => Some(&p.reward),
        };
        if let Some(wrl_plan::params::RewardRef::Node(r)) = reward {
            c.used.insert(r.id().to_string());
        }
    }
}

/// What every run of the job sets the same way (not from the plan: the lowering's own choices,
/// listed in the job's README).
fn base_config(run: &Run) -> Json {
    let mut cfg = json!({
        "hydra": {"searchpath": ["pkg://verl.trainer.config"]},
        "defaults": ["ppo_trainer", "_self_"],
    });
    let set = |cfg: &mut Json, k: &str, v: Json| crate::ctx::set(cfg, k, v);
    for (k, v) in lowering_defaults() {
        set(&mut cfg, k, v);
    }
    set(&mut cfg, "trainer.experiment_name", json!(run.name));
    cfg
}

/// The settings the lowering chooses itself, with the values it writes.
pub(crate) fn lowering_defaults() -> Vec<(&'static str, Json)> {
    vec![
        ("algorithm.adv_estimator", json!("grpo")),
        ("critic.enable", json!(false)),
        ("actor_rollout_ref.actor.strategy", json!("fsdp")),
        ("actor_rollout_ref.actor.use_dynamic_bsz", json!(true)),
        ("actor_rollout_ref.model.use_remove_padding", json!(true)),
        ("actor_rollout_ref.rollout.name", json!("vllm")),
        ("actor_rollout_ref.rollout.mode", json!("async")),
        ("actor_rollout_ref.rollout.tensor_model_parallel_size", json!(1)),
        ("actor_rollout_ref.rollout.gpu_memory_utilization", json!(0.6)),
        ("actor_rollout_ref.rollout.calculate_log_probs", json!(true)),
        ("actor_rollout_ref.rollout.multi_turn.enable", json!(true)),
        ("actor_rollout_ref.rollout.multi_turn.tool_config_path", json!("tools.yaml")),
        ("actor_rollout_ref.rollout.agent.agent_loop_config_path", json!("agent_loops.yaml")),
        ("actor_rollout_ref.rollout.agent.num_workers", json!(8)),
        ("data.prompt_key", json!("prompt")),
        ("data.return_raw_chat", json!(true)),
        ("data.truncation", json!("left")),
        ("data.filter_overlong_prompts", json!(false)),
        ("reward.custom_reward_function.path", json!("pkg://wrl_verl.reward")),
        ("reward.custom_reward_function.name", json!("compute_score")),
        ("reward.reward_manager.name", json!("naive")),
        ("trainer.n_gpus_per_node", json!(8)),
        ("trainer.nnodes", json!(1)),
        ("trainer.total_epochs", json!(1000)),
        ("trainer.logger", json!(["console"])),
        ("trainer.project_name", json!("wrl")),
        ("trainer.val_before_train", json!(false)),
        ("trainer.test_freq", json!(-1)),
        ("trainer.use_v1", json!(true)),
    ]
}

fn lower_phase<'p>(c: &mut Ctx<'p>, s: &Stage<'p>, i: usize) {
    let (n, p) = &s.phases[i];
    let Some(run) = c.runs.iter().find(|r| r.node == n.id).cloned() else { return };
    let (_, tasks, agent, _, _) = phase_refs(p);
    let mut cfg = base_config(&run);
    let name = format!("wrl_{}", run.name.replace('-', "_"));
    let mut al = json!({
        "name": name,
        "_target_": "wrl_verl.agent_loop.WrlAgentLoop",
        "node": n.id,
        "plan_digest": wrl_plan::digest(c.plan),
        "eval": false,
    });
    let agent_node = c.d.node(agent.id());
    // An `unknown` turn budget caps nothing: the phase's horizon is the episode's budget.
    let max_turns = match c.d.get(agent.id()) {
        _ if c.d.is_unknown(agent.id(), "max_turns") => None,
        Some(Params::Agent(Agent::React(r))) => Some(r.max_turns.0),
        Some(Params::Agent(Agent::Graph(g))) => Some(g.max_turns.0),
        _ => None,
    };
    {
        let start = phase_refs(&s.phases[0].1).0.clone();
        let mut ph = Ph { c, n, cfg: &mut cfg, al: &mut al, run: &run, max_turns, start };
        map_phase(&mut ph, p);
    }
    let level = al.get("level").and_then(Json::as_str).unwrap_or("turn").to_string();
    if let Some(agent_node) = agent_node {
        policy::agent_env_model(c, agent_node, &mut cfg, &mut al, &level);
    }
    evals::phase_evals(c, s, i, &mut cfg, &run, &al);
    // A dataset that cannot be converted is refused where it is accounted for.
    if let Ok(rows) = task_rows(c, tasks.id(), &name, &n.id, agent.id(), "train") {
        match rows::parquet(&rows) {
            Ok(bytes) => {
                c.files.insert(run.train_file.clone(), bytes);
            }
            Err(e) => policy::dataset_refused(c, tasks.id(), &e),
        }
    }
    let header = [
        &*format!(
            "verl {} run `{}`: phase {} of RL stage `{}` ({})",
            crate::VERL_VERSION,
            run.name,
            run.phase,
            run.stage,
            n.id
        ),
        "Written by `wrlc lower --to verl`; portability.md says where each value comes from.",
        "Run with ../launch.sh (which passes absolute paths), or:",
        &*format!(
            "  python3 -m verl.trainer.main_ppo --config-path config --config-name {}",
            run.name
        ),
    ];
    c.files.insert(format!("config/{}.yaml", run.name), yaml::document(&header, &cfg).into_bytes());
    if let Some(r) = c.runs.iter_mut().find(|r| r.node == n.id) {
        r.val_files = cfg
            .pointer("/data/val_files")
            .and_then(Json::as_array)
            .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
    }
    c.agent_loops.insert(name, al);
}

/// The tasks of dataset `id` (generated for the sandbox, read from a task file), or why not.
pub(crate) fn tasks_of(c: &mut Ctx<'_>, id: &str) -> Result<Vec<Task>, String> {
    use wrl_plan::params::{Dataset, RecordKind, SandboxSplit};
    let split = |s: SandboxSplit| match s {
        SandboxSplit::Train => wrl_sandbox::Split::Train,
        SandboxSplit::Test => wrl_sandbox::Split::Test,
    };
    let content = || wrl_sandbox::Content::new(0);
    match c.d.get(id) {
        Some(Params::Dataset(Dataset::SandboxTasks(t))) => {
            let sites: Vec<&str> = t.sites.iter().map(|s| s.word()).collect();
            Ok(wrl_sandbox::generate_on(
                &content(),
                split(t.split),
                t.count as usize,
                t.seed,
                &sites,
            ))
        }
        Some(Params::Dataset(Dataset::SandboxQa(q))) => {
            Ok(wrl_sandbox::generate_qa(&content(), split(q.split), q.count as usize, q.seed))
        }
        Some(Params::Dataset(Dataset::Jsonl(f))) if f.kind != RecordKind::Trajectories => {
            let text = std::fs::read_to_string(&f.path).map_err(|e| {
                format!("`{}` cannot be read here ({e}), so no rows were written", f.path)
            })?;
            let mut tasks = if f.columns.is_empty() {
                wrl_sandbox::parse_jsonl(&text).map_err(|e| format!("`{}`: {e}", f.path))?
            } else {
                mapped_tasks(&text, &f.columns).map_err(|e| format!("`{}`: {e}", f.path))?
            };
            if let Some(n) = f.count {
                tasks.truncate(n as usize);
            }
            Ok(tasks)
        }
        Some(Params::Dataset(d)) => Err(format!(
            "this wrlc converts task JSONL files and the sandbox's generators, not {}",
            match d {
                Dataset::Parquet(_) => "parquet files",
                Dataset::HfDataset(_) => "Hugging Face datasets",
                _ => "datasets of trajectories",
            }
        )),
        _ => Err("the dataset does not decode".into()),
    }
}

/// Task JSONL whose keys a dataset's `columns` renames to the task's fields.
fn mapped_tasks(
    text: &str,
    columns: &std::collections::BTreeMap<String, String>,
) -> Result<Vec<Task>, String> {
    let fields = wrl_plan::params::RecordKind::Tasks.fields();
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let at = |e: String| format!("line {}: {e}", i + 1);
        let row: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(line).map_err(|e| at(e.to_string()))?;
        let row = wrl_sandbox::columns::select(&row, fields, columns).map_err(at)?;
        out.push(serde_json::from_value(row.into()).map_err(|e| at(e.to_string()))?);
    }
    Ok(out)
}

/// The system message of an agent's prompt: its `prompt`, else how to act with its tools.
pub(crate) fn system_prompt(c: &Ctx<'_>, agent: &str) -> String {
    let custom = match c.d.get(agent) {
        Some(Params::Agent(Agent::React(r))) => r.prompt.clone(),
        _ => String::new(),
    };
    if !custom.is_empty() {
        return custom;
    }
    "You are a web agent. Each turn you see the page (or the last tool response) and the task; \
     act with one of the tools, and answer with the terminal tool when the task is done."
        .into()
}

/// Rows of dataset `tasks` for agent loop `agent_name`, scored by plan node `node`.
pub(crate) fn task_rows(
    c: &mut Ctx<'_>,
    tasks: &str,
    agent_name: &str,
    node: &str,
    agent: &str,
    split: &str,
) -> Result<Vec<Row>, String> {
    let list = match tasks_of(c, tasks) {
        Ok(t) => t,
        Err(why) => {
            policy::dataset_refused(c, tasks, &why);
            return Err(why);
        }
    };
    let system = system_prompt(c, agent);
    let decl = c.d.node(tasks).map_or(tasks.to_string(), |n| n.decl.clone());
    let rows: Vec<Row> = list
        .iter()
        .enumerate()
        .map(|(i, t)| Row {
            data_source: decl.clone(),
            agent_name: agent_name.to_string(),
            prompt: vec![
                ("system".into(), system.clone()),
                ("user".into(), format!("task: {}", t.goal)),
            ],
            ground_truth: match &t.checker {
                wrl_sandbox::Checker::Answer { expected, .. } => expected.clone(),
                _ => String::new(),
            },
            index: i as i64,
            split: split.to_string(),
            task_json: serde_json::to_string(t).unwrap_or_default(),
            node: node.to_string(),
        })
        .collect();
    policy::dataset_used(c, tasks, rows.len());
    Ok(rows)
}
