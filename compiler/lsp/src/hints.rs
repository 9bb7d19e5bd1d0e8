//! Inlay hints of derived quantities, taken from `wrl_plan::estimate` and the checker's
//! context-budget rule (nothing is computed here): at a stage, its trajectories, env-step
//! bound and optimiser steps; at each phase, the same for the phase and the per-turn token
//! budget against the model's context; at an eval, its episodes; at a profile, its totals.

use std::collections::BTreeMap;

use lsp_types::{InlayHint, InlayHintKind, InlayHintLabel, Range};
use wrl_check::query::{TurnBudget, turn_budgets};
use wrl_diagnostics::Span;
use wrl_plan::StageEstimate;
use wrl_syntax::ast::{self, BlockItem, ExprKind, ItemKind, PathSegment};

use crate::show::{self, count};
use crate::view::View;

pub fn hints(view: &View<'_>, range: Range) -> Option<Vec<InlayHint>> {
    let an = view.analysis()?;
    let file = an.file.as_ref()?;
    let recipe = an.recipe.as_ref()?;
    let est = an.estimates();
    let budgets: Vec<TurnBudget> = if an.has_errors() { Vec::new() } else { turn_budgets(recipe) };
    let mut by_decl: BTreeMap<&str, Vec<(&str, &StageEstimate)>> = BTreeMap::new();
    for s in est.base.iter().flat_map(|e| &e.stages) {
        let Some((_, rest)) = s.id.split_once(':') else { continue };
        let (name, suffix) = rest.split_once('/').unwrap_or((rest, ""));
        by_decl.entry(name).or_default().push((suffix, s));
    }
    let mut out = Vec::new();
    for item in &file.items {
        match &item.kind {
            ItemKind::Decl(d) => {
                let stages =
                    by_decl.get(d.name.name.as_str()).map(Vec::as_slice).unwrap_or_default();
                let mine: Vec<&TurnBudget> =
                    budgets.iter().filter(|b| b.stage == d.name.name).collect();
                decl_hints(view, d, item.span, stages, &mine, &mut out);
            }
            ItemKind::Profile(p) => {
                if let Some((_, Some(e))) = est.profiles.iter().find(|(n, _)| *n == p.name.name) {
                    let label = format!(
                        "{}: {}",
                        p.name.name,
                        figures(e.trajectories, e.max_env_steps, e.optimizer_steps)
                    );
                    out.push(hint(view, p.name.span.end as usize, label));
                }
            }
            ItemKind::Use(_) | ItemKind::Extends(_) | ItemKind::Builtin(_) => {}
        }
    }
    out.retain(|h| h.position >= range.start && h.position <= range.end);
    Some(out)
}

fn hint(view: &View<'_>, at: usize, label: String) -> InlayHint {
    InlayHint {
        position: view.position(at),
        label: InlayHintLabel::String(label),
        kind: Some(InlayHintKind::TYPE),
        text_edits: None,
        tooltip: Some(lsp_types::InlayHintTooltip::String(
            "wrlc estimate (upper bounds from the plan)".into(),
        )),
        padding_left: Some(true),
        padding_right: None,
        data: None,
    }
}

/// The end of the line `at` is on, before a trailing comment and whitespace: hints go there.
fn line_end(text: &str, at: usize) -> usize {
    let end = text[at.min(text.len())..].find('\n').map_or(text.len(), |i| at + i);
    let line_start = text[..at.min(text.len())].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[line_start..end];
    let code = match line.find("//") {
        Some(c) if !line[..c].contains('"') => &line[..c],
        _ => line,
    };
    line_start + code.trim_end().len()
}

