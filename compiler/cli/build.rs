//! Embeds `docs/errors/*.md` into the binary for `wrlc explain`, so the pages are the one
//! source of the explanations.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/errors");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut pages: Vec<(String, String)> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "md"))
                .filter_map(|p| {
                    let code = p.file_stem()?.to_str()?.to_string();
                    // Only pages named after a code (`E0103.md`), not README.md.
                    let shaped = code.len() == 5
                        && code.starts_with(['E', 'W'])
                        && code[1..].chars().all(|c| c.is_ascii_digit());
                    if !shaped {
                        return None;
                    }
                    Some((code, p.canonicalize().ok()?.to_string_lossy().into_owned()))
                })
                .collect()
        })
        .unwrap_or_default();
    pages.sort();
    let mut src = String::from(
        "/// Every page of docs/errors, by code.\npub const PAGES: &[(&str, &str)] = &[\n",
    );
    for (code, path) in &pages {
        let _ = writeln!(src, "    ({code:?}, include_str!({path:?})),");
    }
    src.push_str("];\n");
    let out = Path::new(&std::env::var("OUT_DIR").unwrap_or_default()).join("error_pages.rs");
    let _ = std::fs::write(out, src);
}
