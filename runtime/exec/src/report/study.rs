//! A study's page (`DIR/report.html` beside `study.json`, `wrlc run --seeds N`): each
//! evaluation's mean over the seeds with its 95 % interval and every seed's figure, each claim's
//! verdict with its interval (`claims.rs`, the table a single run's report shows too), and a
//! link to each seed's own report.

use std::fmt::Write as _;
use std::path::Path;

use wrl_sandbox::html::esc;

use super::claims::claims;
use super::html::head;
use crate::rundir::{RunDirError, write_atomic};
use crate::study::Study;

/// The study's page.
pub fn render(s: &Study) -> String {
    let seeds: Vec<String> = s.seeds.iter().map(u64::to_string).collect();
    let mut h = head(&format!("wrl study — {} over {} seeds", s.recipe, s.seeds.len()));
    let _ = write!(
        h,
        "<section id=\"status\"><p>status: <b>{}</b> · seeds {} · aggregated in \
         <code>study.json</code></p></section>",
        esc(&s.status),
        esc(&seeds.join(", "))
    );
    h.push_str(
        "<section id=\"evals\"><h2>Held-out evaluations over the seeds</h2><table><tr>\
         <th>evaluation</th><th>after</th><th>metric</th><th>mean</th><th>95 % interval</th>\
         <th>interval</th><th>episodes</th><th>per seed</th></tr>",
    );
    for e in &s.evals {
        let per: Vec<String> = e.per_seed.iter().map(|x| format!("{:.1}%", x * 100.0)).collect();
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{:.1}%</td>\
             <td class=\"n\">[{:.1}%, {:.1}%]</td><td>{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td></tr>",
            esc(&e.eval),
            esc(&e.after),
            esc(&e.metric),
            e.mean * 100.0,
            e.low * 100.0,
            e.high * 100.0,
            esc(&e.interval),
            match e.worth {
                Some(w) =>
                    format!("{}<br><span class=\"muted\">worth {w} tasks</span>", e.episodes),
                None => e.episodes.to_string(),
            },
            esc(&per.join(" · "))
        );
        for (name, r) in &e.subsets {
            let _ = write!(
                h,
                "<tr class=\"subset\"><td>↳ {}</td><td></td><td>{}</td><td class=\"n\">{:.1}%</td>\
                 <td class=\"n\">[{:.1}%, {:.1}%]</td><td>wilson</td><td class=\"n\">{}</td>\
                 <td class=\"n\">{}/{} solved, pooled</td></tr>",
                esc(name),
                esc(&e.metric),
                r.success * 100.0,
                r.low * 100.0,
                r.high * 100.0,
                r.out_of,
                r.solved,
                r.out_of
            );
        }
    }
    h.push_str("</table></section>");
    variants(&mut h, s);
    claims(&mut h, &s.claims, &format!("over {} seeds and their tasks", s.seeds.len()));
    h.push_str("<section id=\"runs\"><h2>Each seed's run</h2><ul>");
    let runs: Vec<(String, &String)> = if s.variants.is_empty() {
        s.seeds.iter().zip(&s.runs).map(|(k, r)| (format!("seed {k}"), r)).collect()
    } else {
        (s.variants.iter())
            .flat_map(|v| {
                s.seeds.iter().zip(&v.runs).map(move |(k, r)| (format!("{}, seed {k}", v.name), r))
            })
            .collect()
    };
    for (label, r) in runs {
        let _ = write!(
            h,
            "<li><a href=\"{r}/report.html\">{}</a> (<code>{r}</code>)</li>",
            esc(&label),
            r = esc(r)
        );
    }
    h.push_str("</ul></section></body></html>\n");
    h
}

