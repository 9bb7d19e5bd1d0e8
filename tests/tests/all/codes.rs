//! Every diagnostic code is documented and tested, and nothing documents or tests a code that
//! is not registered: each live code in `wrl_diagnostics::CODES` has `docs/errors/<code>.md`
//! (in the template of `docs/errors/README.md`, with an example that really reports the code)
//! and at least one UI case `tests/ui/**/<code>_*.wrl`. A runtime code's example is run with
//! `wrlc run --dry-run` instead of `wrlc check`.

use std::collections::BTreeSet;
use std::path::Path;

use wrl_diagnostics::{CODES, Phase, lookup};
use wrl_tests::{
    case_args, code_of_file_name, parse_json_diagnostics, ui_dir, workspace_root, wrl_files, wrlc,
};

fn errors_dir() -> std::path::PathBuf {
    workspace_root().join("docs").join("errors")
}

/// The file names of the pages in `docs/errors`, without the README.
fn page_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(errors_dir())
        .expect("docs/errors exists")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n != "README.md")
        .collect();
    names.sort();
    names
}

/// The codes that have at least one UI case.
fn codes_with_cases() -> BTreeSet<String> {
    wrl_files(&ui_dir())
        .iter()
        .filter_map(|rel| code_of_file_name(rel.rsplit('/').next().unwrap_or(rel)))
        .map(str::to_string)
        .collect()
}

fn has_page(code: &str) -> bool {
    errors_dir().join(format!("{code}.md")).is_file()
}

#[test]
fn every_live_code_has_a_page_and_a_ui_case() {
    let cases = codes_with_cases();
    let mut missing = Vec::new();
    for c in CODES.iter().filter(|c| !c.retired) {
        if !has_page(c.code) {
            missing.push(format!("{}: no page docs/errors/{}.md", c.code, c.code));
        }
        if !cases.contains(c.code) {
            missing.push(format!("{}: no UI case tests/ui/<phase>/{}_<what>.wrl", c.code, c.code));
        }
    }
    assert!(missing.is_empty(), "\n{}", missing.join("\n"));
}

#[test]
fn every_page_and_case_names_a_registered_code() {
    let mut stray = Vec::new();
    for name in page_names() {
        match code_of_file_name(&name) {
            Some(code) if name == format!("{code}.md") && lookup(code).is_some() => {}
            _ => stray.push(format!("docs/errors/{name}: not `<registered code>.md`")),
        }
    }
    for rel in wrl_files(&ui_dir()) {
        if rel.starts_with("tests/ui/ok/") {
            continue;
        }
        let name = rel.rsplit('/').next().unwrap_or(&rel);
        if code_of_file_name(name).is_none_or(|c| lookup(c).is_none()) {
            stray.push(format!("{rel}: not named after a registered code"));
        }
    }
    assert!(stray.is_empty(), "\n{}", stray.join("\n"));
}

/// Syntax codes live in `tests/ui/syntax/`, and only there; runtime codes (reported by
/// `wrlc run --dry-run`) live in `tests/ui/run/`, `wrlc lower`'s in `tests/ui/lower/` and `wrlc
/// env serve`'s in `tests/ui/serve/`, and only there.
#[test]
fn cases_sit_in_the_directory_of_their_phase() {
    for rel in wrl_files(&ui_dir()) {
        let name = rel.rsplit('/').next().unwrap_or(&rel);
        let Some(info) = code_of_file_name(name).and_then(lookup) else { continue };
        for (dir, phase) in [
            ("syntax", Phase::Syntax),
            ("run", Phase::Runtime),
            ("lower", Phase::Lower),
            ("serve", Phase::Service),
        ] {
            let in_dir = rel.starts_with(&format!("tests/ui/{dir}/"));
            let of_phase = info.phase == phase;
            assert_eq!(in_dir, of_phase, "{rel}: {} belongs to {:?}", info.code, info.phase);
        }
    }
}

/// A page's sections, as the template in `docs/errors/README.md` lays them out.
struct Page {
    title_line: String,
    /// `(fence info, body)` of each code block under `## Example`.
    example: Vec<(String, String)>,
    /// The same under `## Fix`.
    fix: Vec<(String, String)>,
    sections: Vec<String>,
}

