//! Unit tests of `graph`: edges and verdicts, an API module's room, a walk with no way on.

use super::*;

fn edge(from: &str, to: &str, when: &[&str], limit: Option<u32>) -> EdgeSpec {
    EdgeSpec {
        from: from.into(),
        to: to.into(),
        when: when.iter().map(|s| s.to_string()).collect(),
        limit,
    }
}

fn policy(edges: Vec<EdgeSpec>) -> GraphPolicy {
    let spec = GraphSpec { modules: BTreeMap::new(), edges, max_parse_failures: 2 };
    GraphPolicy::new(Arc::new(spec), Arc::new(BTreeMap::new()), SampleParams::default(), "g")
}

/// A module served by an API model gets the room its context leaves (a page of a 128Ki
/// context is not cut at the tiny policy's 900 bytes); one with no brain keeps those.
#[test]
fn an_api_module_gets_the_room_its_context_leaves() {
    let module = |name: &str| ModuleSpec {
        name: name.into(),
        model: "model:planner".into(),
        frozen: true,
        trainable: false,
        acts: false,
        emits: Vec::new(),
        inputs: Vec::new(),
        max_response: 512,
        prompt: "Plan the next step.".into(),
        role: name.into(),
        hermes: None,
    };
    let modules: BTreeMap<String, ModuleSpec> =
        ["planner", "other"].map(|n| (n.to_string(), module(n))).into_iter().collect();
    let client = JudgeClient::new(crate::reward::client::JudgeConfig::default()).unwrap();
    let brains = BTreeMap::from([("planner".to_string(), Brain::Api(client, 128 * 1024))]);
    let spec = GraphSpec { modules, edges: Vec::new(), max_parse_failures: 2 };
    let p = GraphPolicy::new(Arc::new(spec), Arc::new(brains), SampleParams::default(), "g");
    let want = 128 * 1024 - 512 - "Plan the next step.".len() - CHAT_OVERHEAD;
    assert_eq!(p.room(&p.spec.modules["planner"]), want);
    assert_eq!(p.room(&p.spec.modules["other"]), MAX_PROMPT_BYTES);
    assert_eq!(api_room(1000, 512, "x"), MAX_PROMPT_BYTES, "never below the tiny room");
    assert_eq!(p.spec.longest_response(), 512);
    assert_eq!(policy(Vec::new()).spec.longest_response(), 0, "no module, no reply");
}

#[test]
fn edges_prefer_a_matching_verdict_and_respect_limits() {
    let mut p = policy(vec![
        edge("r", "planner", &[], None),
        edge("r", "summarizer", &["done"], None),
        edge("g", "r", &["acted"], Some(1)),
    ]);
    assert_eq!(p.next("r", Some("done")).as_deref(), Some("summarizer"));
    assert_eq!(p.next("r", Some("go_on")).as_deref(), Some("planner"));
    assert_eq!(p.next("r", None).as_deref(), Some("planner"));
    assert_eq!(p.next("g", Some("acted")).as_deref(), Some("r"));
    assert_eq!(p.next("g", Some("acted")), None, "the limit of 1 is spent");
    assert_eq!(p.next("g", Some("answered")), None);
}

#[test]
fn verdicts_are_whole_words() {
    let e = vec!["done".to_string(), "go_on".to_string(), "replan".to_string()];
    assert_eq!(verdict_in("I think we should go_on now", &e).as_deref(), Some("go_on"));
    assert_eq!(verdict_in("undone, abandoned", &e), None);
    assert_eq!(verdict_in("verdict: done.", &e).as_deref(), Some("done"));
}

/// A graph with no way on gives up with the reason, instead of returning text that the
/// runner would misread as an unknown tool.
#[test]
fn a_graph_without_a_way_on_gives_up_with_the_reason() {
    let mut p = policy(vec![]);
    assert_eq!(p.walk("page", &[]), Err("its graph has no edge leaving `start`".into()));
    let mut p = policy(vec![edge("start", "ghost", &[], None)]);
    assert_eq!(p.walk("page", &[]), Err("its graph has no module `ghost`".into()));
}

#[test]
fn the_walk_ends_with_the_last_words_as_the_answer() {
    let mut p = policy(vec![]);
    assert_eq!(p.finish(), "done");
    p.notes.push("summarizer: 42 apples".into());
    assert_eq!(p.finish(), "answer 42 apples");
}
