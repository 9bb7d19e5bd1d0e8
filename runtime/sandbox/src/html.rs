//! Tiny HTML helpers shared by the sandbox sites: escaping, query encoding and the page frame.

/// Escapes text for HTML element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Percent-encodes a query-string value (spaces as `+`).
pub fn qenc(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => out.push(b as char),
            b' ' => out.push('+'),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Wraps a page body in the common frame (title, minimal style).
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{}</title><style>\
body{{font-family:'Liberation Sans',Arial,sans-serif;margin:16px;font-size:16px}}\
header{{margin-bottom:12px}} header a{{margin-right:12px}} li{{margin:6px 0}}\
button,input,textarea,select{{font-size:15px;margin:2px}} .price{{margin-left:8px}}\
</style></head><body>{}</body></html>",
        esc(title),
        body
    )
}

/// Formats cents as "12.50".
pub fn money(cents: u32) -> String {
    format!("{}.{:02}", cents / 100, cents % 100)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_and_encoding() {
        assert_eq!(esc("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
        assert_eq!(qenc("blue mug&x"), "blue+mug%26x");
        assert_eq!(money(1205), "12.05");
    }
}