fn read_page(text: &str) -> Page {
    let mut page = Page {
        title_line: text.lines().next().unwrap_or("").to_string(),
        example: Vec::new(),
        fix: Vec::new(),
        sections: Vec::new(),
    };
    let mut section = String::new();
    let mut block: Option<(String, String)> = None;
    for line in text.lines() {
        if let Some((info, body)) = &mut block {
            if line.starts_with("```") {
                let done = (info.clone(), std::mem::take(body));
                match section.as_str() {
                    "Example" => page.example.push(done),
                    "Fix" => page.fix.push(done),
                    _ => {}
                }
                block = None;
            } else {
                body.push_str(line);
                body.push('\n');
            }
        } else if let Some(info) = line.strip_prefix("```") {
            block = Some((info.trim().to_string(), String::new()));
        } else if let Some(h) = line.strip_prefix("## ") {
            section = h.trim().to_string();
            page.sections.push(section.clone());
        }
    }
    page
}

/// The codes `wrlc check` reports for `text` written to a file; or, for a runtime code's
/// example, `wrlc run --dry-run` (with the options of a first line `// wrlc: run --dry-run
/// ARGS`, as in UI cases), run from the workspace root.
fn reported_codes(text: &str, dir: &Path, name: &str) -> Vec<String> {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write the example");
    let runtime =
        code_of_file_name(name).and_then(lookup).is_some_and(|c| c.phase == Phase::Runtime);
    let mut args = case_args(&path.to_string_lossy(), text, true);
    if runtime && args[0] == "check" {
        args.splice(0..1, ["run".to_string(), "--dry-run".to_string()]);
    }
    let (_, _, stderr) = wrlc(&args);
    let reported = parse_json_diagnostics(&stderr).expect("JSON diagnostics");
    reported.into_iter().map(|r| r.code).collect()
}

#[test]
fn pages_follow_the_template_and_their_examples_report_their_code() {
    let tmp = tempfile::tempdir().unwrap();
    let mut problems = Vec::new();
    for name in page_names() {
        let Some(info) = code_of_file_name(&name).and_then(lookup) else { continue };
        let text = std::fs::read_to_string(errors_dir().join(&name)).unwrap();
        let page = read_page(&text);
        let title = format!("# {}: {}", info.code, info.title);
        if page.title_line != title {
            problems.push(format!("{name}: first line must be `{title}`"));
        }
        let ex = page.sections.iter().position(|s| s == "Example");
        let fix = page.sections.iter().position(|s| s == "Fix");
        if !matches!((ex, fix), (Some(e), Some(f)) if e < f) {
            problems.push(format!("{name}: needs `## Example` then `## Fix`"));
        }
        if page.example.is_empty() {
            problems.push(format!("{name}: `## Example` has no code block"));
        }
        if info.retired {
            continue;
        }
        if let Some((_, body)) = page.example.iter().find(|(i, _)| i == "wrl") {
            let codes = reported_codes(body, tmp.path(), &format!("{}_example.wrl", info.code));
            if !codes.iter().any(|c| c == info.code) {
                problems.push(format!("{name}: the example reports {codes:?}, not {}", info.code));
            }
        }
        for (i, (_, body)) in page.fix.iter().filter(|(i, _)| i == "wrl").enumerate() {
            let codes = reported_codes(body, tmp.path(), &format!("{}_fix{i}.wrl", info.code));
            if codes.iter().any(|c| c == info.code) {
                problems.push(format!("{name}: fix block {i} still reports {}", info.code));
            }
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

/// The page checks above can fail: a page without the example's code is caught.
#[test]
fn the_page_reader_finds_sections_and_blocks() {
    let page = read_page(
        "# E0103: unknown unit\n\nText.\n\n## Example\n\n```wrl\nparam x = 1 qq\n```\n\n## Fix\n\n```wrl\nparam x = 1\n```\n```text\n$ x\n```\n",
    );
    assert_eq!(page.title_line, "# E0103: unknown unit");
    assert_eq!(page.sections, ["Example", "Fix"]);
    assert_eq!(page.example, [("wrl".to_string(), "param x = 1 qq\n".to_string())]);
    assert_eq!(page.fix.len(), 2);
    let tmp = tempfile::tempdir().unwrap();
    assert!(reported_codes(&page.example[0].1, tmp.path(), "a.wrl").contains(&"E0103".to_string()));
    assert!(!reported_codes(&page.fix[0].1, tmp.path(), "b.wrl").contains(&"E0103".to_string()));
}
