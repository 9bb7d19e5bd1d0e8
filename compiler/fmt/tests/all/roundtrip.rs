//! The formatter's guarantees over real and deliberately ugly files: it never changes meaning
//! (the span-blanked AST is unchanged), keeps every comment, and is idempotent.
#![allow(clippy::unwrap_used)] // test helpers fail loudly, like the tests they serve

use std::path::{Path, PathBuf};

use serde_json::Value;
use wrl_diagnostics::FileId;
use wrl_fmt::format_source;

/// Every `.wrl` file under a directory of the repository (recursively).
fn wrl_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            wrl_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "wrl") {
            out.push(p);
        }
    }
}

fn corpus() -> Vec<PathBuf> {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = here.join("../..");
    let mut files = Vec::new();
    // `tests/` of the workspace holds the UI and corpus files of the other crates: broken ones
    // must be refused, valid ones formatted faithfully.
    for dir in [
        here.join("tests/ugly"),
        here.join("tests/samples"),
        root.join("recipes"),
        root.join("stdlib"),
        root.join("tests"),
    ] {
        wrl_files(&dir, &mut files);
    }
    files
}

/// Removes every span (`span`, `kind_span`, `op_span`, …) and the file id from a serialized AST.
fn blank_spans(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|k, _| !k.ends_with("span") && k != "id");
            // The formatter strips trailing whitespace, doc comment lines included.
            if let Some(Value::String(doc)) = map.get_mut("doc") {
                *doc = doc.lines().map(str::trim_end).collect::<Vec<_>>().join("\n");
            }
            map.values_mut().for_each(blank_spans);
        }
        Value::Array(items) => items.iter_mut().for_each(blank_spans),
        _ => {}
    }
}

fn ast(text: &str) -> Value {
    let parsed = wrl_syntax::parse(FileId(0), text);
    let mut v = serde_json::to_value(&parsed.file).unwrap();
    blank_spans(&mut v);
    v
}

fn comments(text: &str) -> Vec<(String, bool)> {
    let parsed = wrl_syntax::parse(FileId(0), text);
    parsed.comments.iter().map(|c| (c.text.trim_end().to_string(), c.doc)).collect()
}

/// Checks one file; `Ok(true)` when it was formatted, `Ok(false)` when rightly refused or skipped.
fn check_file(path: &Path) -> Result<bool, String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(false); // not UTF-8: a test of the file reader, not of the formatter
    };
    let parsed = wrl_syntax::parse(FileId(0), &text);
    let is_ugly_sample = path.components().any(|c| c.as_os_str() == "ugly");
    if is_ugly_sample && parsed.diagnostics.iter().any(|d| d.is_error()) {
        return Err(format!("ugly samples must parse: {:?}", parsed.diagnostics));
    }
    if parsed.diagnostics.iter().any(|d| d.is_error()) {
        // Broken files are refused, never formatted.
        return match format_source(&text) {
            Err(_) => Ok(false),
            Ok(_) => Err("a file with syntax errors was formatted".into()),
        };
    }
    let once = format_source(&text).map_err(|e| format!("refused: {e:?}"))?;
    let twice =
        format_source(&once).map_err(|e| format!("output does not parse: {e:?}\n{once}"))?;
    if ast(&text) != ast(&once) {
        return Err(format!("the AST changed; formatted:\n{once}"));
    }
    if comments(&text) != comments(&once) {
        return Err(format!(
            "comments changed: {:?} vs {:?}\n{once}",
            comments(&text),
            comments(&once)
        ));
    }
    if once != twice {
        return Err(format!("not idempotent:\n--- once\n{once}\n--- twice\n{twice}"));
    }
    // Text blocks are verbatim: only lines the source does not hold as they are count.
    if let Some(line) =
        once.lines().find(|l| (l.ends_with(' ') || l.ends_with('\t')) && !text.contains(*l))
    {
        return Err(format!("trailing space or tab: {line:?}"));
    }
    Ok(true)
}

#[test]
fn every_corpus_file_keeps_meaning_and_comments_and_is_idempotent() {
    let files = corpus();
    assert!(files.len() >= 5, "corpus too small: {files:?}");
    let mut failures = Vec::new();
    let mut formatted = 0;
    for p in &files {
        match check_file(p) {
            Ok(done) => formatted += usize::from(done),
            Err(e) => failures.push(format!("{}: {e}", p.display())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(formatted >= 12, "only {formatted} of {} files were formatted", files.len());
    eprintln!("{formatted} of {} files formatted and checked", files.len());
}

/// `recipes/` and `stdlib/` are in the canonical layout, as `wrlc fmt --check recipes stdlib`
/// requires (CI runs that too): every file parses and formatting leaves it byte for byte as it is.
#[test]
fn recipes_and_stdlib_are_formatted() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    wrl_files(&root.join("recipes"), &mut files);
    wrl_files(&root.join("stdlib"), &mut files);
    assert!(files.len() >= 8, "too few recipes and stdlib files: {files:?}");
    let not_canonical: Vec<String> = files
        .iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(p).unwrap();
            match format_source(&text) {
                Ok(out) if out == text => None,
                Ok(_) => Some(format!("{}: not formatted (run `wrlc fmt` on it)", p.display())),
                Err(d) => Some(format!("{}: does not parse: {d:?}", p.display())),
            }
        })
        .collect();
    assert!(not_canonical.is_empty(), "\n{}", not_canonical.join("\n"));
}

/// Every prefix (cut at a line end) of the ugly samples: the formatter never panics, refuses
/// what does not parse, and keeps its guarantees on what does.
#[test]
fn prefixes_of_ugly_samples() {
    let mut files = Vec::new();
    wrl_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ugly"), &mut files);
    let dir = std::env::temp_dir().join(format!("wrl-fmt-prefix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut failures = Vec::new();
    for p in &files {
        let text = std::fs::read_to_string(p).unwrap();
        for (i, _) in text.match_indices('\n').step_by(3) {
            let cut = dir.join("prefix.wrl");
            std::fs::write(&cut, &text[..i]).unwrap();
            if let Err(e) = check_file(&cut) {
                failures.push(format!("{} cut at byte {i}: {e}", p.display()));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
