//! The plan's diagnostics: what can be wrong with a recipe that type-checks but cannot be run as
//! a graph of stages (E045x; each has a page in `docs/errors/` and a UI case in
//! `tests/ui/plan/`). Stage cycles, empty phase lists and training an API model are the
//! checker's rules (E0416, E0417, E0415); the planner reports them under the same codes only
//! as a backstop, for recipes lowered without the checker's rules.

use wrl_diagnostics::{Diagnostic, Span};

/// E0416 (backstop): stages that start from each other's checkpoints.
pub(crate) fn cycle(stages: &[(String, Span)]) -> Diagnostic {
    let names: Vec<String> = stages.iter().map(|(n, _)| format!("`{n}`")).collect();
    let chain: Vec<&str> = stages.iter().map(|(n, _)| n.as_str()).collect();
    let mut d = Diagnostic::new(
        "E0416",
        if stages.len() == 1 {
            format!("stage {} starts from its own checkpoint", names.join(""))
        } else {
            format!("stages {} start from each other's checkpoints", names.join(", "))
        },
    );
    for (n, span) in stages {
        d = d.label(*span, format!("`{n}` needs a checkpoint that is only made after it"));
    }
    let mut help_chain = chain.join(" → ");
    if let Some(first) = chain.first() {
        help_chain.push_str(&format!(" → {first}"));
    }
    d.help(format!(
        "the cycle is {help_chain}; start one of them from a model declaration or an earlier stage"
    ))
}

/// E0450: an input of a stage that no node produces.
pub(crate) fn no_producer(node: &str, port: &str, what: &str, span: Span) -> Diagnostic {
    Diagnostic::new("E0450", format!("nothing produces the `{port}` of {node}"))
        .label(span, format!("{what}: no declaration or stage produces it"))
        .help(format!(
            "give `{port}` a declaration (a model, dataset, agent, …) or an earlier stage's `.model`"
        ))
}

/// E0451 (an agent with no trainable policy), or E0415 as a backstop (an API model).
pub(crate) fn untrainable(
    code: &'static str,
    stage: &str,
    why: &str,
    span: Span,
    help: &str,
) -> Diagnostic {
    Diagnostic::new(code, format!("stage `{stage}` has nothing it can train: {why}"))
        .label(span, why.to_string())
        .help(help.to_string())
}

/// E0452: an RL stage starts from a checkpoint of one model but its agent runs another.
pub(crate) fn lineage(
    stage: &str,
    init_model: &str,
    agent_model: &str,
    init_span: Span,
    agent_span: Span,
) -> Diagnostic {
    Diagnostic::new(
        "E0452",
        format!(
            "stage `{stage}` starts from weights of `{init_model}`, but its agent runs `{agent_model}`"
        ),
    )
    .label(init_span, format!("weights of `{init_model}`"))
    .label(agent_span, format!("this agent's policy is `{agent_model}`"))
    .help(format!(
        "the trained weights replace the agent's policy: build the agent on `{init_model}`, or start the stage from `{agent_model}`"
    ))
}

/// E0452 for an eval: the weights of the stage it runs after belong to another model.
pub(crate) fn eval_lineage(
    eval: &str,
    stage: &str,
    init_model: &str,
    agent_model: &str,
    after_span: Span,
    agent_span: Span,
) -> Diagnostic {
    Diagnostic::new(
        "E0452",
        format!(
            "eval `{eval}` loads the weights of `{stage}` (a `{init_model}`), but its agent runs `{agent_model}`"
        ),
    )
    .label(after_span, format!("weights of `{init_model}` trained by `{stage}`"))
    .label(agent_span, format!("this agent's policy is `{agent_model}`"))
    .help(format!(
        "evaluate an agent built on `{init_model}` after `{stage}`, or drop `{stage}` from `after`"
    ))
}

/// E0417 (backstop): an RL stage with an empty list of phases.
pub(crate) fn no_phases(stage: &str, name_span: Span, span: Span) -> Diagnostic {
    Diagnostic::new("E0417", format!("RL stage `{stage}` has no phases"))
        .label(span, "an empty list: the stage would never roll out or update")
        .label(name_span, "this stage")
        .help("give at least one phase: `phases = [{ iters = 10, horizon = 15 steps, lr = 1e-6 }]`")
}
