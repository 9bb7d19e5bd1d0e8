//! Dataset nodes: the sandbox's generated tasks and QA pairs, the scripted expert's
//! demonstrations (recorded once and cached in the run directory, checked line by line when a
//! resumed run reads them back), JSONL files, and mixtures of trajectory datasets.

use futures::StreamExt;
use wrl_plan::Node;
use wrl_plan::params::{self, Dataset, DemoEnv, QaQuestion, SandboxSite, SandboxSplit, WeightRule};
use wrl_sandbox::{Question, Sandbox, Split, Task, Trajectory};
use wrl_trainer::MixtureWeights;

use super::{Data, Demos, Executor};
use crate::env::search::SearchExpert;
use crate::error::{Fault, RunError};
use crate::preflight::files::Records;
use crate::preflight::tables::{format_help, hf_dataset_file, read_records};
use crate::rundir::RunDirError;

/// The first line of a demonstration cache: how many demonstrations follow, and the checksum
/// of the lines that follow (absent in caches written before it was).
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CacheHeader {
    demonstrations: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    checksum: Option<String>,
}

fn split(s: SandboxSplit) -> Split {
    match s {
        SandboxSplit::Train => Split::Train,
        SandboxSplit::Test => Split::Test,
    }
}

/// The sandbox's kinds of QA question, as `std::sandbox::qa`'s `questions` names them.
fn questions(qs: &[QaQuestion]) -> Vec<Question> {
    qs.iter()
        .map(|q| match q {
            QaQuestion::Lookup => Question::Lookup,
            QaQuestion::Compare => Question::Compare,
            QaQuestion::Chain => Question::Chain,
            QaQuestion::Difference => Question::Difference,
        })
        .collect()
}

/// The tasks a sandbox generator makes on `sites`.
fn generate(sb: &Sandbox, sites: &[SandboxSite], s: Split, count: usize, seed: u64) -> Vec<Task> {
    let sites: Vec<&str> = sites.iter().map(|s| s.word()).collect();
    wrl_sandbox::generate_on(sb.content(), s, count, seed, &sites)
}

impl<'a> Executor<'a> {
    pub(super) async fn load_dataset(&mut self, node: &Node, d: &Dataset) -> Result<(), RunError> {
        let data = match d {
            Dataset::SandboxTasks(t) => {
                let sb = self.sandbox().await?;
                let seed = self.seed(t.seed);
                Data::Tasks(generate(&sb, &t.sites, split(t.split), t.count as usize, seed))
            }
            Dataset::SandboxQa(q) => {
                let sb = self.sandbox().await?;
                let (count, seed) = (q.count as usize, self.seed(q.seed));
                let (s, qs) = (split(q.split), questions(&q.questions));
                Data::Tasks(wrl_sandbox::generate_qa_of(sb.content(), s, count, seed, &qs))
            }
            // Slots the env server draws at reset; the stage orders them as any task set.
            Dataset::EnvTasks(t) => Data::Tasks(crate::env::server::env_drawn(t.count)),
            Dataset::SandboxDemos(demos) => {
                let recorded = self.expert_demos(node, demos).await?;
                let copies = demos.augment as usize;
                if copies == 0 {
                    Data::Demos(recorded)
                } else {
                    let tasks = self.demo_tasks(demos).await?;
                    let out = augmented(recorded, &tasks, copies, self.seed(demos.seed));
                    self.say(&format!(
                        "dataset {}: {} demonstrations with {copies} rewritten copies of each",
                        node.decl,
                        out.len()
                    ));
                    Data::Demos(out)
                }
            }
            Dataset::Mixture(m) => {
                let mut parts = Vec::new();
                for part in &m.parts {
                    match self.built.data.get(part.id()) {
                        Some(Data::Demos(d)) => {
                            parts.push((part.id().to_string(), Demos::Episodes(d.clone())))
                        }
                        Some(Data::Chats(c)) => {
                            parts.push((part.id().to_string(), Demos::Chats(c.clone())))
                        }
                        _ => {
                            return Err(RunError::new(
                                Fault::Data,
                                format!(
                                    "mixture `{}`: `{part}` is not a dataset of trajectories or conversations",
                                    node.decl
                                ),
                            ));
                        }
                    }
                }
                let weights = match &m.weights {
                    params::MixtureWeights::Fixed(w) => MixtureWeights::Fixed(w.clone()),
                    params::MixtureWeights::Rule(WeightRule::EffectiveSamples { beta }) => {
                        MixtureWeights::EffectiveNumber { beta: *beta }
                    }
                };
                Data::Mixture(parts, weights)
            }
            Dataset::Jsonl(f) | Dataset::Parquet(f) => {
                let r = read_records(&f.path, f.kind, &f.columns);
                records(r, format_help(&f.path), std::path::Path::new(&f.path))?
            }
            Dataset::HfDataset(h) => {
                let path = hf_dataset_file(&h.id, &h.file, h.split).map_err(|why| {
                    RunError::new(Fault::Data, format!("dataset `{}`: {why}", node.decl))
                })?;
                records(read_records(&path, h.kind, &h.columns), format_help(&path), path.as_ref())?
            }
        };
        self.built.data.insert(node.id.clone(), data);
        Ok(())
    }

