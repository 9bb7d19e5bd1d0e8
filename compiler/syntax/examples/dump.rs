//! Prints the AST and diagnostics of a file (a development aid).
fn main() {
    let path = std::env::args().nth(1).expect("usage: dump FILE");
    let text = std::fs::read_to_string(&path).expect("readable file");
    let t = std::time::Instant::now();
    let parsed = wrl_syntax::parse(wrl_diagnostics::FileId(0), &text);
    let el = t.elapsed();
    if std::env::var("QUIET").is_err() {
        println!("{:#?}", parsed.file.items.iter().map(|i| (&i.kind, &i.doc)).collect::<Vec<_>>());
    }
    for d in &parsed.diagnostics {
        println!(
            "{} {} {:?} {:?}",
            d.code,
            d.message,
            d.labels.first().map(|l| &text[l.span.range()]),
            d.help
        );
    }
    eprintln!("{} items, {} bytes in {:?}", parsed.file.items.len(), text.len(), el);
}
