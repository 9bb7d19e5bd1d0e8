//! Claims lowered into the plan's typed `claims` (`params::Claim`), with the checks only the
//! planner can make: the stage a claim takes an evaluation's figure after is one it runs after
//! (E0455), both figures are rates (E0456), and — a warning, W0230 — the evaluations are large
//! enough to decide the claimed difference at 95 %.

use wrl_check::{CheckedDecl, Obj, V, Val};
use wrl_diagnostics::{Diagnostic, Span};
use wrl_syntax::ast::DeclKind;

use crate::lower::Lowering;
use crate::params::{Claim, ClaimKind, ClaimSide, fmt_points};

/// The word of `after` for the declared models, before any stage.
const START: &str = "start";

/// The normal quantile of a two-sided 95 % interval (as the runtime's `stats::Z95`).
const Z95: f64 = 1.959_963_984_540_054;

/// One side of a claim as the checks see it: its figure's name and how many tasks it has.
struct Side {
    side: ClaimSide,
    tasks: Option<u64>,
}

impl<'r> Lowering<'r> {
    /// Lowers every claim of the recipe, in declaration order.
    pub(crate) fn claims(&mut self) -> Vec<Claim> {
        let recipe = self.recipe;
        let mut out = Vec::new();
        for d in recipe.decls.iter().filter(|d| !d.std && d.kind == DeclKind::Claim) {
            if let Some(c) = self.claim(d) {
                out.push(c);
            }
        }
        out
    }

    fn claim(&mut self, d: &'r CheckedDecl) -> Option<Claim> {
        let V::Obj(o) = &d.value.v else { return None };
        let kind = match o.ctor.as_str() {
            "std::claims::gain" => ClaimKind::Gain,
            _ => return None,
        };
        // Outside the profiles it is stated for, a claim is not in the plan and nothing holds
        // the evaluations to it (its names are checked everywhere).
        let profiles = self.scope(d, o)?;
        if !wrl_check::scope_holds(profiles.as_deref(), self.recipe.profile.as_deref()) {
            return None;
        }
        let mut eval = self.side(o, "eval", "after")?;
        let mut over = self.side(o, "over", "over_after")?;
        eval.side.variant = self.variant(o, "variant")?;
        over.side.variant = self.variant(o, "over_variant")?;
        let at_least = ratio(o.fields.get("at_least")).unwrap_or(0.0);
        let expect = ratio(o.fields.get("expect"));
        if self.lean {
            self.power(d, &eval, &over, at_least, expect);
        }
        Some(Claim {
            name: d.name.clone(),
            kind,
            eval: eval.side,
            over: over.side,
            at_least,
            expect,
            paper: string(o.fields.get("paper")),
            source: string(o.fields.get("source")),
            doc: self.doc(d),
            profiles,
        })
    }

    /// The profiles a claim is stated for (`None`: every one), or `None` after E0457 (a name
    /// that is no profile of the recipe) or E0458 (an empty list: a claim stated nowhere).
    fn scope(&mut self, d: &CheckedDecl, o: &Obj) -> Option<Option<Vec<String>>> {
        let Some(names) = wrl_check::claim_profiles(d) else { return Some(None) };
        if names.is_empty() {
            let span = o.fields.get("profiles").map_or(d.name_span, |v| v.span);
            self.diags.push(
                Diagnostic::new(
                    "E0458",
                    format!(
                        "claim `{}` is stated for no profile: nothing checks or decides it",
                        d.name
                    ),
                )
                .label(span, "an empty list of profiles")
                .help(
                    "name the profiles that decide it (`profiles = [claims]`; `base`: the recipe \
                     without a profile), or leave `profiles` out to state it for all",
                ),
            );
            return None;
        }
        let recipe = self.recipe;
        let known: Vec<&str> =
            std::iter::once(wrl_check::BASE_PROFILE).chain(recipe.profile_names()).collect();
        let mut ok = true;
        for &(name, span) in &names {
            if known.contains(&name) {
                continue;
            }
            ok = false;
            let help = if recipe.variant_names().any(|v| v == name) {
                format!(
                    "`{name}` is a variant: a study runs it beside the recipe under each profile; \
                     a claim names it with `variant = {name}` or `over_variant = {name}`"
                )
            } else {
                let near = wrl_diagnostics::did_you_mean(name, known.iter().copied());
                near.unwrap_or_else(|| match known.as_slice() {
                    [_] => format!(
                        "`{}` declares no profiles: write `base` or leave `profiles` out",
                        recipe.file
                    ),
                    _ => format!("the profiles are {}", known.join(", ")),
                })
            };
            self.diags.push(
                Diagnostic::new(
                    "E0457",
                    format!(
                        "claim `{}` is stated for `{name}`, which is no profile of `{}`",
                        d.name, recipe.file
                    ),
                )
                .label(span, "not a profile of this recipe")
                .help(help),
            );
        }
        ok.then(|| Some(names.iter().map(|(n, _)| n.to_string()).collect()))
    }

