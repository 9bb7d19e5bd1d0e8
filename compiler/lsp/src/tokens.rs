//! Semantic tokens: every name classified by what it resolves to (a declaration, a stdlib
//! constructor, a module, an enum word, a field), numbers and their units, strings, comments,
//! and the keywords between them (found by a lexical pass over what the AST does not cover).

use lsp_types::{SemanticToken, SemanticTokens, SemanticTokensLegend, SemanticTokensResult};
use serde_json::{Value, json};
use wrl_diagnostics::Span;
use wrl_syntax::tokens::{CONTEXTUAL_KEYWORDS, DECL_KINDS, KEYWORDS};

use crate::target::{Target, of_node};
use crate::view::View;
use crate::walk::{Node, node_span, walk};

const TYPES: &[&str] = &[
    "keyword",
    "variable",
    "property",
    "function",
    "namespace",
    "enumMember",
    "number",
    "string",
    "comment",
    "type",
    "parameter",
];
const MODIFIERS: &[&str] = &["declaration", "documentation", "defaultLibrary"];

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ty {
    Keyword = 0,
    Variable,
    Property,
    Function,
    Namespace,
    EnumMember,
    Number,
    Str,
    Comment,
    Type,
    Parameter,
}

const DECLARATION: u32 = 1;
const DOCUMENTATION: u32 = 2;
const DEFAULT_LIBRARY: u32 = 4;

pub fn legend() -> Value {
    let l = SemanticTokensLegend {
        token_types: TYPES.iter().map(|t| (*t).into()).collect(),
        token_modifiers: MODIFIERS.iter().map(|m| (*m).into()).collect(),
    };
    serde_json::to_value(l).unwrap_or_else(|_| json!({}))
}

type Tok = (usize, usize, Ty, u32);

pub fn tokens(view: &View<'_>) -> Option<SemanticTokensResult> {
    let text = view.doc.text.as_str();
    let owned;
    let (file, comments, an) = match view.analysis().and_then(|a| a.file.as_ref().map(|f| (f, a))) {
        Some((f, a)) => (f, a.comments.as_slice(), Some(a)),
        None => {
            owned = wrl_syntax::parse(crate::analysis::DOC, text);
            (&owned.file, owned.comments.as_slice(), None)
        }
    };
    let mut toks: Vec<Tok> = Vec::new();
    for c in comments {
        toks.push(range(c.span, Ty::Comment, if c.doc { DOCUMENTATION } else { 0 }));
    }
    walk(file, &mut |scope, node| {
        let span = node_span(&node);
        let simple = |t: Ty, m: u32| vec![range(span, t, m)];
        let found: Vec<Tok> = match &node {
            Node::DeclName(_) => simple(Ty::Variable, DECLARATION),
            Node::Field { .. } | Node::OverrideField { .. } | Node::Member { .. } => {
                simple(Ty::Property, 0)
            }
            Node::Number { .. } => simple(Ty::Number, 0),
            Node::Quantity { expr, unit_span, .. } => vec![
                (expr.span.start as usize, unit_span.start as usize, Ty::Number, 0),
                range(*unit_span, Ty::Keyword, 0),
            ],
            Node::Str { .. } => simple(Ty::Str, 0),
            Node::FileRef { path, alias } => {
                let mut v = vec![range(path.span, Ty::Str, 0)];
                v.extend(alias.map(|a| range(a.span, Ty::Namespace, DECLARATION)));
                v
            }
            Node::ProfileName(_) => simple(Ty::Namespace, DECLARATION),
            Node::GraphModuleName { declared, .. } => {
                simple(Ty::Variable, if *declared { DECLARATION } else { 0 })
            }
            Node::Verdict(_) => simple(Ty::EnumMember, 0),
            Node::SigName { param: true, .. } => simple(Ty::Parameter, DECLARATION),
            Node::SigName { param: false, .. } => {
                simple(Ty::Function, DECLARATION | DEFAULT_LIBRARY)
            }
            Node::Type { .. } => simple(Ty::Type, 0),
            Node::Name { segs, .. } => segs
                .iter()
                .filter_map(|s| {
                    let t = of_node(an?, scope.root, scope.steps, &node, s.span.start as usize)?;
                    let (ty, m) = class(&t);
                    Some(range(s.span, ty, m))
                })
                .collect(),
            Node::UseModule { .. } => simple(Ty::Namespace, DEFAULT_LIBRARY),
            Node::UseItem { .. } => an
                .and_then(|a| of_node(a, scope.root, scope.steps, &node, span.start as usize))
                .map(|t| {
                    let (ty, m) = class(&t);
                    vec![range(span, ty, m)]
                })
                .unwrap_or_default(),
        };
        toks.extend(found);
    });
    keywords(text, &mut toks);
    toks.sort();
    let mut data = Vec::new();
    let (mut prev_line, mut prev_col) = (0u32, 0u32);
    let mut covered = 0usize;
    for (start, end, ty, mods) in toks {
        if start < covered || end <= start {
            continue;
        }
        covered = end;
        // One token per line (clients need not support multi-line tokens).
        let mut from = start;
        while from < end {
            let line_end = text[from..end].find('\n').map_or(end, |i| from + i);
            if line_end > from {
                let a = view.position(from);
                let b = view.position(line_end);
                let delta_line = a.line - prev_line;
                let delta_start =
                    if delta_line == 0 { a.character - prev_col } else { a.character };
                data.push(SemanticToken {
                    delta_line,
                    delta_start,
                    length: b.character.saturating_sub(a.character),
                    token_type: ty as u32,
                    token_modifiers_bitset: mods,
                });
                (prev_line, prev_col) = (a.line, a.character);
            }
            from = line_end + 1;
        }
    }
    Some(SemanticTokensResult::Tokens(SemanticTokens { result_id: None, data }))
}

