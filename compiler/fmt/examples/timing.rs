//! Times parsing and formatting of the files named on the command line.
fn main() {
    for p in std::env::args().skip(1) {
        let t = std::fs::read_to_string(&p).unwrap_or_default();
        let a = std::time::Instant::now();
        let _ = wrl_syntax::parse(wrl_diagnostics::FileId(0), &t);
        let b = a.elapsed();
        let _ = wrl_fmt::format_source(&t);
        println!("{p}: parse {:?}, parse+format {:?}", b, a.elapsed() - b);
    }
}