    /// The scripted expert's successful demonstrations of `count` training tasks, solved once
    /// and cached in the run directory; a resumed run reads the cache back and refuses a
    /// damaged one, naming the file and line.
    async fn expert_demos(
        &mut self,
        node: &Node,
        d: &params::SandboxDemos,
    ) -> Result<Vec<Trajectory>, RunError> {
        let cached = format!("data/{}.jsonl", node.decl);
        let path = self.run.root().join(&cached);
        let data_dir = self.run.root().join("data");
        match std::fs::read_to_string(&path) {
            Ok(text) => return Ok(super::screens::anchor(read_cache(&path, &text)?, &data_dir)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(RunError::new(
                    Fault::RunDir,
                    format!("cannot read `{}`: {e}", path.display()),
                ));
            }
        }
        let count = d.count as usize;
        let tasks = self.demo_tasks(d).await?;
        let conc = self.concurrency().max(1);
        let results: Vec<Trajectory> = match d.env {
            DemoEnv::SearchApi => {
                self.say(&format!(
                    "dataset {}: the scripted expert answers {count} questions with search and visit",
                    node.decl
                ));
                // The responses the expert reads are cut as the run's search env cuts them.
                let env = self.search_env_node();
                let env = self.search_env(env).await?;
                let episode = wrl_browser::EpisodeCfg::default();
                futures::stream::iter(tasks.iter().map(|task| {
                    let (env, episode) = (env.clone(), episode.clone());
                    async move { env.run_task(task, &mut SearchExpert, &episode).await }
                }))
                .buffered(conc)
                .collect()
                .await
            }
            DemoEnv::Browser => {
                let seen = super::screens::demos_seen(self.plan, &node.id);
                self.say(&format!(
                    "dataset {}: the scripted expert solves {count} tasks in Chromium{}",
                    node.decl,
                    if seen { ", a screenshot of every step kept" } else { "" }
                ));
                let episode = self.browser_episode_cfg();
                let sb = self.sandbox().await?;
                let pool = self.pool().await?;
                if seen {
                    let shown =
                        wrl_browser::runner::run_expert_seeing(&pool, &sb, &tasks, conc, &episode)
                            .await;
                    let shown = shown.into_iter().filter_map(Result::ok).collect();
                    super::screens::save(self.run, &node.decl, shown)?
                } else {
                    let results =
                        wrl_browser::runner::run_expert_with(&pool, &sb, &tasks, conc, &episode)
                            .await;
                    results.into_iter().filter_map(Result::ok).collect()
                }
            }
        };
        let demos: Vec<Trajectory> = results.into_iter().filter(|t| t.outcome.success).collect();
        let mut body = String::new();
        for t in demos.iter().map(serde_json::to_string) {
            body.push_str(&t.map_err(RunError::run_dir)?);
            body.push('\n');
        }
        let header = CacheHeader {
            demonstrations: demos.len(),
            checksum: Some(wrl_trainer::checkpoint::checksum(body.as_bytes())),
        };
        let mut lines = serde_json::to_string(&header).map_err(RunError::run_dir)?;
        lines.push('\n');
        lines.push_str(&body);
        // A cache: a run that cannot write it records the demonstrations again on resume.
        if let Err(e) = self.run.write_file(&cached, lines.as_bytes()) {
            self.say(&format!("dataset {}: demonstrations not cached: {e}", node.decl));
        }
        self.say(&format!("dataset {}: {} demonstrations", node.decl, demos.len()));
        Ok(super::screens::anchor(demos, &data_dir))
    }

    /// The tasks a demonstration dataset solves: sandbox tasks, or QA pairs for search demos.
    async fn demo_tasks(&mut self, d: &params::SandboxDemos) -> Result<Vec<Task>, RunError> {
        let sb = self.sandbox().await?;
        let (count, seed) = (d.count as usize, self.seed(d.seed));
        Ok(match d.env {
            DemoEnv::SearchApi => {
                let qs = questions(&d.questions);
                wrl_sandbox::generate_qa_of(sb.content(), Split::Train, count, seed, &qs)
            }
            DemoEnv::Browser => generate(&sb, &d.sites, Split::Train, count, seed),
        })
    }
}

