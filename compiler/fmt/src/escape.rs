//! Canonical string literals: the value of a string re-escaped the one way the formatter writes it.

use std::fmt::Write;

/// `value` as a double-quoted `.wrl` string literal.
pub(crate) fn quote(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::quote;

    #[test]
    fn escapes_are_canonical() {
        assert_eq!(quote("a\"b\\c\n\t\r\0"), r#""a\"b\\c\n\t\r\0""#);
        assert_eq!(quote("\u{1b}é"), "\"\\u{1b}é\"");
    }
}
