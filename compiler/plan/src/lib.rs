//! Lowering of a checked recipe to the execution plan (a petgraph DAG of stages), its three
//! renderings (deterministic text for golden files, versioned JSON for the runtime, Graphviz
//! DOT), and the estimate computed from the plan alone.

mod checks;
mod claims;
mod convert;
pub mod diff;
mod dot;
mod errors;
pub mod estimate;
mod figures;
mod identity;
mod lower;
mod model;
pub mod params;
mod sequence;
mod stages;
mod text;
mod unknowns;
pub mod value;

use wrl_check::Recipe;
use wrl_diagnostics::Diagnostic;

pub use convert::unit_word;
pub use dot::render_dot;
pub use estimate::{Estimate, Prices, StageEstimate, estimate};
pub use identity::{Identity, WRLC_VERSION};
pub use model::{DataKind, Edge, Node, NodeKind, PLAN_VERSION, Plan};
pub use sequence::episode_tokens;
pub use text::{render_text, show_num, show_val};
pub use unknowns::refused_unknowns;
pub use value::{BinOp, Expr, PExpr, PObj, PVal};
pub use wrl_check::BASE_VARIANT;
pub use wrl_check::epochs::{batch_start, iters_for};
pub use wrl_check::turns::turns_run;

/// The turns an episode runs with a step budget and an agent's `max_turns`: the checker's,
/// the estimate's and every runner's one rule ([`turns_run`]).
pub fn turns_cap(budget: u32, max_turns: u32) -> u32 {
    turns_run(Some(budget.into()), Some(max_turns.into())).map_or(max_turns, |t| t as u32)
}

/// Lowers a checked recipe (with its profile already applied, if any). Returns the plan, or
/// the plan errors (E045x) when the recipe cannot be run as a graph of stages.
pub fn lower(recipe: &Recipe) -> Result<Plan, Vec<Diagnostic>> {
    let mut l = lower::Lowering::new(recipe);
    l.run();
    let order = l.check_and_order();
    let (plan, mut diags) = l.finish(order);
    if diags.is_empty() {
        Ok(plan)
    } else {
        diags.sort_by_key(|d| d.sort_key());
        diags.dedup();
        Err(diags)
    }
}

/// The diagnostics [`lower`] would return, without ordering the nodes or building the plan
/// (what `wrlc check` needs, for the recipe and every profile).
pub fn lower_diagnostics(recipe: &Recipe) -> Vec<Diagnostic> {
    let mut l = lower::Lowering::new(recipe);
    l.lean = true;
    l.run();
    l.check();
    let mut diags = std::mem::take(&mut l.diags);
    diags.sort_by_key(|d| d.sort_key());
    diags.dedup();
    diags
}

/// The plan diagnostics of a recipe and of each of its profiles: what `wrlc check` reports
/// after the checker found no errors. A mistake that only a profile makes says so, and points
/// at the profile too.
pub fn plan_diagnostics(recipe: &Recipe) -> Vec<Diagnostic> {
    let slicer = wrl_check::ProfileSlicer::new(recipe);
    let slices: Vec<Recipe> = recipe.profiles.iter().map(|p| slicer.slice(p)).collect();
    plan_diagnostics_sliced(recipe, &slices)
}

/// [`plan_diagnostics`], given the recipe's profile slices (`wrl_check::Checked::slices`: one
/// per profile, in order) instead of slicing it again.
pub fn plan_diagnostics_sliced(recipe: &Recipe, slices: &[Recipe]) -> Vec<Diagnostic> {
    let mut out = lower_diagnostics(recipe);
    let mut base: Vec<(&'static str, Option<wrl_diagnostics::Span>)> =
        out.iter().map(|d| (d.code, d.primary_span())).collect();
    // What a profile alone says, which its studied variants would say again.
    let mut profiled: Vec<(&'static str, Option<wrl_diagnostics::Span>)> = Vec::new();
    // Each profile is lowered only as far as it changes the recipe: what it cannot reach
    // lowers as in the plain recipe, whose diagnostics are already there.
    for (p, r) in recipe.profiles.iter().zip(slices) {
        for d in lower_diagnostics(r) {
            if base.contains(&(d.code, d.primary_span())) {
                continue;
            }
            profiled.push((d.code, d.primary_span()));
            let word = p.kind.word();
            let mut d = d.label(p.span, format!("with {word} `{}`", p.name));
            d.message = format!("{} ({word} `{}`)", d.message, p.name);
            out.push(d);
        }
    }
    // Each variant on top of each profile whose study runs it: a claim stated for the profile
    // is lowered in the variant's plan too (E0455 when the variant drops a stage it reads).
    base.extend(profiled);
    for (p, v, varied) in recipe.studied_variants() {
        let span = recipe.profiles.iter().find(|q| q.name == v).map(|q| q.span);
        for d in lower_diagnostics(&varied) {
            if base.contains(&(d.code, d.primary_span())) {
                continue;
            }
            base.push((d.code, d.primary_span()));
            out.push(wrl_check::under_study(d, p, v, span));
        }
    }
    out.sort_by_key(|d| d.sort_key());
    out.dedup();
    out
}

/// The plan as pretty JSON (the format `docs/plan-format.md` documents), with its identity,
/// newline-terminated.
pub fn render_json(plan: &Plan) -> String {
    /// The plan's fields in their order, its identity after the version.
    #[derive(serde::Serialize)]
    struct Rendered<'a> {
        version: u32,
        identity: Identity,
        recipe: &'a str,
        profile: &'a Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        variant: &'a Option<String>,
        nodes: &'a [Node],
        edges: &'a [Edge],
        #[serde(skip_serializing_if = "<[_]>::is_empty")]
        claims: &'a [params::Claim],
    }
    let r = Rendered {
        version: plan.version,
        identity: Identity::of(plan),
        recipe: &plan.recipe,
        profile: &plan.profile,
        variant: &plan.variant,
        nodes: &plan.nodes,
        edges: &plan.edges,
        claims: &plan.claims,
    };
    let mut s = serde_json::to_string_pretty(&r).unwrap_or_else(|_| "{}".into());
    s.push('\n');
    s
}

/// Reads a plan printed by `wrlc plan --format json` (the runtime's entry point), refusing a
/// format version this build does not know.
pub fn parse_json(text: &str) -> Result<Plan, String> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not a plan: {e}"))?;
    match v.get("version").and_then(serde_json::Value::as_u64) {
        Some(n) if n == u64::from(PLAN_VERSION) => {}
        Some(n) => {
            return Err(format!(
                "plan format version {n}, but this build reads version {PLAN_VERSION}; \
                 re-run `wrlc plan` with the same wrlc"
            ));
        }
        None => return Err("not a plan: no `version`".into()),
    }
    serde_json::from_value(v).map_err(|e| format!("not a plan: {e}"))
}