/// Checks, without changing anything, the inputs a resumed run would read back from `root`:
/// the committed checkpoint (every file against its checksum; a damaged one is fine when the
/// commit before it is whole, see [`crate::rundir::fallback`]) and each demonstration
/// dataset's cache (its count and checksum), when they were written.
pub fn check_cached_inputs(
    root: &std::path::Path,
    plan: &params::TypedPlan<'_>,
) -> Result<(), RunError> {
    // The committed checkpoint (each role's too) must be whole, or an earlier one: a damaged
    // one is named here, not met as a failed load mid-run.
    if let Ok(committed) = crate::rundir::RunDir::inspect(root) {
        crate::rundir::fallback::usable(root, &committed)?;
    }
    for (n, p) in &plan.nodes {
        if let params::Params::Dataset(Dataset::SandboxDemos(_)) = p {
            let path = root.join("data").join(format!("{}.jsonl", n.decl));
            match std::fs::read_to_string(&path) {
                Ok(text) => {
                    read_cache(&path, &text)?;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(RunError::new(
                        Fault::RunDir,
                        format!("cannot read `{}`: {e}", path.display()),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The demonstrations of a cache: its header, then exactly that many trajectories.
fn read_cache(path: &std::path::Path, text: &str) -> Result<Vec<Trajectory>, RunError> {
    let damaged = |line: usize, reason: String| -> RunError {
        RunDirError::DamagedLine { path: path.display().to_string(), line, reason }.into()
    };
    let mut lines = text.lines();
    let header: CacheHeader = lines
        .next()
        .and_then(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| damaged(1, "it does not start with its count of demonstrations".into()))?;
    let rest: String = lines.map(|l| format!("{l}\n")).collect();
    if let Some(want) = &header.checksum {
        let got = wrl_trainer::checkpoint::checksum(rest.as_bytes());
        if got != *want {
            return Err(damaged(
                2,
                format!(
                    "its demonstrations do not match the checksum in its header ({got}, not {want}): edited or damaged"
                ),
            ));
        }
    }
    let demos: Vec<Trajectory> = crate::rundir::read_lines(path, &rest).map_err(|e| match e {
        RunDirError::DamagedLine { line, reason, .. } => damaged(line + 1, reason),
        other => other.into(),
    })?;
    if demos.len() != header.demonstrations {
        return Err(damaged(
            demos.len() + 2,
            format!(
                "it holds {} of the {} demonstrations it was written with",
                demos.len(),
                header.demonstrations
            ),
        ));
    }
    Ok(demos)
}

/// The demonstrations followed by `copies` rewritten copies of each (its task's values replaced
/// by random strings of the same shape, see `wrl_sandbox::augment`), seeded by the dataset's
/// seed. Demonstrations whose task is not among `tasks` are kept as they are.
fn augmented(demos: Vec<Trajectory>, tasks: &[Task], copies: usize, seed: u64) -> Vec<Trajectory> {
    use rand::SeedableRng;
    let by_id: std::collections::BTreeMap<&str, &Task> =
        tasks.iter().map(|t| (t.id.as_str(), t)).collect();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0xa5a5_5a5a);
    let mut out = demos.clone();
    for copy in 1..=copies {
        for d in &demos {
            if let Some(task) = by_id.get(d.task_id.as_str()) {
                out.push(wrl_sandbox::augment(d, task, copy, &mut rng));
            }
        }
    }
    out
}

/// The data of file `path`'s records (a trajectory's screenshots named from its folder), or why
/// they cannot be read.
fn records(
    r: Result<Records, (String, String)>,
    help: &str,
    path: &std::path::Path,
) -> Result<Data, RunError> {
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    match r {
        Ok(Records::Tasks(t)) => Ok(Data::Tasks(t)),
        Ok(Records::Trajectories(t)) => Ok(Data::Demos(super::screens::anchor(t, dir))),
        Ok(Records::Chats(c)) => Ok(Data::Chats(c)),
        Err((message, _)) => {
            Err(RunError::new(crate::preflight::files::fault_of(&message), message).help(help))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_damaged_cache_is_refused_with_its_line() {
        let p = std::path::Path::new("run/data/demos.jsonl");
        let e = read_cache(p, "").unwrap_err();
        assert_eq!(e.code(), "E0508");
        assert!(e.message.contains("line 1"), "{}", e.message);
        let e = read_cache(p, "{\"demonstrations\": 2}\n{\"task_id\": \n").unwrap_err();
        assert!(e.message.contains("`run/data/demos.jsonl` line 2 is damaged"), "{}", e.message);
        assert_eq!(read_cache(p, "{\"demonstrations\": 0}\n").unwrap().len(), 0);
        let e = read_cache(p, "{\"demonstrations\": 3}\n").unwrap_err();
        assert!(e.message.contains("holds 0 of the 3"), "{}", e.message);
    }

    /// A cache edited so that every line still parses (an answer changed) is refused by its
    /// checksum; before the checksum, it was used.
    #[test]
    fn an_edited_cache_is_refused_by_its_checksum() {
        let p = std::path::Path::new("run/data/demos.jsonl");
        let line = r#"{"task_id":"qa-1","template":"qa","goal":"When was Barvel founded?","agent":"expert","steps":[],"outcome":{"reason":"completed","message":"","answer":"1204","success":true,"detail":""},"elapsed_ms":3}"#;
        let body = format!("{line}\n");
        let sum = wrl_trainer::checkpoint::checksum(body.as_bytes());
        let good = format!("{{\"demonstrations\":1,\"checksum\":\"{sum}\"}}\n{body}");
        assert_eq!(read_cache(p, &good).unwrap().len(), 1);
        let edited = good.replace("1204", "1205");
        let e = read_cache(p, &edited).unwrap_err();
        assert_eq!(e.code(), "E0508");
        assert!(e.message.contains("line 2") && e.message.contains("checksum"), "{}", e.message);
    }
}