fn decl_hints(
    view: &View<'_>,
    d: &ast::Decl,
    span: Span,
    stages: &[(&str, &StageEstimate)],
    budgets: &[&TurnBudget],
    out: &mut Vec<InlayHint>,
) {
    let text = view.doc.text.as_str();
    let head = line_end(text, d.name.span.start as usize);
    let phases: Vec<&StageEstimate> =
        stages.iter().filter(|(s, _)| s.starts_with("phase:")).map(|(_, e)| *e).collect();
    if !phases.is_empty() {
        let sum = |f: fn(&StageEstimate) -> Option<u64>| {
            phases.iter().try_fold(0u64, |a, e| a.checked_add(f(e)?))
        };
        let total =
            figures(sum(|e| e.trajectories), sum(|e| e.max_env_steps), sum(|e| e.optimizer_steps));
        out.push(hint(view, head, total));
        let items = phase_items(d);
        for (i, e) in phases.iter().enumerate() {
            let mut label = figures(e.trajectories, e.max_env_steps, e.optimizer_steps);
            for b in budgets.iter().filter(|b| b.phase == i + 1) {
                label.push_str(&budget_text(b));
            }
            let at = items.get(i).map_or(head, |s| line_end(text, s.end as usize));
            out.push(hint(view, at, label));
        }
        return;
    }
    match stages {
        [] => {}
        [("", e)] if e.kind == "sft" => {
            let parts = [
                e.sft_examples.map(|n| format!("{} examples", count(Some(n)))),
                e.sft_max_tokens.map(|n| format!("≤ {} tokens", count(Some(n)))),
                e.optimizer_steps.map(|n| format!("{} optimizer steps", count(Some(n)))),
            ];
            out.push(hint(view, head, parts.into_iter().flatten().collect::<Vec<_>>().join(" · ")));
        }
        evals => {
            let parts: Vec<String> = evals
                .iter()
                .map(|(suffix, e)| {
                    let when = suffix
                        .strip_prefix("after:")
                        .map(|s| format!("after {s}: "))
                        .unwrap_or_default();
                    format!(
                        "{when}{} episodes · ≤ {} env steps",
                        count(e.trajectories),
                        count(e.max_env_steps)
                    )
                })
                .collect();
            out.push(hint(view, head, parts.join("; ")));
        }
    }
    for b in budgets.iter().filter(|b| b.phase == 0) {
        out.push(hint(
            view,
            line_end(text, span.start as usize),
            budget_text(b).trim_start_matches(" · ").to_string(),
        ));
    }
}

/// `33,600 trajectories · ≤ 684,000 env steps · 5,600 optimizer steps`, leaving out what the
/// plan cannot know (`None`).
fn figures(trajectories: Option<u64>, steps: Option<u64>, updates: Option<u64>) -> String {
    let parts = [
        trajectories.map(|n| format!("{} trajectories", count(Some(n)))),
        steps.map(|n| format!("≤ {} env steps", count(Some(n)))),
        updates.map(|n| format!("{} optimizer steps", count(Some(n)))),
    ];
    parts.into_iter().flatten().collect::<Vec<_>>().join(" · ")
}

fn budget_text(b: &TurnBudget) -> String {
    let over = if b.need > b.context { " (over: E0404)" } else { "" };
    format!(
        " · turn {}: ~{} of {} tokens ({}){over}",
        wrl_plan::show_num(b.horizon),
        show::group(&wrl_plan::show_num(b.need)),
        show::group(&wrl_plan::show_num(b.context)),
        b.model
    )
}

/// The spans of the items of a stage's `phases = [ … ]`, written in its block.
fn phase_items(d: &ast::Decl) -> Vec<Span> {
    let ExprKind::Configure { block, .. } = &d.value.kind else { return Vec::new() };
    block
        .items
        .iter()
        .find_map(|i| match i {
            BlockItem::Field(f) => match (f.path.segments.as_slice(), &f.value.kind) {
                ([PathSegment::Name(n)], ExprKind::List(items)) if n.name == "phases" => {
                    Some(items.iter().map(|e| e.span).collect())
                }
                _ => None,
            },
            _ => None,
        })
        .unwrap_or_default()
}
