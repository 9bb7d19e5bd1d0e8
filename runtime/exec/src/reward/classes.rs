//! How an episode's ending reads to a recipe: the failure class a stage's `exclude` names it by
//! and the word a reward's `ended(…)` names it by. `wrl_sandbox::Ending` is the runtime's one
//! vocabulary of endings, and the plan's `FailureClass` and `EndedReason` are the recipe's; the
//! sandbox does not depend on the plan (nothing of the compiler reaches below `wrl-exec`'s
//! dependencies), so the two are related here, as types, where both are in reach.

use std::fmt;

use wrl_plan::params::{EndedReason, FailureClass};
use wrl_sandbox::Ending;

use super::failure::EndpointFailure;

/// The failure class `exclude` names an episode that ended this way by, for the endings a
/// recipe can exclude (the judge classes, `judge_timeout` and `judge_error`, are no ending).
pub fn class(e: Ending) -> Option<FailureClass> {
    match e {
        Ending::EnvError => Some(FailureClass::EnvError),
        Ending::InfraTimeout => Some(FailureClass::InfraTimeout),
        Ending::Truncated => Some(FailureClass::Truncated),
        Ending::Aborted => Some(FailureClass::Aborted),
        Ending::Completed | Ending::AgentError | Ending::MaxSteps => None,
    }
}

/// The reason `ended(…)` names an episode that ended this way by: rewards call an agent error a
/// `format_error` and an infrastructure timeout a `timeout`.
pub fn ended(e: Ending) -> EndedReason {
    match e {
        Ending::Completed => EndedReason::Completed,
        Ending::AgentError => EndedReason::FormatError,
        Ending::MaxSteps => EndedReason::MaxSteps,
        Ending::EnvError => EndedReason::EnvError,
        Ending::InfraTimeout => EndedReason::Timeout,
        Ending::Truncated => EndedReason::Truncated,
        Ending::Aborted => EndedReason::Aborted,
    }
}

/// Why a sample left the loss.
#[derive(Clone, Debug, PartialEq)]
pub enum Exclusion {
    /// A failure class: a judge that timed out or failed, an episode that could not run
    /// (`env_error`), or an ending the stage's `exclude` names.
    Class(FailureClass),
    /// The reward could not be computed (a signal with nothing to read, a reward that names
    /// one that does not exist): why.
    Unscorable(String),
    /// A reward endpoint gave no score (`std::rewards::endpoint`): why, its class among
    /// [`EndpointFailure::WORDS`].
    Endpoint(EndpointFailure),
}

impl Exclusion {
    /// The class the run's counts (`metrics.jsonl`'s and `summary.json`'s `excluded`) put it
    /// under: its failure class, `reward_error` for a reward that could not be computed, or a
    /// reward endpoint's class (`reward_timeout`, …).
    pub fn counted_as(&self) -> &'static str {
        match self {
            Exclusion::Class(c) => c.word(),
            Exclusion::Unscorable(_) => "reward_error",
            Exclusion::Endpoint(e) => e.word(),
        }
    }
}

/// As trajectories and `wrlc env serve`'s scores record it: the class, or why the reward could
/// not be computed.
impl fmt::Display for Exclusion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exclusion::Class(c) => f.write_str(c.word()),
            Exclusion::Unscorable(why) => f.write_str(why),
            Exclusion::Endpoint(e) => f.write_str(e.word()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every ending `exclude` can name is named by its own word, and every `ended(…)` reason
    /// names exactly one ending.
    #[test]
    fn the_recipes_names_are_the_endings_words_or_their_own() {
        for e in Ending::ALL {
            if let Some(c) = class(e) {
                assert_eq!(c.word(), e.word());
            }
        }
        let mut reasons: Vec<&str> = Ending::ALL.map(|e| ended(e).word()).to_vec();
        reasons.sort_unstable();
        reasons.dedup();
        assert_eq!(reasons.len(), Ending::ALL.len());
        assert_eq!(ended(Ending::AgentError), EndedReason::FormatError);
        assert_eq!(ended(Ending::InfraTimeout), EndedReason::Timeout);
    }
}
