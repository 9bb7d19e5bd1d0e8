//! `docs/stdlib.md` is generated from the stdlib; this test fails when it is stale. Regenerate
//! with `WRL_BLESS=1 cargo test -p wrl-check --test all stdlib_doc`.

#[test]
fn docs_stdlib_md_is_up_to_date() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/stdlib.md");
    let want = wrl_check::stdlib_doc();
    if std::env::var_os("WRL_BLESS").is_some() {
        std::fs::write(path, &want).expect("write docs/stdlib.md");
        return;
    }
    let have = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        have == want,
        "docs/stdlib.md is stale: regenerate with `WRL_BLESS=1 cargo test -p wrl-check --test all stdlib_doc`"
    );
}

#[test]
fn the_page_covers_every_builtin_and_tool_set() {
    let page = wrl_check::stdlib_doc();
    for needle in [
        "### `grpo(",
        "### `std::tools::openwebrl`",
        "| `done` |",
        "**terminal**",
        "reads: [screenshots",
    ] {
        assert!(page.contains(needle), "missing {needle}");
    }
}
