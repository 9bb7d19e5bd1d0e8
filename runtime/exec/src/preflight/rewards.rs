//! Rewards the runtime cannot score, refused at their field (E0502, E0503, E0500): signals it
//! does not implement, judges whose model nothing serves or is `unknown` — for declared rewards
//! and for the rewards a stage or an evaluation writes in place alike.

use wrl_plan::Node;
use wrl_plan::params::{self, Params, RewardRef, Signal, TypedPlan};

use crate::error::{Fault, RunError};

/// The refusals of the rewards an RL phase or an evaluation writes in place (a named reward
/// node is checked on its own).
pub(super) fn inline(plan: &TypedPlan<'_>, n: &Node, p: &Params) -> Vec<RunError> {
    let mut slots: Vec<(&str, &RewardRef)> = Vec::new();
    match p {
        Params::RlPhase(r) => {
            slots.push(("reward", &r.rollout.reward));
            slots.extend(r.algo.process_reward().map(|p| ("process_reward", p)));
            slots.extend(r.algo.validate().and_then(|v| v.judge.value()).map(|j| ("validate", j)));
        }
        Params::Eval(e) => slots.extend(e.judge.as_ref().map(|r| ("judge", r))),
        // A declared reward is checked as its own node; the others hold no reward.
        Params::Reward(_)
        | Params::Model(_)
        | Params::Dataset(_)
        | Params::Env(_)
        | Params::Agent(_)
        | Params::Sft(_)
        | Params::Checkpoint(_) => {}
    }
    let mut errs = Vec::new();
    for (field, r) in slots {
        if let RewardRef::Inline(expr) = r {
            errs.extend(reward(plan, n, expr, field));
        }
    }
    errs
}

/// How a message names the node a reward belongs to.
fn what(n: &Node) -> &'static str {
    use wrl_plan::NodeKind as K;
    match n.kind {
        K::Reward => "reward",
        K::Eval => "evaluation",
        K::RlPhase | K::Sft | K::Checkpoint => "stage",
        K::LoadModel | K::LoadDataset | K::Env | K::Agent => "node",
    }
}

/// Signals a reward reads that this runtime cannot score, and judges whose model nothing
/// serves.
pub(super) fn reward(
    plan: &TypedPlan<'_>,
    n: &Node,
    expr: &wrl_plan::Expr<Signal>,
    field: &str,
) -> Vec<RunError> {
    let mut errs = Vec::new();
    for s in expr.signals() {
        let model = match s {
            Signal::Judge(j) => Some(&j.model),
            Signal::Webjudge(w) => Some(&w.model),
            Signal::AnswerMatch { judge_model, .. } => judge_model.as_ref(),
            Signal::FormatOk { .. }
            | Signal::TagsOk(_)
            | Signal::Ended { .. }
            | Signal::QaMatch(_)
            | Signal::Called { .. }
            | Signal::Calls { .. }
            | Signal::TaskCheck
            | Signal::EnvReward
            | Signal::UrlMatch { .. }
            | Signal::BboxHit
            | Signal::ActionMatch { .. }
            | Signal::UrlChanged
            | Signal::DomHit
            | Signal::ScreenChanged { .. }
            | Signal::ActionFailed
            | Signal::EvalTypes(_)
            | Signal::ScreenUnchanged
            | Signal::VlmProgress(_)
            | Signal::Endpoint(_) => None,
        };
        if let Some(params::JudgeModel::Model(m)) = model
            && !matches!(plan.get(m.id()), Some(Params::Model(params::Model::Api(_))))
        {
            // `model:policy` is the recipe's `policy`; `checkpoint:warmup` its `warmup.model`.
            let m = match m.id().split_once(':') {
                Some(("checkpoint", stage)) => format!("{stage}.model"),
                Some((_, name)) => name.to_string(),
                None => m.id().to_string(),
            };
            errs.push(
                RunError::new(
                    Fault::Service,
                    format!(
                        "{} `{}`: the judge's model `{m}` is served by nothing: a judge calls an \
                         OpenAI-compatible endpoint",
                        what(n),
                        n.decl
                    ),
                )
                .help(
                    "declare the judge's model as `api(\"NAME\") { base_url = … }` (serve a \
                     checkpoint with `wrlc serve`), or give the judge a model id and `base_url`",
                )
                .at(n, Some(field), "this judge has no endpoint"),
            );
        }
        let why = match s {
            Signal::BboxHit | Signal::ActionMatch { .. } => Some(format!(
                "`{}` needs reference actions, which sandbox tasks do not have",
                s.name()
            )),
            Signal::Judge(j) if j.verdict == params::Verdict::Score => {
                Some("a judge's `verdict = score` is not implemented".to_string())
            }
            Signal::Judge(j) if j.prompt == params::JudgePrompt::Deepshop => Some(
                "DeepShop's structured judge (`prompt = deepshop`) is not implemented".to_string(),
            ),
            Signal::Judge(j) if j.prompt == params::JudgePrompt::Webjudge => Some(
                "`judge(prompt = webjudge)` is not implemented: OpAgent's WebJudge is \
                 `std::rewards::webjudge(model)` (key points, then its three scores)"
                    .to_string(),
            ),
            Signal::EvalTypes(_) => Some(
                "WebArena's per-task evaluators (`eval_types`) need WebArena's task configs, \
                 which sandbox tasks do not have"
                    .to_string(),
            ),
            Signal::VlmProgress(_) => {
                Some("the per-step VLM check (`vlm_progress`) is not implemented".to_string())
            }
            // Scored by this runtime (a judge whose protocol it runs, `webjudge`, a reward
            // endpoint, the rest).
            Signal::Judge(_)
            | Signal::Webjudge(_)
            | Signal::FormatOk { .. }
            | Signal::TagsOk(_)
            | Signal::Ended { .. }
            | Signal::AnswerMatch { .. }
            | Signal::QaMatch(_)
            | Signal::Called { .. }
            | Signal::Calls { .. }
            | Signal::TaskCheck
            | Signal::EnvReward
            | Signal::UrlMatch { .. }
            | Signal::UrlChanged
            | Signal::DomHit
            | Signal::ScreenChanged { .. }
            | Signal::ActionFailed
            | Signal::ScreenUnchanged
            | Signal::Endpoint(_) => None,
        };
        if let Some(why) = why {
            errs.push(
                RunError::new(Fault::Unsupported, format!("{} `{}`: {why}", what(n), n.decl))
                    .help("score with `task_check`, `answer_match` or a binary `judge`")
                    .at(n, Some(field), "this runtime cannot do this yet"),
            );
        }
        // A judged answer asks a model; `judge_model = unknown` names none (E0500, as every
        // other `unknown` the run needs).
        if let Signal::AnswerMatch { mode: params::AnswerMode::Judge, judge_model: None } = s {
            errs.push(
                RunError::new(
                    Fault::Unknown,
                    format!(
                        "`judge_model` of `answer_match(mode: judge)` in {} `{}` is `unknown`",
                        what(n),
                        n.decl
                    ),
                )
                .help("name the judge's model in the recipe, with a profile, or with `--set`")
                .at(n, Some(field), "the runtime needs this value"),
            );
        }
    }
    errs
}
