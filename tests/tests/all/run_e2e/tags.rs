//! Tag-style tool calls end to end (#46 item 5): `tests/recipes/search_r1.wrl --profile
//! offline`, GRPO on the sandbox's search API with the embedded tiny model calling `search` by
//! `<search>…</search>`.

use super::{offline_run, records};

/// Every episode is recorded as its one sequence: the policy's segments in the loss, and
/// between each two of them the env's response to the first, in `<information>` tags and out
/// of the loss; the same seed writes the same sequences again.
#[test]
fn search_r1_appends_results_inline_and_masks_them_out_of_the_loss() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str| offline_run("search_r1.wrl", dir.path().join(name));
    let (summary, _, trajs) = records(&run("run"));
    assert_eq!(summary.status, "finished");
    let online = trajs.iter().filter(|t| t.node.contains("online")).count();
    assert_eq!(online, 2 * 2, "2 questions × group 2");
    let mut results = 0;
    for t in &trajs {
        let parts = t.sequence.as_ref().expect("a tag-style episode records its sequence");
        let steps = &t.trajectory.steps;
        assert_eq!(parts.len(), 2 * steps.len() - 1, "{parts:?}");
        for (i, p) in parts.iter().enumerate() {
            if i % 2 == 0 {
                assert!(p.loss, "the policy's text is trained: {p:?}");
                continue;
            }
            // The env's response to the step before, cut to the profile's 40 characters
            // (`tool_response_chars`), in the result tags, out of the loss.
            let response: String = steps[i / 2].feedback.trim().chars().take(40).collect();
            assert_eq!(p.text, format!("\n<information>{response}</information>\n"));
            assert!(!p.loss, "a result is in the loss: {p:?}");
            results += 1;
        }
    }
    assert!(results > 0, "no episode got a result back");
    let (_, _, again) = records(&run("again"));
    let seqs = |ts: &[wrl_exec::TrajectoryLine]| -> Vec<_> {
        ts.iter().map(|t| t.sequence.clone()).collect()
    };
    assert_eq!(seqs(&trajs), seqs(&again), "two runs wrote different sequences");
}

/// `tests/recipes/tag_sft.wrl`: SFT of a tag-style agent on the expert's search demonstrations,
/// then GRPO. Each demonstration trains as one sequence (32 examples for 32 demonstrations, at
/// `loss_on = all_turns`), its loss falls by half, and the warmed-up policy opens every held-out
/// episode with a tag of its tool set.
#[test]
fn sft_teaches_a_tag_style_agent_its_tags() {
    let dir = tempfile::tempdir().unwrap();
    let recipe = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes/tag_sft.wrl");
    let out = dir.path().join("run");
    let args: Vec<std::ffi::OsString> =
        vec!["run".into(), recipe.into(), "--out".into(), out.clone().into()];
    let (code, _, stderr) = wrl_cli::run_captured(args);
    assert_eq!(code, 0, "{stderr}");
    let (summary, metrics, trajs) = records(&out);
    assert_eq!(summary.status, "finished");
    let losses = crate::run_hf::sft_losses(&metrics);
    // 32 examples in batches of 2 for 4 epochs (one per call would be 96 an epoch: 192 steps).
    assert_eq!(losses.len(), 64, "{losses:?}");
    assert!(losses.last().unwrap() < &(losses[0] / 2.0), "{losses:?}");
    let opens = |node: &str| -> Vec<bool> {
        trajs
            .iter()
            .filter(|t| t.node == node)
            .map(|t| {
                let first = &t.sequence.as_ref().expect("a sequence")[0].text;
                ["<search>", "<visit>", "<answer>"].iter().any(|tag| first.starts_with(tag))
            })
            .collect()
    };
    let after_sft = opens("eval:final/after:warmup");
    assert_eq!(after_sft, [true; 4], "the warmed-up policy does not open with a tag");
}
