//! Key names to CDP key events: `Enter`, `ctrl+a`, `Shift`, single characters.

/// A key as CDP wants it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyDef {
    /// DOM `key`.
    pub key: String,
    /// DOM `code`.
    pub code: String,
    /// Windows virtual key code.
    pub vk: i64,
    /// Text produced (None for non-printing keys).
    pub text: Option<String>,
    /// Modifier bit if this is a modifier (Alt=1, Ctrl=2, Meta=4, Shift=8).
    pub modifier: i64,
}

fn named(key: &str, code: &str, vk: i64, text: Option<&str>, modifier: i64) -> KeyDef {
    KeyDef { key: key.into(), code: code.into(), vk, text: text.map(Into::into), modifier }
}

/// Looks up one key name (case-insensitive for names; single characters as given).
pub fn key_def(name: &str) -> Option<KeyDef> {
    let lower = name.to_ascii_lowercase();
    let d = match lower.as_str() {
        "enter" | "return" => named("Enter", "Enter", 13, Some("\r"), 0),
        "tab" => named("Tab", "Tab", 9, None, 0),
        "backspace" => named("Backspace", "Backspace", 8, None, 0),
        "escape" | "esc" => named("Escape", "Escape", 27, None, 0),
        "delete" | "del" => named("Delete", "Delete", 46, None, 0),
        "space" | " " => named(" ", "Space", 32, Some(" "), 0),
        "arrowleft" | "left" => named("ArrowLeft", "ArrowLeft", 37, None, 0),
        "arrowup" | "up" => named("ArrowUp", "ArrowUp", 38, None, 0),
        "arrowright" | "right" => named("ArrowRight", "ArrowRight", 39, None, 0),
        "arrowdown" | "down" => named("ArrowDown", "ArrowDown", 40, None, 0),
        "home" => named("Home", "Home", 36, None, 0),
        "end" => named("End", "End", 35, None, 0),
        "pageup" => named("PageUp", "PageUp", 33, None, 0),
        "pagedown" => named("PageDown", "PageDown", 34, None, 0),
        "alt" => named("Alt", "AltLeft", 18, None, 1),
        "control" | "ctrl" => named("Control", "ControlLeft", 17, None, 2),
        "meta" | "cmd" | "command" | "super" => named("Meta", "MetaLeft", 91, None, 4),
        "shift" => named("Shift", "ShiftLeft", 16, None, 8),
        _ => {
            let mut chars = name.chars();
            let c = chars.next()?;
            if chars.next().is_some() {
                if let Some(n) = lower.strip_prefix('f').and_then(|d| d.parse::<i64>().ok())
                    && (1..=12).contains(&n)
                {
                    return Some(named(&format!("F{n}"), &format!("F{n}"), 111 + n, None, 0));
                }
                return None;
            }
            let (code, vk) = if c.is_ascii_alphabetic() {
                (format!("Key{}", c.to_ascii_uppercase()), c.to_ascii_uppercase() as i64)
            } else if c.is_ascii_digit() {
                (format!("Digit{c}"), c as i64)
            } else {
                (String::new(), 0)
            };
            KeyDef { key: c.to_string(), code, vk, text: Some(c.to_string()), modifier: 0 }
        }
    };
    Some(d)
}

/// Splits a combination like `ctrl+a` or `Control+Shift+T` into key definitions.
pub fn parse_combo(combo: &str) -> Result<Vec<KeyDef>, String> {
    if combo == "+" {
        return key_def("+").map(|k| vec![k]).ok_or_else(|| "unknown key".into());
    }
    combo
        .split('+')
        .map(|k| key_def(k.trim()).ok_or_else(|| format!("unknown key {:?}", k.trim())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_combos() {
        assert_eq!(key_def("enter").unwrap().vk, 13);
        assert_eq!(key_def("a").unwrap().code, "KeyA");
        assert_eq!(key_def("F5").unwrap().vk, 116);
        assert!(key_def("nope").is_none());
        let c = parse_combo("ctrl+a").unwrap();
        assert_eq!(c[0].modifier, 2);
        assert_eq!(c[1].key, "a");
        assert!(parse_combo("ctrl+nope").is_err());
    }
}
