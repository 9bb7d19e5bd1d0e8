//! Fuzzes `wrl_syntax::parse` on arbitrary UTF-8: it must not panic or overflow the stack, and
//! every diagnostic must carry a registered code and a primary span inside the text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wrl_diagnostics::FileId;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let parsed = wrl_syntax::parse(FileId(0), text);
    for d in &parsed.diagnostics {
        assert!(wrl_diagnostics::lookup(d.code).is_some(), "unregistered code {}", d.code);
        let span = d.primary_span().expect("every diagnostic has a primary label");
        assert!(text.get(span.range()).is_some(), "{} span {:?} outside the text", d.code, span);
    }
    for item in &parsed.file.items {
        assert!(
            text.get(item.span.range()).is_some(),
            "item span {:?} outside the text",
            item.span
        );
    }
    // A lone expression goes through the same machinery from a different entry point.
    let _ = wrl_syntax::parse_expr(FileId(0), text);
});
