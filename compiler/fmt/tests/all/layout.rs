//! Exact expected layouts for small inputs: the canonical layout rules, one case each.
#![allow(clippy::unwrap_used)] // test helpers fail loudly, like the tests they serve

use wrl_fmt::{format_source, is_formatted};

fn fmt(s: &str) -> String {
    format_source(s).unwrap()
}

#[test]
fn short_blocks_stay_on_one_line_and_long_ones_break() {
    assert_eq!(
        fmt("model m=hf(\"x\"){context=32k   tokens,frozen=[a,b]}"),
        "model m = hf(\"x\") { context = 32k tokens, frozen = [a, b] }\n"
    );
    let long =
        format!("param p = [{}]", (0..40).map(|i| i.to_string()).collect::<Vec<_>>().join(", "));
    let out = fmt(&long);
    assert!(out.starts_with("param p = [\n  0,\n  1,\n"), "{out}");
    assert!(out.ends_with("  39,\n]\n"), "{out}");
}

#[test]
fn multi_line_blocks_have_one_item_per_line() {
    let src = "stage s = sft(p, d) {\n    epochs = 3, lr = 1e-5\n\n\n  batch = 16 }\n";
    assert_eq!(fmt(src), "stage s = sft(p, d) {\n  epochs = 3\n  lr = 1e-5\n\n  batch = 16\n}\n");
}

#[test]
fn comments_stay_where_they_were() {
    let src = "// head\n\n/// doc\nenv web = browser { // open\n  a = 1 // one\n  // own\n  b = 2\n  // last\n}\n// tail\n";
    assert_eq!(fmt(src), src);
}

#[test]
fn top_level_spacing() {
    let src = "use a::b\nuse c::{d,e}\nparam x = 1\nparam y = 2\n\n\n\nparam z = { a = 1\n}\nparam w = 3\n";
    assert_eq!(
        fmt(src),
        "use a::b\nuse c::{d, e}\n\nparam x = 1\nparam y = 2\n\nparam z = {\n  a = 1\n}\n\nparam w = 3\n"
    );
}

#[test]
fn expressions_keep_their_breaks_and_units() {
    let src = "reward r =\n  if a then -1\n      else b*judge(model:\"m\",n:3)\nparam q = 10 %\nparam v = 1280x 1000\n";
    assert_eq!(
        fmt(src),
        "reward r =\n  if a then -1\n  else b * judge(model: \"m\", n: 3)\n\nparam q = 10%\nparam v = 1280 x 1000\n"
    );
}

#[test]
fn strings_are_escaped_canonically_and_text_blocks_are_verbatim() {
    let src = "param s = \"a\\u{22}b\\u{9}\"\nparam t = \"\"\"\n  keep   this\n\"\"\"\n";
    assert_eq!(fmt(src), "param s = \"a\\\"b\\t\"\n\nparam t = \"\"\"\n  keep   this\n\"\"\"\n");
}

#[test]
fn graphs_tools_builtins_profiles() {
    let src = "agent g = graph { module p = llm(f)\n a->b->c when x|y limit 3 }\ntools t = toolset { tool done(r: string) { terminal } tool x() {} }\nbuiltin f(a: int, b: stage = x) -> stage { n: int = 1 }\nprofile smoke { web.target = std::sandbox::web, phases[1].lr = 1e-6 }\nvariant flat {   a.b = 2 }\nextends \"base.wrl\" { a = 1 }\nuse \"c.wrl\" as c\n";
    let out = fmt(src);
    assert_eq!(
        out,
        "agent g = graph {\n  module p = llm(f)\n  a -> b -> c when x | y limit 3\n}\n\ntools t = toolset { tool done(r: string) { terminal }, tool x() {} }\nbuiltin f(a: int, b: stage = x) -> stage { n: int = 1 }\nprofile smoke { web.target = std::sandbox::web, phases[1].lr = 1e-6 }\nvariant flat { a.b = 2 }\nextends \"base.wrl\" { a = 1 }\n\nuse \"c.wrl\" as c\n"
    );
}

#[test]
fn broken_files_are_refused() {
    assert!(format_source("model m = {").is_err());
    assert!(format_source("param p = 3 bananas").is_err());
    assert!(is_formatted("param p = 3\n").unwrap());
    assert!(!is_formatted("param p =3\n").unwrap());
}

#[test]
fn a_long_if_breaks_before_else() {
    let src = "reward outcome = if ended(format_error) then -1 else format_ok * judge(model: \"gpt-4.1\", screenshots: 3, verdict: binary)\n";
    assert_eq!(
        fmt(src),
        "reward outcome = if ended(format_error) then -1\n  else format_ok * judge(model: \"gpt-4.1\", screenshots: 3, verdict: binary)\n"
    );
}

#[test]
fn comments_ending_consecutive_lines_are_aligned() {
    let src = "env web = browser {\n  settle = 3 s          // a\n  concurrency = 32 // b\n  other = 1\n  retries = 2 // c\n}\n";
    assert_eq!(
        fmt(src),
        "env web = browser {\n  settle = 3 s     // a\n  concurrency = 32 // b\n  other = 1\n  retries = 2 // c\n}\n"
    );
}

#[test]
fn diagnostics_carry_the_callers_file_id() {
    let errs = wrl_fmt::format_file(wrl_diagnostics::FileId(7), "model m = {").unwrap_err();
    assert!(errs.iter().all(|d| d.primary_span().is_none_or(|s| s.file.0 == 7)), "{errs:?}");
}
