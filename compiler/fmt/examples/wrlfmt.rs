//! Formats the files named on the command line to stdout: a stand-in for `wrlc fmt` while the
//! CLI is wired (`cargo run -p wrl-fmt --example wrlfmt -- FILE…`).
fn main() {
    for p in std::env::args().skip(1) {
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        match wrl_fmt::format_source(&text) {
            Ok(out) => print!("{out}"),
            Err(d) => eprintln!("{p}: {} syntax errors", d.len()),
        }
    }
}
