//! Each crate has one integration-test binary, `tests/all/main.rs` (a link per file cost CI
//! minutes and ~80 MB of disk each): a file under `tests/all/` that no module declares would
//! never compile or run, and a file at `tests/*.rs` would be a binary of its own. Both fail here.

use std::fs;
use std::path::{Path, PathBuf};

use wrl_tests::workspace_root;

/// Every crate folder of the workspace (`compiler/*`, `runtime/*` and `tests`).
fn crates() -> Vec<PathBuf> {
    let root = workspace_root();
    let mut dirs = vec![root.join("tests")];
    for group in ["compiler", "runtime"] {
        let Ok(entries) = fs::read_dir(root.join(group)) else { continue };
        dirs.extend(entries.flatten().map(|e| e.path()).filter(|p| p.join("Cargo.toml").is_file()));
    }
    dirs.sort();
    dirs
}

/// `.rs` files under `dir`, recursively, sorted.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The file that must declare `file` as a module and the module's name, or `None` for a
/// binary's root (`tests/all/main.rs`).
fn declared_in(all: &Path, file: &Path) -> Option<(PathBuf, String)> {
    let stem = file.file_stem()?.to_str()?.to_string();
    let (dir, name) = if stem == "mod" {
        let dir = file.parent()?;
        (dir.parent()?.to_path_buf(), dir.file_name()?.to_str()?.to_string())
    } else if stem == "main" && file.parent()? == all {
        return None;
    } else {
        (file.parent()?.to_path_buf(), stem)
    };
    let parent = if dir == all {
        all.join("main.rs")
    } else if dir.join("mod.rs").is_file() {
        dir.join("mod.rs")
    } else {
        dir.with_extension("rs")
    };
    Some((parent, name))
}

fn declares(parent: &Path, name: &str) -> bool {
    let text = fs::read_to_string(parent).unwrap_or_default();
    text.lines().map(str::trim).any(|l| {
        let l = l.strip_prefix("pub ").unwrap_or(l);
        l == format!("mod {name};")
    })
}

#[test]
fn every_crate_has_one_test_binary_and_every_test_file_is_in_it() {
    let root = workspace_root();
    let mut wrong = Vec::new();
    for krate in crates() {
        let tests = krate.join("tests");
        let Ok(entries) = fs::read_dir(&tests) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "rs") {
                wrong.push(format!(
                    "{}: a test binary of its own; move it into tests/all/ and add `mod` for it \
                     to tests/all/main.rs",
                    p.strip_prefix(&root).unwrap_or(&p).display()
                ));
            }
        }
        let all = tests.join("all");
        let mut files = Vec::new();
        rust_files(&all, &mut files);
        for f in files {
            let Some((parent, name)) = declared_in(&all, &f) else { continue };
            if !declares(&parent, &name) {
                wrong.push(format!(
                    "{}: never compiled; add `mod {name};` to {}",
                    f.strip_prefix(&root).unwrap_or(&f).display(),
                    parent.strip_prefix(&root).unwrap_or(&parent).display()
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "test files outside their crate's one binary:\n{}", wrong.join("\n"));
}
