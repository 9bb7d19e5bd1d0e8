//! An evaluation's result per subset (`by`): each task's subset read from its file's column (or
//! a generated task's field), and the tasks — episodes for `mean_reward` — of each subset
//! counted as the whole evaluation counts them, with a rate and its 95 % Wilson interval.

use std::collections::BTreeMap;

use wrl_plan::Node;
use wrl_plan::params::{Dataset, Params};
use wrl_sandbox::Task;

use super::Executor;
use super::tally::Counted;
use crate::error::{Fault, RunError};
use crate::preflight::{subsets, tables};
use crate::rundir::records::SubsetResult;
use crate::study::stats;

impl Executor<'_> {
    /// The subset of each of `tasks` (the first of dataset `data`'s), by column `by`.
    pub(super) fn subsets_of(
        &self,
        node: &Node,
        data: &str,
        tasks: &[Task],
        by: &str,
    ) -> Result<Vec<String>, RunError> {
        let refuse = |why: String| {
            RunError::new(Fault::SubsetColumn, format!("eval `{}`: {why}", node.decl)).at(
                node,
                Some("by"),
                "the column this evaluation splits on",
            )
        };
        let path = match self.plan.get(data) {
            Some(Params::Dataset(Dataset::Jsonl(f) | Dataset::Parquet(f))) => Some(f.path.clone()),
            Some(Params::Dataset(Dataset::HfDataset(h))) => {
                Some(tables::hf_dataset_file(&h.id, &h.file, h.split).map_err(refuse)?)
            }
            _ => None,
        };
        let mut labels = match path {
            Some(p) => subsets::of_file(&p, by).map_err(|(m, _)| refuse(m))?,
            None => tasks
                .iter()
                .map(|t| subsets::of_task(t, by))
                .collect::<Result<Vec<_>, _>>()
                .map_err(refuse)?,
        };
        if labels.len() < tasks.len() {
            return Err(refuse(format!("{} subsets read for {} tasks", labels.len(), tasks.len())));
        }
        labels.truncate(tasks.len());
        Ok(labels)
    }
}

/// Each subset's result: its tasks (or episodes, for `mean_reward`) counted as the whole is.
/// Where a subset's `tasks` repeat goals, its interval counts what they are worth
/// ([`Counted::repeats_within`]).
pub(super) fn split(counted: &Counted<'_>, labels: &[String]) -> BTreeMap<String, SubsetResult> {
    let mut counts: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for &(task, ok) in &counted.units {
        let Some(label) = labels.get(task) else { continue };
        let c = counts.entry(label.as_str()).or_default();
        c.0 += u64::from(ok);
        c.1 += 1;
    }
    // A subset none of whose tasks ran still shows, with nothing tried.
    for l in labels {
        counts.entry(l.as_str()).or_default();
    }
    counts
        .into_iter()
        .map(|(name, (s, n))| {
            let within = |t: usize| labels.get(t).is_some_and(|l| l == name);
            let worth = counted.repeats_within(&within).map(|r| r.worth);
            (name.to_string(), result(s, n, worth))
        })
        .collect()
}

/// A subset's counts as its result; with `worth`, its interval counts that many tasks.
pub(crate) fn result(solved: u64, out_of: u64, worth: Option<u64>) -> SubsetResult {
    let rate = if out_of == 0 { 0.0 } else { solved as f64 / out_of as f64 };
    let (s, n) = stats::counted(solved, out_of, worth);
    let (low, high) = stats::wilson(s, n, stats::Z95);
    let round = |x: f64| (x * 1e6).round() / 1e6;
    SubsetResult { solved, out_of, success: round(rate), low: round(low), high: round(high), worth }
}

/// `eval NAME [nq]: 3/5 solved (60.0%, 95% CI 23.1–88.2%)`, `what` being `eval NAME` (or a
/// validation's pass).
pub(super) fn said(what: &str, name: &str, r: &SubsetResult) -> String {
    let worth = r.worth.map(|w| format!(", worth {w} tasks")).unwrap_or_default();
    format!(
        "{what} [{name}]: {}/{} solved ({:.1}%, 95% CI {:.1}–{:.1}%{worth})",
        r.solved,
        r.out_of,
        r.success * 100.0,
        r.low * 100.0,
        r.high * 100.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subset_result_has_its_rate_and_wilson_interval() {
        let r = result(3, 5, None);
        assert_eq!((r.solved, r.out_of, r.success), (3, 5, 0.6));
        assert!(r.low > 0.2 && r.low < 0.3 && r.high > 0.85 && r.high < 0.9, "{r:?}");
        assert_eq!(result(0, 0, None).success, 0.0);
        assert_eq!(
            said("eval test", "nq", &r),
            "eval test [nq]: 3/5 solved (60.0%, 95% CI 23.1–88.2%)"
        );
        // Eleven tasks on three goals, worth three: Wilson's interval over three.
        let r = result(0, 11, Some(3));
        assert_eq!((r.solved, r.out_of, r.worth), (0, 11, Some(3)));
        assert!((r.high - crate::study::stats::wilson(0, 3, stats::Z95).1).abs() < 1e-6, "{r:?}");
        assert!(said("eval e", "cheapest", &r).ends_with("worth 3 tasks)"), "{r:?}");
    }
}
