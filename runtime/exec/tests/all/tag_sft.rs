//! SFT of a tag-style agent (#46 item 5): the sandbox expert's search demonstrations written as
//! the one sequence a `calls = tags()` rollout writes, held token for token to what the rollout
//! itself builds when the policy writes those calls (a branch's replay), with the embedded tiny
//! policy and a generated Qwen3 with a chat template.

#![allow(clippy::unwrap_used)] // test helpers fail loudly, like the tests they serve

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use wrl_browser::EpisodeCfg;
use wrl_exec::agent::policy::TrainerPolicy;
use wrl_exec::agent::prompt::{History, Window};
use wrl_exec::agent::tag_demos::{tag_demo, tag_examples};
use wrl_exec::agent::tags::TagCalls;
use wrl_exec::env::SearchEnv;
use wrl_exec::env::search::SearchExpert;
use wrl_exec::reward::RewardValue;
use wrl_exec::rollout::{Episode, samples};
use wrl_plan::params::{
    CallsPerTurn, Coordinates, Literal, Tags, Tool, ToolParam, ToolTy, Toolset,
};
use wrl_sandbox::{Sandbox, Split, generate_qa};
use wrl_trainer::{SampleParams, Trainer};

fn param(name: &str, ty: &str, default: Option<Literal>) -> ToolParam {
    ToolParam { name: name.into(), ty: ToolTy::parse(ty).unwrap(), default }
}

/// Search-R1's tool plus a `visit` a tag can call (its goal left to its default), each result
/// cut to `keep` characters in the sequence.
fn tags(keep: usize) -> TagCalls {
    let tools = Toolset {
        coordinates: Coordinates::ElementIds,
        calls_per_turn: CallsPerTurn::One,
        answer_tag: "answer".into(),
        mcp: Vec::new(),
        tools: vec![
            Tool {
                name: "search".into(),
                params: vec![param("query", "string", None)],
                terminal: false,
            },
            Tool {
                name: "visit".into(),
                params: vec![
                    param("url", "list(string)", None),
                    param("goal", "string", Some(Literal::Str(String::new()))),
                ],
                terminal: false,
            },
        ],
    };
    TagCalls::new(tools, &Tags { result: "information".into(), tools: BTreeMap::new() })
        .keeping(Some(keep))
}

/// A random Qwen3 with a chat template and a byte-pair tokenizer learnt on the sandbox's search
/// text, so that a call encoded alone and inside the sequence could differ.
fn templated(dir: &std::path::Path) -> Trainer {
    let corpus = vec![
        "<search>Avelford</search>\n<information>[1] Avelford /wiki/article/avelford</information>"
            .to_string(),
        "<visit>/wiki/article/avelford</visit> <answer>1204</answer>".into(),
    ];
    crate::hermes_chat::qwen3_learnt_on(dir, corpus, 80)
}

