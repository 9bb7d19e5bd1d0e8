//! `--set PATH=VALUE`: each override is parsed on its own — the path as a field path, the value
//! as exactly one expression — into the synthetic profile that carries them, never spliced into
//! the recipe's text; every override is its own source (`--set #N`), so a diagnostic points at
//! the argument it came from.

use wrl_diagnostics::{Diagnostic, SourceMap, Span};
use wrl_syntax::ast::{
    Block, BlockItem, Field, FieldPath, Ident, Item, ItemKind, PathSegment, Profile, ProfileKind,
};

/// The profile item holding `sets`, each added to `sources`; every malformed one is reported.
pub(crate) fn profile(
    sources: &mut SourceMap,
    sets: &[String],
    name: &str,
) -> Result<Item, Vec<Diagnostic>> {
    let mut items = Vec::new();
    let mut diags = Vec::new();
    let mut whole: Option<Span> = None;
    for (i, arg) in sets.iter().enumerate() {
        let id = sources.add(format!("--set #{}", i + 1), arg.clone());
        let at = |a: usize, b: usize| Span::new(id, a, b);
        whole.get_or_insert(at(0, 0));
        let Some(eq) = arg.find('=') else {
            diags.push(
                Diagnostic::new("E0100", format!("`--set {arg}` is not of the form PATH=VALUE"))
                    .label(at(0, arg.len()), "no `=` here")
                    .help("write the field's path, `=`, then its value: `--set online.group=8`"),
            );
            continue;
        };
        let path = match field_path(&arg[..eq], &at) {
            Ok(p) => p,
            Err(d) => {
                diags.push(*d);
                continue;
            }
        };
        // The value is parsed where it stands in the argument: the path and `=` are blanked
        // out, so the expression's spans are offsets into the argument.
        let padded = format!("{}{}", " ".repeat(eq + 1), &arg[eq + 1..]);
        match wrl_syntax::parse_expr(id, &padded) {
            Ok(value) => items.push(BlockItem::Field(Field {
                path,
                value,
                span: at(0, arg.len()),
            })),
            Err(ds) => diags.extend(ds.into_iter().map(|d| {
                d.help("a `--set` value is one value (a number, string, list, record or call), e.g. `--set warmup.lr=1e-3`")
            })),
        }
    }
    if !diags.is_empty() {
        return Err(diags);
    }
    let span = whole.unwrap_or_default();
    Ok(Item {
        kind: ItemKind::Profile(Profile {
            kind: ProfileKind::Profile,
            name: Ident { name: name.to_string(), span },
            overrides: Block { items, span },
        }),
        doc: None,
        span,
    })
}

/// `online.phases[1].lr`: names separated by dots, each optionally indexed.
fn field_path(text: &str, at: &dyn Fn(usize, usize) -> Span) -> Result<FieldPath, Box<Diagnostic>> {
    let bad = |a: usize, b: usize, what: &str| {
        Box::new(
            Diagnostic::new("E0100", format!("`{}` is not a field path", text.trim()))
                .label(at(a, b.max(a + 1).min(text.len().max(a + 1))), what.to_string())
                .help("a path names fields by dots, with list indexes in brackets: `online.phases[0].lr`"),
        )
    };
    let start = text.len() - text.trim_start().len();
    let end = text.trim_end().len();
    if start >= end {
        return Err(bad(0, text.len(), "no path before `=`"));
    }
    let mut segments = Vec::new();
    for (off, seg) in split_keep_offsets(&text[start..end], '.') {
        let off = start + off;
        let (name, index) = match seg.split_once('[') {
            Some((n, rest)) => (n, Some(rest)),
            None => (seg, None),
        };
        let ident_ok = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ident_ok {
            return Err(bad(off, off + seg.len(), "expected a field name"));
        }
        segments.push(PathSegment::Name(Ident {
            name: name.to_string(),
            span: at(off, off + name.len()),
        }));
        if let Some(rest) = index {
            let i0 = off + name.len() + 1;
            let digits = rest.strip_suffix(']').unwrap_or("");
            match digits.parse::<u32>() {
                Ok(index) if !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()) => {
                    segments.push(PathSegment::Index { index, span: at(i0, i0 + digits.len()) })
                }
                _ => return Err(bad(i0 - 1, off + seg.len(), "expected `[N]`, a list index")),
            }
        }
    }
    Ok(FieldPath { segments, span: at(start, end) })
}

/// `s` split at `sep`, each piece with its byte offset.
fn split_keep_offsets(s: &str, sep: char) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut from = 0;
    for (i, c) in s.char_indices() {
        if c == sep {
            out.push((from, &s[from..i]));
            from = i + c.len_utf8();
        }
    }
    out.push((from, &s[from..]));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(arg: &str) -> Result<Item, Vec<Diagnostic>> {
        profile(&mut SourceMap::new(), &[arg.to_string()], "__set__")
    }

    /// A value that closes the profile and declares a stage is one bad value, not a new stage.
    #[test]
    fn a_value_is_one_expression_never_source_text() {
        let e = one("warmup.lr=1 } stage evil = sft(policy, demos) {").unwrap_err();
        assert!(!e.is_empty() && e.iter().all(|d| d.code == "E0100"), "{e:?}");
        let Ok(item) = one("online.phases[1].lr = 2e-3") else { panic!() };
        let ItemKind::Profile(p) = item.kind else { panic!() };
        let [BlockItem::Field(f)] = &p.overrides.items[..] else { panic!() };
        assert_eq!(f.path.segments.len(), 4);
        assert_eq!((f.value.span.start, f.value.span.end), (22, 26));
        assert!(one("online..group=1").is_err());
        assert!(one("online.group").is_err());
        assert!(one("online.phases[x]=1").is_err());
    }
}
