//! The job's YAML files (Hydra configs, agent-loop and tool lists), written from JSON values by a
//! small emitter of our own: block style, keys in sorted order (serde_json's maps are sorted),
//! strings quoted unless they are plainly safe, floats always with a decimal point (PyYAML reads
//! `1e-6` as a string), and `???` left bare (OmegaConf's "value to give at launch").

use serde_json::Value as Json;

/// The value OmegaConf reads as missing: a value that must be given at launch.
pub const MISSING: &str = "???";

/// `v` as a YAML document, after `header` comment lines.
pub fn document(header: &[&str], v: &Json) -> String {
    let mut out = String::new();
    for line in header {
        if line.is_empty() {
            out.push_str("#\n");
        } else {
            out.push_str("# ");
            out.push_str(line);
            out.push('\n');
        }
    }
    match v {
        Json::Object(m) if !m.is_empty() => block_map(m, 0, &mut out),
        Json::Array(items) if !items.is_empty() => block_list(items, 0, &mut out),
        other => {
            out.push_str(&scalar(other));
            out.push('\n');
        }
    }
    out
}

fn indent(n: usize, out: &mut String) {
    for _ in 0..n {
        out.push_str("  ");
    }
}

fn block_map(m: &serde_json::Map<String, Json>, depth: usize, out: &mut String) {
    for (k, v) in m {
        indent(depth, out);
        out.push_str(&key(k));
        out.push(':');
        nested(v, depth, out);
    }
}

fn block_list(items: &[Json], depth: usize, out: &mut String) {
    for v in items {
        indent(depth, out);
        out.push('-');
        match v {
            Json::Object(m) if !m.is_empty() => {
                // The first key on the dash's line, the rest aligned under it.
                let mut first = true;
                for (k, v) in m {
                    if first {
                        out.push(' ');
                        first = false;
                    } else {
                        indent(depth + 1, out);
                    }
                    out.push_str(&key(k));
                    out.push(':');
                    nested(v, depth + 1, out);
                }
            }
            other => nested_item(other, depth, out),
        }
    }
}

/// What follows `key:`: a scalar on the same line, or a nested block.
fn nested(v: &Json, depth: usize, out: &mut String) {
    match v {
        Json::Object(m) if !m.is_empty() => {
            out.push('\n');
            block_map(m, depth + 1, out);
        }
        Json::Array(items) if !items.is_empty() && items.iter().all(is_scalar) => {
            // Short lists of scalars in flow style: `[console]`, `[0.9, 0.999]`.
            let parts: Vec<String> = items.iter().map(scalar).collect();
            out.push_str(" [");
            out.push_str(&parts.join(", "));
            out.push_str("]\n");
        }
        Json::Array(items) if !items.is_empty() => {
            out.push('\n');
            block_list(items, depth + 1, out);
        }
        other => {
            out.push(' ');
            out.push_str(&scalar(other));
            out.push('\n');
        }
    }
}

fn nested_item(v: &Json, depth: usize, out: &mut String) {
    match v {
        Json::Array(items) if !items.is_empty() => {
            out.push('\n');
            block_list(items, depth + 1, out);
        }
        other => {
            out.push(' ');
            out.push_str(&scalar(other));
            out.push('\n');
        }
    }
}

fn is_scalar(v: &Json) -> bool {
    !matches!(v, Json::Array(a) if !a.is_empty()) && !matches!(v, Json::Object(m) if !m.is_empty())
}

/// Words YAML 1.1 (PyYAML, which OmegaConf uses) reads as something other than a string.
fn reserved(s: &str) -> bool {
    matches!(
        s.to_ascii_lowercase().as_str(),
        "y" | "n"
            | "yes"
            | "no"
            | "on"
            | "off"
            | "true"
            | "false"
            | "null"
            | "~"
            | ".nan"
            | ".inf"
            | "-.inf"
    )
}

fn plain(s: &str) -> bool {
    let mut chars = s.chars();
    let Some(first) = chars.next() else { return false };
    (first.is_ascii_alphabetic() || first == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'))
        && !reserved(s)
}

fn key(k: &str) -> String {
    if plain(k) { k.to_string() } else { quote(k) }
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

fn scalar(v: &Json) -> String {
    match v {
        Json::Null => "null".into(),
        Json::Bool(b) => b.to_string(),
        Json::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (None, Some(u), _) => u.to_string(),
            (None, None, Some(f)) => float(f),
            (None, None, None) => n.to_string(),
        },
        Json::String(s) if s == MISSING => MISSING.into(),
        Json::String(s) if plain(s) && !s.contains('/') => s.clone(),
        Json::String(s) => quote(s),
        Json::Array(_) => "[]".into(),
        Json::Object(_) => "{}".into(),
    }
}

/// A float as YAML 1.1 reads it back: with a decimal point, never in exponent form.
fn float(f: f64) -> String {
    if !f.is_finite() {
        return if f.is_nan() {
            ".nan".into()
        } else if f > 0.0 {
            ".inf".into()
        } else {
            "-.inf".into()
        };
    }
    let s = format!("{f}");
    if s.contains('.') { s } else { format!("{s}.0") }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn block_yaml_with_sorted_keys_quoted_words_and_dotted_floats() {
        let v = json!({
            "trainer": {"logger": ["console"], "total_training_steps": 90, "project_name": "wrl"},
            "actor": {"optim": {"lr": 1e-6, "betas": [0.9, 0.98], "clip_grad": 1.0}},
            "rollout": {"n": 5, "name": MISSING, "path": "data/train.parquet", "on": "yes"},
            "defaults": ["ppo_trainer", "_self_"],
            "list": [{"name": "a", "_target_": "x.Y", "kw": {"k": 1}}],
            "empty": {},
        });
        let text = document(&["a header"], &v);
        let want = "# a header
actor:
  optim:
    betas: [0.9, 0.98]
    clip_grad: 1.0
    lr: 0.000001
defaults: [ppo_trainer, _self_]
empty: {}
list:
  - _target_: x.Y
    kw:
      k: 1
    name: a
rollout:
  'n': 5
  name: ???
  'on': 'yes'
  path: 'data/train.parquet'
trainer:
  logger: [console]
  project_name: wrl
  total_training_steps: 90
";
        assert_eq!(text, want);
    }
}