    /// The figure of the evaluation in field `field`, after the stage in field `after`.
    fn side(&mut self, o: &Obj, field: &str, after: &str) -> Option<Side> {
        let v = o.fields.get(field)?;
        let V::Ref { decl, kind: DeclKind::Eval, .. } = &v.v else { return None };
        let e = self.decls.get(decl.as_str()).copied()?;
        let V::Obj(eo) = &e.value.v else { return None };
        self.rate_only(eo, decl, v.span);
        let runs = runs_of(eo);
        let chosen = o.fields.get(after);
        let stage = match chosen.map(|c| &c.v) {
            Some(V::Ref { decl: s, kind: DeclKind::Stage, .. }) => Some(s.to_string()),
            Some(V::Enum { value }) if value == START => None,
            Some(_) | None => {
                match runs.as_slice() {
                    [only] => only.clone(),
                    _ => {
                        let listed = runs.iter().map(run_word).collect::<Vec<_>>().join("`, `");
                        self.diags.push(
                        Diagnostic::new(
                            "E0455",
                            format!("`{decl}` runs after several stages; the claim does not say which"),
                        )
                        .label(v.span, format!("`{decl}` runs after `{listed}`"))
                        .help(format!("say which: `{after} = {}`", run_word(&runs[0]))),
                    );
                        return None;
                    }
                }
            }
        };
        if !runs.contains(&stage) {
            let span = chosen.map_or(v.span, |c| c.span);
            let listed = runs.iter().map(run_word).collect::<Vec<_>>().join("`, `");
            self.diags.push(
                Diagnostic::new(
                    "E0455",
                    format!("`{decl}` does not run after `{}`", stage.as_deref().unwrap_or(START)),
                )
                .label(span, format!("`{decl}` runs after `{listed}` only"))
                .help(format!("name a stage of its `after`, or add this one there: `{listed}`")),
            );
            return None;
        }
        let after = stage.unwrap_or_else(|| decl.to_string());
        let side = ClaimSide { eval: decl.to_string(), after, variant: None };
        Some(Side { side, tasks: tasks_of(self, eo) })
    }

    /// The variant named in field `field` (`None`: the recipe itself, `base`), or E0208 when
    /// the recipe declares no variant of that name.
    fn variant(&mut self, o: &Obj, field: &str) -> Option<Option<String>> {
        let Some(Val { v: V::Enum { value }, span, .. }) = o.fields.get(field) else {
            return Some(None);
        };
        if value == wrl_check::BASE_VARIANT {
            return Some(None);
        }
        if self.recipe.variant_names().any(|v| v == value) {
            return Some(Some(value.clone()));
        }
        let mut d = self.recipe.unknown(wrl_check::ProfileKind::Variant, value);
        d.message = format!("no variant `{value}` for `{field}`");
        self.diags.push(d.label(*span, "not a variant of this recipe"));
        None
    }

