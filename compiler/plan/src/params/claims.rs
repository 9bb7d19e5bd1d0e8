//! A claim (`claim NAME = std::claims::gain(…)`) as the runtime reads it: which evaluation's
//! figure after which stage is compared with which, by how much. The planner resolves every
//! name (an evaluation's run is the `after` its records carry), so the runtime decides a claim
//! from the run's evaluation records alone (`wrl_exec::claims`).

use serde::{Deserialize, Serialize};

/// One evaluation's figure after one stage, as a run records it (`EvalResult`'s `eval` and
/// `after`: the stage, or the evaluation's own name when it follows none).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimSide {
    pub eval: String,
    pub after: String,
    /// The variant whose run gives the figure (`variant NAME { … }`); absent: the recipe
    /// itself (`base`). Only a study of the variants has both sides of such a claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

impl ClaimSide {
    /// The variant's name, `base` for the recipe itself.
    pub fn variant_name(&self) -> &str {
        self.variant.as_deref().unwrap_or(wrl_check::BASE_VARIANT)
    }
}

/// What a claim states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimKind {
    /// `std::claims::gain`: `eval`'s rate minus `over`'s is at least `at_least`.
    Gain,
}

impl ClaimKind {
    /// The stdlib constructor that states it.
    pub fn ctor(self) -> &'static str {
        match self {
            ClaimKind::Gain => "std::claims::gain",
        }
    }
}

/// A claim of the recipe, in the plan's `claims` (absent when the recipe states none).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    /// The claim's declaration.
    pub name: String,
    pub kind: ClaimKind,
    /// The figure that should be the larger.
    pub eval: ClaimSide,
    /// The figure it is compared with.
    pub over: ClaimSide,
    /// The margin the difference must clear, as a fraction (`10%` is 0.1: ten points).
    pub at_least: f64,
    /// The difference the recipe expects, when it says (the power check's effect).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<f64>,
    /// The paper's own figure, as the paper states it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paper: Option<String>,
    /// Where the paper states it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The declaration's doc comment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doc: Option<String>,
    /// The profiles it is stated for (`profiles = [claims]`, `base`: the recipe without one);
    /// absent: the recipe and every profile. A plan holds only the claims in scope under its
    /// own profile, and the runtime decides only those ([`Claim::in_scope`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profiles: Option<Vec<String>>,
}

impl Claim {
    /// Whether it is stated for `profile` (`None`: the recipe without one).
    pub fn in_scope(&self, profile: Option<&str>) -> bool {
        wrl_check::scope_holds(self.profiles.as_deref(), profile)
    }

    /// Whether it compares variants of the recipe: only a study of them decides it.
    pub fn across_variants(&self) -> bool {
        self.eval.variant.is_some() || self.over.variant.is_some()
    }

    /// `after_rl (after online) ≥ after_sft (after warmup) + 10 points`.
    pub fn statement(&self) -> String {
        let side = |s: &ClaimSide| {
            let fig = if s.after == s.eval {
                s.eval.clone()
            } else {
                format!("{} after {}", s.eval, s.after)
            };
            match &s.variant {
                Some(v) => format!("{fig} ({v})"),
                None if self.across_variants() => format!("{fig} (base)"),
                None => fig,
            }
        };
        format!(
            "{} − {} ≥ {} points",
            side(&self.eval),
            side(&self.over),
            fmt_points(self.at_least)
        )
    }
}

/// A fraction in points, without a trailing `.0` (`0.1` is `10`, `0.025` is `2.5`).
pub fn fmt_points(x: f64) -> String {
    let p = (x * 1000.0).round() / 10.0;
    if p.fract() == 0.0 { format!("{p:.0}") } else { format!("{p}") }
}
