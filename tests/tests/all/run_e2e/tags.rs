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