    /// E0456: a claim compares rates; an evaluation whose metric is a mean reward has none to
    /// compare in the claim's unit (points).
    fn rate_only(&mut self, eo: &Obj, decl: &str, span: Span) {
        if let Some(Val { v: V::Enum { value }, .. }) = eo.fields.get("metric")
            && value == "mean_reward"
        {
            self.diags.push(
                Diagnostic::new(
                    "E0456",
                    format!("`{decl}` reports a mean reward, but a claim compares rates"),
                )
                .label(span, format!("`{decl}` has `metric = mean_reward`"))
                .help(
                    "compare evaluations whose metric is a rate (`success`, `pass_at_k`, \
                     `cons_at_k`): add one with `metric = success` over the same tasks",
                ),
            );
        }
    }

    /// W0230: the half-width of a 95 % interval on the difference of two rates at p = 0.5 with
    /// n and m tasks, `z·√(0.25/n + 0.25/m)`, must leave room between the margin and the effect
    /// the recipe expects (`expect`, else the margin plus its size: twice a positive margin,
    /// no difference for a negative one): the claim can hold only when the observed
    /// difference clears the margin by that half-width.
    fn power(
        &mut self,
        d: &CheckedDecl,
        eval: &Side,
        over: &Side,
        at_least: f64,
        exp: Option<f64>,
    ) {
        let (Some(n), Some(m)) = (eval.tasks, over.tasks) else { return };
        if n == 0 || m == 0 {
            return;
        }
        let half = Z95 * (0.25 / n as f64 + 0.25 / m as f64).sqrt();
        let effect = exp.unwrap_or(at_least + at_least.abs());
        if at_least + half <= effect + 1e-12 {
            return;
        }
        // The tasks per side that would decide it, when the effect clears the margin at all.
        let room = effect - at_least;
        let need = if room > 0.0 {
            let per = (Z95 / room).powi(2) * 0.5;
            format!("about {} tasks in each evaluation decide it", per.ceil() as u64)
        } else {
            "no evaluation size decides an effect that does not clear the margin: state `expect`"
                .to_string()
        };
        self.diags.push(
            Diagnostic::new(
                "W0230",
                format!(
                    "{n} and {m} tasks cannot decide `{}` at 95 %: the interval on the \
                     difference is ±{} points, the expected effect {} points over a margin of {}",
                    d.name,
                    fmt_points(half),
                    fmt_points(effect),
                    fmt_points(at_least)
                ),
            )
            .label(d.name_span, "this claim")
            .help(need),
        );
    }
}

/// The runs of an evaluation: a stage each, `None` for `start` (or no `after` at all).
fn runs_of(eo: &Obj) -> Vec<Option<String>> {
    crate::stages::eval_runs(eo).into_iter().map(|r| r.map(|(stage, _)| stage)).collect()
}

fn run_word(r: &Option<String>) -> &str {
    r.as_deref().unwrap_or(START)
}

/// The tasks an evaluation runs: its `count`, else its dataset's `count`, when known.
fn tasks_of(l: &Lowering<'_>, eo: &Obj) -> Option<u64> {
    if let Some(n) = number(eo.fields.get("count")) {
        return Some(n as u64);
    }
    let Some(V::Ref { decl, kind: DeclKind::Dataset, .. }) = eo.fields.get("tasks").map(|t| &t.v)
    else {
        return None;
    };
    let ds = l.decls.get(decl.as_str())?;
    let (v, _) = l.resolve_alias(ds);
    let V::Obj(o) = &v.v else { return None };
    number(o.fields.get("count")).map(|n| n as u64)
}

fn number(v: Option<&Val>) -> Option<f64> {
    match v.map(|v| &v.v) {
        Some(V::Num { value } | V::Qty { value, .. }) => Some(*value),
        _ => None,
    }
}

fn ratio(v: Option<&Val>) -> Option<f64> {
    number(v)
}

fn string(v: Option<&Val>) -> Option<String> {
    match v.map(|v| &v.v) {
        Some(V::Str { value }) => Some(value.clone()),
        _ => None,
    }
}