fn range(span: Span, ty: Ty, mods: u32) -> Tok {
    (span.start as usize, span.end as usize, ty, mods)
}

fn class(t: &Target) -> (Ty, u32) {
    match t {
        Target::Decl(d) => (Ty::Variable, if d.std { DEFAULT_LIBRARY } else { 0 }),
        Target::Builtin(_) => (Ty::Function, DEFAULT_LIBRARY),
        Target::Module(m) => (Ty::Namespace, if m.std { DEFAULT_LIBRARY } else { 0 }),
        Target::Enum { .. } => (Ty::EnumMember, 0),
        Target::Field(_) => (Ty::Property, 0),
        Target::GraphModule { .. } => (Ty::Variable, 0),
    }
}

/// Keywords: words the AST tokens do not cover (outside comments and strings).
fn keywords(text: &str, toks: &mut Vec<Tok>) {
    let mut covered: Vec<(usize, usize)> = toks.iter().map(|t| (t.0, t.1)).collect();
    covered.sort_unstable();
    let bytes = text.as_bytes();
    let is_start = |b: u8| b.is_ascii_alphabetic() || b == b'_';
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut i = 0;
    let mut c = 0;
    while i < bytes.len() {
        while c < covered.len() && covered[c].1 <= i {
            c += 1;
        }
        if c < covered.len() && covered[c].0 <= i {
            i = covered[c].1.max(i + 1);
            continue;
        }
        if bytes[i] == b'"' || (bytes[i] == b'/' && bytes.get(i + 1) == Some(&b'/')) {
            // A string or comment the AST did not give (a broken item): skip the line's rest.
            i = text[i..].find('\n').map_or(bytes.len(), |n| i + n);
            continue;
        }
        if is_start(bytes[i]) && (i == 0 || !is_word(bytes[i - 1])) {
            let end = (i..bytes.len()).find(|&j| !is_word(bytes[j])).unwrap_or(bytes.len());
            let word = &text[i..end];
            if KEYWORDS.contains(&word)
                || CONTEXTUAL_KEYWORDS.contains(&word)
                || DECL_KINDS.contains(&word)
            {
                toks.push((i, end, Ty::Keyword, 0));
            }
            i = end;
            continue;
        }
        i += 1;
    }
}

/// Used by tests: the legend's index of a token type.
#[cfg(test)]
pub fn type_index(name: &str) -> Option<u32> {
    TYPES.iter().position(|t| *t == name).map(|i| i as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legend_and_enum_agree() {
        assert_eq!(type_index("keyword"), Some(Ty::Keyword as u32));
        assert_eq!(type_index("parameter"), Some(Ty::Parameter as u32));
        assert_eq!(TYPES.len(), Ty::Parameter as usize + 1);
    }
}
