//! `report.html`: one self-contained page per run — reward and success curves per phase, SFT
//! loss, held-out evaluations, failure classes, and sample trajectories with their screenshots.
//! Charts are inline SVG, so the page needs no network and no JavaScript.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

/// A line of a chart: points (x, y) in run order.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// A chart: a title, axis names and its lines.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Chart {
    pub title: String,
    pub x: String,
    pub y: String,
    pub series: Vec<Series>,
}

/// One step of a sample trajectory.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct StepView {
    pub observation: String,
    pub action: String,
    pub feedback: String,
    /// A screenshot as a path relative to the run directory, if one was kept.
    pub screenshot: Option<String>,
}

/// A sample trajectory.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TrajectoryView {
    pub title: String,
    pub goal: String,
    pub outcome: String,
    pub reward: Option<f64>,
    pub steps: Vec<StepView>,
}

/// Everything the report shows.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ReportData {
    pub recipe: String,
    pub profile: Option<String>,
    pub status: String,
    pub wall_s: f64,
    pub charts: Vec<Chart>,
    /// (after stage, success rate, the paper's figures as "model: value (source)") in run order.
    pub evals: Vec<(String, f64, Vec<String>)>,
    /// Failure class → count.
    pub failures: BTreeMap<String, u64>,
    /// Exclusion class → episodes left out of the loss.
    #[serde(default)]
    pub excluded: BTreeMap<String, u64>,
    /// The run's warnings.
    #[serde(default)]
    pub warnings: Vec<String>,
    pub judge_agreement: Option<f64>,
    pub samples: Vec<TrajectoryView>,
}

const COLORS: &[&str] = &["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf"];

