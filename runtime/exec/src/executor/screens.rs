//! Demonstrations with their screenshots, for the SFT of a vision-language policy: whether a
//! dataset's demonstrations must record them (an SFT stage trains a VL policy on it, and the
//! agent whose prompts the examples take is shown screenshots), where the expert's are kept in
//! the run directory (`data/<dataset>/<demo>-<step>.png`, named relative to the cache beside
//! them), and a record's relative path anchored at its file's folder.

use std::path::Path;

use wrl_plan::params::{Dataset, Params, TypedPlan};
use wrl_sandbox::Trajectory;

use crate::agent::AgentCfg;
use crate::error::RunError;
use crate::rundir::RunDir;

/// Whether the demonstrations of dataset node `data` must carry screenshots: an SFT stage
/// trains a vision-language policy on them (directly or in a mixture) and the agent whose
/// prompts its examples take (`AgentCfg::for_sft`, as `executor::sft` picks it) is shown them.
pub(super) fn demos_seen(plan: &TypedPlan<'_>, data: &str) -> bool {
    let shown =
        |model: &str| AgentCfg::for_sft(plan, model).is_some_and(|a| a.shown_screens().is_some());
    let feeds = |id: &str| {
        id == data
            || matches!(plan.get(id), Some(Params::Dataset(Dataset::Mixture(m)))
                if m.parts.iter().any(|p| p.id() == data))
    };
    plan.nodes.iter().any(|(_, p)| match p {
        Params::Sft(s) => {
            feeds(s.data.id())
                && crate::preflight::vision::is_vl(plan, s.model.id())
                && shown(s.model.id())
        }
        _ => false,
    })
}

/// The expert's demonstrations with each step's screenshot written to the run directory as
/// `data/<decl>/<demo>-<step>.png`; each step names its file relative to `data/` (where the
/// cache stands). Only successful demonstrations are kept, numbered in order.
pub(super) fn save(
    run: &RunDir,
    decl: &str,
    shown: Vec<(Trajectory, Vec<Option<Vec<u8>>>)>,
) -> Result<Vec<Trajectory>, RunError> {
    let mut out = Vec::new();
    for (mut t, shots) in shown.into_iter().filter(|(t, _)| t.outcome.success) {
        let k = out.len();
        for (i, (step, png)) in t.steps.iter_mut().zip(shots).enumerate() {
            let Some(png) = png else { continue };
            let name = format!("{decl}/{k}-{i}.png");
            run.write_file(&format!("data/{name}"), &png)?;
            step.screenshot = Some(name);
        }
        out.push(t);
    }
    Ok(out)
}

/// `demos` with each step's screenshot path made absolute from `base` (the folder of the file
/// that holds them); an absolute path stays.
pub(super) fn anchor(mut demos: Vec<Trajectory>, base: &Path) -> Vec<Trajectory> {
    for step in demos.iter_mut().flat_map(|t| t.steps.iter_mut()) {
        if let Some(p) = step.screenshot.as_mut() {
            *p = base.join(&*p).to_string_lossy().into_owned();
        }
    }
    demos
}

/// Each step's screenshot as PNG bytes, read from its (anchored) path; `None` for a step
/// without one. `Err` names the file that cannot be read.
pub(crate) fn read(t: &Trajectory) -> Result<Vec<Option<Vec<u8>>>, String> {
    t.steps
        .iter()
        .map(|s| match &s.screenshot {
            None => Ok(None),
            Some(p) => std::fs::read(p)
                .map(Some)
                .map_err(|e| format!("the screenshot `{p}` cannot be read: {e}")),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_are_anchored_at_their_file() {
        let step = |shot: Option<&str>| wrl_sandbox::TrajStep {
            observation: String::new(),
            actions: Vec::new(),
            feedback: String::new(),
            url: String::new(),
            screenshot: shot.map(str::to_string),
            boxes: None,
            said: None,
            malformed: false,
        };
        let mut t: Trajectory = serde_json::from_str(
            r#"{"task_id":"t","template":"x","goal":"g","agent":"expert","steps":[],
                "outcome":{"reason":"completed","message":"","answer":null,"success":true,
                "detail":""},"elapsed_ms":0}"#,
        )
        .unwrap();
        t.steps = vec![step(Some("d/0-0.png")), step(None), step(Some("/abs/1.png"))];
        let out = anchor(vec![t], Path::new("/run/data"));
        let shots: Vec<Option<&str>> =
            out[0].steps.iter().map(|s| s.screenshot.as_deref()).collect();
        assert_eq!(shots, [Some("/run/data/d/0-0.png"), None, Some("/abs/1.png")]);
    }
}
