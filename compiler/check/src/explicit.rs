//! No silent defaults: in a file that says `use std::explicit`, every field a constructor call
//! (or a record) leaves to its stdlib default is a warning (W0220) that names the field and the
//! default, so that a reproduction recipe states every value it runs with — the source's, or
//! `unknown`. A default that is itself `unknown` takes no value and is not reported, nor are
//! overrides (profiles, `extends` blocks, `--set`), which change a recipe rather than state it,
//! nor fields another field makes inert (W0204, W0211).

use wrl_diagnostics::{Diagnostic, Span};

use crate::checker::{Checker, ModId};
use crate::value::{V, Val};

/// The path of the marker: `use std::explicit`.
pub(crate) const MARKER: [&str; 2] = ["std", "explicit"];

/// Whether a slot's default is written as an argument (`warmup: 0%`) or a block field.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Written {
    Argument,
    Field,
}

impl Checker<'_> {
    /// Whether module `m` says `use std::explicit` and what is being checked in it is held to
    /// it (not an override).
    fn is_explicit(&self, m: ModId) -> bool {
        !self.overriding && self.modules.get(m).is_some_and(|x| x.explicit.is_some())
    }

    /// W0220 for `field`, which the value written at `at` (a call's constructor name, or a
    /// record) leaves to the stdlib's `default`. `owner` names what holds the field (`grpo`,
    /// or `this record`).
    pub(crate) fn unstated(
        &mut self,
        m: ModId,
        owner: &str,
        field: &str,
        default: &Val,
        written: Written,
        at: Span,
    ) {
        if !self.is_explicit(m) {
            return;
        }
        if matches!(default.v, V::Unknown) {
            return;
        }
        let text = one_line(self.text(default.span));
        let (stated, unknown) = match written {
            Written::Argument => (format!("{field}: {text}"), format!("{field}: unknown")),
            Written::Field => (format!("{field} = {text}"), format!("{field} = unknown")),
        };
        self.diags.push(
            Diagnostic::new(
                "W0220",
                format!("{owner} leaves `{field}` to the stdlib default `{text}`"),
            )
            .label(at, format!("`{field}` is not stated"))
            .help(format!(
                "this file uses `std::explicit`: write `{stated}` where the source says so, or \
                 `{unknown}` where it does not"
            )),
        );
    }
}

/// The fields of a call to `qual` that its other fields make inert, so that stating them would
/// be a warning too (or mean nothing): a `grpo` stage's knobs its `policy_loss` never reads
/// (W0204), its `process_mix` without a process reward and its `refill` without `drop`, an RL
/// stage's `lr` when its `phases` are listed, each with its own (W0211), `eval_types`'
/// `fallback_per` without a fallback, and an `hf` model's `image_tokens` under a pixel budget
/// (`image_max_pixels`, else that budget).
/// `own` are the fields the call gives, `defaults` the builtin's (both by name).
pub(crate) fn inert(
    qual: &str,
    own: &[(crate::name::Name, Val)],
    defaults: &[(crate::name::Name, Val)],
) -> Vec<&'static str> {
    let mut out = Vec::new();
    let given = |name: &str| own.iter().find(|(k, _)| k.as_str() == name).map(|(_, v)| v);
    if matches!(qual, "grpo" | "dapo" | "ppo")
        && given("phases").is_some_and(|p| matches!(p.v, V::List { .. }))
    {
        out.push("lr");
    }
    // Without a fallback nothing falls back, per check or per product.
    if qual.ends_with("eval_types")
        && given("fallback").is_none_or(|f| matches!(&f.v, V::Enum { value } if value == "none"))
    {
        out.push("fallback_per");
    }
    if qual == "hf" {
        // One of the two sizes a screenshot: a pixel budget leaves `image_tokens` nothing to
        // say, and without one `image_tokens` is what counts.
        let budget = given("image_max_pixels")
            .is_some_and(|b| !matches!(&b.v, V::Enum { value } if value == "none"));
        out.push(if budget { "image_tokens" } else { "image_max_pixels" });
    }
    if qual == "grpo" {
        // Without a process reward nothing is mixed in; without `drop` nothing is refilled.
        if given("process_reward").is_none() {
            out.push("process_mix");
        }
        if given("drop").is_none_or(|d| matches!(&d.v, V::Enum { value } if value == "none")) {
            out.push("refill");
        }
        let loss = given("policy_loss")
            .or_else(|| defaults.iter().find(|(k, _)| k.as_str() == "policy_loss").map(|(_, v)| v))
            .and_then(|v| match &v.v {
                V::Enum { value } => Some(value.as_str()),
                _ => None,
            });
        out.extend(loss.map_or(&[][..], crate::rules::rl::inert_under));
    }
    out
}

/// A value as written in the stdlib, on one line: a record or list the formatter spread over
/// several lines gets its commas back (`{ step = 30 s, task = 600 s }`, `[a, b]`).
pub(crate) fn one_line(src: &str) -> String {
    let lines: Vec<&str> = src.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let mut out = String::new();
    let mut prev: Option<&str> = None;
    for line in lines {
        if let Some(p) = prev {
            let closes = line.starts_with(['}', ']', ')']);
            if closes && out.ends_with(',') {
                out.pop();
            }
            let gap = if p.ends_with(['[', '(']) || (closes && !line.starts_with('}')) {
                ""
            } else if p.ends_with('{') || closes || p.ends_with(',') {
                " "
            } else {
                ", "
            };
            out.push_str(gap);
        }
        out.push_str(line);
        prev = Some(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn spread_values_come_back_on_one_line() {
        assert_eq!(one_line("30 s"), "30 s");
        assert_eq!(
            one_line("{\n    step = 30 s\n    task = 600 s\n    acquire = 600 s\n  }"),
            "{ step = 30 s, task = 600 s, acquire = 600 s }"
        );
        assert_eq!(
            one_line("[\n    observations,\n    tool_output,\n  ]"),
            "[observations, tool_output]"
        );
        assert_eq!(one_line("{ first = 2 s, factor = 2 }"), "{ first = 2 s, factor = 2 }");
    }
}
