//! Measures the whole `wrlc check` (read, parse, checker, recipe rules, plan rules, rendering)
//! in-process on generated, checker-clean recipe corpora of about 10k, 100k and 1M lines, on a
//! corpus with errors, and on `recipes/` + `stdlib/`, to show the cost per line and that it
//! grows with size. Prints a Markdown table. Run it through `bench/check.sh` (release build).
//!
//! Options: `--lines 10000,100000,1000000` (sizes of the clean corpora), `--layout files|one`
//! (many files of about 1,000 lines, or one file; default both at 10k and 100k, files only at
//! 1M), `--runs N` (repetitions of the small measurements, best kept), `--write DIR` (keep the
//! corpora under DIR instead of a temporary folder, e.g. for `perf`), `--only PATH` (time
//! `wrlc check PATH` once and exit; for profiling).

mod corpus;

use corpus::{corpus, with_errors};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn write_corpus(dir: &Path, files: &[(String, String)]) -> std::io::Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::create_dir_all(dir)?;
    for (name, text) in files {
        std::fs::write(dir.join(name), text)?;
    }
    Ok(())
}

/// The time to parse every file (the part of `wrlc check` the checker does not own).
fn parse_time(files: &[(String, String)]) -> Duration {
    let t = Instant::now();
    for (i, (_, text)) in files.iter().enumerate() {
        let parsed = wrl_syntax::parse(wrl_diagnostics::FileId(i as u32), text);
        std::hint::black_box(&parsed);
    }
    t.elapsed()
}

/// One timed `wrlc check PATH…`: time, exit status, the number of diagnostics and the summary.
fn check(paths: &[&Path]) -> (Duration, u8, usize, String) {
    let mut args = vec!["check".to_string()];
    args.extend(paths.iter().map(|p| p.display().to_string()));
    let t = Instant::now();
    let (code, _out, err) = wrl_cli::run_captured(args);
    let took = t.elapsed();
    // `wrlc check` frees its compilation on a thread nobody waits for (the process exits);
    // here the next measurement would overlap it, so wait, untimed.
    wrl_cli::wait_for_freeing();
    let summary = err.lines().last().unwrap_or("").to_string();
    // `checked 3 files: 2 errors, 1 warning`: the numbers before `error` and `warning`.
    let words: Vec<&str> = summary.split([' ', ',', ':']).filter(|w| !w.is_empty()).collect();
    let diags = words
        .windows(2)
        .filter(|w| w[1].starts_with("error") || w[1].starts_with("warning"))
        .filter_map(|w| w[0].parse::<usize>().ok())
        .sum();
    (took, code, diags, summary)
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

struct Opts {
    lines: Vec<usize>,
    layouts: Option<Vec<bool>>,
    runs: usize,
    write: Option<PathBuf>,
    only: Option<PathBuf>,
}

fn parse_args() -> Result<Opts, String> {
    let mut o = Opts {
        lines: vec![10_000, 100_000, 1_000_000],
        layouts: None,
        runs: 5,
        write: None,
        only: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--lines" => {
                o.lines = value()?
                    .split(',')
                    .map(|s| s.trim().replace('_', "").parse().map_err(|e| format!("{s}: {e}")))
                    .collect::<Result<_, _>>()?
            }
            "--layout" => {
                o.layouts = Some(match value()?.as_str() {
                    "files" => vec![false],
                    "one" => vec![true],
                    "both" => vec![false, true],
                    other => return Err(format!("--layout files|one|both, not {other}")),
                })
            }
            "--runs" => o.runs = value()?.parse().map_err(|e| format!("--runs: {e}"))?,
            "--write" => o.write = Some(PathBuf::from(value()?)),
            "--only" => o.only = Some(PathBuf::from(value()?)),
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(o)
}

fn main() {
    let o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    if let Some(p) = &o.only {
        let (took, code, diags, summary) = check(&[p]);
        println!("{}: {} (exit {code}, {diags} diagnostics; {summary})", p.display(), ms(took));
        return;
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let base = o.write.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("wrl-bench-check-{}", std::process::id()))
    });

    println!(
        "| corpus | files | lines | MB | diagnostics | `wrlc check` | µs/line | of which parse | check − parse µs/line |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let row = |what: &str, files: &[(String, String)], dir: &Path, runs: usize| {
        if let Err(e) = write_corpus(dir, files) {
            eprintln!("error: cannot write {}: {e}", dir.display());
            std::process::exit(2);
        }
        let lines: usize = files.iter().map(|(_, t)| t.lines().count()).sum();
        let bytes: usize = files.iter().map(|(_, t)| t.len()).sum();
        let mut best = Duration::MAX;
        let mut last = (0, 0, String::new());
        for _ in 0..runs.max(1) {
            let (took, code, diags, summary) = check(&[dir]);
            best = best.min(took);
            last = (code, diags, summary);
        }
        let parse = (0..runs.max(1)).map(|_| parse_time(files)).min().unwrap_or_default();
        println!(
            "| {what} | {} | {lines} | {:.1} | {} | {} | {:.2} | {} | {:.2} |",
            files.len(),
            bytes as f64 / 1e6,
            last.1,
            ms(best),
            best.as_secs_f64() * 1e6 / lines as f64,
            ms(parse),
            best.saturating_sub(parse).as_secs_f64() * 1e6 / lines as f64
        );
        eprintln!("  {what}: exit {}, {}", last.0, last.2);
        if o.write.is_none() {
            let _ = std::fs::remove_dir_all(dir);
        }
    };
    for &lines in &o.lines {
        let layouts = o.layouts.clone().unwrap_or(if lines > 100_000 {
            vec![false]
        } else {
            vec![false, true]
        });
        // Big corpora are timed once: a run takes seconds and noise is small against it.
        let runs = if lines > 20_000 { 1 } else { o.runs };
        for one in layouts {
            let files = corpus(lines, one);
            let what = if one { "clean, one file" } else { "clean, files of ~1k lines" };
            row(
                what,
                &files,
                &base.join(format!("clean_{lines}_{}", if one { "one" } else { "files" })),
                runs,
            );
            if lines <= 100_000 && !one {
                let bad = with_errors(&files);
                row(
                    "errors in 1 experiment of 3",
                    &bad,
                    &base.join(format!("errors_{lines}")),
                    runs,
                );
            }
        }
    }
    // The repository's own recipes and the stdlib, checked together (best of N).
    let mut best = Duration::MAX;
    let mut last = (0, 0, String::new());
    for _ in 0..o.runs.max(1) * 4 {
        let (took, code, diags, summary) = check(&[&root.join("recipes"), &root.join("stdlib")]);
        best = best.min(took);
        last = (code, diags, summary);
    }
    println!("| recipes/ + stdlib/ | — | — | — | {} | {} | — |", last.1, ms(best));
    eprintln!("  recipes + stdlib: exit {}, {}", last.0, last.2);
}
