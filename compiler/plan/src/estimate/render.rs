//! The estimate as text (aligned figures, digits grouped) and as pretty JSON.

use super::{Count, Estimate, Totals};

/// The estimate as text: one line per figure, then one block per stage.
pub fn render_text(e: &Estimate) -> String {
    use std::fmt::Write as _;
    let show = |c: Count| c.map_or_else(|| "unknown".to_string(), group_digits);
    let money = |c: Option<f64>| c.map_or_else(|| "unknown".to_string(), |x| format!("{x:.2}"));
    let mut s = String::new();
    let variant = e.variant.as_ref().map(|v| format!(", variant {v}")).unwrap_or_default();
    let profile = e.profile.as_deref().unwrap_or("(none)");
    let _ = writeln!(s, "estimate {} (profile {profile}{variant})", e.recipe);
    let _ = writeln!(s, "\ntraining");
    let figures = |s: &mut String, t: &Totals| {
        let _ = writeln!(s, "  trajectories          {}", show(t.trajectories));
        let _ = writeln!(s, "  max env steps         {}", show(t.max_env_steps));
        let _ = writeln!(s, "  max generated tokens  {}", show(t.max_generated_tokens));
        let _ = writeln!(s, "  judge calls (max)     {}", show(t.judge_calls_max));
        let _ = writeln!(s, "  sft examples          {}", show(t.sft_examples));
        let _ = writeln!(s, "  sft tokens (max)      {}", show(t.sft_max_tokens));
        let _ = writeln!(s, "  optimizer steps (max) {}", show(t.optimizer_steps));
        if t.critic_steps != Some(0) {
            let _ = writeln!(s, "  critic steps (max)    {}", show(t.critic_steps));
        }
        if t.generated_tasks != Some(0) {
            let _ = writeln!(s, "  generated tasks (max) {}", show(t.generated_tasks));
        }
        if t.branches != Some(0) {
            // Branches replay their parent's turns: the steps and tokens above are bounds.
            let _ = writeln!(s, "  branches (max)        {}", show(t.branches));
        }
    };
    figures(&mut s, &e.training());
    let has = |t: &Totals| t.trajectories != Some(0);
    if has(&e.refill) {
        let _ = writeln!(s, "\nrefill (groups drawn again for dropped ones)");
        figures(&mut s, &e.refill);
    }
    if has(&e.validation) {
        let _ = writeln!(s, "\nvalidation (inside training)");
        figures(&mut s, &e.validation);
    }
    let _ = writeln!(s, "\nevaluation");
    figures(&mut s, &e.evaluation);
    let _ = writeln!(
        s,
        "\njudge calls during training (training + refill + validation) {}",
        show(e.judge_calls_during_training)
    );
    if let Some(c) = &e.cost {
        let _ = writeln!(
            s,
            "\ncost  judge {}  tokens {}  gpu {}  total {}",
            money(c.judge),
            money(c.tokens),
            money(c.gpu),
            money(c.total)
        );
        let part = |p: &str| e.cost_by_part.get(p).and_then(|c| c.total);
        for p in ["training", "refill", "validation", "evaluation"] {
            let _ = writeln!(s, "  {p:<11} {}", money(part(p)));
        }
        let during = e.cost_during_training;
        let _ = writeln!(s, "  during training (training + refill + validation) {}", money(during));
    }
    if !e.published.is_empty() {
        let _ = writeln!(s, "\npublished (the source's figures, this estimate's beside them)");
        for p in &e.published {
            let own = match (p.figure.as_str(), p.estimate) {
                ("judge_calls", Some(x)) => group_digits(x.round() as u64),
                (_, Some(x)) => format!("{x:.2}"),
                ("gpu_hours", None) => {
                    "unknown (`--prices` gives no `gpu_hours_per_million_tokens`)".into()
                }
                (_, None) => "unknown".into(),
            };
            let _ = writeln!(
                s,
                "  {} {:<12} {} [{}]  estimate {own}",
                p.stage,
                p.figure,
                crate::text::show_num(p.value),
                p.source
            );
        }
    }
    for st in &e.stages {
        let _ = writeln!(s, "\n{} ({})", st.id, st.kind);
        let t = Totals {
            trajectories: st.trajectories,
            max_env_steps: st.max_env_steps,
            max_generated_tokens: st.max_generated_tokens,
            judge_calls_max: st.judge_calls_max,
            sft_examples: st.sft_examples,
            sft_max_tokens: st.sft_max_tokens,
            optimizer_steps: st.optimizer_steps,
            critic_steps: st.critic_steps,
            generated_tasks: st.generated_tasks,
            branches: st.branches,
        };
        figures(&mut s, &t);
        for (m, n) in &st.judge_calls_by_model {
            let _ = writeln!(s, "    judge {m}: {}", show(*n));
        }
        if let Some(c) = &st.cost {
            let _ = writeln!(s, "  cost                  {}", money(c.total));
        }
    }
    s
}

/// `684000` → `684,000`.
pub fn group_digits(n: u64) -> String {
    let d = n.to_string();
    let mut out = String::new();
    for (i, ch) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// The estimate as pretty JSON, newline-terminated.
pub fn render_json(e: &Estimate) -> String {
    let mut s = serde_json::to_string_pretty(e).unwrap_or_else(|_| "{}".into());
    s.push('\n');
    s
}
