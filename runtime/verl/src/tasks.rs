//! The tasks a verl run reads, as training or validation rows: generated for the sandbox or read
//! from a task file (its columns renamed), each row with the agent's system prompt and the
//! task itself for the env service.

use wrl_plan::params::{Agent, Params};
use wrl_sandbox::Task;

use crate::ctx::Ctx;
use crate::policy;
use crate::rows::Row;

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
            use wrl_plan::params::QaQuestion;
            use wrl_sandbox::Question;
            let qs: Vec<Question> = (q.questions.iter())
                .map(|k| match k {
                    QaQuestion::Lookup => Question::Lookup,
                    QaQuestion::Compare => Question::Compare,
                    QaQuestion::Chain => Question::Chain,
                    QaQuestion::Difference => Question::Difference,
                })
                .collect();
            let (s, n) = (split(q.split), q.count as usize);
            Ok(wrl_sandbox::generate_qa_of(&content(), s, n, q.seed, &qs))
        }
        Some(Params::Dataset(Dataset::Jsonl(f)))
            if !matches!(f.kind, RecordKind::Trajectories | RecordKind::Grounding) =>
        {
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
                Dataset::EnvTasks(_) => "tasks an env server draws at reset",
                _ => "datasets of trajectories or grounding pairs",
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
    if let Some(Params::Dataset(wrl_plan::params::Dataset::EnvTasks(_))) = c.d.get(tasks) {
        return Err(env_drawn_refused(c, tasks));
    }
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

/// Tasks an env server draws at reset (`env_tasks`) are refused: a verl row carries its task's
/// prompt (`task: GOAL`) before the episode starts, and that goal is known only once the
/// server's reset has answered it.
fn env_drawn_refused(c: &mut Ctx<'_>, tasks: &str) -> String {
    let why = "verl's dataset rows carry each task's first prompt (`task: GOAL`) before its \
               episode starts; the env server draws these goals at reset, after the row is read";
    if let Some(n) = c.d.node(tasks)
        && !c.has(n, "count")
    {
        c.not_mapped(
            n,
            "count",
            why,
            "a task file of the server's goals by index (`jsonl(…) { kind = tasks }`), or `wrlc run`",
        )
        .refuse(crate::ctx::E_UNMAPPED);
    }
    policy::dataset_used(c, tasks, 0);
    why.to_string()
}