/// Renders the report as one HTML page.
pub fn render(data: &ReportData) -> String {
    let mut h = String::new();
    let title = format!(
        "wrl run — {}{}",
        data.recipe,
        data.profile.as_ref().map(|p| format!(" ({p})")).unwrap_or_default()
    );
    let _ = write!(
        h,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>\
         body{{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#222}}\
         h1{{font-size:1.5rem}} h2{{font-size:1.15rem;margin-top:2rem}} table{{border-collapse:collapse}}\
         td,th{{border:1px solid #ccc;padding:.25rem .6rem;text-align:left}} .charts{{display:flex;flex-wrap:wrap;gap:1rem}}\
         .traj{{border:1px solid #ddd;border-radius:6px;padding:.5rem 1rem;margin:1rem 0}} pre{{white-space:pre-wrap;background:#f6f6f6;padding:.4rem;margin:.2rem 0}}\
         img{{max-width:480px;border:1px solid #ccc}} .ok{{color:#2ca02c}} .bad{{color:#d62728}}</style></head><body>\
         <h1>{t}</h1><p>status: <b>{s}</b> · wall time {w:.0} s</p>",
        t = esc(&title),
        s = esc(&data.status),
        w = data.wall_s
    );
    for w in &data.warnings {
        let _ = write!(h, "<p class=\"bad\"><b>warning:</b> {}</p>", esc(w));
    }
    if !data.evals.is_empty() {
        h.push_str(
            "<h2>Held-out evaluation</h2><table><tr><th>after</th><th>success</th>\
             <th>published</th></tr>",
        );
        for (after, rate, paper) in &data.evals {
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{:.1}%</td><td>{}</td></tr>",
                esc(after),
                rate * 100.0,
                esc(&paper.join("; "))
            );
        }
        h.push_str("</table>");
    }
    if !data.charts.is_empty() {
        h.push_str("<h2>Curves</h2><div class=\"charts\">");
        for c in &data.charts {
            h.push_str(&svg_chart(c));
        }
        h.push_str("</div>");
    }
    if !data.failures.is_empty() {
        h.push_str("<h2>How episodes ended</h2><table><tr><th>reason</th><th>episodes</th></tr>");
        for (k, v) in &data.failures {
            let _ = write!(h, "<tr><td>{}</td><td>{v}</td></tr>", esc(k));
        }
        h.push_str("</table>");
    }
    if !data.excluded.is_empty() {
        h.push_str(
            "<h2>Episodes left out of the loss</h2><table><tr><th>why</th><th>episodes</th></tr>",
        );
        for (k, v) in &data.excluded {
            let _ = write!(h, "<tr><td>{}</td><td>{v}</td></tr>", esc(k));
        }
        h.push_str("</table>");
    }
    if let Some(a) = data.judge_agreement {
        let _ = write!(h, "<p>judge agreement with programmatic checks: {:.1}%</p>", a * 100.0);
    }
    if !data.samples.is_empty() {
        h.push_str("<h2>Sample trajectories</h2>");
        for t in &data.samples {
            let _ = write!(
                h,
                "<div class=\"traj\"><h3>{}</h3><p><b>task:</b> {}</p><p><b>outcome:</b> {}{}</p>",
                esc(&t.title),
                esc(&t.goal),
                esc(&t.outcome),
                t.reward.map(|r| format!(" · reward {r:.2}")).unwrap_or_default()
            );
            for (i, s) in t.steps.iter().enumerate() {
                let _ = write!(h, "<p>step {}</p>", i + 1);
                if let Some(img) = &s.screenshot {
                    let _ = write!(
                        h,
                        "<img src=\"{}\" alt=\"the page the agent saw at step {}\">",
                        esc(img),
                        i + 1
                    );
                }
                let _ = write!(
                    h,
                    "<pre>{}</pre><pre>&gt; {}</pre><pre>{}</pre>",
                    esc(&s.observation),
                    esc(&s.action),
                    esc(&s.feedback)
                );
            }
            h.push_str("</div>");
        }
    }
    h.push_str("</body></html>\n");
    h
}

fn svg_chart(c: &Chart) -> String {
    let (w, hgt, pad) = (520.0, 260.0, 40.0);
    let pts = c.series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for (x, y) in pts.filter(|(x, y)| x.is_finite() && y.is_finite()) {
        x0 = x0.min(*x);
        x1 = x1.max(*x);
        y0 = y0.min(*y);
        y1 = y1.max(*y);
    }
    if x0 > x1 {
        (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
    }
    if (x1 - x0).abs() < 1e-12 {
        x1 = x0 + 1.0;
    }
    if (y1 - y0).abs() < 1e-12 {
        y1 = y0 + 1.0;
    }
    let sx = |x: f64| pad + (x - x0) / (x1 - x0) * (w - 2.0 * pad);
    let sy = |y: f64| hgt - pad - (y - y0) / (y1 - y0) * (hgt - 2.0 * pad);
    let mut s = format!(
        "<figure><svg width=\"{w}\" height=\"{hgt}\" viewBox=\"0 0 {w} {hgt}\" role=\"img\" aria-label=\"{t}\">\
         <rect x=\"0\" y=\"0\" width=\"{w}\" height=\"{hgt}\" fill=\"#fff\" stroke=\"#ddd\"/>\
         <text x=\"{cx}\" y=\"16\" text-anchor=\"middle\" font-size=\"13\">{t}</text>\
         <text x=\"{cx}\" y=\"{bx}\" text-anchor=\"middle\" font-size=\"11\">{xl}</text>\
         <text x=\"12\" y=\"{cy}\" font-size=\"11\" transform=\"rotate(-90 12 {cy})\" text-anchor=\"middle\">{yl}</text>\
         <text x=\"{pad}\" y=\"{by}\" font-size=\"10\">{x0}</text><text x=\"{rx}\" y=\"{by}\" font-size=\"10\" text-anchor=\"end\">{x1}</text>\
         <text x=\"{lx}\" y=\"{ty}\" font-size=\"10\" text-anchor=\"end\">{y1}</text><text x=\"{lx}\" y=\"{byy}\" font-size=\"10\" text-anchor=\"end\">{y0}</text>",
        t = esc(&c.title),
        cx = w / 2.0,
        bx = hgt - 6.0,
        xl = esc(&c.x),
        cy = hgt / 2.0,
        yl = esc(&c.y),
        by = hgt - pad + 14.0,
        rx = w - pad,
        lx = pad - 4.0,
        ty = pad + 4.0,
        byy = hgt - pad,
        x0 = short(x0),
        x1 = short(x1),
        y0 = short(y0),
        y1 = short(y1),
    );
    for (i, series) in c.series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let path: Vec<String> = series
            .points
            .iter()
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .map(|(x, y)| format!("{:.1},{:.1}", sx(*x), sy(*y)))
            .collect();
        let _ = write!(
            s,
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"/>",
            path.join(" ")
        );
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"{color}\">{}</text>",
            w - pad - 110.0,
            pad + 14.0 * (i as f64 + 1.0),
            esc(&series.name)
        );
    }
    s.push_str("</svg></figure>");
    s
}

fn short(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e9 { format!("{}", v as i64) } else { format!("{v:.3}") }
}

/// Escapes text for HTML.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_shows_evals_curves_failures_and_escapes_text() {
        let data = ReportData {
            recipe: "recipes/quickstart.wrl".into(),
            status: "finished".into(),
            wall_s: 12.0,
            charts: vec![Chart {
                title: "reward".into(),
                x: "iter".into(),
                y: "mean reward".into(),
                series: vec![Series {
                    name: "phase 1".into(),
                    points: vec![(1.0, 0.1), (2.0, 0.4)],
                }],
            }],
            evals: vec![
                ("warmup".into(), 0.25, Vec::new()),
                ("online".into(), 0.5, vec!["paper: 74.1% (Table 2)".into()]),
            ],
            failures: BTreeMap::from([("max_steps".to_string(), 3)]),
            excluded: BTreeMap::from([("judge_timeout".to_string(), 12)]),
            warnings: vec!["iteration 1: 12 of 16 episodes left out".into()],
            samples: vec![TrajectoryView { goal: "find <b>".into(), ..Default::default() }],
            ..Default::default()
        };
        let html = render(&data);
        assert!(html.contains("<td>judge_timeout</td><td>12</td>"), "{html}");
        assert!(html.contains("<b>warning:</b> iteration 1: 12 of 16"));
        assert!(html.contains("<polyline"));
        assert!(html.contains("25.0%") && html.contains("50.0%"));
        assert!(html.contains("max_steps"));
        assert!(html.contains("find &lt;b&gt;"));
        assert!(!html.contains("find <b>"));
    }
}