/// The variants side by side (each evaluation's mean and interval per variant), their compute
/// and whether it matches the recipe's; nothing for a study of the recipe alone.
fn variants(h: &mut String, s: &Study) {
    let Some(base) = s.variants.first() else { return };
    h.push_str(
        "<section id=\"variants\"><h2>Variants side by side</h2><table><tr><th>evaluation</th>",
    );
    for v in &s.variants {
        let _ = write!(h, "<th>{}</th>", esc(&v.name));
    }
    h.push_str("</tr>");
    for e in &base.evals {
        let _ =
            write!(h, "<tr><td>{} after {} ({})</td>", esc(&e.eval), esc(&e.after), esc(&e.metric));
        for v in &s.variants {
            match v.evals.iter().find(|x| x.eval == e.eval && x.after == e.after) {
                Some(x) => {
                    let _ = write!(
                        h,
                        "<td class=\"n\">{:.1}% [{:.1}%, {:.1}%]</td>",
                        x.mean * 100.0,
                        x.low * 100.0,
                        x.high * 100.0
                    );
                }
                None => h.push_str("<td>no figure</td>"),
            }
        }
        h.push_str("</tr>");
    }
    h.push_str(
        "</table><h3>Compute</h3><table><tr><th>variant</th><th>plan</th><th>env steps (all \
         seeds)</th><th>estimated env steps (a run)</th><th>estimated generated tokens (a \
         run)</th></tr>",
    );
    let show = |x: Option<u64>| x.map_or_else(|| "unknown".to_string(), |n| n.to_string());
    for v in &s.variants {
        let c = &v.compute;
        let _ = write!(
            h,
            "<tr><td>{}</td><td><code>{}</code></td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td></tr>",
            esc(&v.name),
            esc(v.identity.get(..19).unwrap_or(&v.identity)),
            c.env_steps,
            show(c.estimated_env_steps),
            show(c.estimated_tokens)
        );
    }
    h.push_str("</table>");
    if let Some(m) = &s.compute {
        let said = if m.matches {
            format!("compute matches (within {} %)", m.tolerance * 100.0)
        } else {
            format!("compute differs: {}", m.note)
        };
        let _ = write!(h, "<p><b>{}</b></p>", esc(&said));
    }
    h.push_str("</section>");
}

/// Writes the study's page into its directory.
pub fn write(dir: &Path, s: &Study) -> Result<(), RunDirError> {
    write_atomic(&dir.join("report.html"), render(s).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::StudyEval;
    use crate::study::verdict::{ClaimResult, Verdict};

    #[test]
    fn the_study_page_shows_evals_claims_and_seeds_escaped() {
        let s = Study {
            claims: vec![ClaimResult {
                at_least: 0.1,
                difference: 0.125,
                eval_tasks: 128,
                high: 0.2,
                low: 0.05,
                name: "rl<lifts".into(),
                over_tasks: 128,
                pairing: None,
                paper: Some("+11".into()),
                seeds: 2,
                source: Some("Table 2".into()),
                statement: "a − b ≥ 10 points".into(),
                verdict: Verdict::Undecided,
            }],
            evals: vec![StudyEval {
                after: "online".into(),
                episodes: 128,
                eval: "after_rl".into(),
                high: 0.6,
                interval: "wilson".into(),
                low: 0.4,
                mean: 0.5,
                metric: "success".into(),
                per_seed: vec![0.45, 0.55],
                tasks: 128,
                worth: Some(40),
                subsets: Default::default(),
            }],
            recipe: "q.wrl".into(),
            runs: vec!["seed-3".into(), "seed-4".into()],
            seeds: vec![3, 4],
            status: "finished".into(),
            compute: None,
            variants: Vec::new(),
        };
        let h = render(&s);
        assert!(h.contains("rl&lt;lifts") && !h.contains("rl<lifts"), "{h}");
        assert!(h.contains("<b>undecided</b>") && h.contains("[+5.0, +20.0]"), "{h}");
        assert!(h.contains("+11 (Table 2)") && h.contains("45.0% · 55.0%"), "{h}");
        assert!(h.contains("href=\"seed-4/report.html\">seed 4</a>"), "{h}");
        let mut none = String::new();
        claims(&mut none, &[], "x");
        assert!(none.is_empty());
    }
}