/// The expert's demonstration of a lookup question as an SFT example, then the same calls
/// written by `trainer` as a tag-style rollout (replayed token for token): the rollout's one
/// sample (its prompt, then every token since, the results out of the loss) is the example.
async fn the_example_is_the_rollouts_sample(trainer: Trainer, chat: bool, keep: usize) {
    let sb = Sandbox::start(0, 0).await.unwrap();
    let env =
        SearchEnv::new(&format!("{}/api", sb.base_url()), 300, Duration::from_secs(5)).unwrap();
    let task = generate_qa(sb.content(), Split::Train, 1, 7).remove(0);
    let cfg = EpisodeCfg { max_steps: 4, ..EpisodeCfg::default() };
    let demo = env.run_task(&task, &mut SearchExpert, &cfg).await;
    assert!(demo.outcome.success, "{:?}", demo.outcome);
    assert_eq!(demo.steps.len(), 3, "search, visit, answer: {:?}", demo.steps);
    let tags = tags(keep);
    let window = Window::default();
    let seq = tag_demo(&demo, &tags, (History::ActionOnly, window), chat).unwrap();
    assert_eq!(seq.prompt.starts_with("Call a tool by writing"), chat, "{}", seq.prompt);
    let texts: Vec<(&str, bool)> = seq.parts.iter().map(|p| (p.text.as_str(), p.loss)).collect();
    let town = task.params["town"].clone();
    assert_eq!(texts[0], (format!("<search>{town}</search>").as_str(), true));
    assert!(texts[2].0.starts_with("<visit>/wiki/article/") && texts[2].1, "{texts:?}");
    assert!(texts[4].0.starts_with("<answer>") && texts[4].1, "{texts:?}");
    let response: String = demo.steps[0].feedback.trim().chars().take(keep).collect();
    assert_eq!(texts[1], (format!("\n<information>{response}</information>\n").as_str(), false));
    let tok = trainer.tokenizer().clone();
    let whole = tag_examples(&tok, &seq, 4096, false).unwrap().remove(0);
    let per_call = tag_examples(&tok, &seq, 4096, true).unwrap();

    // The rollout: the policy writes the demonstration's calls, encoded as it would sample them.
    let calls: Vec<&str> = seq.parts.iter().filter(|p| p.loss).map(|p| p.text.as_str()).collect();
    let turns = crate::search_env::replayed(&tok, &calls);
    let trainer = Arc::new(Mutex::new(trainer));
    let mut policy =
        TrainerPolicy::new(trainer, SampleParams::default(), History::ActionOnly, "policy")
            .with_window(window)
            .with_tags(Some(Arc::new(tags)))
            .with_replay(turns);
    let traj = env.run_task(&task, &mut policy, &cfg).await;
    assert!(traj.outcome.success, "{:?}", traj.outcome);
    let acts = |t: &wrl_sandbox::Trajectory| -> Vec<Vec<String>> {
        t.steps.iter().map(|s| s.actions.clone()).collect()
    };
    assert_eq!(acts(&traj), acts(&demo), "the tags made other calls than the expert's");
    assert_eq!(policy.sequence().unwrap(), seq.parts, "the rollout wrote another sequence");
    let ep = Episode {
        group: 0,
        trajectory: traj,
        turns: std::mem::take(&mut policy.turns),
        reward: RewardValue::Value(1.0),
        process: Vec::new(),
        screens: Vec::new(),
        retried: 0,
        branch: None,
        sequence: policy.sequence(),
        components: Default::default(),
    };
    let s = samples(std::slice::from_ref(&ep), 0, None, None).remove(0);
    let mut tokens = s.prompt_tokens.clone();
    tokens.extend_from_slice(&s.completion_tokens);
    assert_eq!(whole.tokens, tokens, "the example's tokens are not the rollout's");
    let mut trained = vec![false; s.prompt_tokens.len()];
    trained.extend(s.completion_mask.clone().unwrap());
    let weighted: Vec<bool> = whole.weights.iter().map(|w| *w > 0.0).collect();
    assert_eq!(weighted, trained, "the example trains other tokens than the rollout's update");

    // `loss_on = current_turn`: one example per call, the sequence up to it, only it trained.
    assert_eq!(per_call.len(), 3);
    assert_eq!(per_call[2].tokens, whole.tokens);
    assert_eq!(per_call.iter().map(|e| e.trained_tokens()).sum::<usize>(), whole.trained_tokens());
    for (i, e) in per_call.iter().enumerate() {
        assert!(whole.tokens.starts_with(&e.tokens));
        assert_eq!(e.weights.last(), Some(&1.0), "example {i} does not end with its call");
    }
    // A cut that would lose a call is refused, never taken silently.
    let err = tag_examples(&tok, &seq, whole.tokens.len() - 1, false).unwrap_err();
    assert!(err.contains("would not be trained"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tag_style_demonstration_trains_the_sequence_its_rollout_writes() {
    // The tiny policy's context is 256 bytes: each result keeps 20 of them.
    the_example_is_the_rollouts_sample(crate::search_env::tiny_trainer(3), false, 20).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_chat_template_too() {
    let dir = tempfile::tempdir().unwrap();
    the_example_is_the_rollouts_sample(templated(dir.path()), true, 60).await;
}

/// Each terse line of the expert as its tags, read back as the rollout reads them; a line one
/// tag cannot write is an error naming it and why, never a call the expert did not make.
#[test]
fn a_step_a_tag_cannot_write_is_an_error_naming_it() {
    use wrl_exec::agent::tag_demos::demo_call;
    let t = tags(100);
    let ok = |l: &str| demo_call(&t, l).unwrap();
    assert_eq!(ok("search Avelford"), "<search>Avelford</search>");
    assert_eq!(ok("visit /wiki/article/avelford"), "<visit>/wiki/article/avelford</visit>");
    assert_eq!(ok("answer 1204"), "<answer>1204</answer>");
    let err = |l: &str| demo_call(&t, l).unwrap_err();
    assert_eq!(
        err("search Avelford | Osk"),
        "`search Avelford | Osk` searches 2 queries in one call, and a tag holds one"
    );
    assert_eq!(err("visit /a /b"), "`visit /a /b` visits 2 pages in one call, and a tag holds one");
    assert!(err("visit /a | its river").contains("makes another call, `visit /a`"));
    assert!(err("click 3").starts_with("`click 3`: unknown tool `click`"));
    // A tool with its own tag is written with it.
    let own = TagCalls::new(
        t.tools.clone(),
        &Tags { result: "information".into(), tools: [("search".into(), "query".into())].into() },
    );
    assert_eq!(demo_call(&own, "search Osk").unwrap(), "<query>Osk</query>");
    // A demonstration whose step makes two calls is refused at that step.
    let task = "task: when was Osk founded?\n";
    let mut two = crate::hermes_chat::step(task, "visit /a");
    two.actions.push("answer 1".into());
    let demo = crate::hermes_chat::demo(vec![crate::hermes_chat::step(task, "search Osk"), two]);
    let e = tag_demo(&demo, &t, (History::ActionOnly, Window::default()), false).unwrap_err();
    assert!(e.starts_with("step 2: it makes 2 calls"), "{e}");
}
