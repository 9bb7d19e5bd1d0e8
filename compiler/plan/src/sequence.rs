//! How long an RL phase's episodes can be, in tokens, from the plan: the one rule of
//! `wrl_check::sequence` (the checker's E0404 reads it from the recipe) applied to the phase's
//! agent, env and policy as the plan holds them, at the last turn the phase runs. The memory a
//! phase is sized for (`wrlc estimate`'s models part, the preflight's memory check) reads it
//! instead of the model's whole `context`.

use wrl_check::sequence::{
    ACTION_ONLY_TOKENS, Episode, PLACEHOLDER_TOKENS, image_factor, screenshot_tokens,
};

use crate::model::{Node, Plan};
use crate::params::{self, Agent, Env, History, Model, Observation, OlderPages, Params};

/// The most tokens one episode of RL phase `phase` holds (its last turn's prompt and reply),
/// rounded up; None where the plan does not say (a graph agent, an undecodable node).
pub fn episode_tokens(plan: &Plan, phase: &Node) -> Option<u64> {
    let Ok(Params::RlPhase(r)) = params::decode(phase) else { return None };
    let Ok(Params::Agent(Agent::React(a))) = params::decode(plan.node(r.run.agent.id())?) else {
        return None;
    };
    let mut viewport = None;
    let (step_text, shots, first_observation) = match params::decode(plan.node(a.env.id())?) {
        Ok(Params::Env(Env::Browser(b))) => {
            let shots = b
                .observe
                .iter()
                .map(|o| match o {
                    // What an older screenshot leaves is a line of text, within `step_text`.
                    Observation::Screenshot { last, older: _ } => *last,
                    Observation::Url
                    | Observation::Tabs
                    | Observation::Elements { .. }
                    | Observation::Html { .. }
                    | Observation::Feedback { .. }
                    | Observation::A11yTree => 0,
                })
                .max()
                .unwrap_or(0);
            viewport = Some((b.viewport.width, b.viewport.height));
            (b.step_text.0, shots, true)
        }
        Ok(Params::Env(Env::SearchApi(s))) => (s.step_text.0, 0, false),
        Ok(Params::Env(Env::EnvServer(s))) => (s.step_text.0, 0, true),
        _ => return None,
    };
    let image = match params::decode(plan.node(a.policy.id())?) {
        Ok(Params::Model(Model::Hf(h))) => match (h.image_max_pixels.value(), viewport) {
            (None, _) => h.image_tokens.0 as f64,
            // A text env shows no screenshots.
            (Some(_), None) => 0.0,
            (Some(max), Some((w, hgt))) => {
                let family = match h.family {
                    params::Family::Qwen3Vl => "qwen3_vl",
                    params::Family::Qwen25Vl => "qwen2_5_vl",
                    params::Family::Auto
                    | params::Family::Qwen2
                    | params::Family::Qwen3
                    | params::Family::Llama => return None,
                };
                screenshot_tokens(w, hgt, image_factor(family)?, f64::from(max.0))?
            }
        },
        Ok(Params::Model(Model::Api(m))) => m.image_tokens.0 as f64,
        Ok(Params::Model(Model::Tiny(_))) => 0.0,
        _ => return None,
    };
    let step_response = a.step_response.0 as f64;
    // A tag-style episode is one sequence: every reply and every result stays in it.
    let tags = a.calls.tags().is_some();
    let kept = match a.history {
        _ if tags => step_response,
        History::FullText | History::None => step_response,
        History::HideThinking => step_response / 2.0,
        History::ActionOnly => ACTION_ONLY_TOKENS,
    };
    let e = Episode {
        task: a.task_text.0 as f64,
        step_text: step_text as f64,
        first_observation,
        pages: match a.pages.value() {
            Some(p) if !tags => f64::from(*p),
            _ => f64::INFINITY,
        },
        placeholder: match a.older_pages {
            OlderPages::Drop => 0.0,
            OlderPages::Placeholder => PLACEHOLDER_TOKENS,
        },
        kept,
        actions: match a.actions.value() {
            Some(k) if !tags && a.history == History::ActionOnly => f64::from(*k),
            _ => f64::INFINITY,
        },
        no_history: a.history == History::None && !tags,
        shots: f64::from(shots),
        image,
        max_response: a.max_response.0 as f64,
        trajectory: a.trajectory_tokens.value().map(|t| t.0 as f64),
    };
    let turns = crate::turns_cap(r.run.horizon.0, a.max_turns.0);
    Some(e.need(f64::from(turns)).ceil() as u64)
}
