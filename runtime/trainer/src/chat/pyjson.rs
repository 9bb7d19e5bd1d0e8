//! `tojson` as Hugging Face's templates see it: Python's `json.dumps(x, ensure_ascii=False)`
//! (transformers replaces Jinja's filter with it), byte for byte — `", "` and `": "` between
//! items, keys in the order given, floats as Python's `repr` writes them (`1e-05`, `1.0`), no
//! HTML escaping — so a tool schema or a call's arguments render exactly as the model was shown.

use minijinja::Value;
use minijinja::value::ValueKind;

/// How to write the JSON.
#[derive(Clone, Copy, Debug, Default)]
pub struct Style {
    /// Spaces per level; `None`: one line.
    pub indent: Option<usize>,
    /// Escape non-ASCII as `\uXXXX`.
    pub ensure_ascii: bool,
    /// Sort object keys.
    pub sort_keys: bool,
}

/// `json.dumps(value, …)` of a template value.
pub fn dumps(v: &Value, style: Style) -> Result<String, minijinja::Error> {
    let mut out = String::new();
    write(&mut out, v, style, 0)?;
    Ok(out)
}

/// A float as Python's `repr`: the shortest digits that round-trip, in fixed notation when the
/// exponent is in [-4, 16), else `d.ddde±XX`.
pub fn py_float(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity".into() } else { "-Infinity".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0".into() } else { "0.0".into() };
    }
    // Rust's `{:e}` gives the shortest round-trip digits: `d.ddde<exp>`.
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if (-4..16).contains(&exp) {
        let n = digits.len() as i32;
        let body = if exp >= 0 {
            let int_len = exp + 1;
            if n <= int_len {
                format!("{digits}{}.0", "0".repeat((int_len - n) as usize))
            } else {
                format!("{}.{}", &digits[..int_len as usize], &digits[int_len as usize..])
            }
        } else {
            format!("0.{}{digits}", "0".repeat((-exp - 1) as usize))
        };
        format!("{sign}{body}")
    } else {
        let m =
            if digits.len() > 1 { format!("{}.{}", &digits[..1], &digits[1..]) } else { digits };
        let e = if exp < 0 { format!("-{:02}", -exp) } else { format!("+{exp:02}") };
        format!("{sign}{m}e{e}")
    }
}

fn string(out: &mut String, s: &str, ascii: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if ascii && !c.is_ascii() => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn newline(out: &mut String, style: Style, level: usize) {
    if let Some(n) = style.indent {
        out.push('\n');
        out.push_str(&" ".repeat(n * level));
    }
}

fn write(out: &mut String, v: &Value, style: Style, level: usize) -> Result<(), minijinja::Error> {
    let item_sep = if style.indent.is_some() { "," } else { ", " };
    match v.kind() {
        ValueKind::Undefined | ValueKind::None => out.push_str("null"),
        ValueKind::Bool => out.push_str(if v.is_true() { "true" } else { "false" }),
        ValueKind::Number => {
            if v.is_integer() {
                out.push_str(&v.to_string());
            } else {
                let x = f64::try_from(v.clone())?;
                out.push_str(&py_float(x));
            }
        }
        ValueKind::String => string(out, v.as_str().unwrap_or(""), style.ensure_ascii),
        ValueKind::Seq | ValueKind::Iterable => {
            let items: Vec<Value> = v.try_iter()?.collect();
            if items.is_empty() {
                out.push_str("[]");
                return Ok(());
            }
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(item_sep);
                }
                newline(out, style, level + 1);
                write(out, x, style, level + 1)?;
            }
            newline(out, style, level);
            out.push(']');
        }
        ValueKind::Map => {
            let mut keys: Vec<Value> = v.try_iter()?.collect();
            if style.sort_keys {
                keys.sort_by_key(|k| k.to_string());
            }
            if keys.is_empty() {
                out.push_str("{}");
                return Ok(());
            }
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push_str(item_sep);
                }
                newline(out, style, level + 1);
                string(out, &k.to_string(), style.ensure_ascii);
                out.push_str(": ");
                write(out, &v.get_item(k)?, style, level + 1)?;
            }
            newline(out, style, level);
            out.push('}');
        }
        // `ValueKind` is not exhaustive: anything else is not JSON.
        _ => {
            return Err(minijinja::Error::new(
                minijinja::ErrorKind::InvalidOperation,
                format!("`tojson` cannot write a {}", v.kind()),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_read_as_python_writes_them() {
        for (x, py) in [
            (1.0, "1.0"),
            (0.5, "0.5"),
            (12.5, "12.5"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1e16, "1e+16"),
            (123456789012345.0, "123456789012345.0"),
            (-2.5e-7, "-2.5e-07"),
            (0.1 + 0.2, "0.30000000000000004"),
        ] {
            assert_eq!(py_float(x), py, "{x}");
        }
    }

    #[test]
    fn objects_keep_their_order_and_python_spacing() {
        let v: Value =
            serde_json::from_str(r#"{"b": [1, 2.0, "é\n"], "a": {"x": null, "y": true}}"#).unwrap();
        assert_eq!(
            dumps(&v, Style::default()).unwrap(),
            r#"{"b": [1, 2.0, "é\n"], "a": {"x": null, "y": true}}"#
        );
        let ascii = Style { ensure_ascii: true, ..Style::default() };
        assert_eq!(dumps(&Value::from("é<"), ascii).unwrap(), r#""\u00e9<""#);
        let indented = Style { indent: Some(2), ..Style::default() };
        assert_eq!(
            dumps(&v, indented).unwrap(),
            "{\n  \"b\": [\n    1,\n    2.0,\n    \"é\\n\"\n  ],\n  \"a\": {\n    \"x\": null,\n    \"y\": true\n  }\n}"
        );
    }
}
