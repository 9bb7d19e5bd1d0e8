//! `report.html`: one self-contained page per run — status and warnings, held-out evaluations
//! beside the paper's figures, every curve, how episodes ended (per iteration, per task
//! template), the resolved configuration, and the chosen episodes with their pages embedded
//! (click a page for full size). Inline SVG and CSS only: no network, no JavaScript.

use std::fmt::Write as _;

use super::tables::Counts;
use super::{EpisodeView, ReportData, Shot, chart};
use crate::rundir::records::Summary;
use wrl_sandbox::html::esc;

/// The page's style, shared with the comparison page.
pub const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:1.5rem auto;\
max-width:1120px;color:#222;padding:0 1rem}h1{font-size:1.45rem;margin-bottom:.2rem}\
h2{font-size:1.15rem;margin-top:2.2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}\
h3{font-size:1rem;margin:.4rem 0}nav a{margin-right:.8rem}table{border-collapse:collapse;\
margin:.5rem 0}td,th{border:1px solid #ccc;padding:.2rem .55rem;text-align:left;\
vertical-align:top}td.n{text-align:right;font-variant-numeric:tabular-nums}\
.charts{display:flex;flex-wrap:wrap;gap:1rem}figure.chart{margin:0}figcaption{font-size:12px;\
max-width:520px}.key{margin-right:.7rem;white-space:nowrap}.key i{display:inline-block;\
width:.8rem;height:.8rem;margin-right:.25rem;vertical-align:-1px}.key i.mark{border-left:2px \
dashed #888;width:0}.ep{border:1px solid #ddd;border-radius:6px;padding:.5rem 1rem;\
margin:1rem 0}.tag{display:inline-block;background:#eef;border-radius:3px;padding:0 .35rem;\
margin-right:.3rem;font-size:12px}.step{display:grid;grid-template-columns:330px 1fr;gap:.8rem;\
border-top:1px solid #eee;padding:.4rem 0}pre{white-space:pre-wrap;background:#f6f6f6;\
padding:.35rem;margin:.15rem 0;font-size:12px;max-height:16rem;overflow:auto}\
.shot input{display:none}.shot img{width:320px;box-sizing:border-box;border:1px solid #ccc;cursor:zoom-in}\
.shot input:checked+label{position:fixed;inset:0;background:rgba(0,0,0,.85);display:flex;\
align-items:center;justify-content:center;z-index:9}.shot input:checked+label img{width:auto;\
max-width:98vw;max-height:98vh;cursor:zoom-out}.ok{color:#2ca02c}.bad{color:#d62728}\
details{margin:.2rem 0}summary{cursor:pointer}.muted{color:#777}";

/// The page's head and title.
pub fn head(title: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title>\
         <style>{STYLE}</style></head><body><h1>{t}</h1>",
        t = esc(title)
    )
}

/// Renders the report of one run.
pub fn render(d: &ReportData) -> String {
    let title = format!(
        "wrl run — {}{}",
        d.recipe,
        d.profile.as_ref().map(|p| format!(" (profile {p})")).unwrap_or_default()
    );
    let mut h = head(&title);
    h.push_str(
        "<nav><a href=\"#evals\">evaluations</a><a href=\"#curves\">curves</a>\
         <a href=\"#endings\">how episodes ended</a><a href=\"#episodes\">chosen episodes</a>\
         <a href=\"#config\">configuration</a></nav>",
    );
    if !d.summary.claims.is_empty() {
        // The claims follow the evaluations; the link goes after the navigation's first.
        h = h.replacen("evaluations</a>", "evaluations</a><a href=\"#claims\">claims</a>", 1);
    }
    status(&mut h, &d.summary);
    evals(&mut h, &d.summary);
    super::claims::claims(&mut h, &d.summary.claims, "over this run's tasks (one seed)");
    h.push_str("<section id=\"curves\"><h2>Curves</h2>");
    if d.charts.is_empty() {
        h.push_str("<p class=\"muted\">nothing logged yet</p>");
    }
    h.push_str("<div class=\"charts\">");
    for c in &d.charts {
        h.push_str(&chart::render(c));
    }
    h.push_str("</div></section>");
    super::memory::render(&mut h, &d.memory);
    endings(&mut h, d);
    episodes(&mut h, d);
    config(&mut h, d);
    h.push_str("</body></html>\n");
    h
}

fn status(h: &mut String, s: &Summary) {
    let _ = write!(
        h,
        "<section id=\"status\"><p>status: <b>{}</b> · wall time {:.0} s · {} episodes logged</p>",
        esc(&s.status),
        s.wall_s,
        s.trajectories
    );
    for w in &s.warnings {
        let _ = write!(h, "<p class=\"bad\"><b>warning:</b> {}</p>", esc(w));
    }
    h.push_str("</section>");
}

fn evals(h: &mut String, s: &Summary) {
    h.push_str("<section id=\"evals\"><h2>Held-out evaluations</h2>");
    if s.evals.is_empty() {
        h.push_str("<p class=\"muted\">no evaluation has finished</p></section>");
        return;
    }
    h.push_str(
        "<table><tr><th>evaluation</th><th>after</th><th>episodes</th><th>success</th>\
         <th>published</th></tr>",
    );
    for e in &s.evals {
        let paper: Vec<String> = e
            .published
            .iter()
            .map(|p| format!("{}: {:.1}% ({})", p.model, p.value * 100.0, p.source))
            .collect();
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{:.1}%{}</td>\
             <td>{}</td></tr>",
            esc(&e.eval),
            esc(&e.after),
            episodes_cell(e),
            e.success * 100.0,
            e.mean_reward.map(|m| format!(" (mean reward {m:.3})")).unwrap_or_default(),
            esc(&paper.join("; "))
        );
        // With `by`: a row per subset, its rate and 95 % Wilson interval.
        let by = e.by.as_deref().unwrap_or("subset");
        for (name, r) in &e.subsets {
            let _ = write!(
                h,
                "<tr class=\"subset\"><td>↳ {} = {}</td><td></td><td class=\"n\">{}</td>\
                 <td class=\"n\">{:.1}% [{:.1}%, {:.1}%]</td><td>{}/{} solved</td></tr>",
                esc(by),
                esc(name),
                r.out_of,
                r.success * 100.0,
                r.low * 100.0,
                r.high * 100.0,
                r.solved,
                r.out_of
            );
        }
    }
    h.push_str("</table></section>");
}

/// A table of counts with a share column per row.
pub fn counts(h: &mut String, first: &str, c: &Counts) {
    let _ = write!(h, "<table><tr><th>{}</th>", esc(first));
    for col in &c.columns {
        let _ = write!(h, "<th>{}</th>", esc(col));
    }
    h.push_str("<th>solved share</th></tr>");
    for (name, row) in &c.rows {
        let _ = write!(h, "<tr><td>{}</td>", esc(name));
        for n in row {
            let _ = write!(h, "<td class=\"n\">{n}</td>");
        }
        let total: u64 = row.iter().sum();
        let solved = c.columns.iter().position(|k| k == "solved").map_or(0, |i| row[i]);
        let share = if total == 0 { 0.0 } else { solved as f64 * 100.0 / total as f64 };
        let _ = write!(h, "<td class=\"n\">{share:.1}%</td></tr>");
    }
    h.push_str("</table>");
}

fn endings(h: &mut String, d: &ReportData) {
    h.push_str("<section id=\"endings\"><h2>How episodes ended</h2>");
    let s = &d.summary;
    h.push_str(
        "<p class=\"muted\">Classes: <code>solved</code>; <code>wrong_answer</code> (it answered, \
         the checker said no); the browser's endings <code>max_steps</code>, \
         <code>agent_error</code> (format errors), <code>env_error</code>, \
         <code>infra_timeout</code>.</p>",
    );
    if !d.by_source.rows.is_empty() {
        h.push_str("<h3>All episodes</h3>");
        counts(h, "episodes", &d.by_source);
    }
    if !s.excluded.is_empty() {
        h.push_str(
            "<h3>Episodes left out of the loss</h3><table><tr><th>why</th><th>episodes</th></tr>",
        );
        for (k, v) in &s.excluded {
            let _ = write!(h, "<tr><td>{}</td><td class=\"n\">{v}</td></tr>", esc(k));
        }
        h.push_str("</table>");
    }
    h.push_str("<section id=\"by-iteration\"><h3>Per RL iteration</h3>");
    if d.by_iteration.rows.is_empty() {
        h.push_str("<p class=\"muted\">no RL iteration logged</p>");
    } else {
        counts(h, "iteration", &d.by_iteration);
    }
    h.push_str("</section><section id=\"by-template\"><h3>Per task template</h3>");
    for (group, c) in &d.by_template {
        let _ = write!(h, "<h4>{}</h4>", esc(group));
        counts(h, "template", c);
    }
    h.push_str("</section></section>");
}

fn episodes(h: &mut String, d: &ReportData) {
    h.push_str(
        "<section id=\"episodes\"><h2>Chosen episodes</h2><p class=\"muted\">Per evaluation: \
         the best and the worst episode and the first of each failure class. Click a page for \
         full size.</p>",
    );
    if d.linked_pages > 0 {
        let _ = write!(
            h,
            "<p class=\"bad\">{} pages are linked from the run directory, not embedded (the \
             page would pass {} MiB)</p>",
            d.linked_pages,
            super::EMBED_BUDGET >> 20
        );
    }
    let mut n = 0;
    for (eval, eps) in &d.chosen {
        let _ = write!(h, "<h3>evaluation {}</h3>", esc(eval));
        for e in eps {
            episode(h, e, &mut n);
        }
    }
    h.push_str("</section>");
}

fn episode(h: &mut String, e: &EpisodeView, n: &mut usize) {
    h.push_str("<div class=\"ep\">");
    for l in &e.labels {
        let _ = write!(h, "<span class=\"tag\">{}</span>", esc(l));
    }
    let _ = write!(
        h,
        "<b>{}</b> · template {}<p><b>task:</b> {}</p><p><b>outcome:</b> {}{}</p>",
        esc(&e.title),
        esc(&e.template),
        esc(&e.goal),
        esc(&e.outcome),
        e.reward.map(|r| format!(" · reward {r:.2}")).unwrap_or_default()
    );
    for (i, s) in e.steps.iter().enumerate() {
        let _ = write!(h, "<div class=\"step\"><div>step {}", i + 1);
        if let Some(shot) = &s.shot {
            page(h, shot, &format!("the page the agent saw at step {}", i + 1), n);
        }
        let _ = write!(
            h,
            "</div><div><pre>{}</pre><pre>&gt; {}</pre><pre>{}</pre></div></div>",
            esc(&s.observation),
            esc(&s.action),
            esc(&s.feedback)
        );
    }
    if let Some(shot) = &e.final_page {
        h.push_str("<div class=\"step\"><div>final page");
        page(h, shot, "the page when the episode ended", n);
        h.push_str("</div><div></div></div>");
    }
    h.push_str("</div>");
}

/// A page: embedded, a click toggling full size; or a link to its file.
fn page(h: &mut String, s: &Shot, alt: &str, n: &mut usize) {
    *n += 1;
    match (&s.data, s.missing) {
        (Some(data), _) => {
            let _ = write!(
                h,
                "<div class=\"shot\"><input type=\"checkbox\" id=\"page{n}\"><label \
                 for=\"page{n}\"><img src=\"data:image/png;base64,{data}\" alt=\"{}\" \
                 data-file=\"{}\"></label></div>",
                esc(alt),
                esc(&s.path)
            );
        }
        (None, false) => {
            let _ = write!(h, "<p><a href=\"{p}\">{p}</a></p>", p = esc(&s.path));
        }
        (None, true) => {
            let _ = write!(h, "<p class=\"muted\">page {} is missing</p>", esc(&s.path));
        }
    }
}

fn config(h: &mut String, d: &ReportData) {
    h.push_str(
        "<section id=\"config\"><h2>Resolved configuration</h2><p class=\"muted\">Every node of \
         <code>plan.json</code> with every parameter, defaults filled.</p>",
    );
    let _ = write!(
        h,
        "<table><tr><td>recipe</td><td><code>{}</code></td></tr><tr><td>profile</td><td>{}</td></tr>\
         <tr><td>identity</td><td><code>{}</code></td></tr>\
         <tr><td>run started</td><td>{}</td></tr><tr><td>report by</td><td>wrlc {}</td></tr></table>",
        esc(&d.recipe),
        esc(d.profile.as_deref().unwrap_or("(none)")),
        esc(&d.identity),
        esc(d.started.as_deref().unwrap_or("(nothing logged yet)")),
        env!("CARGO_PKG_VERSION")
    );
    for n in &d.config {
        let _ =
            write!(h, "<details><summary><code>{}</code> = {}</summary>", esc(&n.id), esc(&n.ctor));
        if let Some(doc) = &n.doc {
            let _ = write!(h, "<p class=\"muted\">{}</p>", esc(doc));
        }
        h.push_str("<table>");
        for i in &n.inputs {
            let _ = write!(h, "<tr><td colspan=\"2\"><code>{}</code></td></tr>", esc(i));
        }
        for (k, v) in &n.params {
            let _ = write!(h, "<tr><td>{}</td><td><code>{}</code></td></tr>", esc(k), esc(v));
        }
        h.push_str("</table></details>");
    }
    h.push_str("</section>");
}

/// An evaluation's episodes, and where its tasks repeat goals, on how many goals and what they
/// are worth as independent tasks (what a study's intervals count).
fn episodes_cell(e: &crate::rundir::records::EvalResult) -> String {
    match e.repeats {
        Some(r) => format!(
            "{}<br><span class=\"muted\">{} goals, worth {} independent</span>",
            e.episodes, r.goals, r.worth
        ),
        None => e.episodes.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::report::StepView;
    use crate::report::chart::{Chart, Series};
    use crate::report::config::NodeConfig;
    use crate::rundir::records::EvalResult;

    #[test]
    fn report_shows_every_section_and_escapes_text() {
        let data = ReportData {
            recipe: "recipes/quickstart.wrl".into(),
            summary: Summary {
                status: "finished".into(),
                identity: None,
                wall_s: 12.0,
                evals: vec![EvalResult {
                    eval: "after_rl".into(),
                    after: "online".into(),
                    success: 0.5,
                    mean_reward: None,
                    episodes: 4,
                    published: vec![],
                    by: None,
                    subsets: BTreeMap::new(),
                    repeats: None,
                }],
                failures: BTreeMap::from([(wrl_sandbox::Ending::MaxSteps, 3)]),
                claims: Vec::new(),
                excluded: BTreeMap::from([("judge_timeout".to_string(), 12)]),
                warnings: vec!["iteration 1: 12 of 16 episodes left out".into()],
                ..Default::default()
            },
            charts: vec![Chart {
                title: "reward".into(),
                series: vec![Series { points: vec![(1.0, 0.1), (2.0, 0.4)], ..Default::default() }],
                ..Default::default()
            }],
            by_iteration: Counts {
                columns: vec!["solved".into(), "max_steps".into()],
                rows: vec![("online iteration 1".into(), vec![1, 3])],
            },
            config: vec![NodeConfig {
                id: "stage:online".into(),
                params: vec![("group".into(), "8".into())],
                ..Default::default()
            }],
            memory: vec![crate::report::memory::MemoryRow {
                stage: "stage:warmup".into(),
                host_peak: Some(3 << 20),
                device: None,
                estimate: Some((2 << 20, "f32".into())),
            }],
            chosen: vec![(
                "after_rl".into(),
                vec![EpisodeView {
                    labels: vec!["worst".into()],
                    goal: "find <b>".into(),
                    steps: vec![StepView {
                        shot: Some(Shot {
                            path: "screens/0-0.png".into(),
                            data: Some("AAAA".into()),
                            missing: false,
                        }),
                        ..Default::default()
                    }],
                    final_page: Some(Shot {
                        path: "screens/0-1.png".into(),
                        data: None,
                        missing: true,
                    }),
                    ..Default::default()
                }],
            )],
            ..Default::default()
        };
        let html = render(&data);
        for id in [
            "status",
            "evals",
            "curves",
            "memory",
            "endings",
            "by-iteration",
            "by-template",
            "episodes",
            "config",
        ] {
            assert!(html.contains(&format!("<section id=\"{id}\">")), "{id}");
        }
        assert!(html.contains("<td>judge_timeout</td><td class=\"n\">12</td>"), "{html}");
        assert!(html.contains("<td>run started</td><td>(nothing logged yet)</td>"));
        assert!(html.contains("<b>warning:</b> iteration 1: 12 of 16"));
        assert!(html.contains("<polyline") && html.contains("50.0%"));
        assert!(html.contains("<td class=\"n\">25.0%</td>"), "solved share of the iteration");
        assert!(html.contains("<th>solved share</th>"));
        assert!(html.contains("src=\"data:image/png;base64,AAAA\""));
        assert!(html.contains("page screens/0-1.png is missing"));
        assert!(html.contains("<span class=\"tag\">worst</span>"));
        assert!(html.contains("find &lt;b&gt;") && !html.contains("find <b>"));
        assert!(html.contains("<td>stage:warmup</td><td>3.00 MiB</td><td>—</td><td>2.00 MiB (f32)</td><td>1.50</td>"), "{html}");
    }
}
