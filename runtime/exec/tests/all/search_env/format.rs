//! `format_ok` and `tags_ok` over real search episodes: each turn read as the agent wrote it,
//! one malformed turn failing the episode whatever follows.

use std::time::Duration;

use wrl_browser::AgentTurn;
use wrl_exec::env::{Agent, SearchEnv};
use wrl_sandbox::{Sandbox, Split, Task, generate_qa};

use super::{Script, cfg};

/// An agent that hands the env the given turns, as a policy that reads its own replies does.
struct Turns(Vec<AgentTurn>);

impl Agent for Turns {
    fn act(&mut self, _: &Task, _: &str, _: &[String]) -> AgentTurn {
        if self.0.len() > 1 { self.0.remove(0) } else { self.0[0].clone() }
    }
    fn name(&self) -> &str {
        "p"
    }
}

/// `format_ok` reads every turn of a real search episode: one malformed turn, even followed by
/// good ones and a completed episode, fails WebDancer's `react_tags`; the replies as written are
/// what OpenWebRL's `browser_env` reads (the terse lines the env ran have no thinking).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn format_ok_reads_every_turn_of_the_episode() {
    use wrl_exec::reward::format::{ok, turns};
    use wrl_plan::params::FormatMode::{BrowserEnv, ReactTags};
    let sb = Sandbox::start(0, 0).await.unwrap();
    let env =
        SearchEnv::new(&format!("{}/api", sb.base_url()), 1500, Duration::from_secs(5)).unwrap();
    let task = &generate_qa(sb.content(), Split::Test, 1, 2)[0];
    let search = AgentTurn::Read {
        lines: "search osk".into(),
        said: r#"<think>look</think><tool_call>{"name": "search", "arguments": {"query": ["osk"]}}</tool_call>"#.into(),
    };
    let answer = AgentTurn::Read {
        lines: "answer Avel".into(),
        said: r#"<think>so</think><tool_call>{"name": "answer", "arguments": {"text": "Avel"}}</tool_call>"#.into(),
    };
    let bad = AgentTurn::Malformed {
        text: "<tool_call>{oops</tool_call>".into(),
        error: wrl_browser::AgentError::BadArguments("not JSON".into()),
    };
    let clean = env.run_task(task, &mut Turns(vec![search.clone(), answer.clone()]), &cfg()).await;
    let slipped = env.run_task(task, &mut Turns(vec![bad, search, answer]), &cfg()).await;
    for t in [&clean, &slipped] {
        assert_eq!(t.outcome.reason.word(), "completed", "{:?}", t.outcome);
    }
    assert!(slipped.steps[0].malformed && !slipped.steps[1].malformed);
    assert_eq!(slipped.steps[1].actions, ["search osk"]);
    assert!(ok(ReactTags, &turns(&clean)) && ok(BrowserEnv, &turns(&clean)));
    assert!(!ok(ReactTags, &turns(&slipped)) && !ok(BrowserEnv, &turns(&slipped)));
    // The tiny policy's terse turns: well formed for WebDancer, no thinking for OpenWebRL.
    let terse = env.run_task(task, &mut Script(vec!["search osk", "answer Avel"]), &cfg()).await;
    assert!(ok(ReactTags, &turns(&terse)) && !ok(BrowserEnv, &turns(&terse)));
    // A rule of the recipe's own over the same replies: think first, then one call.
    let rule = wrl_plan::params::TagsOk {
        tags: vec!["think".into(), "tool_call".into()],
        order: wrl_plan::params::TagOrder::Listed,
        outside: wrl_plan::params::Outside::Whitespace,
        required: vec!["think".into()],
    };
    use wrl_exec::reward::format::tags_ok;
    assert!(tags_ok(&rule, &turns(&clean)) && !tags_ok(&rule, &turns(&slipped)));
    assert!(!tags_ok(&rule, &turns(&terse)), "terse turns write no thinking");
}
